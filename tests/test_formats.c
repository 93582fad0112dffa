/* test_formats.c - the .npy and CIFAR-10 readers: good files of every
 * supported type, a bad-file corpus with the exact error lines, the config
 * keys, and a tiny set of each format trained and evaluated from the
 * command line. */
#include "testutil.h"

#include <math.h>
#include <png.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "data/cifar.h"
#include "data/npy.h"
#include "data/open.h"

static const char *dir;
static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static const char *in_dir(const char *name)
{
	return tu_path(dir, name);
}

/* A .npy file: magic, version, the header text `dict` padded with spaces
 * and a newline to a multiple of 64 bytes (pad 0: as given), then len
 * data bytes. */
static const char *write_raw_npy(const char *name, int major, const char *dict,
				 int pad, const void *data, size_t len)
{
	size_t pre = major == 1 ? 10 : 12, hl = strlen(dict);
	size_t total;
	uint8_t *b;

	if (pad)
		hl = ((pre + hl + 1 + 63) / 64) * 64 - pre;
	total = pre + hl + len;
	b = malloc(total);
	assert_non_null(b);
	memcpy(b, "\x93NUMPY", 6);
	b[6] = (uint8_t)major;
	b[7] = 0;
	b[8] = (uint8_t)hl;
	b[9] = (uint8_t)(hl >> 8);
	if (major > 1) {
		b[10] = (uint8_t)(hl >> 16);
		b[11] = (uint8_t)(hl >> 24);
	}
	memset(b + pre, ' ', hl);
	memcpy(b + pre, dict, strlen(dict));
	if (pad)
		b[pre + hl - 1] = '\n';
	if (len)
		memcpy(b + pre + hl, data, len);
	assert_int_equal(tu_write_file(in_dir(name), b, total), 0);
	free(b);
	return in_dir(name);
}

static const char *write_npy(const char *name, const char *descr,
			     const char *shape, const void *data, size_t len)
{
	char dict[256];

	snprintf(dict, sizeof(dict),
		 "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
		 descr, shape);
	return write_raw_npy(name, 1, dict, 1, data, len);
}

static void expect_load_error(const char *path, const char *msg)
{
	struct akk_npy a;
	struct akk_err e;
	char line[1200], want[1200];

	assert_int_equal(akk_npy_load(&a, path, &e), -1);
	assert_null(a.data);
	akk_err_format(&e, line, sizeof(line));
	snprintf(want, sizeof(want), "%s: %s", path, msg);
	assert_string_equal(line, want);
}

static void expect_dataset_error(const char *f, const char *l, int nhwc,
				 const char *want)
{
	struct akk_dataset d;
	struct akk_err e;
	char line[1200];

	assert_int_equal(akk_npy_dataset(&d, f, l, nhwc, &e), -1);
	assert_null(d.x8);
	assert_null(d.xf);
	assert_null(d.labels);
	assert_null(d.y);
	akk_err_format(&e, line, sizeof(line));
	assert_string_equal(line, want);
}

/* ---- .npy: good files ---- */

/* Sequences from .npy: float features (N, T, F) feed a network whose
 * input is [T, F] (an lstm), int64 token ids (N, T) an embedding, read
 * unscaled; an id past the vocabulary is refused before the run, naming
 * the file, the sample and the step. */
static void test_npy_sequences(void **state)
{
	enum { N = 48, T = 6, F = 3 };
	static float x[N][T][F];
	static int64_t ids[N][T], y[N];
	char cfg[1024];

	(void)state;
	for (int i = 0; i < N; i++) {
		y[i] = i % 2;
		for (int t = 0; t < T; t++) {
			ids[i][t] = (i * 7 + t * 3) % 10;
			for (int f = 0; f < F; f++)
				x[i][t][f] = (float)((i % 2 ? 1 : -1) * (t + 1) + f) / 10.0f;
		}
	}
	write_npy("seq-x.npy", "<f4", "(48, 6, 3)", x, sizeof(x));
	write_npy("seq-ids.npy", "<i8", "(48, 6)", ids, sizeof(ids));
	write_npy("seq-y.npy", "<i8", "(48,)", y, sizeof(y));
	snprintf(cfg, sizeof(cfg),
		 "data:\n  format: npy\n  train: {features: seq-x.npy, labels: seq-y.npy}\n"
		 "network:\n  input: [6, 3]\n  gates:\n    - layers: [{lstm: 8}, {dense: 2}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\noutput: {dir: seq-run}\n");
	assert_int_equal(tu_write_file(in_dir("seq.yaml"), cfg, strlen(cfg)), 0);
	assert_int_equal(ak("train", in_dir("seq.yaml"), "--quiet", NULL), 0);
	snprintf(cfg, sizeof(cfg),
		 "data:\n  format: npy\n  train: {features: seq-ids.npy, labels: seq-y.npy}\n"
		 "network:\n  input: [6]\n  gates:\n"
		 "    - layers: [{embedding: {vocab: %d, units: 4}}, {gru: 8}, {dense: 2}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\noutput: {dir: ids-run}\n", 10);
	assert_int_equal(tu_write_file(in_dir("ids.yaml"), cfg, strlen(cfg)), 0);
	assert_int_equal(ak("train", in_dir("ids.yaml"), "--quiet", NULL), 0);
	/* a vocabulary of 9: the id 9 is no token id */
	{
		char *v = strstr(cfg, "vocab: 10");
		assert_non_null(v);
		memcpy(v, "vocab:  9", 9);
	}
	assert_int_equal(tu_write_file(in_dir("ids9.yaml"), cfg, strlen(cfg)), 0);
	assert_int_equal(ak("train", in_dir("ids9.yaml"), "--quiet", "--force", NULL), 2);
	tu_assert_contains(g_err, "seq-ids.npy: sample ");
	tu_assert_contains(g_err, "9 is not a token id of the first layer's vocabulary (integers 0 to 8)");
}

