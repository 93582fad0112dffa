/* test_idx.c - IDX reading: good files plain and gzip, and one crafted bad
 * file per check, each asserting the exact error line. */
#include "testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "data/idx.h"
#include "data/batch.h"
#include "model/model.h"
#include "runtime/run.h"
#include "config/spec.h"
#include "data/synthetic.h"

static const char *dir;

static const char *in_dir(const char *name)
{
	return tu_path(dir, name);
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

	b.p = tu_idx_bytes(type, rank, dims, payload, len, &b.n);
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
	struct buf b;

	(void)state;
	expect_both("trunc", idx_bytes(0x08, 3, dims, NULL, 59),
		    "truncated: header declares 60 bytes of data, file has 59");
	expect_both("nodata", idx_bytes(0x08, 3, dims, NULL, 0),
		    "truncated: header declares 60 bytes of data, file has 0");
	/* A header that claims ~2^63 bytes must not be allocated up front:
	 * a plain file's size says it is short, a gzip stream's declared
	 * size is over the limit. */
	b = idx_bytes(0x08, 2, huge, NULL, 10);
	expect_error(write_plain("liar", b),
		     "truncated: header declares 9223372030412324865 bytes of data, file has 10");
	expect_error(write_gz("liar.gz", b),
		     "too large: header declares 4294967295 x 2147483647 = 9223372030412324865 bytes of data, more than 8589934592");
	free(b.p);
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
	tu_assert_contains(msg, "/garbage.gz: corrupt gzip stream: ");
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
	assert_int_equal(akk_idx_dataset(&d, in_dir("ds-im.gz"), in_dir("ds-lb"), &e), 0);
	assert_int_equal(d.n, 25);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 3);
	assert_int_equal(d.classes, 7);
	assert_int_equal(d.in, 6);
	assert_int_equal(d.c, 1);
	assert_int_equal(d.xtype, AKK_X_U8);
	assert_int_equal(d.labels[8], 1);
	akk_dataset_release(&d);
	assert_null(d.x8);
	assert_null(d.labels);
}

static void expect_dataset_error(const char *im, const char *lb, const char *want)
{
	struct akk_dataset d;
	struct akk_err e;
	char line[1200];

	memset(&d, 0x55, sizeof(d));
	assert_int_equal(akk_idx_dataset(&d, im, lb, &e), -1);
	assert_null(d.x8);
	assert_null(d.labels);
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
		 "%s: not an image file: rank 1 (4), expected rank 3 (count x height x width) or 4 (count x channels x height x width)", lb);
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

/* ---- rank-4 images ---- */

/* N x C x H x W as it is; N x H x W x C (nhwc) made channels first. */
static void test_dataset_rank4(void **state)
{
	uint32_t nchw[4] = { 2, 3, 2, 2 }, nhwc[4] = { 2, 2, 2, 3 }, n = 2;
	uint8_t px[24], lab[2] = { 1, 4 };
	struct akk_dataset d;
	struct akk_err e;
	struct buf b;

	(void)state;
	for (int i = 0; i < 24; i++)
		px[i] = (uint8_t)i;
	b = idx_bytes(0x08, 4, nchw, px, 24);
	write_plain("r4-chw", b);
	free(b.p);
	b = idx_bytes(0x08, 4, nhwc, px, 24);
	write_gz("r4-hwc.gz", b);
	free(b.p);
	b = idx_bytes(0x08, 1, &n, lab, 2);
	write_plain("r4-lb", b);
	free(b.p);

	assert_int_equal(akk_idx_dataset(&d, in_dir("r4-chw"), in_dir("r4-lb"), &e), 0);
	assert_int_equal(d.c, 3);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 2);
	assert_int_equal(d.in, 12);
	assert_int_equal(d.classes, 5);
	assert_memory_equal(d.x8, px, 24);
	akk_dataset_release(&d);

	/* The same file read as nhwc: 3 x 2 x 2 becomes... 2 x 2 x 3 HWC,
	 * so the file's (h, w, c) sample s = 12s + 3(2h + w) + c lands at
	 * channel c, pixel 2h + w. */
	assert_int_equal(akk_idx_dataset_layout(&d, in_dir("r4-hwc.gz"), in_dir("r4-lb"), 1, &e), 0);
	assert_int_equal(d.c, 3);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 2);
	for (int s = 0; s < 2; s++)
		for (int c = 0; c < 3; c++)
			for (int p = 0; p < 4; p++)
				assert_int_equal(d.x8[s * 12 + c * 4 + p],
						 s * 12 + p * 3 + c);
	akk_dataset_release(&d);
}

/* ---- bounds: bombs, endless streams, junk ---- */

