/* test_idx.c - IDX reading: good files plain and gzip, and one crafted bad
 * file per check, each asserting the exact error line. */
#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "idx.h"

static const char *dir;

static const char *in_dir(const char *name)
{
	static char path[4][600];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
	return p;
}

/* An IDX image in memory: header for (type, rank, dims) then `len` bytes
 * of payload (payload may be NULL: filled with i % 251). */
struct buf {
	uint8_t *p;
	size_t n;
};

static struct buf idx_bytes(int type, int rank, const uint32_t *dims,
			    const uint8_t *payload, size_t len)
{
	struct buf b;

	b.n = 4 + 4 * (size_t)rank + len;
	b.p = malloc(b.n);
	assert_non_null(b.p);
	b.p[0] = 0;
	b.p[1] = 0;
	b.p[2] = (uint8_t)type;
	b.p[3] = (uint8_t)rank;
	for (int i = 0; i < rank; i++) {
		uint8_t *d = b.p + 4 + 4 * i;
		d[0] = (uint8_t)(dims[i] >> 24);
		d[1] = (uint8_t)(dims[i] >> 16);
		d[2] = (uint8_t)(dims[i] >> 8);
		d[3] = (uint8_t)dims[i];
	}
	for (size_t i = 0; i < len; i++)
		b.p[4 + 4 * rank + i] = payload ? payload[i] : (uint8_t)(i % 251);
	return b;
}

/* gzip-compress (deflate with a gzip wrapper) into a new buffer. */
static struct buf gz_bytes(const uint8_t *in, size_t n)
{
	z_stream zs;
	struct buf b;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	b.n = deflateBound(&zs, n);
	b.p = malloc(b.n);
	assert_non_null(b.p);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = b.p;
	zs.avail_out = (uInt)b.n;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	b.n = zs.total_out;
	deflateEnd(&zs);
	return b;
}

static const char *write_plain(const char *name, struct buf b)
{
	const char *path = in_dir(name);

	assert_int_equal(tu_write_file(path, b.p, b.n), 0);
	return path;
}

/* Written with zlib's own gz writer, as a user's gzip would. */
static const char *write_gz(const char *name, struct buf b)
{
	const char *path = in_dir(name);
	gzFile gz = gzopen(path, "wb");

	assert_non_null(gz);
	if (b.n)
		assert_int_equal(gzwrite(gz, b.p, (unsigned)b.n), (int)b.n);
	assert_int_equal(gzclose(gz), Z_OK);
	return path;
}

/* Load must fail; return the formatted report. */
static const char *load_fails(const char *path)
{
	static char line[1200];
	struct akk_idx x;
	struct akk_err e;

	memset(&x, 0xaa, sizeof(x));
	assert_int_equal(akk_idx_load(&x, path, &e), -1);
	assert_null(x.data);
	assert_int_equal(x.rank, 0);
	assert_string_equal(e.file, path);
	assert_int_equal(e.line, 0);
	akk_err_format(&e, line, sizeof(line));
	return line;
}

static void expect_error(const char *path, const char *msg)
{
	char want[1200];

	snprintf(want, sizeof(want), "%s: %s", path, msg);
	assert_string_equal(load_fails(path), want);
}

/* The same bad bytes, written plain and gzipped, give the same message. */
static void expect_both(const char *name, struct buf b, const char *msg)
{
	char gzname[256];

	expect_error(write_plain(name, b), msg);
	snprintf(gzname, sizeof(gzname), "%s.gz", name);
	expect_error(write_gz(gzname, b), msg);
	free(b.p);
}

/* ---- good files ---- */

static void check_images(const struct akk_idx *x, const struct buf *b)
{
	assert_int_equal(x->rank, 3);
	assert_int_equal(x->dims[0], 3);
	assert_int_equal(x->dims[1], 4);
	assert_int_equal(x->dims[2], 5);
	assert_int_equal(x->count, 3);
	assert_int_equal(x->item, 20);
	assert_memory_equal(x->data, b->p + 16, 60);
}

static void test_good_plain(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	struct buf b = idx_bytes(0x08, 3, dims, NULL, 60);
	struct akk_idx x;
	struct akk_err e;

	(void)state;
	assert_int_equal(akk_idx_load(&x, write_plain("im", b), &e), 0);
	check_images(&x, &b);
	akk_idx_release(&x);
	assert_null(x.data);
	free(b.p);
}