static void test_npy_float_int64(void **state)
{
	float x[6] = { 0.5f, -1, 2, 3.25f, 4, -5 };
	int64_t y[3] = { 2, 0, 1 };
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	write_npy("f4.npy", "<f4", "(3, 2)", x, sizeof(x));
	write_npy("i8.npy", "<i8", "(3,)", y, sizeof(y));
	assert_int_equal(akk_npy_dataset(&d, in_dir("f4.npy"), in_dir("i8.npy"), 0, &e), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.in, 2);
	assert_int_equal(d.c, 1);
	assert_int_equal(d.h, 1);
	assert_int_equal(d.w, 2);
	assert_int_equal(d.xtype, AKK_X_F32);
	assert_memory_equal(d.xf, x, sizeof(x));
	assert_int_equal(d.classes, 3);
	assert_int_equal(d.labels[0], 2);
	assert_int_equal(d.labels[2], 1);
	assert_null(d.y);
	akk_dataset_release(&d);
}

static void test_npy_bytes_images(void **state)
{
	uint8_t x[2 * 2 * 3], y[2] = { 7, 1 };
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	for (int i = 0; i < 12; i++)
		x[i] = (uint8_t)(200 + i);
	write_npy("u1.npy", "|u1", "(2, 2, 3)", x, sizeof(x));
	write_npy("u1l.npy", "|u1", "(2,)", y, sizeof(y));
	/* version 2.0 header, same data */
	write_raw_npy("u1v2.npy", 2,
		      "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 3), }",
		      1, x, sizeof(x));
	assert_int_equal(akk_npy_dataset(&d, in_dir("u1.npy"), in_dir("u1l.npy"), 0, &e), 0);
	assert_int_equal(d.xtype, AKK_X_U8);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 3);
	assert_int_equal(d.in, 6);
	assert_memory_equal(d.x8, x, sizeof(x));
	assert_int_equal(d.classes, 8);
	akk_dataset_release(&d);
	assert_int_equal(akk_npy_dataset(&d, in_dir("u1v2.npy"), in_dir("u1l.npy"), 0, &e), 0);
	assert_memory_equal(d.x8, x, sizeof(x));
	akk_dataset_release(&d);
}

/* Big-endian float64 and int16, signed values. */
static void test_npy_big_endian(void **state)
{
	uint8_t x[16], y[4] = { 0x00, 0x05, 0x01, 0x02 };
	double v[2] = { -1.5, 1e10 };
	struct akk_npy a;
	struct akk_err e;
	struct akk_dataset d;

	(void)state;
	for (int i = 0; i < 2; i++) {
		uint64_t u;
		memcpy(&u, &v[i], 8);
		for (int k = 0; k < 8; k++)
			x[i * 8 + k] = (uint8_t)(u >> (56 - 8 * k));
	}
	write_npy("be.npy", ">f8", "(2, 1)", x, sizeof(x));
	write_npy("bel.npy", ">i2", "(2,)", y, sizeof(y));
	assert_int_equal(akk_npy_dataset(&d, in_dir("be.npy"), in_dir("bel.npy"), 0, &e), 0);
	assert_true(d.xf[0] == -1.5f);
	assert_true(d.xf[1] == 1e10f);
	assert_int_equal(d.labels[0], 5);
	assert_int_equal(d.labels[1], 258);
	akk_dataset_release(&d);
	/* sign extension */
	{
		int8_t s[3] = { -1, -128, 127 };
		write_npy("i1.npy", "|i1", "(3,)", s, 3);
		assert_int_equal(akk_npy_load(&a, in_dir("i1.npy"), &e), 0);
		assert_true(akk_npy_get(&a, 0) == -1);
		assert_true(akk_npy_get(&a, 1) == -128);
		assert_true(akk_npy_get(&a, 2) == 127);
		akk_npy_release(&a);
	}
}

/* N x H x W x C is made channels first; N x C x H x W stays. */
static void test_npy_nhwc(void **state)
{
	float x[2 * 2 * 2 * 3];
	uint8_t y[2] = { 0, 1 };
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	write_npy("hwc.npy", "<f4", "(2, 2, 2, 3)", x, sizeof(x));
	write_npy("hwcl.npy", "|u1", "(2,)", y, sizeof(y));
	assert_int_equal(akk_npy_dataset(&d, in_dir("hwc.npy"), in_dir("hwcl.npy"), 1, &e), 0);
	assert_int_equal(d.c, 3);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 2);
	for (int s = 0; s < 2; s++)
		for (int c = 0; c < 3; c++)
			for (int p = 0; p < 4; p++)
				assert_true(d.xf[s * 12 + c * 4 + p] ==
					    (float)(s * 12 + p * 3 + c));
	akk_dataset_release(&d);
	assert_int_equal(akk_npy_dataset(&d, in_dir("hwc.npy"), in_dir("hwcl.npy"), 0, &e), 0);
	assert_int_equal(d.c, 2);
	assert_int_equal(d.h, 2);
	assert_int_equal(d.w, 3);
	assert_memory_equal(d.xf, x, sizeof(x));
	akk_dataset_release(&d);
}

/* Float labels are regression targets. */
static void test_npy_regression(void **state)
{
	float x[3] = { 1, 2, 3 }, y[6] = { 0.5f, 1, 1.5f, 2, 2.5f, 3 };
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	write_npy("rx.npy", "<f4", "(3, 1)", x, sizeof(x));
	write_npy("ry.npy", "<f4", "(3, 2)", y, sizeof(y));
	assert_int_equal(akk_npy_dataset(&d, in_dir("rx.npy"), in_dir("ry.npy"), 0, &e), 0);
	assert_null(d.labels);
	assert_int_equal(d.classes, 0);
	assert_int_equal(d.targets, 2);
	assert_memory_equal(d.y, y, sizeof(y));
	akk_dataset_release(&d);
}

/* ---- .npy: the bad-file corpus ---- */