/* Peak resident memory of this process so far, in KB. */
static long peak_kb(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* Deflate in (raw) with a full flush: byte-aligned, dictionary reset. */
static size_t deflate_flush(z_stream *zs, const uint8_t *in, size_t n,
			    uint8_t *out, size_t size)
{
	zs->next_in = (Bytef *)in;
	zs->avail_in = (uInt)n;
	zs->next_out = out;
	zs->avail_out = (uInt)size;
	assert_int_equal(deflate(zs, Z_FULL_FLUSH), Z_OK);
	assert_int_equal(zs->avail_in, 0);
	assert_true(zs->avail_out > 0);
	return size - zs->avail_out;
}

/* A gzip bomb: an IDX header for dims (rank 3), then GiB gibibytes of
 * zeros (the first of them its data), about 1 MB on disk per GiB. After a full flush
 * deflate codes every MiB of zeros to the same bytes, so they are
 * compressed once and repeated; the trailer's CRC is combined. */
static const char *write_bomb(const char *name, const uint32_t *dims, int gib)
{
	const size_t mib = (size_t)1 << 20;
	size_t n, na, nb;
	struct buf b = idx_bytes(0x08, 3, dims, NULL, 0);
	uint8_t *zeros = calloc(mib, 1), *out = malloc(2 * mib), *rep;
	static const uint8_t gzhdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3 };
	uLong crc = crc32(0, b.p, (uInt)b.n), zcrc = crc32(0, zeros, (uInt)mib);
	unsigned long long total = b.n;
	const char *path = in_dir(name);
	FILE *f = fopen(path, "wb");
	z_stream zs;

	assert_non_null(zeros);
	assert_non_null(out);
	assert_non_null(f);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	assert_int_equal(fwrite(gzhdr, 1, 10, f), 10);
	n = deflate_flush(&zs, b.p, b.n, out, 2 * mib);
	assert_int_equal(fwrite(out, 1, n, f), n);
	na = deflate_flush(&zs, zeros, mib, out, mib);
	rep = out + mib;
	nb = deflate_flush(&zs, zeros, mib, rep, mib);
	assert_int_equal(na, nb);
	assert_memory_equal(out, rep, na);
	for (long i = 0; i < 1024L * gib; i++) {
		assert_int_equal(fwrite(rep, 1, nb, f), nb);
		crc = crc32_combine(crc, zcrc, (z_off_t)mib);
		total += mib;
	}
	zs.next_in = NULL;
	zs.avail_in = 0;
	zs.next_out = out;
	zs.avail_out = (uInt)mib;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	n = mib - zs.avail_out;
	assert_int_equal(fwrite(out, 1, n, f), n);
	deflateEnd(&zs);
	for (int i = 0; i < 4; i++)
		fputc((int)(crc >> 8 * i & 0xff), f);
	for (int i = 0; i < 4; i++)
		fputc((int)(total >> 8 * i & 0xff), f);
	assert_int_equal(fclose(f), 0);
	free(zeros);
	free(out);
	free(b.p);
	return path;
}

static void test_gzip_bomb(void **state)
{
	uint32_t small[3] = { 10, 28, 28 }, big[3] = { 4000000, 28, 28 };
	struct stat st;
	const char *path;
	long before = peak_kb();

	(void)state;
	/* 1 GiB of zeros after 10 images: inflating stops 64 KiB past the
	 * declared 7840 bytes. */
	path = write_bomb("bomb.gz", small, 1);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size < 2000000);
	expect_error(path, "trailing garbage: header declares 7840 bytes of data, file has more than 73376");
	/* 4,000,000 images declared: more than a file of this size can
	 * inflate to, refused before anything is inflated. */
	path = write_bomb("bomb-big.gz", big, 1);
	assert_int_equal(stat(path, &st), 0);
	char want[200];
	snprintf(want, sizeof(want), "implausible: header declares 3136000000 bytes of data, more than a gzip file of %lld bytes can hold",
		 (long long)st.st_size);
	expect_error(path, want);
	/* Bounded memory: nothing near the gibibyte was held. */
	assert_true(peak_kb() - before < 64 * 1024);
}

/* A FIFO fed by a child: an IDX header for dims, its data, then extra
 * zero bytes. Returns the child's pid. */
static pid_t feed_fifo(const char *path, const uint32_t *dims, size_t data,
		       size_t extra)
{
	struct buf b = idx_bytes(0x08, 3, dims, NULL, data);
	pid_t pid;

	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t zeros[65536];
		int fd;
		signal(SIGPIPE, SIG_IGN);
		fd = open(path, O_WRONLY);
		if (fd < 0 || write(fd, b.p, b.n) != (ssize_t)b.n)
			_exit(1);
		while (extra) {
			size_t n = extra < sizeof(zeros) ? extra : sizeof(zeros);
			ssize_t w = write(fd, zeros, n);
			if (w <= 0)
				_exit(0);	/* the reader stopped */
			extra -= (size_t)w;
		}
		_exit(0);
	}
	free(b.p);
	return pid;
}