static void test_good_labels_and_rank4(void **state)
{
	uint32_t n = 7, d4[4] = { 2, 1, 3, 2 };
	uint8_t lab[7] = { 0, 9, 3, 3, 1, 0, 2 };
	struct buf b = idx_bytes(0x08, 1, &n, lab, 7);
	struct akk_idx x;
	struct akk_err e;

	(void)state;
	assert_int_equal(akk_idx_load(&x, write_plain("lab", b), &e), 0);
	assert_int_equal(x.rank, 1);
	assert_int_equal(x.count, 7);
	assert_int_equal(x.item, 1);
	assert_memory_equal(x.data, lab, 7);
	akk_idx_release(&x);
	free(b.p);

	b = idx_bytes(0x08, 4, d4, NULL, 12);
	assert_int_equal(akk_idx_load(&x, write_plain("r4", b), &e), 0);
	assert_int_equal(x.rank, 4);
	assert_int_equal(x.count, 2);
	assert_int_equal(x.item, 6);
	assert_memory_equal(x.data, b.p + 20, 12);
	akk_idx_release(&x);
	free(b.p);
}

/* A .gz file, and a gzip file whose name does not say so, load to the
 * same bytes as the plain file. */
static void test_gz_equals_plain(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	struct buf b = idx_bytes(0x08, 3, dims, NULL, 60);
	struct akk_idx p, g, h;
	struct akk_err e;

	(void)state;
	assert_int_equal(akk_idx_load(&p, write_plain("eq", b), &e), 0);
	assert_int_equal(akk_idx_load(&g, write_gz("eq.gz", b), &e), 0);
	assert_int_equal(akk_idx_load(&h, write_gz("eq-no-suffix", b), &e), 0);
	check_images(&g, &b);
	assert_int_equal(g.rank, p.rank);
	assert_memory_equal(g.dims, p.dims, sizeof(p.dims));
	assert_memory_equal(g.data, p.data, 60);
	assert_memory_equal(h.data, p.data, 60);
	akk_idx_release(&p);
	akk_idx_release(&g);
	akk_idx_release(&h);
	free(b.p);
}

/* Data that compresses far beyond the size hint makes the buffer grow
 * several times; the bytes must still come out right. */
static void test_gz_large(void **state)
{
	uint32_t dims[3] = { 1000, 32, 32 };
	size_t n = 1000 * 32 * 32;
	uint8_t *payload = calloc(n, 1);
	struct buf b;
	struct akk_idx x;
	struct akk_err e;

	(void)state;
	assert_non_null(payload);
	for (size_t i = 0; i < n; i += 997)
		payload[i] = (uint8_t)(i >> 3);
	b = idx_bytes(0x08, 3, dims, payload, n);
	assert_int_equal(akk_idx_load(&x, write_gz("big.gz", b), &e), 0);
	assert_int_equal(x.count, 1000);
	assert_int_equal(x.item, 1024);
	assert_memory_equal(x.data, payload, n);
	akk_idx_release(&x);
	assert_int_equal(akk_idx_load(&x, write_plain("big", b), &e), 0);
	assert_memory_equal(x.data, payload, n);
	akk_idx_release(&x);
	free(payload);
	free(b.p);
}

/* ---- bad files ---- */

static void test_cannot_open(void **state)
{
	(void)state;
	expect_error(in_dir("missing"), "cannot open: No such file or directory");
	assert_int_equal(mkdir(in_dir("adir"), 0755), 0);
	expect_error(in_dir("adir"), "cannot open: Is a directory");
}

static void test_empty_and_short(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	struct buf b = { NULL, 0 };

	(void)state;
	expect_both("empty", b, "empty file: expected an idx header");
	b = idx_bytes(0x08, 3, dims, NULL, 0);
	b.n = 3;
	expect_both("short3", b, "too short for an idx header: 3 bytes, need at least 4");
	b = idx_bytes(0x08, 3, dims, NULL, 0);
	b.n = 10;
	expect_both("short10", b,
		    "too short for an idx header: 10 bytes, need 16 for rank 3");
}