static void test_npy_bad_headers(void **state)
{
	float x[4] = { 0 };
	const char *p;

	(void)state;
	assert_int_equal(tu_write_file(in_dir("empty.npy"), "", 0), 0);
	expect_load_error(in_dir("empty.npy"), "empty file: expected a .npy header");
	assert_int_equal(tu_write_file(in_dir("magic.npy"), "PK\3\4 not npy", 12), 0);
	expect_load_error(in_dir("magic.npy"),
			  "bad magic: not a .npy file (it must start with \\x93NUMPY)");
	assert_int_equal(tu_write_file(in_dir("short.npy"), "\x93NUMPY\1\0", 8), 0);
	expect_load_error(in_dir("short.npy"),
			  "truncated: 8 bytes, too short for a .npy header");
	assert_int_equal(tu_write_file(in_dir("v9.npy"), "\x93NUMPY\x09\0\0\0", 10), 0);
	expect_load_error(in_dir("v9.npy"),
			  "unsupported .npy version 9.0: expected 1.0, 2.0 or 3.0");
	/* header length beyond the file */
	assert_int_equal(tu_write_file(in_dir("hlen.npy"), "\x93NUMPY\1\0\x40\0{'descr'", 18), 0);
	expect_load_error(in_dir("hlen.npy"),
			  "truncated: header length at byte 8 says 64 bytes, file has 8");
	p = write_npy("fortran.npy", "<f4", "(2, 2)", x, sizeof(x));
	write_raw_npy("fortran.npy", 1,
		      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
		      1, x, sizeof(x));
	expect_load_error(p, "'fortran_order' is True: only C-order arrays are read (save with np.ascontiguousarray)");
	p = write_npy("object.npy", "|O", "(2,)", x, 16);
	expect_load_error(p, "'descr' '|O' is an object array, which cannot be read without Python");
	p = write_npy("c8.npy", "<c8", "(2,)", x, 16);
	expect_load_error(p, "'descr' '<c8' is not supported: expected uint8..64, int8..64, float32 or float64 ('<u1', '<i8', '<f4', ...)");
	p = write_npy("f2.npy", "<f2", "(2,)", x, 4);
	expect_load_error(p, "'descr' '<f2' is not supported: expected uint8..64, int8..64, float32 or float64 ('<u1', '<i8', '<f4', ...)");
	/* an unterminated dict: the offset is the end of the header */
	p = write_raw_npy("unterm.npy", 1,
			  "{'descr': '<f4', 'fortran_order': False, 'shape': (2,",
			  0, NULL, 0);
	expect_load_error(p, "bad header at byte 63: unterminated dict");
	p = write_raw_npy("unterm2.npy", 1, "{'descr': '<f4'", 0, NULL, 0);
	expect_load_error(p, "bad header at byte 25: unterminated dict");
	/* a NUL inside a string of the header */
	p = write_raw_npy("nul.npy", 1,
			  "{'descr': '<f4@', 'fortran_order': False, 'shape': (2,), }", 1, x, 8);
	{
		int fd = open(p, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "", 1, 24), 1);	/* the '@' */
		close(fd);
	}
	expect_load_error(p, "bad header at byte 24: a NUL byte in a string");
	p = write_raw_npy("nokey.npy", 1, "{'descr': '<f4', 'shape': (2,), }", 1, x, 8);
	expect_load_error(p, "bad header: the dict has no 'fortran_order'");
	p = write_raw_npy("extra.npy", 1,
			  "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
			  1, x, 8);
	expect_load_error(p, "bad header at byte 66: unknown key (expected 'descr', 'fortran_order', 'shape')");
	p = write_raw_npy("dup.npy", 1,
			  "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
			  1, x, 8);
	expect_load_error(p, "bad header at byte 27: duplicate key");
	p = write_npy("scalar.npy", "<f4", "()", x, 4);
	expect_load_error(p, "'shape' is () (a scalar): expected at least one dimension");
	p = write_npy("neg.npy", "<f4", "(-2,)", x, 8);
	expect_load_error(p, "bad header at byte 61: 'shape' must hold non-negative integers");
	p = write_npy("zero.npy", "<f4", "(0, 3)", x, 0);
	expect_load_error(p, "'shape' (0 x 3) has a zero dimension");
	p = write_npy("huge.npy", "<f4", "(99999999999999999999,)", x, 0);
	expect_load_error(p, "bad header at byte 80: 'shape' dimension too large");
	p = write_npy("ovf.npy", "<f8", "(4294967296, 4294967296)", x, 0);
	expect_load_error(p, "size overflow: 'shape' 4294967296 x 4294967296 does not fit in memory");
}

/* The header lies about the data's size. */
static void test_npy_bad_sizes(void **state)
{
	float x[5] = { 0 };
	const char *p;

	(void)state;
	p = write_npy("trunc.npy", "<f4", "(5,)", x, 16);
	expect_load_error(p, "truncated: 'shape' (5) and 'descr' declare 20 bytes of data, file has 16");
	p = write_npy("trail.npy", "<f4", "(3,)", x, 20);
	expect_load_error(p, "trailing garbage: 'shape' (3) and 'descr' declare 12 bytes of data, file has 20");
	p = write_npy("big.npy", "<f8", "(1073741824, 2)", x, 0);
	expect_load_error(p, "truncated: 'shape' (1073741824 x 2) and 'descr' declare 17179869184 bytes of data, file has 0");
}