static void test_fifo_bounded(void **state)
{
	uint32_t dims[3] = { 10, 28, 28 }, huge[3] = { 0xffffffffu, 2, 2 };
	const char *path = in_dir("fifo");
	int status;
	pid_t pid;

	(void)state;
	/* 8 MiB after the data: read up to 64 KiB past it, no further. */
	pid = feed_fifo(path, dims, 7840, (size_t)8 << 20);
	expect_error(path, "trailing garbage: header declares 7840 bytes of data, file has more than 73376");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* A stream that declares more than the limit is refused at once. */
	pid = feed_fifo(path, huge, 0, (size_t)8 << 20);
	expect_error(path, "too large: header declares 4294967295 x 2 x 2 = 17179869180 bytes of data, more than 8589934592");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* The right amount through a FIFO loads. */
	pid = feed_fifo(path, dims, 7840, 0);
	{
		struct akk_idx x;
		struct akk_err e;
		assert_int_equal(akk_idx_load(&x, path, &e), 0);
		assert_int_equal(x.count, 10);
		akk_idx_release(&x);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_gzip_junk(void **state)
{
	uint32_t dims[3] = { 3, 4, 5 };
	struct buf raw = idx_bytes(0x08, 3, dims, NULL, 60);
	struct buf z = gz_bytes(raw.p, raw.n);
	struct buf half1 = gz_bytes(raw.p, 30), half2 = gz_bytes(raw.p + 30, 46);
	uint8_t *copy = malloc(z.n + half1.n + half2.n + 16);
	struct buf c = { copy, 0 };
	char want[200];
	struct akk_idx x;
	struct akk_err e;

	(void)state;
	assert_non_null(copy);
	/* Junk after the stream. */
	memcpy(copy, z.p, z.n);
	memcpy(copy + z.n, "junk", 4);
	c.n = z.n + 4;
	snprintf(want, sizeof(want), "junk after the gzip stream at byte %zu", z.n);
	expect_error(write_plain("junk.gz", c), want);
	/* Zero padding is junk too. */
	memset(copy + z.n, 0, 16);
	c.n = z.n + 16;
	expect_error(write_plain("pad.gz", c), want);
	/* Two members, as `cat a.gz b.gz` makes, are one stream. */
	memcpy(copy, half1.p, half1.n);
	memcpy(copy + half1.n, half2.p, half2.n);
	c.n = half1.n + half2.n;
	assert_int_equal(akk_idx_load(&x, write_plain("two.gz", c), &e), 0);
	assert_memory_equal(x.data, raw.p + 16, 60);
	akk_idx_release(&x);
	free(copy);
	free(z.p);
	free(half1.p);
	free(half2.p);
	free(raw.p);
}

/* A label past the network's classes is reported at the label file. */
static void test_label_range_names_labels(void **state)
{
	static const char cfg[] =
		"data:\n  train: {images: i, labels: l}\n"
		"network:\n  input: [6]\n  gates:\n    - layers: [{dense: 3}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset d;
	struct akk_err e;
	const char *im, *lb;

	(void)state;
	write_pair("lr-im.gz", 8, "lr-lb", 8, 5);
	im = in_dir("lr-im.gz");
	lb = in_dir("lr-lb");
	assert_int_equal(akk_spec_parse(&s, cfg, strlen(cfg), "t.yaml", NULL,
					NULL, 0, &e), 0);
	free(s.data.train.images);
	free(s.data.train.labels);
	s.data.train.images = strdup(im);
	s.data.train.labels = strdup(lb);
	assert_int_equal(akk_model_plan(&m, &s, &e), 0);
	assert_int_equal(akk_idx_dataset(&d, im, lb, &e), 0);
	assert_int_equal(akk_run_check_data(&m, &d, NULL, &e), -1);
	assert_string_equal(e.file, lb);
	assert_string_equal(e.msg, "training labels go up to 5, but the network outputs 3 classes");
	akk_dataset_release(&d);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* Sizes that overflow are refused, not wrapped into a small allocation. */
static void test_sizes_overflow(void **state)
{
	struct akk_batch b;
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	assert_int_equal(akk_batch_alloc(&b, 65536, SIZE_MAX / 4096 + 2, 10, 1), -1);
	assert_null(b.x);
	assert_int_equal(akk_batch_alloc(&b, 4, 784, 10, 1), 0);
	akk_batch_release(&b);
	assert_int_equal(akk_dataset_synthetic(&d, ((size_t)1 << 62) + 1, 4, 10, 1, &e), -1);
	assert_string_equal(e.msg, "cannot make 4611686018427387905 synthetic samples of 4 values in 10 classes");
	assert_null(d.x8);
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
		cmocka_unit_test(test_dataset_rank4),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_fifo_bounded),
		cmocka_unit_test(test_gzip_junk),
		cmocka_unit_test(test_label_range_names_labels),
		cmocka_unit_test(test_sizes_overflow),
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