static void test_bad_magic(void **state)
{
	uint32_t dims[1] = { 4 };
	struct buf b = idx_bytes(0x08, 1, dims, NULL, 4);

	(void)state;
	b.p[0] = 0x50;	/* "PK..": a zip file, say */
	b.p[1] = 0x4b;
	b.p[2] = 0x03;
	b.p[3] = 0x04;
	expect_both("magic", b,
		    "bad magic 0x504b0304: not an idx file (first two bytes must be 0)");
	b = idx_bytes(0x08, 1, dims, NULL, 4);
	b.p[1] = 0x01;
	expect_both("magic2", b,
		    "bad magic 0x00010801: not an idx file (first two bytes must be 0)");
}

static void test_bad_type(void **state)
{
	uint32_t dims[1] = { 4 };

	(void)state;
	expect_both("float", idx_bytes(0x0d, 1, dims, NULL, 16),
		    "unsupported element type 0x0d (float): only 0x08 (unsigned byte) is supported");
	expect_both("t42", idx_bytes(0x42, 1, dims, NULL, 4),
		    "unsupported element type 0x42 (unknown): only 0x08 (unsigned byte) is supported");
}

static void test_bad_rank(void **state)
{
	uint32_t dims[5] = { 1, 1, 1, 1, 1 };

	(void)state;
	expect_both("rank0", idx_bytes(0x08, 0, dims, NULL, 1),
		    "unsupported rank 0: expected 1 to 4 dimensions");
	expect_both("rank5", idx_bytes(0x08, 5, dims, NULL, 1),
		    "unsupported rank 5: expected 1 to 4 dimensions");
}

static void test_zero_dim(void **state)
{
	uint32_t dims[3] = { 10, 0, 28 };

	(void)state;
	expect_both("zero", idx_bytes(0x08, 3, dims, NULL, 0),
		    "zero dimension: 10 x 0 x 28");
}

static void test_truncated(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	uint32_t huge[2] = { 0xffffffffu, 0x7fffffffu };

	(void)state;
	expect_both("trunc", idx_bytes(0x08, 3, dims, NULL, 59),
		    "truncated: header declares 60 bytes of data, file has 59");
	expect_both("nodata", idx_bytes(0x08, 3, dims, NULL, 0),
		    "truncated: header declares 60 bytes of data, file has 0");
	/* A header that claims ~2^63 bytes must not be allocated up front. */
	expect_both("liar", idx_bytes(0x08, 2, huge, NULL, 10),
		    "truncated: header declares 9223372030412324865 bytes of data, file has 10");
}

static void test_trailing(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };

	(void)state;
	expect_both("trail", idx_bytes(0x08, 3, dims, NULL, 61),
		    "trailing garbage: header declares 60 bytes of data, file has 61");
	expect_both("trail-big", idx_bytes(0x08, 3, dims, NULL, 60 + 10000),
		    "trailing garbage: header declares 60 bytes of data, file has 10060");
}

static void test_overflow(void **state)
{
	uint32_t dims[4] = { 0xffffffffu, 0xffffffffu, 0xffffffffu, 2 };

	(void)state;
	expect_both("overflow", idx_bytes(0x08, 4, dims, NULL, 8),
		    "size overflow: 4294967295 x 4294967295 x 4294967295 x 2 bytes does not fit in memory");
}

static void test_corrupt_gzip(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	struct buf raw = idx_bytes(0x08, 3, dims, NULL, 60);
	struct buf z = gz_bytes(raw.p, raw.n);
	uint8_t *copy = malloc(z.n);
	struct buf c = { copy, z.n };
	const char *msg;

	(void)state;
	assert_non_null(copy);
	/* Wrong CRC-32 in the trailer (last 8 bytes: CRC, then size). */
	memcpy(copy, z.p, z.n);
	copy[z.n - 8] ^= 0xff;
	expect_error(write_plain("crc.gz", c),
		     "corrupt gzip stream: incorrect data check");
	/* Wrong length in the trailer. */
	memcpy(copy, z.p, z.n);
	copy[z.n - 1] ^= 0x01;
	expect_error(write_plain("len.gz", c),
		     "corrupt gzip stream: incorrect length check");
	/* Stream cut short, in the data and in the trailer. */
	c.n = z.n / 2;
	expect_error(write_plain("cut.gz", c),
		     "corrupt gzip stream: unexpected end of file");
	c.n = z.n - 3;
	expect_error(write_plain("cut-trailer.gz", c),
		     "corrupt gzip stream: unexpected end of file");
	/* Unknown compression method in the gzip header. */
	c.n = z.n;
	memcpy(copy, z.p, z.n);
	copy[2] = 9;
	expect_error(write_plain("method.gz", c),
		     "corrupt gzip stream: unknown compression method");
	/* Garbage in the deflate data: zlib's wording varies with the bytes,
	 * the prefix does not. */
	memcpy(copy, z.p, z.n);
	memset(copy + 10, 0xff, 8);
	msg = load_fails(write_plain("garbage.gz", c));
	assert_non_null(strstr(msg, "/garbage.gz: corrupt gzip stream: "));
	free(copy);
	free(z.p);
	free(raw.p);
}