static void test_npy_bad_datasets(void **state)
{
	float x[4] = { 1, 2, 3, 4 }, nan[2] = { 1, NAN };
	int32_t y[3] = { 0, -1, 2 }, big[2] = { 0, 70000 };
	char want[1200];

	(void)state;
	write_npy("bx.npy", "<f4", "(2, 2)", x, sizeof(x));
	write_npy("b1.npy", "<f4", "(4,)", x, sizeof(x));
	write_npy("by3.npy", "<i4", "(3,)", y, sizeof(y));
	write_npy("by2.npy", "<i4", "(2,)", y, 8);
	write_npy("bbig.npy", "<i4", "(2,)", big, sizeof(big));
	write_npy("bnan.npy", "<f4", "(2, 1)", nan, sizeof(nan));
	write_npy("by22.npy", "<i4", "(1, 2)", y, 8);
	/* count mismatch */
	snprintf(want, sizeof(want), "'%s' has 2 samples but '%s' has 3 labels",
		 in_dir("bx.npy"), in_dir("by3.npy"));
	expect_dataset_error(in_dir("bx.npy"), in_dir("by3.npy"), 0, want);
	/* wrong shape: features of one dimension; labels of two */
	snprintf(want, sizeof(want), "%s: features of shape 4: expected 2 to 4 dimensions (N x features, N x H x W, N x C x H x W or N x H x W x C)",
		 in_dir("b1.npy"));
	expect_dataset_error(in_dir("b1.npy"), in_dir("b1.npy"), 0, want);
	write_npy("bx1.npy", "<f4", "(1, 4)", x, sizeof(x));
	snprintf(want, sizeof(want), "%s: class labels of shape 1 x 2: expected one dimension (N)",
		 in_dir("by22.npy"));
	expect_dataset_error(in_dir("bx1.npy"), in_dir("by22.npy"), 0, want);
	/* label out of range */
	snprintf(want, sizeof(want), "%s: label 2 is -1: class labels must be 0 to 65535",
		 in_dir("by2.npy"));
	expect_dataset_error(in_dir("bx.npy"), in_dir("by2.npy"), 0, want);
	snprintf(want, sizeof(want), "%s: label 2 is 70000: class labels must be 0 to 65535",
		 in_dir("bbig.npy"));
	expect_dataset_error(in_dir("bx.npy"), in_dir("bbig.npy"), 0, want);
	/* not a number */
	snprintf(want, sizeof(want), "%s: value 1 (sample 2) is nan: not a finite float32",
		 in_dir("bnan.npy"));
	expect_dataset_error(in_dir("bnan.npy"), in_dir("by2.npy"), 0, want);
	/* a missing file */
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory",
		 in_dir("none.npy"));
	expect_dataset_error(in_dir("bx.npy"), in_dir("none.npy"), 0, want);
}

/* ---- CIFAR-10 ---- */

/* n records, record i labelled labels[i] (NULL: i % 10), pixel k of
 * record i = (i + k) % 256. */
static const char *write_cifar(const char *name, size_t n, const uint8_t *labels,
			       size_t cut)
{
	size_t size = n * AKK_CIFAR_RECORD - cut;
	uint8_t *b = malloc(size ? size : 1);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < AKK_CIFAR_RECORD && i * AKK_CIFAR_RECORD + k < size; k++)
			b[i * AKK_CIFAR_RECORD + k] = k == 0 ?
				(labels ? labels[i] : (uint8_t)(i % 10)) :
				(uint8_t)((i + k - 1) % 256);
	assert_int_equal(tu_write_file(in_dir(name), b, size), 0);
	free(b);
	return in_dir(name);
}

static void test_cifar_good(void **state)
{
	const char *files[2];
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	files[0] = strdup(write_cifar("data_batch_1.bin", 3, NULL, 0));
	files[1] = strdup(write_cifar("data_batch_2.bin", 2, NULL, 0));
	assert_int_equal(akk_cifar_dataset(&d, files, 2, &e), 0);
	assert_int_equal(d.n, 5);
	assert_int_equal(d.c, 3);
	assert_int_equal(d.h, 32);
	assert_int_equal(d.w, 32);
	assert_int_equal(d.in, 3072);
	assert_int_equal(d.classes, 10);
	assert_int_equal(d.xtype, AKK_X_U8);
	/* record 1 of the second file is sample 4 */
	assert_int_equal(d.labels[3], 0);
	assert_int_equal(d.labels[4], 1);
	assert_int_equal(d.x8[4 * 3072 + 0], 1);
	assert_int_equal(d.x8[4 * 3072 + 1024], (1 + 1024) % 256);
	assert_int_equal(d.x8[2 * 3072 + 3071], (2 + 3071) % 256);
	assert_string_equal(d.class_names[0], "airplane");
	assert_string_equal(d.class_names[9], "truck");
	akk_dataset_release(&d);
	free((void *)files[0]);
	free((void *)files[1]);
}

static void test_cifar_meta(void **state)
{
	const char *sub = tu_path(dir, "meta"), *f;
	char cmd[600], want[1200];
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", sub);
	assert_int_equal(system(cmd), 0);
	f = write_cifar("meta/test_batch.bin", 1, NULL, 0);
	{
		const char *names = "a0\na1\na2\na3\na4\na5\na6\na7\na8\nzebra\n\n";
		assert_int_equal(tu_write_file(tu_path(sub, "batches.meta.txt"), names, strlen(names)), 0);
	}
	assert_int_equal(akk_cifar_dataset(&d, &f, 1, &e), 0);
	assert_string_equal(d.class_names[0], "a0");
	assert_string_equal(d.class_names[9], "zebra");
	akk_dataset_release(&d);
	assert_int_equal(tu_write_file(tu_path(sub, "batches.meta.txt"), "cat\ndog\n", 8), 0);
	assert_int_equal(akk_cifar_dataset(&d, &f, 1, &e), -1);
	akk_err_format(&e, want, sizeof(want));
	tu_assert_contains(want, "batches.meta.txt: 2 class names, expected 10");
	/* a NUL inside a name is an error at its place, not a cut name */
	assert_int_equal(tu_write_file(tu_path(sub, "batches.meta.txt"),
				       "a0\na1\na2\na3\nca\0t\na5\na6\na7\na8\na9\n", 31), 0);
	assert_int_equal(akk_cifar_dataset(&d, &f, 1, &e), -1);
	akk_err_format(&e, want, sizeof(want));
	tu_assert_contains(want, "batches.meta.txt:5:3: a NUL byte in a class name");
	/* bounded before it is read: /dev/zero is not read through */
	assert_int_equal(unlink(tu_path(sub, "batches.meta.txt")), 0);
	assert_int_equal(symlink("/dev/zero", tu_path(sub, "batches.meta.txt")), 0);
	assert_int_equal(akk_cifar_dataset(&d, &f, 1, &e), -1);
	akk_err_format(&e, want, sizeof(want));
	tu_assert_contains(want, "batches.meta.txt: not a regular file");
	assert_int_equal(unlink(tu_path(sub, "batches.meta.txt")), 0);
}

