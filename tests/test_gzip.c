/* test_gzip.c - the bounded reader every gzip-accepting data format reads
 * through: plain bytes as they are, gzip members inflated one after the
 * other (copied or lent in place), junk after the stream and bombs stopped
 * with the file named. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data/gzip.h"

static const char *dir;

/* n bytes of text that compress well but not to nothing. */
static char *some_text(size_t n)
{
	char *t = malloc(n);

	assert_non_null(t);
	for (size_t i = 0; i < n; i++)
		t[i] = (char)('a' + (i * 7 + i / 13) % 26);
	return t;
}

/* in gzip-compressed as one member, appended to *out (grown). */
static void gz_member(unsigned char **out, size_t *len, const void *in, size_t n)
{
	z_stream zs;
	size_t bound;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	bound = deflateBound(&zs, n);
	*out = realloc(*out, *len + bound);
	assert_non_null(*out);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = *out + *len;
	zs.avail_out = (uInt)bound;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*len += zs.total_out;
	deflateEnd(&zs);
}

/* The whole file through akk_gz_read in pieces of `piece` bytes. */
static char *read_all(const char *path, unsigned ratio, size_t piece,
		      size_t *n, struct akk_err *e)
{
	struct akk_gz_reader r;
	size_t cap = 1 << 20, got;
	char *buf = malloc(cap);

	assert_non_null(buf);
	*n = 0;
	if (akk_gz_open(&r, path, ratio, e) < 0) {
		free(buf);
		return NULL;
	}
	do {
		if (*n + piece > cap) {
			cap = 2 * (*n + piece);
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		if (akk_gz_read(&r, buf + *n, piece, &got) < 0) {
			akk_gz_close(&r);
			free(buf);
			return NULL;
		}
		*n += got;
	} while (got == piece);
	akk_gz_close(&r);
	return buf;
}

/* The whole file through akk_gz_peek / akk_gz_take, taking at most
 * `piece` bytes of what each peek lends. */
static char *peek_all(const char *path, size_t piece, size_t *n, struct akk_err *e)
{
	struct akk_gz_reader r;
	const uint8_t *p;
	size_t cap = 1 << 20, k;
	char *buf = malloc(cap);

	assert_non_null(buf);
	*n = 0;
	assert_int_equal(akk_gz_open(&r, path, AKK_GZ_DEFLATE_MAX_RATIO, e), 0);
	for (;;) {
		assert_int_equal(akk_gz_peek(&r, &p, &k), 0);
		if (!k)
			break;
		if (k > piece)
			k = piece;
		if (*n + k > cap) {
			cap = 2 * (*n + k);
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		memcpy(buf + *n, p, k);
		*n += k;
		akk_gz_take(&r, k);
	}
	akk_gz_close(&r);
	return buf;
}

/* A plain file is read as it is, even one starting with a lone 0x1f; two
 * gzip members (what `cat a.gz b.gz` makes) read as the two texts one
 * after the other, copied or lent, across many input chunks. */
static void test_plain_and_members(void **state)
{
	(void)state;
	size_t n1 = 3 * AKK_GZ_CHUNK + 17, n2 = 1000, n;
	char *t1 = some_text(n1), *t2 = some_text(n2), *got;
	unsigned char *gz = NULL;
	size_t gzlen = 0;
	struct akk_err e = { 0 };
	const char *path;

	t1[0] = 0x1f;	/* the magic's first byte, not its second */
	path = tu_path(dir, "plain.txt");
	assert_int_equal(tu_write_file(path, t1, n1), 0);
	got = read_all(path, AKK_GZ_DEFLATE_MAX_RATIO, 4096, &n, &e);
	assert_non_null(got);
	assert_int_equal(n, n1);
	assert_memory_equal(got, t1, n1);
	free(got);

	t1[0] = 'x';
	gz_member(&gz, &gzlen, t1, n1);
	gz_member(&gz, &gzlen, t2, n2);
	path = tu_path(dir, "two.gz");
	assert_int_equal(tu_write_file(path, gz, gzlen), 0);
	for (int way = 0; way < 2; way++) {
		got = way ? peek_all(path, 777, &n, &e) :
			    read_all(path, AKK_GZ_DEFLATE_MAX_RATIO, 5000, &n, &e);
		assert_non_null(got);
		assert_int_equal(n, n1 + n2);
		assert_memory_equal(got, t1, n1);
		assert_memory_equal(got + n1, t2, n2);
		free(got);
	}
	free(gz);
	free(t1);
	free(t2);
}

/* Bytes after the last member that are not another member: an error at
 * the file, naming the byte where the junk starts. */
static void test_junk_after_stream(void **state)
{
	(void)state;
	char *t = some_text(5000), want[512];
	unsigned char *gz = NULL;
	size_t gzlen = 0, n;
	struct akk_err e = { 0 };
	const char *path;

	gz_member(&gz, &gzlen, t, 5000);
	gz = realloc(gz, gzlen + 4);
	memcpy(gz + gzlen, "junk", 4);
	path = tu_path(dir, "junk.gz");
	assert_int_equal(tu_write_file(path, gz, gzlen + 4), 0);
	assert_null(read_all(path, AKK_GZ_DEFLATE_MAX_RATIO, 4096, &n, &e));
	snprintf(want, sizeof(want), "junk after the gzip stream at byte %zu", gzlen);
	assert_string_equal(e.msg, want);
	assert_string_equal(e.file, path);
	free(gz);
	free(t);
}

/* 8 MiB of zeros pack to a few KiB: past max_ratio times that plus the
 * slack it is a bomb, stopped; a ratio it stays under reads it whole. */
static void test_bomb_bound(void **state)
{
	(void)state;
	size_t big = (size_t)8 << 20, n;
	char *zeros = calloc(big, 1), *got;
	unsigned char *gz = NULL;
	size_t gzlen = 0;
	struct akk_err e = { 0 };
	const char *path;

	assert_non_null(zeros);
	gz_member(&gz, &gzlen, zeros, big);
	path = tu_path(dir, "zeros.gz");
	assert_int_equal(tu_write_file(path, gz, gzlen), 0);
	assert_null(read_all(path, 4, 1 << 16, &n, &e));
	assert_string_equal(e.msg, "gzip bomb: inflates to more than 4 times its compressed size");
	assert_string_equal(e.file, path);
	memset(&e, 0, sizeof(e));
	got = read_all(path, AKK_GZ_DEFLATE_MAX_RATIO, 1 << 16, &n, &e);
	assert_non_null(got);
	assert_int_equal(n, big);
	assert_memory_equal(got, zeros, big);
	free(got);
	free(gz);
	free(zeros);
}

/* A directory and a missing file: "cannot open" at the path. */
static void test_cannot_open(void **state)
{
	(void)state;
	struct akk_gz_reader r;
	struct akk_err e = { 0 };

	assert_int_equal(akk_gz_open(&r, dir, 256, &e), -1);
	assert_string_equal(e.msg, "cannot open: Is a directory");
	assert_int_equal(akk_gz_open(&r, tu_path(dir, "missing"), 256, &e), -1);
	assert_string_equal(e.msg, "cannot open: No such file or directory");
}

int main(void)
{
	int failed;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_members),
		cmocka_unit_test(test_junk_after_stream),
		cmocka_unit_test(test_bomb_bound),
		cmocka_unit_test(test_cannot_open),
	};

	dir = tu_tmpdir();
	if (!dir) {
		perror("tu_tmpdir");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (!failed)
		tu_rm_tree(dir);
	return failed;
}