/* ---- datasets ---- */

static void write_pair(const char *im, uint32_t n_im, const char *lb,
		       uint32_t n_lb, uint8_t max_label)
{
	uint32_t dims[3] = { n_im, 2, 3 };
	uint8_t *lab = malloc(n_lb);
	struct buf b;

	assert_non_null(lab);
	for (uint32_t i = 0; i < n_lb; i++)
		lab[i] = (uint8_t)(i % (max_label + 1u));
	b = idx_bytes(0x08, 3, dims, NULL, (size_t)n_im * 6);
	write_gz(im, b);
	free(b.p);
	b = idx_bytes(0x08, 1, &n_lb, lab, n_lb);
	write_plain(lb, b);
	free(b.p);
	free(lab);
}

static void test_dataset_good(void **state)
{
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	write_pair("ds-im.gz", 25, "ds-lb", 25, 6);
	assert_int_equal(akk_dataset_load(&d, in_dir("ds-im.gz"), in_dir("ds-lb"), &e), 0);
	assert_int_equal(d.n, 25);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 3);
	assert_int_equal(d.classes, 7);
	assert_int_equal(d.images.item, 6);
	assert_int_equal(d.labels.data[8], 1);
	akk_dataset_release(&d);
	assert_null(d.images.data);
	assert_null(d.labels.data);
}

static void expect_dataset_error(const char *im, const char *lb, const char *want)
{
	struct akk_dataset d;
	struct akk_err e;
	char line[1200];

	memset(&d, 0x55, sizeof(d));
	assert_int_equal(akk_dataset_load(&d, im, lb, &e), -1);
	assert_null(d.images.data);
	assert_null(d.labels.data);
	assert_int_equal(d.n, 0);
	akk_err_format(&e, line, sizeof(line));
	assert_string_equal(line, want);
}

static void test_dataset_mismatch(void **state)
{
	const char *im, *lb;
	char want[1200];

	(void)state;
	write_pair("mm-im.gz", 12, "mm-lb", 11, 9);
	im = in_dir("mm-im.gz");
	lb = in_dir("mm-lb");
	snprintf(want, sizeof(want), "'%s' has 12 images but '%s' has 11 labels", im, lb);
	expect_dataset_error(im, lb, want);
}

static void test_dataset_ranks(void **state)
{
	const char *im, *lb;
	char want[1200];

	(void)state;
	write_pair("rk-im.gz", 4, "rk-lb", 4, 3);
	im = in_dir("rk-im.gz");
	lb = in_dir("rk-lb");
	/* Swapped: the label file where images belong. */
	snprintf(want, sizeof(want),
		 "%s: not an image file: rank 1 (4), expected rank 3 (count x height x width)", lb);
	expect_dataset_error(lb, im, want);
	/* Images where labels belong. */
	snprintf(want, sizeof(want),
		 "%s: not a label file: rank 3 (4 x 2 x 3), expected rank 1 (count)", im);
	expect_dataset_error(im, im, want);
	/* A label file that fails to load reports its own error. */
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory",
		 in_dir("rk-none"));
	expect_dataset_error(im, in_dir("rk-none"), want);
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	int failed;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_plain),
		cmocka_unit_test(test_good_labels_and_rank4),
		cmocka_unit_test(test_gz_equals_plain),
		cmocka_unit_test(test_gz_large),
		cmocka_unit_test(test_cannot_open),
		cmocka_unit_test(test_empty_and_short),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_bad_type),
		cmocka_unit_test(test_bad_rank),
		cmocka_unit_test(test_zero_dim),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_trailing),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_corrupt_gzip),
		cmocka_unit_test(test_dataset_good),
		cmocka_unit_test(test_dataset_mismatch),
		cmocka_unit_test(test_dataset_ranks),
	};

	dir = tu_tmpdir();
	if (!dir) {
		perror("tu_tmpdir");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (!failed)
		nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS);
	return failed;
}