static void expect_cifar_error(const char *const *files, int n, const char *msg)
{
	struct akk_dataset d;
	struct akk_err e;
	char line[1200];

	assert_int_equal(akk_cifar_dataset(&d, files, n, &e), -1);
	assert_null(d.x8);
	assert_null(d.labels);
	assert_null(d.class_names);
	akk_err_format(&e, line, sizeof(line));
	assert_string_equal(line, msg);
}

static void test_cifar_bad(void **state)
{
	uint8_t labels[3] = { 9, 10, 0 };
	const char *files[2];
	char want[1200];

	(void)state;
	files[0] = strdup(write_cifar("good.bin", 2, NULL, 0));
	files[1] = write_cifar("cut.bin", 3, NULL, 100);
	snprintf(want, sizeof(want), "%s: size 9119 is not a multiple of 3073 (one label byte and 3072 pixel bytes per record): record 3 is cut after 2973 bytes",
		 files[1]);
	expect_cifar_error(files, 2, want);
	files[1] = write_cifar("label.bin", 3, labels, 0);
	snprintf(want, sizeof(want), "%s: record 2 (byte 3073): label 10 is not a CIFAR-10 class (0 to 9)",
		 files[1]);
	expect_cifar_error(files, 2, want);
	files[1] = write_cifar("empty.bin", 0, NULL, 0);
	snprintf(want, sizeof(want), "%s: empty file: expected CIFAR-10 records of 3073 bytes",
		 files[1]);
	expect_cifar_error(files, 2, want);
	files[1] = in_dir("nothing.bin");
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", files[1]);
	expect_cifar_error(files, 2, want);
	files[1] = dir;
	snprintf(want, sizeof(want), "%s: not a regular file: a CIFAR-10 file is read by its size", dir);
	expect_cifar_error(files, 2, want);
	free((void *)files[0]);
}

/* ---- the config keys ---- */

static void expect_spec(const char *data, const char *want)
{
	char text[2048], line[1200];
	struct akk_spec s;
	struct akk_err e;
	int rc;

	snprintf(text, sizeof(text),
		 "data:\n%s"
		 "network: {input: [4], gates: [{layers: [{dense: 3}]}]}\n"
		 "optimizer: {type: sgd, lr: 0.1}\n", data);
	rc = akk_spec_parse(&s, text, strlen(text), "t.yaml", "base", NULL, 0, &e);
	if (!want) {
		if (rc) {
			akk_err_format(&e, line, sizeof(line));
			fail_msg("%s", line);
		}
		akk_spec_release(&s);
		return;
	}
	assert_int_equal(rc, -1);
	akk_err_format(&e, line, sizeof(line));
	assert_string_equal(line, want);
}

static void test_spec_keys(void **state)
{
	struct akk_spec s;
	struct akk_err e;
	const char *t =
		"data:\n"
		"  format: cifar10\n"
		"  train: {files: [a.bin, /abs/b.bin]}\n"
		"  validation: {files: [t.bin]}\n"
		"  layout: nhwc\n"
		"  augment: {crop_padding: 4, flip: true, translate: 2}\n"
		"network: {input: [4], gates: [{layers: [{dense: 3}]}]}\n"
		"optimizer: {type: sgd, lr: 0.1}\n";

	(void)state;
	assert_int_equal(akk_spec_parse(&s, t, strlen(t), "t.yaml", "base", NULL, 0, &e), 0);
	assert_string_equal(s.data.format, "cifar10");
	assert_int_equal(s.data.train.files.n, 2);
	assert_string_equal(s.data.train.files.v[0], "base/a.bin");
	assert_string_equal(s.data.train.files.v[1], "/abs/b.bin");
	assert_string_equal(s.data.val.files.v[0], "base/t.bin");
	assert_int_equal(s.data.layout_nhwc, 1);
	assert_int_equal(s.data.augment, 1);
	assert_int_equal(s.data.crop_padding, 4);
	assert_int_equal(s.data.flip, 1);
	assert_int_equal(s.data.translate, 2);
	assert_true(akk_data_has(&s.data, AKK_DATA_VAL));
	akk_spec_release(&s);

	expect_spec("  format: npy\n  train: {features: x.npy, labels: y.npy}\n", NULL);
	expect_spec("  format: npy\n  train: {images: x.npy, labels: y.npy}\n",
		    "t.yaml:3:10: missing required key 'features' in data.train (data format 'npy')");
	expect_spec("  format: npy\n  train: {features: x.npy}\n",
		    "t.yaml:3:10: missing required key 'labels' in data.train (data format 'npy')");
	expect_spec("  format: cifar10\n  train: {files: [a], labels: y}\n",
		    "t.yaml:3:23: 'labels' does not apply to data format 'cifar10'");
	expect_spec("  format: cifar10\n  train: {files: []}\n",
		    "t.yaml:3:18: 'files' must list at least one file");
	expect_spec("  format: cifar10\n  train: {files: a.bin}\n",
		    "t.yaml:3:18: 'files' must be a list of files, got 'a.bin'");
	expect_spec("  train: {images: a, labels: b, features: c}\n",
		    "t.yaml:2:33: 'features' does not apply to data format 'idx'");
	expect_spec("  format: npz\n  train: {images: a, labels: b}\n",
		    "t.yaml:2:11: unknown data format 'npz' (did you mean 'npy'?)");
	expect_spec("  layout: hwc\n  train: {images: a, labels: b}\n",
		    "t.yaml:2:11: unknown layout 'hwc' (did you mean 'nhwc'?)");
	expect_spec("  train: {images: a, labels: b}\n  augment: {crop_padding: 65}\n",
		    "t.yaml:3:27: 'crop_padding' must be at most 64, got 65");
	expect_spec("  train: {images: a, labels: b}\n  augment: {flip: 1}\n",
		    "t.yaml:3:19: 'flip' must be true or false, got '1'");
	expect_spec("  train: {images: a, labels: b}\n  augment: {rotate: 1}\n",
		    "t.yaml:3:13: unknown key 'rotate' in data.augment");
}

/* data.layout reaches the IDX reader through akk_data_open. */
static void test_open_idx_layout(void **state)
{
	uint32_t dims[4] = { 1, 1, 2, 2 }, n = 1;	/* 1 x (H 1, W 2, C 2) */
	uint8_t px[4] = { 1, 2, 3, 4 }, lab[1] = { 3 };
	unsigned char *b;
	size_t size;
	struct akk_data_spec ds;
	struct akk_dataset d;
	struct akk_err e;
	char im[600], lb[600];

	(void)state;
	b = tu_idx_bytes(0x08, 4, dims, px, 4, &size);
	snprintf(im, sizeof(im), "%s", in_dir("l4-im"));
	assert_int_equal(tu_write_file(im, b, size), 0);
	free(b);
	b = tu_idx_bytes(0x08, 1, &n, lab, 1, &size);
	snprintf(lb, sizeof(lb), "%s", in_dir("l4-lb"));
	assert_int_equal(tu_write_file(lb, b, size), 0);
	free(b);
	memset(&ds, 0, sizeof(ds));
	ds.format = "idx";
	ds.train.images = im;
	ds.train.labels = lb;
	ds.layout_nhwc = 1;
	assert_int_equal(akk_data_open(&d, &ds, AKK_DATA_TRAIN, &e), 0);
	assert_int_equal(d.c, 2);
	assert_int_equal(d.h, 1);
	assert_int_equal(d.w, 2);
	/* (w0: c0 c1, w1: c0 c1) = 1 2 3 4 -> channel 0: 1 3, channel 1: 2 4 */
	assert_int_equal(d.x8[0], 1);
	assert_int_equal(d.x8[1], 3);
	assert_int_equal(d.x8[2], 2);
	assert_int_equal(d.x8[3], 4);
	akk_dataset_release(&d);
}

/* ---- end to end: train from the command line, evaluate the checkpoint ---- */

static const char *write_config(const char *name, const char *data,
				const char *input, const char *out)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "name: %s\nseed: 3\ndata:\n%s"
		 "network:\n  input: %s\n  gates:\n"
		 "    - layers: [flatten, {dense: 8}, relu]\n"
		 "    - layers: [{dense: 10}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 2, batch_size: 4}\n"
		 "output: {dir: %s}\n", name, data, input, out);
	assert_int_equal(tu_write_file(in_dir(name), text, strlen(text)), 0);
	return in_dir(name);
}

static void test_cli_npy(void **state)
{
	float x[12 * 2 * 3];
	int64_t y[12];
	const char *cfg;

	(void)state;
	for (int i = 0; i < 12; i++) {
		y[i] = i % 3;
		for (int k = 0; k < 6; k++)
			x[i * 6 + k] = (float)(k == y[i]) + 0.01f * (float)k;
	}
	write_npy("e2e-x.npy", "<f4", "(12, 2, 3)", x, sizeof(x));
	write_npy("e2e-y.npy", "<i8", "(12,)", y, sizeof(y));
	cfg = write_config("npy.yaml",
			   "  format: npy\n"
			   "  train: {features: e2e-x.npy, labels: e2e-y.npy}\n"
			   "  validation: {features: e2e-x.npy, labels: e2e-y.npy}\n"
			   "  scale: 1\n",
			   "[1, 2, 3]", "run-npy");
	if (ak("train", cfg, NULL) != 0)
		fail_msg("train: %s", g_err);
	if (ak("eval", in_dir("run-npy"), NULL) != 0)
		fail_msg("eval: %s", g_err);
	tu_assert_contains(g_out, "samples 12 ");
	/* the network's input against the features: exit 2 naming the file */
	cfg = write_config("npy-shape.yaml",
			   "  format: npy\n"
			   "  train: {features: e2e-x.npy, labels: e2e-y.npy}\n",
			   "[7]", "run-npy-shape");
	assert_int_equal(ak("train", cfg, NULL), 2);
	{
		char want[1200];
		snprintf(want, sizeof(want), "akkctl: %s: training images have 6 values each, but network.input [7] needs 7",
			 in_dir("e2e-x.npy"));
		tu_assert_line(g_err, want);
	}
}

/* The default that changes the data is said: check and train print
 * data.scale's 255 for byte features, and nothing for float features,
 * which it leaves as they are. */
static void test_cli_scale_default(void **state)
{
	static const char *line =
		"data.scale 255 (the default for byte data): every input value is divided by 255; set data.scale to change it";
	float x[12 * 6];
	uint8_t x8[12 * 6];
	int64_t y[12];
	const char *fcfg, *bcfg;

	(void)state;
	for (int i = 0; i < 12; i++) {
		y[i] = i % 3;
		for (int k = 0; k < 6; k++) {
			x[i * 6 + k] = (float)(k == y[i]);
			x8[i * 6 + k] = (uint8_t)(k == y[i] ? 200 : 10);
		}
	}
	write_npy("sd-f.npy", "<f4", "(12, 6)", x, sizeof(x));
	write_npy("sd-b.npy", "|u1", "(12, 6)", x8, sizeof(x8));
	write_npy("sd-y.npy", "<i8", "(12,)", y, sizeof(y));
	fcfg = write_config("sd-f.yaml",
			    "  format: npy\n"
			    "  train: {features: sd-f.npy, labels: sd-y.npy}\n",
			    "[6]", "run-sd-f");
	bcfg = write_config("sd-b.yaml",
			    "  format: npy\n"
			    "  train: {features: sd-b.npy, labels: sd-y.npy}\n",
			    "[6]", "run-sd-b");
	assert_int_equal(ak("check", fcfg, NULL), 0);
	assert_null(strstr(g_out, "data.scale"));
	assert_int_equal(ak("check", bcfg, NULL), 0);
	tu_assert_line(g_out, line);
	if (ak("train", fcfg, NULL) != 0)
		fail_msg("train: %s", g_err);
	assert_null(strstr(g_err, "data.scale"));
	if (ak("train", bcfg, NULL) != 0)
		fail_msg("train: %s", g_err);
	tu_assert_line(g_err, line);
	/* given, it is not a default: nothing said */
	assert_int_equal(ak("check", bcfg, "--set", "data.scale=255", NULL), 0);
	assert_null(strstr(g_out, "data.scale"));
}

static void test_cli_cifar(void **state)
{
	const char *cfg, *bad;

	(void)state;
	write_cifar("e2e_1.bin", 6, NULL, 0);
	write_cifar("e2e_2.bin", 4, NULL, 0);
	cfg = write_config("cifar.yaml",
			   "  format: cifar10\n"
			   "  train: {files: [e2e_1.bin, e2e_2.bin]}\n"
			   "  validation: {files: [e2e_2.bin]}\n"
			   "  augment: {crop_padding: 2, flip: true}\n",
			   "[3, 32, 32]", "run-cifar");
	if (ak("train", cfg, NULL) != 0)
		fail_msg("train: %s", g_err);
	if (ak("eval", in_dir("run-cifar"), NULL) != 0)
		fail_msg("eval: %s", g_err);
	tu_assert_contains(g_out, "samples 4 ");
	/* a bad file: exit 2, the file and the record */
	write_cifar("e2e_bad.bin", 2, (const uint8_t[]){ 1, 200 }, 0);
	bad = write_config("cifar-bad.yaml",
			   "  format: cifar10\n"
			   "  train: {files: [e2e_1.bin, e2e_bad.bin]}\n",
			   "[3, 32, 32]", "run-cifar-bad");
	assert_int_equal(ak("train", bad, NULL), 2);
	{
		char want[1200];
		snprintf(want, sizeof(want), "akkctl: %s: record 2 (byte 3073): label 200 is not a CIFAR-10 class (0 to 9)",
			 in_dir("e2e_bad.bin"));
		tu_assert_line(g_err, want);
	}
}

/* ---- every command on every format -------------------------------------- */

/* The set every format holds: 12 samples of 36 values, label i % 3, value
 * k of sample i bright when k % 3 is its label. */
#define SET_N 12
static unsigned char set_value(int i, int k)
{
	return (unsigned char)((k % 3 == i % 3 ? 180 : 20) + (i * 7 + k) % 30);
}

static void write_grey_png(const char *path, const unsigned char *px, int w, int h)
{
	FILE *f = fopen(path, "wb");
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);

	assert_non_null(f);
	if (setjmp(png_jmpbuf(png)))
		fail_msg("cannot write %s", path);
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int y = 0; y < h; y++)
		png_write_row(png, (png_bytep)(px + y * w));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	fclose(f);
}

/* The set in every format: cmd-images/-labels (IDX), cmd-x.npy and
 * cmd-y.npy, cmd.csv (features and class names, with a header) and
 * cmd-in.csv (features alone, for predict), cmd.bin (CIFAR-10) and the
 * folder cmd-img/{a,b,c}/NN.png. */
static void write_every_format(void)
{
	static const char *names[] = { "a", "b", "c" };
	unsigned char px[SET_N][36];
	float x[SET_N * 36];
	int64_t y[SET_N];
	struct akk_dataset d = { .n = SET_N, .in = 36, .c = 1, .h = 6, .w = 6,
				 .xtype = AKK_X_U8, .classes = 3 };
	uint8_t labels[SET_N];
	int32_t labels32[SET_N];
	FILE *t, *in;

	for (int i = 0; i < SET_N; i++) {
		y[i] = labels32[i] = labels[i] = (uint8_t)(i % 3);
		for (int k = 0; k < 36; k++)
			x[i * 36 + k] = (float)(px[i][k] = set_value(i, k)) / 255;
	}
	d.x8 = &px[0][0];
	d.labels = labels32;
	tu_write_idx(in_dir("cmd-images"), &d, 1);
	tu_write_idx(in_dir("cmd-labels"), &d, 0);
	write_npy("cmd-x.npy", "<f4", "(12, 36)", x, sizeof(x));
	write_npy("cmd-y.npy", "<i8", "(12,)", y, sizeof(y));
	assert_non_null(t = fopen(in_dir("cmd.csv"), "w"));
	assert_non_null(in = fopen(in_dir("cmd-in.csv"), "w"));
	for (int k = 0; k < 36; k++) {
		fprintf(t, "f%d,", k);
		fprintf(in, "f%d%s", k, k < 35 ? "," : "\n");
	}
	fprintf(t, "class\n");
	for (int i = 0; i < SET_N; i++) {
		for (int k = 0; k < 36; k++) {
			fprintf(t, "%g,", x[i * 36 + k]);
			fprintf(in, "%g%s", x[i * 36 + k], k < 35 ? "," : "\n");
		}
		fprintf(t, "%s\n", names[i % 3]);
	}
	fclose(t);
	fclose(in);
	write_cifar("cmd.bin", SET_N, labels, 0);
	mkdir(in_dir("cmd-img"), 0755);
	for (int c = 0; c < 3; c++)
		mkdir(tu_path(in_dir("cmd-img"), names[c]), 0755);
	for (int i = 0; i < SET_N; i++) {
		char name[64];

		snprintf(name, sizeof(name), "cmd-img/%s/%02d.png", names[i % 3], i);
		write_grey_png(in_dir(name), px[i], 6, 6);
	}
}

/* One format: its config's data, its network input, the files eval
 * --images and --labels name (labels NULL: inside the samples' file) and
 * the file predict reads. */
static const struct format_case {
	const char *format, *data, *input, *samples, *labels, *inputs;
} format_cases[] = {
	{ "idx", "  train: {images: cmd-images, labels: cmd-labels}\n"
		 "  validation: {images: cmd-images, labels: cmd-labels}\n",
	  "[1, 6, 6]", "cmd-images", "cmd-labels", "cmd-images" },
	{ "npy", "  format: npy\n"
		 "  train: {features: cmd-x.npy, labels: cmd-y.npy}\n"
		 "  validation: {features: cmd-x.npy, labels: cmd-y.npy}\n",
	  "[36]", "cmd-x.npy", "cmd-y.npy", "cmd-x.npy" },
	{ "csv", "  format: csv\n"
		 "  train: {file: cmd.csv}\n"
		 "  validation: {file: cmd.csv}\n"
		 "  csv: {header: true}\n",
	  "[36]", "cmd.csv", NULL, "cmd-in.csv" },
	{ "cifar10", "  format: cifar10\n"
		     "  train: {files: [cmd.bin]}\n"
		     "  validation: {files: [cmd.bin]}\n",
	  "[3, 32, 32]", "cmd.bin", NULL, "cmd.bin" },
	{ "images", "  format: images\n"
		    "  train: {folder: cmd-img}\n"
		    "  validation: {folder: cmd-img}\n",
	  "[1, 6, 6]", "cmd-img", NULL, "cmd-img" },
};

/* The first line of text (into line, size bytes). */
static void first_line(char *line, size_t size, const char *text)
{
	size_t n = strcspn(text, "\n");

	snprintf(line, size, "%.*s", (int)(n < size ? n : size - 1), text);
}

/* Every command that reads data reads every format train reads: eval on
 * the config's validation set and on the same files named with --images
 * (and --labels), giving the same figures through the checkpoint's
 * preprocessing; predict on the format's unlabelled input; lr-find on the
 * config; export of the checkpoint. */
static void test_cli_every_command_every_format(void **state)
{
	int failures = 0;

	(void)state;
	write_every_format();
	for (size_t i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
		const struct format_case *f = &format_cases[i];
		char name[64], run[64], own[256], onnx[64];
		const char *cfg, *rundir;
		int rc;

		snprintf(name, sizeof(name), "cmd-%s.yaml", f->format);
		snprintf(run, sizeof(run), "run-cmd-%s", f->format);
		snprintf(onnx, sizeof(onnx), "cmd-%s.onnx", f->format);
		cfg = write_config(name, f->data, f->input, run);
		rundir = in_dir(run);
		if (ak("train", cfg, "--quiet", NULL) != 0)
			fail_msg("%s: train: %s", f->format, g_err);
		/* eval: the config's validation set */
		if (ak("eval", rundir, NULL) != 0)
			fail_msg("%s: eval: %s", f->format, g_err);
		first_line(own, sizeof(own), g_out);
		tu_assert_prefix(own, "samples 12 ");
		/* eval: the same files named on the command line */
		rc = f->labels ? ak("eval", rundir, "--images", in_dir(f->samples),
				    "--labels", in_dir(f->labels), NULL)
			       : ak("eval", rundir, "--images", in_dir(f->samples), NULL);
		if (rc != 0 || !tu_check_prefix(g_out, own)) {
			print_error("%s: eval --images: exit %d: %s\n", f->format, rc, g_err);
			failures++;
		}
		/* predict: a header and one row per sample */
		rc = ak("predict", rundir, in_dir(f->inputs), NULL);
		{
			int rows = 0;

			for (const char *p = g_out; (p = strchr(p, '\n')); p++)
				rows++;
			if (rc != 0 || rows != SET_N + 1) {
				print_error("%s: predict: exit %d, %d lines: %s\n", f->format, rc,
					    rows, g_err);
				failures++;
			}
		}
		rc = ak("lr-find", cfg, "--steps", "6", NULL);
		if (rc != 0 || !tu_check_prefix(g_out, "lr,loss,smoothed_loss\n")) {
			print_error("%s: lr-find: exit %d: %s\n", f->format, rc, g_err);
			failures++;
		}
		rc = ak("export", rundir, "--onnx", in_dir(onnx), NULL);
		if (rc != 0 || !tu_exists(in_dir(onnx))) {
			print_error("%s: export: exit %d: %s\n", f->format, rc, g_err);
			failures++;
		}
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	int failed;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npy_float_int64),
		cmocka_unit_test(test_npy_bytes_images),
		cmocka_unit_test(test_npy_sequences),
		cmocka_unit_test(test_npy_big_endian),
		cmocka_unit_test(test_npy_nhwc),
		cmocka_unit_test(test_npy_regression),
		cmocka_unit_test(test_npy_bad_headers),
		cmocka_unit_test(test_npy_bad_sizes),
		cmocka_unit_test(test_npy_bad_datasets),
		cmocka_unit_test(test_cifar_good),
		cmocka_unit_test(test_cifar_meta),
		cmocka_unit_test(test_cifar_bad),
		cmocka_unit_test(test_spec_keys),
		cmocka_unit_test(test_open_idx_layout),
		cmocka_unit_test(test_cli_npy),
		cmocka_unit_test(test_cli_cifar),
		cmocka_unit_test(test_cli_scale_default),
		cmocka_unit_test(test_cli_every_command_every_format),
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
