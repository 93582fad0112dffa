/* test_data.c - the input map (scale, per-channel normalize, standardize),
 * the validation split and the checkpoint's data section.
 *
 * In-process tests build data sets in memory, floats and bytes; the CLI
 * tests train a tiny network on IDX files written here with a held-out
 * split, then check what the checkpoint stores against what the library
 * computes from the same data, across a resume, and that eval reads it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "base/hugemem.h"
#include "forge.h"
#include "config/spec.h"
#include "data/batch.h"
#include "data/open.h"
#include "data/preprocess.h"
#include "data/split.h"
#include "io/checkpoint.h"
#include "model/gate.h"
#include "model/model.h"
#include "model/evaluate.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "tensor/tensor.h"

static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define NET3 "network:\n  input: [3, 2, 2]\n  gates:\n    - layers: [flatten, {dense: 4}]\n" \
	     "optimizer: {type: sgd, lr: 0.1}\n"

static int parse(struct akk_spec *s, const char *text, struct akk_err *e)
{
	return akk_spec_parse(s, text, strlen(text), "t.yaml", NULL, NULL, 0, e);
}

/* ---- the input map ----------------------------------------------------- */

/* Per-channel mean and std: feature k of a [3, 2, 2] input is in channel
 * k / 4 and maps as (v / scale - mean_c) / std_c, folded into a, b. */
static void per_channel_normalize_values(void **unused)
{
	static const char *cfg =
		"data:\n  train: {images: a, labels: b}\n  scale: 2\n"
		"  normalize: {mean: [0.5, 0.25, 0], std: [0.5, 2, 4]}\n" NET3;
	const double mean[3] = { 0.5, 0.25, 0 }, std[3] = { 0.5, 2, 4 };
	struct akk_spec s;
	struct akk_preprocess p;
	struct akk_dataset d = { 0 };
	struct akk_batch b;
	struct akk_err e = { 0 };

	(void)unused;
	if (parse(&s, cfg, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(s.data.mean_ch.n, 3);
	assert_int_equal(s.data.std_ch.n, 3);
	assert_int_equal(akk_preprocess_init(&p, &s.data, 12, 3, NULL, &e), 0);
	for (int k = 0; k < 12; k++) {
		int c = k / 4;
		assert_true(p.a[k] == (float)(1.0 / (2 * std[c])));
		assert_true(p.b[k] == (float)(-mean[c] / std[c]));
	}
	/* a batch of bytes through the map */
	d.n = 2;
	d.in = 12;
	d.xtype = AKK_X_U8;
	d.x8 = malloc(24);
	assert_non_null(d.x8);
	for (int i = 0; i < 24; i++)
		d.x8[i] = (uint8_t)(10 * i);
	assert_int_equal(akk_batch_alloc(&b, 2, 12, 4, 1), 0);
	akk_batch_fill(&b, &d, NULL, 0, 2, &p);
	for (int i = 0; i < 24; i++) {
		int c = (i % 12) / 4;
		double want = (10.0 * i / 2 - mean[c]) / std[c];
		assert_true(fabs(b.x[i] - want) <= 1e-5 * (fabs(want) + 1));
	}
	akk_batch_release(&b);
	akk_dataset_release(&d);
	akk_preprocess_release(&p);
	akk_spec_release(&s);
}

static void bad(const char *text, const char *want)
{
	struct akk_spec s;
	struct akk_err e = { 0 };
	char msg[2048];

	assert_int_equal(parse(&s, text, &e), -1);
	akk_err_format(&e, msg, sizeof(msg));
	if (strcmp(msg, want))
		fail_msg("expected '%s', got '%s'", want, msg);
}

/* A list whose length is not the input's channel count names the list. */
static void per_channel_lists_checked(void **unused)
{
	(void)unused;
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: [0.5, 0.25], std: 1}\n" NET3,
	    "t.yaml:3:21: 'mean' has 2 values, but network.input has 3 channels");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: 0, std: [1, 1, 1, 1]}\n" NET3,
	    "t.yaml:3:29: 'std' has 4 values, but network.input has 3 channels");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: 0, std: [1, 0, 1]}\n" NET3,
	    "t.yaml:3:33: 'std' must be greater than 0, got 0");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: [1, x, 1], std: 1}\n" NET3,
	    "t.yaml:3:25: 'mean' must be a number, got 'x'");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  standardize: 1\n" NET3,
	    "t.yaml:3:16: 'standardize' must be true or false, got '1'");
}

/* data.scale's default follows the data's type: bytes (pixels) are divided
 * by 255, float features are taken as they are; a scale the config gives,
 * in its text or by --set, applies to either. */
static void scale_default_by_type(void **unused)
{
	static const char *npy =
		"data:\n  format: npy\n  train: {features: a, labels: b}\n"
		"network:\n  input: [2]\n  gates:\n    - layers: [{dense: 2}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	const char *sets[] = { "data.scale=4" };
	const float x[2] = { 3, 5 };
	uint8_t x8[2] = { 3, 5 };
	struct akk_dataset f = { .n = 1, .in = 2, .c = 1, .h = 1, .w = 2,
				 .xtype = AKK_X_F32, .xf = (float *)x };
	struct akk_dataset b = { .n = 1, .in = 2, .c = 1, .h = 1, .w = 2,
				 .xtype = AKK_X_U8, .x8 = x8 };
	struct akk_preprocess p;
	struct akk_spec s;
	struct akk_err e = { 0 };

	(void)unused;
	if (parse(&s, npy, &e))
		fail_msg("%s", e.msg);
	assert_false(s.data.scale_given);
	assert_true(akk_preprocess_scale(&s.data, AKK_X_F32) == 1);
	assert_true(akk_preprocess_scale(&s.data, AKK_X_U8) == 255);
	assert_int_equal(akk_preprocess_init(&p, &s.data, 2, 1, &f, &e), 0);
	assert_true(p.a[0] == 1 && p.a[1] == 1 && p.b[0] == 0);
	akk_preprocess_release(&p);
	assert_int_equal(akk_preprocess_init(&p, &s.data, 2, 1, &b, &e), 0);
	assert_true(p.a[0] == (float)(1.0 / 255));
	akk_preprocess_release(&p);
	akk_spec_release(&s);
	/* given by --set: floats divided too */
	if (akk_spec_parse(&s, npy, strlen(npy), "t.yaml", NULL, sets, 1, &e))
		fail_msg("%s", e.msg);
	assert_true(s.data.scale_given);
	assert_int_equal(akk_preprocess_init(&p, &s.data, 2, 1, &f, &e), 0);
	assert_true(p.a[0] == 0.25f);
	akk_preprocess_release(&p);
	akk_spec_release(&s);
}

/* Standardisation: per-feature mean 0 and std 1 over the data it is
 * computed from (the training split), a constant feature centred with
 * std 1, and nothing from any other data. */
static void standardize_values(void **unused)
{
	struct akk_data_spec ds = { 0 };
	struct akk_dataset d = { 0 };
	struct akk_preprocess p;
	struct akk_err e = { 0 };
	const float x[8] = { 1, 7, 2, 7, 3, 7, 4, 7 };	/* 4 samples x 2 */

	(void)unused;
	ds.scale = 1;
	ds.standardize = 1;
	d.n = 4;
	d.in = 2;
	d.c = d.h = 1;
	d.w = 2;
	d.xtype = AKK_X_F32;
	d.xf = malloc(sizeof(x));
	assert_non_null(d.xf);
	memcpy(d.xf, x, sizeof(x));
	/* without the training data there is nothing to standardize with */
	assert_int_equal(akk_preprocess_init(&p, &ds, 2, 2, NULL, &e), -1);
	assert_string_equal(e.msg, "standardize needs the training data");
	assert_int_equal(akk_preprocess_init(&p, &ds, 2, 2, &d, &e), 0);
	/* feature 0: mean 2.5, std sqrt(1.25); feature 1: constant 7 */
	assert_true(fabs(p.a[0] - 1 / sqrt(1.25)) < 1e-6);
	assert_true(fabs(p.b[0] + 2.5 / sqrt(1.25)) < 1e-6);
	assert_true(p.a[1] == 1 && p.b[1] == -7);
	akk_preprocess_release(&p);
	/* bytes, scaled first: u = v / 2, then standardized */
	ds.scale = 2;
	free(d.xf);
	d.xf = NULL;
	d.xtype = AKK_X_U8;
	d.x8 = malloc(8);
	assert_non_null(d.x8);
	for (int i = 0; i < 8; i++)
		d.x8[i] = (uint8_t)x[i];
	assert_int_equal(akk_preprocess_init(&p, &ds, 2, 1, &d, &e), 0);
	assert_true(fabs(p.a[0] - 0.5 / (0.5 * sqrt(1.25))) < 1e-6);
	assert_true(fabs(p.b[0] + 1.25 / (0.5 * sqrt(1.25))) < 1e-6);
	assert_true(p.a[1] == 0.5f && p.b[1] == -3.5f);
	akk_preprocess_release(&p);
	akk_dataset_release(&d);
}

/* ---- the split --------------------------------------------------------- */

/* n samples; class i % 16 < 10 ? 0 : i % 16 < 15 ? 1 : 2 (10:5:1), or
 * unlabelled with classes 0. */
static void labelled(struct akk_dataset *d, size_t n, int with_labels)
{
	memset(d, 0, sizeof(*d));
	d->n = n;
	d->in = 1;
	d->c = d->h = d->w = 1;
	d->xtype = AKK_X_F32;
	d->xf = malloc(n * sizeof(float));
	assert_non_null(d->xf);
	for (size_t i = 0; i < n; i++)
		d->xf[i] = (float)i;
	if (!with_labels)
		return;
	d->classes = 3;
	d->labels = malloc(n * sizeof(int32_t));
	assert_non_null(d->labels);
	for (size_t i = 0; i < n; i++)
		d->labels[i] = i % 16 < 10 ? 0 : i % 16 < 15 ? 1 : 2;
}

/* Of each class, round(F * n_c) held out: 1600 samples 1000:500:100 at
 * F = 0.15 give 150, 75 and 15; increasing indices; the same for the
 * same seed, another set for another seed. */
static void split_stratified_and_seeded(void **unused)
{
	struct akk_dataset d;
	uint32_t *h, *h2, *h3;
	size_t n, n2, n3;
	long per[3] = { 0 };
	struct akk_err e = { 0 };

	(void)unused;
	labelled(&d, 1600, 1);
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.15, 42, &e), 0);
	assert_int_equal(n, 240);
	for (size_t i = 0; i < n; i++) {
		per[d.labels[h[i]]]++;
		if (i)
			assert_true(h[i] > h[i - 1]);
	}
	assert_int_equal(per[0], 150);
	assert_int_equal(per[1], 75);
	assert_int_equal(per[2], 15);
	assert_int_equal(akk_split_heldout(&h2, &n2, &d, 0.15, 42, &e), 0);
	assert_int_equal(n2, n);
	assert_memory_equal(h, h2, n * sizeof(*h));
	assert_int_equal(akk_split_heldout(&h3, &n3, &d, 0.15, 43, &e), 0);
	assert_int_equal(n3, n);
	assert_memory_not_equal(h, h3, n * sizeof(*h));
	free(h);
	free(h2);
	free(h3);
	akk_dataset_release(&d);
	/* without labels (regression): one seeded shuffle of all */
	labelled(&d, 1000, 0);
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.25, 42, &e), 0);
	assert_int_equal(n, 250);
	free(h);
	/* a fraction that holds out nothing, or everything, is an error */
	d.n = 3;
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.1, 42, &e), -1);
	assert_string_equal(e.msg, "validation split 0.1 of 3 samples holds out none");
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.9, 42, &e), -1);
	assert_string_equal(e.msg, "validation split 0.9 of 3 samples holds out all of them");
	d.n = 1000;
	akk_dataset_release(&d);
}

/* validation: {folds: K}: the K folds partition the data; each holds
 * n_c / K of every class, rounded either way; their sizes differ by one
 * at most; the same for the same seed. 1600 samples 1000:500:100, K = 7. */
static void folds_partition_stratified(void **unused)
{
	struct akk_dataset d;
	uint32_t *h, *h2;
	size_t n, n2, total = 0, lo = (size_t)-1, hi = 0;
	int *seen;
	struct akk_err e = { 0 };
	const long nc[3] = { 1000, 500, 100 };

	(void)unused;
	labelled(&d, 1600, 1);
	seen = calloc(1600, sizeof(*seen));
	assert_non_null(seen);
	for (int f = 1; f <= 7; f++) {
		long per[3] = { 0 };

		assert_int_equal(akk_split_fold(&h, &n, &d, 7, f, 42, &e), 0);
		for (size_t i = 0; i < n; i++) {
			seen[h[i]]++;
			per[d.labels[h[i]]]++;
			if (i)
				assert_true(h[i] > h[i - 1]);
		}
		for (int c = 0; c < 3; c++)
			assert_true(per[c] == nc[c] / 7 || per[c] == nc[c] / 7 + 1);
		total += n;
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
		assert_int_equal(akk_split_fold(&h2, &n2, &d, 7, f, 42, &e), 0);
		assert_int_equal(n2, n);
		assert_memory_equal(h, h2, n * sizeof(*h));
		free(h);
		free(h2);
	}
	assert_int_equal(total, 1600);
	assert_true(hi - lo <= 1);
	for (size_t i = 0; i < 1600; i++)
		assert_int_equal(seen[i], 1);
	/* another seed, other folds */
	assert_int_equal(akk_split_fold(&h, &n, &d, 7, 1, 42, &e), 0);
	assert_int_equal(akk_split_fold(&h2, &n2, &d, 7, 1, 43, &e), 0);
	assert_true(n != n2 || memcmp(h, h2, n * sizeof(*h)));
	free(h);
	free(h2);
	/* stratified: every class needs a sample in every fold */
	assert_int_equal(akk_split_fold(&h, &n, &d, 101, 1, 42, &e), -1);
	assert_string_equal(e.msg, "class 2 has 100 samples, fewer than the 101 folds (stratified: every fold holds each class)");
	assert_int_equal(akk_split_fold(&h, &n, &d, 7, 8, 42, &e), -1);
	assert_string_equal(e.msg, "fold 8 of 7 folds does not exist");
	akk_dataset_release(&d);
	free(seen);
	/* without labels (regression): folds of one shuffle, 10 samples in 4
	 * folds of 3, 3, 2 and 2 */
	labelled(&d, 10, 0);
	for (int f = 1; f <= 4; f++) {
		assert_int_equal(akk_split_fold(&h, &n, &d, 4, f, 42, &e), 0);
		assert_int_equal(n, f <= 2 ? 3 : 2);
		free(h);
	}
	assert_int_equal(akk_split_fold(&h, &n, &d, 11, 1, 42, &e), -1);
	assert_string_equal(e.msg, "11 folds need at least 11 samples, but the training data has 10");
	akk_dataset_release(&d);
}

/* The held-out part and the rest partition the data in file order. */
static void subset_partitions(void **unused)
{
	struct akk_dataset d, in, out;
	uint32_t *h;
	size_t n, j = 0;
	struct akk_err e = { 0 };
	const uint32_t bad_order[2] = { 5, 3 }, beyond[1] = { 1600 };

	(void)unused;
	labelled(&d, 1600, 1);
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.2, 1, &e), 0);
	assert_int_equal(akk_dataset_subset(&in, &d, h, n, 0, &e), 0);
	assert_int_equal(akk_dataset_subset(&out, &d, h, n, 1, &e), 0);
	assert_int_equal(in.n + out.n, 1600);
	for (size_t i = 0; i < in.n; i++) {
		assert_true(in.xf[i] == (float)h[i]);
		assert_int_equal(in.labels[i], d.labels[h[i]]);
	}
	for (size_t i = 0, k = 0; i < 1600; i++) {
		if (j < n && h[j] == i) {
			j++;
			continue;
		}
		assert_true(out.xf[k] == (float)i);
		assert_int_equal(out.labels[k++], d.labels[i]);
	}
	akk_dataset_release(&in);
	assert_int_equal(akk_dataset_subset(&in, &d, bad_order, 2, 0, &e), -1);
	assert_string_equal(e.msg, "held-out index 3 (number 2) is out of order");
	assert_int_equal(akk_dataset_subset(&in, &d, beyond, 1, 1, &e), -1);
	assert_string_equal(e.msg, "held-out index 1600 (number 1) is beyond the data");
	free(h);
	akk_dataset_release(&in);
	akk_dataset_release(&out);
	akk_dataset_release(&d);
}

/* ---- through the command line ------------------------------------------ */

static char g_dir[512];

/* images and labels of n samples of side 4, 4 classes (testutil's set) */
static void write_data(struct akk_dataset *d, size_t n)
{
	tu_dataset(d, n, 4, 4, 5);
	tu_write_idx(tu_path(g_dir, "images"), d, 1);
	tu_write_idx(tu_path(g_dir, "labels"), d, 0);
}

static const char *g_output_extra = "";	/* more output: keys */

static const char *write_config(const char *name, const char *extra)
{
	char text[2048];
	const char *path = tu_path(g_dir, name);
	int n = snprintf(text, sizeof(text),
		"name: split\n"
		"seed: 42\n"
		"data:\n"
		"  train: {images: images, labels: labels}\n"
		"  validation: {split: 0.25}\n"
		"%s"
		"network:\n"
		"  input: [16]\n"
		"  gates:\n"
		"    - layers: [{dense: 8}, relu]\n"
		"    - layers: [{dense: 4}]\n"
		"optimizer: {type: sgd, lr: 0.05}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 16}\n"
		"output: {dir: out%s}\n", extra, g_output_extra);

	assert_true(n > 0 && n < (int)sizeof(text));
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
	return path;
}

/* Training with `validation: {split: 0.25}` and `standardize: true`
 * stores the held-out indices the library computes from the seed, and
 * the input map computed from the training part alone (bit for bit); a
 * resume with another seed keeps the stored indices; eval evaluates the
 * held-out part. */
static void split_stored_and_kept_on_resume(void **unused)
{
	struct akk_dataset d, rest;
	struct akk_checkpoint c, c2;
	struct akk_preprocess p;
	struct akk_data_spec ds = { 0 };
	uint32_t *h, *h7;
	size_t n, n7;
	struct akk_err e = { 0 };
	const char *cfg, *ck;

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	write_data(&d, 400);
	cfg = write_config("split.yaml", "  standardize: true\n");
	ck = tu_path(g_dir, "out/last.bin");
	if (ak("train", cfg, "--quiet", NULL))
		fail_msg("%s", g_err);
	tu_assert_contains(g_out, "");
	if (akk_checkpoint_read(&c, ck, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.version, 2);
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.25, 42, &e), 0);
	assert_int_equal(c.nheldout, n);
	assert_int_equal(n, 100);
	assert_memory_equal(c.heldout, h, n * sizeof(*h));
	/* the map of the training part only, which differs from all data's */
	ds.scale = 255;
	ds.standardize = 1;
	assert_int_equal(akk_dataset_subset(&rest, &d, h, n, 1, &e), 0);
	assert_int_equal(akk_preprocess_init(&p, &ds, 16, 16, &rest, &e), 0);
	assert_int_equal(c.pre.in, 16);
	assert_memory_equal(c.pre.a, p.a, 16 * sizeof(float));
	assert_memory_equal(c.pre.b, p.b, 16 * sizeof(float));
	akk_preprocess_release(&p);
	assert_int_equal(akk_preprocess_init(&p, &ds, 16, 16, &d, &e), 0);
	assert_memory_not_equal(c.pre.b, p.b, 16 * sizeof(float));
	akk_preprocess_release(&p);

	/* resumed with another seed: the indices and the map stay */
	assert_int_equal(akk_split_heldout(&h7, &n7, &d, 0.25, 7, &e), 0);
	assert_memory_not_equal(h7, h, n * sizeof(*h));
	if (ak("train", cfg, "--quiet", "--resume", tu_path(g_dir, "out"),
	       "--epochs", "2", "--set", "seed=7", NULL))
		fail_msg("%s", g_err);
	if (akk_checkpoint_read(&c2, ck, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c2.pos.epoch, 2);
	assert_int_equal(c2.nheldout, n);
	assert_memory_equal(c2.heldout, h, n * sizeof(*h));
	assert_memory_equal(c2.pre.a, c.pre.a, 16 * sizeof(float));
	assert_memory_equal(c2.pre.b, c.pre.b, 16 * sizeof(float));

	assert_int_equal(ak("inspect", ck, NULL), 0);
	tu_assert_line(g_out, "data         classification, input map of 16 values, "
		       "100 training samples held out for validation");
	/* eval takes the checkpoint's own held-out part */
	assert_int_equal(ak("eval", ck, NULL), 0);
	tu_assert_prefix(g_out, "samples 100  loss ");
	akk_checkpoint_release(&c);
	akk_checkpoint_release(&c2);
	akk_dataset_release(&rest);
	akk_dataset_release(&d);
	free(h);
	free(h7);
	tu_rm_tree(g_dir);
}

/* Forged data-section fields are rejected with the field named; a
 * version 1 file (no data section) is still read. */
static void data_section_validated(void **unused)
{
	static const struct { const char *field; int is_float; double fv;
			      uint64_t uv; const char *want; } cases[] = {
		{ "data.task", 0, 0, 1, "corrupt checkpoint: data.task is 1" },
		{ "data.targets", 0, 0, 3, "data.targets is 3 with task classification" },
		{ "data.nclass_names", 0, 0, 1u << 20, "bad data in the data section's class name count" },
		{ "data.input_map.a0", 1, NAN, 0, "data.input_map of feature 1 is x * nan + " },
		{ "data.input_map.bN", 1, INFINITY, 0, "data.input_map of feature 16 is x * " },
		{ "data.input_map.a0", 1, 0, 0, "data.input_map of feature 1 is x * 0 + " },
		{ "data.input_map.in", 0, 0, 8, "corrupt checkpoint: " },
		{ "data.heldoutN", 0, 0, 0, "data.heldout[99] is 0 after " },
		{ "data.nheldout", 0, 0, 1u << 30, "bad data in the data section's held-out index count" },
	};
	struct akk_dataset d;
	struct akk_checkpoint c;
	struct forge fg;
	struct akk_err e = { 0 };
	const char *cfg, *ck, *forged;

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	write_data(&d, 400);
	cfg = write_config("split.yaml", "  standardize: true\n");
	ck = tu_path(g_dir, "out/last.bin");
	forged = tu_path(g_dir, "forged.bin");
	if (ak("train", cfg, "--quiet", NULL))
		fail_msg("%s", g_err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct forge_field *f;

		assert_int_equal(forge_load(&fg, ck), 0);
		if (!(f = forge_find(&fg, cases[i].field)))
			fail_msg("no field %s", cases[i].field);
		if (cases[i].is_float)
			forge_set_f(&fg, f, cases[i].fv);
		else
			forge_set_u(&fg, f, cases[i].uv);
		assert_int_equal(forge_save(&fg, forged), 0);
		forge_release(&fg);
		memset(&e, 0, sizeof(e));
		assert_int_equal(akk_checkpoint_read(&c, forged, &e), -1);
		if (!strstr(e.msg, cases[i].want))
			fail_msg("%s: expected '%s' in: %s", cases[i].field,
				 cases[i].want, e.msg);
		/* and every command that reads it says so: exit 2 */
		assert_int_equal(ak("eval", forged, NULL), 2);
		assert_int_equal(ak("inspect", forged, NULL), 2);
	}
	/* version 1: the file cut before its data section */
	assert_int_equal(forge_load(&fg, ck), 0);
	{
		size_t at = forge_find(&fg, "data.task")->off;
		memmove(fg.p + at, fg.p + fg.len - 4, 4);
		fg.len = at + 4;
		forge_put_le(fg.p + 8, 1, 4);
		forge_put_le(fg.p + 16, fg.len, 8);
	}
	assert_int_equal(forge_save(&fg, forged), 0);
	forge_release(&fg);
	if (akk_checkpoint_read(&c, forged, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.version, 1);
	assert_int_equal(c.pre.in, 0);
	assert_int_equal(c.nheldout, 0);
	akk_checkpoint_release(&c);
	akk_dataset_release(&d);
	tu_rm_tree(g_dir);
}

/* A checkpoint of the split config's untrained network (gates at step 0)
 * with class names, written by the library; eval prints the names, inspect
 * lists them, and a repeated name is rejected. */
static void class_names_in_checkpoint(void **unused)
{
	char *names[4] = { "cat", "dog", "emu", "gnu" };
	struct akk_dataset d;
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate g[2];
	const struct akk_gate *gp[2] = { &g[0], &g[1] };
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	const char *cfg, *ck;
	char *text;

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	write_data(&d, 400);
	cfg = write_config("names.yaml", "");
	ck = tu_path(g_dir, "names.bin");
	assert_non_null(text = tu_slurp(cfg, NULL));
	if (akk_spec_parse(&s, text, strlen(text), cfg, g_dir, NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s", e.msg);
	for (int i = 0; i < 2; i++)
		assert_int_equal(akk_gate_init(&g[i], &m.gates[i], &(struct akk_gate_config){ .max_batch = 16,
			.ntapes = 1, .nevals = 1, .steps_per_epoch = 1, .epochs = 1, .seed = 42 }, &e), 0);
	{
		struct akk_ckpt_source src = {
			.spec = &s, .base_dir = g_dir, .gates = gp, .ngates = 2,
			.class_names = names, .nclass_names = 4,
		};
		assert_int_equal(akk_checkpoint_write(ck, &src, &e), 0);
	}
	if (akk_checkpoint_read(&c, ck, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.nclass_names, 4);
	assert_string_equal(c.class_names[3], "gnu");
	akk_checkpoint_release(&c);
	assert_int_equal(ak("inspect", ck, NULL), 0);
	tu_assert_line(g_out, "classes      cat, dog, emu, gnu");
	assert_int_equal(ak("eval", ck, "--images", tu_path(g_dir, "images"),
			    "--labels", tu_path(g_dir, "labels"), NULL), 0);
	tu_assert_contains(g_out, "\nemu  ");
	tu_assert_contains(g_out, "\ngnu  ");
	names[2] = "cat";
	{
		struct akk_ckpt_source src = {
			.spec = &s, .base_dir = g_dir, .gates = gp, .ngates = 2,
			.class_names = names, .nclass_names = 4,
		};
		assert_int_equal(akk_checkpoint_write(ck, &src, &e), 0);
	}
	assert_int_equal(akk_checkpoint_read(&c, ck, &e), -1);
	tu_assert_contains(e.msg, "data.class_names[2] repeats 'cat'");
	for (int i = 0; i < 2; i++)
		akk_gate_release(&g[i]);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_dataset_release(&d);
	free(text);
	tu_rm_tree(g_dir);
}

/* ---- regression -------------------------------------------------------- */

/* n samples of 4 features uniform in [-1, 1) and 2 targets
 * y = W x + c + noise (0.01). */
static void linear_set(struct akk_dataset *d, size_t n, uint32_t seed)
{
	static const float W[2][4] = { { 1.5f, -2, 0.5f, 1 }, { -1, 0.25f, 2, -0.5f } };
	static const float c[2] = { 0.3f, -0.7f };
	float *noise = malloc(n * 2 * sizeof(float));

	memset(d, 0, sizeof(*d));
	d->n = n;
	d->in = 4;
	d->c = d->h = 1;
	d->w = 4;
	d->xtype = AKK_X_F32;
	d->xf = malloc(n * 4 * sizeof(float));
	d->targets = 2;
	d->y = malloc(n * 2 * sizeof(float));
	assert_true(d->xf && d->y && noise);
	tu_fill(d->xf, n * 4, -1, 1, seed);
	tu_fill(noise, n * 2, -0.01f, 0.01f, seed + 1);
	for (size_t i = 0; i < n; i++)
		for (int t = 0; t < 2; t++) {
			float v = c[t] + noise[i * 2 + t];
			for (int k = 0; k < 4; k++)
				v += W[t][k] * d->xf[i * 4 + k];
			d->y[i * 2 + t] = v;
		}
	free(noise);
}

static struct akk_epoch_report g_last;

static int keep_report(void *ctx, struct akk_run *r,
		       const struct akk_epoch_report *rep, struct akk_err *e)
{
	(void)ctx;
	(void)r;
	(void)e;
	g_last = *rep;
	return 0;
}

/* data.task regression end to end on a linear problem: flip-flop equals
 * the reference trainer bit for bit, the epoch report and metrics.csv
 * give RMSE and R^2 (> 0.99 on held-out data), akk_evaluate agrees, and
 * data without targets or with another number of them is refused before
 * any thread starts. */
static void regression_linear(void **unused)
{
	static const char *yaml =
		"data:\n  train: {images: x, labels: y}\n  task: regression\n  scale: 1\n"
		"network:\n  input: [4]\n  gates:\n    - layers: [{dense: 3}]\n"
		"    - layers: [{dense: 2}]\n  loss: mse\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 12, batch_size: 32}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val, bad3;
	struct akk_reference ref;
	struct akk_run *r;
	struct akk_eval_result res;
	struct akk_err e = { 0 };
	const char *csv;
	char *text;
	struct akk_gate *gp[2];

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	csv = tu_path(g_dir, "metrics.csv");
	if (parse(&s, yaml, &e) || akk_model_plan(&m, &s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(s.out.best_by, AKK_BEST_LOSS);	/* regression's default */
	linear_set(&train, 512, 3);
	linear_set(&val, 256, 5);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &m, &train, &e), 0);
	for (long i = 0; i < 12 * 16; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	{
		struct akk_run_config cfg = {
			.mode = AKK_MODE_FLIPFLOP, .epochs = 12, .blas_threads = 1,
			.metrics_path = csv, .obs = { NULL, NULL, keep_report },
		};
		if (!(r = akk_run_create(&m, &train, &val, &cfg, &e)) || akk_run_train(r, &e))
			fail_msg("%s", e.msg);
	}
	for (int g = 0; g < 2; g++) {
		const struct akk_gate *a = &r->gates[g].gate, *b = &ref.gates[g];
		assert_int_equal(a->step, 12 * 16);
		assert_memory_equal(a->params, b->params, a->plan->nparams * sizeof(float));
		gp[g] = &r->gates[g].gate;
	}
	assert_int_equal(g_last.regression, 1);
	assert_int_equal(g_last.epoch, 12);
	if (!(g_last.val_acc > 0.99))
		fail_msg("validation R^2 %g", g_last.val_acc);
	assert_true(g_last.val_rmse < 0.1 && g_last.val_rmse > 0);
	if (getenv("AKK_TEST_VERBOSE"))
		fprintf(stderr, "  regression: validation r2 %.6f rmse %.6f\n",
			g_last.val_acc, g_last.val_rmse);
	assert_true(fabs(g_last.val_loss - g_last.val_rmse * g_last.val_rmse) < 1e-6);
	/* akk_evaluate on the same weights gives the same figures */
	assert_int_equal(akk_evaluate(gp, &m, &val, &r->pre, 32, &res, NULL, NULL, &e), 0);
	assert_int_equal(res.regression, 1);
	assert_null(res.confusion);
	assert_true(fabs(res.r2 - g_last.val_acc) < 1e-6);
	assert_true(fabs(res.rmse - g_last.val_rmse) < 1e-6);
	akk_eval_result_release(&res);
	akk_run_free(r);
	assert_non_null(text = tu_slurp(csv, NULL));
	tu_assert_prefix(text, "epoch,phase,samples,loss,r2,rmse,lr,seconds,");
	tu_assert_contains(text, "\n12,validation,256,");
	free(text);
	/* checked before any thread starts */
	linear_set(&bad3, 64, 7);
	bad3.targets = 1;
	assert_int_equal(akk_run_check_data(&m, &bad3, NULL, &e), -1);
	assert_string_equal(e.msg, "training data has 1 target per sample, but the network outputs 2");
	free(bad3.y);
	bad3.y = NULL;
	bad3.targets = 0;
	assert_int_equal(akk_run_check_data(&m, &train, &bad3, &e), -1);
	assert_string_equal(e.msg, "validation data has no regression targets, but data.task is regression");
	akk_dataset_release(&bad3);
	akk_reference_release(&ref);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	akk_model_release(&m);
	akk_spec_release(&s);
	tu_rm_tree(g_dir);
}

/* output.best_by: loss keeps in best.bin the epoch of the lowest
 * validation loss (metrics.csv's), and records that loss; resumed, the
 * choice goes on from the stored loss. */
static void best_by_loss(void **unused)
{
	struct akk_dataset d;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	const char *cfg;
	char *text, *p;
	double best = -1;
	int best_epoch = 0;

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	write_data(&d, 400);
	g_output_extra = ", best_by: loss";
	cfg = write_config("best.yaml", "");
	g_output_extra = "";
	if (ak("train", cfg, "--quiet", "--epochs", "3", "--set", "optimizer.lr=0.5", NULL))
		fail_msg("%s", g_err);
	if (ak("train", cfg, "--quiet", "--resume", tu_path(g_dir, "out"), "--epochs", "6",
	       "--set", "optimizer.lr=0.5", NULL))
		fail_msg("%s", g_err);
	assert_non_null(text = tu_slurp(tu_path(g_dir, "out/metrics.csv"), NULL));
	for (p = strchr(text, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
		int epoch;
		char phase[16];
		long n;
		double loss;
		if (sscanf(p + 1, "%d,%15[^,],%ld,%lf", &epoch, phase, &n, &loss) == 4 &&
		    !strcmp(phase, "validation") && (best < 0 || loss < best)) {
			best = loss;
			best_epoch = epoch;
		}
	}
	free(text);
	assert_true(best_epoch > 0);
	if (akk_checkpoint_read(&c, tu_path(g_dir, "out/best.bin"), &e))
		fail_msg("%s", e.msg);
	assert_int_equal(c.metrics.epoch, best_epoch);
	assert_true(fabs(c.metrics.val_loss - best) < 1e-6);
	assert_true(fabs(c.metrics.best_val_loss - best) < 1e-6);
	akk_checkpoint_release(&c);
	akk_dataset_release(&d);
	tu_rm_tree(g_dir);
}

static struct akk_epoch_report g_reps[4];
static int g_nreps;
static struct akk_run *g_stop_run;

static int collect_report(void *ctx, struct akk_run *r,
			  const struct akk_epoch_report *rep, struct akk_err *e)
{
	(void)ctx;
	(void)r;
	(void)e;
	if (g_nreps < 4)
		g_reps[g_nreps++] = *rep;
	return 0;
}

/* interrupt at epoch 2, batch 5 */
static void stop_mid_epoch(void *ctx, const struct akk_progress *p)
{
	(void)ctx;
	if (p->epoch == 2 && p->batch == 5)
		akk_run_interrupt(g_stop_run);
}

/* A regression run interrupted in the middle of an epoch and resumed
 * from its checkpoint reports that epoch's RMSE and R^2 exactly as the
 * run that never stopped: the epoch's running sums travel in the
 * checkpoint's data section. */
static void regression_resume_mid_epoch(void **unused)
{
	static const char *yaml =
		"data:\n  train: {images: x, labels: y}\n  task: regression\n  scale: 1\n"
		"  standardize: true\n"
		"network:\n  input: [4]\n  gates:\n    - layers: [{dense: 3}]\n"
		"    - layers: [{dense: 2}]\n  loss: huber\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 32}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val;
	struct akk_run *a, *b, *c;
	struct akk_checkpoint ck;
	struct akk_ckpt_metrics met = { 0 };
	struct akk_err e = { 0 };
	struct akk_epoch_report want;
	const char *path;

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	path = tu_path(g_dir, "mid.bin");
	if (parse(&s, yaml, &e) || akk_model_plan(&m, &s, &e))
		fail_msg("%s", e.msg);
	linear_set(&train, 512, 3);
	linear_set(&val, 128, 5);
	akk_blas_threads(1);
	{
		struct akk_run_config cfg = {
			.mode = AKK_MODE_FLIPFLOP, .epochs = 2, .blas_threads = 1,
			.obs = { NULL, NULL, collect_report },
		};
		g_nreps = 0;
		if (!(a = akk_run_create(&m, &train, &val, &cfg, &e)) || akk_run_train(a, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(g_nreps, 2);
		want = g_reps[1];
		akk_run_free(a);
	}
	{
		struct akk_run_config cfg = {
			.mode = AKK_MODE_FLIPFLOP, .epochs = 2, .blas_threads = 1,
			.obs = { NULL, stop_mid_epoch, NULL },
		};
		if (!(b = akk_run_create(&m, &train, &val, &cfg, &e)))
			fail_msg("%s", e.msg);
		g_stop_run = b;
		if (akk_run_train(b, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(b->pos.epoch, 1);
		assert_int_equal(b->pos.index, 5);
		assert_int_equal(b->pos.reg.n, 5 * 32 * 2);
		met.best_val_loss = -1;
		if (akk_run_write_checkpoint(b, path, &s, g_dir, &met, &e))
			fail_msg("%s", e.msg);
		akk_run_free(b);
	}
	if (akk_checkpoint_read(&ck, path, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(ck.task, 1);
	assert_int_equal(ck.targets, 2);
	assert_int_equal(ck.pos.reg.n, 320);
	{
		struct akk_run_config cfg = {
			.mode = AKK_MODE_FLIPFLOP, .epochs = 2, .blas_threads = 1,
			.start = ck.pos, .pre = &ck.pre,
			.obs = { NULL, NULL, collect_report },
		};
		g_nreps = 0;
		if (!(c = akk_run_create(&m, &train, &val, &cfg, &e)) ||
		    akk_run_restore(c, &ck, path, &e) || akk_run_train(c, &e))
			fail_msg("%s", e.msg);
		assert_int_equal(g_nreps, 1);
		akk_run_free(c);
	}
	assert_true(g_reps[0].train_loss == want.train_loss);
	if (g_reps[0].train_acc != want.train_acc || g_reps[0].train_rmse != want.train_rmse)
		fail_msg("resumed epoch: r2 %.17g rmse %.17g, uninterrupted: r2 %.17g rmse %.17g",
			 g_reps[0].train_acc, g_reps[0].train_rmse, want.train_acc,
			 want.train_rmse);
	assert_true(g_reps[0].val_acc == want.val_acc);
	akk_checkpoint_release(&ck);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	akk_model_release(&m);
	akk_spec_release(&s);
	tu_rm_tree(g_dir);
}

/* Ordinary least squares with an intercept, by the normal equations in
 * double (Gaussian elimination with partial pivoting): fitted on the
 * samples of d not in idx, the R^2 (1 - SS_res / SS_tot about the held-out
 * mean, as scikit-learn's r2_score) on those in idx. */
static double ols_r2(const struct akk_dataset *d, const uint32_t *idx, size_t n)
{
	size_t p = d->in + 1, j = 0;
	double *a = calloc(p * (p + 1), sizeof(double)), *b = calloc(p, sizeof(double));
	double res = 0, tot = 0, mean = 0;

	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < d->n; i++) {
		int held = j < n && idx[j] == i;

		j += held;
		if (held)
			continue;
		for (size_t r = 0; r < p; r++) {
			double xr = r ? d->xf[i * d->in + r - 1] : 1;
			for (size_t c = 0; c < p; c++)
				a[r * (p + 1) + c] += xr * (c ? d->xf[i * d->in + c - 1] : 1);
			a[r * (p + 1) + p] += xr * d->y[i];
		}
	}
	for (size_t c = 0; c < p; c++) {	/* eliminate below the pivot */
		size_t piv = c;
		for (size_t r = c + 1; r < p; r++)
			if (fabs(a[r * (p + 1) + c]) > fabs(a[piv * (p + 1) + c]))
				piv = r;
		for (size_t k = 0; k <= p; k++) {
			double t = a[c * (p + 1) + k];
			a[c * (p + 1) + k] = a[piv * (p + 1) + k];
			a[piv * (p + 1) + k] = t;
		}
		for (size_t r = c + 1; r < p; r++) {
			double f = a[r * (p + 1) + c] / a[c * (p + 1) + c];
			for (size_t k = c; k <= p; k++)
				a[r * (p + 1) + k] -= f * a[c * (p + 1) + k];
		}
	}
	for (size_t c = p; c-- > 0;) {		/* back substitution */
		double s = a[c * (p + 1) + p];
		for (size_t k = c + 1; k < p; k++)
			s -= a[c * (p + 1) + k] * b[k];
		b[c] = s / a[c * (p + 1) + c];
	}
	for (size_t i = 0; i < n; i++)
		mean += d->y[idx[i]] / (double)n;
	for (size_t i = 0; i < n; i++) {
		double f = b[0], t = d->y[idx[i]];
		for (size_t c = 1; c < p; c++)
			f += b[c] * d->xf[idx[i] * d->in + c - 1];
		res += (t - f) * (t - f);
		tot += (t - mean) * (t - mean);
	}
	free(a);
	free(b);
	return 1 - res / tot;
}

/* The ceiling configs/diabetes.yaml is measured against: a linear model
 * (OLS, closed form) on the same held-out samples akkctl train validates
 * on, its seed-42 split and each of its seed-42 5 folds. Skips without
 * datasets/sklearn (sh datasets/fetch.sh sklearn). */
static void diabetes_linear_ceiling(void **unused)
{
	struct akk_spec s;
	struct akk_dataset d = { 0 };
	struct akk_err e = { 0 };
	uint32_t *h;
	size_t n;
	double sum = 0;
	/* OLS R^2 of the split and of folds 1 to 5 */
	static const double want[6] = { 0.3927, 0.4009, 0.4656, 0.3914, 0.5993, 0.5269 };

	(void)unused;
	if (access("datasets/sklearn/diabetes_target.csv.gz", R_OK)) {
		print_message("skipped: no datasets/sklearn (sh datasets/fetch.sh sklearn)\n");
		skip();
	}
	assert_int_equal(akk_spec_load(&s, "configs/diabetes.yaml", NULL, 0, &e), 0);
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), 0);
	assert_int_equal(d.n, 442);
	assert_int_equal(akk_split_heldout(&h, &n, &d, 0.2, 42, &e), 0);
	print_message("OLS R^2: split 0.2 %.4f;", ols_r2(&d, h, n));
	assert_true(fabs(ols_r2(&d, h, n) - want[0]) < 5e-4);
	free(h);
	for (int f = 1; f <= 5; f++) {
		double r2;

		assert_int_equal(akk_split_fold(&h, &n, &d, 5, f, 42, &e), 0);
		r2 = ols_r2(&d, h, n);
		sum += r2;
		print_message(" fold %d %.4f", f, r2);
		assert_true(fabs(r2 - want[f]) < 5e-4);
		free(h);
	}
	print_message("; 5-fold mean %.4f\n", sum / 5);
	akk_dataset_release(&d);
	akk_spec_release(&s);
}

/* ---- where the samples live ---------------------------------------------- */

/* The AnonHugePages (kB) of the mapping that holds p, from
 * /proc/self/smaps; -1 when no mapping holds it. */
static long huge_kb_at(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int inside = 0;
	long kb = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return inside ? kb : -1;
}

/* A training set of 4 MiB or more moves to huge pages where the system
 * offers them, byte for byte as the file holds it, and is released as
 * such (ASan sees a free of a mapping); a smaller one stays as the reader
 * left it, and so does any set only opened (evaluation). */
static void samples_in_huge_pages(void **unused)
{
	char text[512];
	struct akk_spec s;
	struct akk_dataset d, w;
	struct akk_err e = { 0 };
	static const size_t sizes[] = { 6000, 500 };	/* 4.7 MB, 392 kB */

	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	for (int k = 0; k < 2; k++) {
		tu_dataset(&w, sizes[k], 28, 10, 11);
		tu_write_idx(tu_path(g_dir, "images"), &w, 1);
		tu_write_idx(tu_path(g_dir, "labels"), &w, 0);
		snprintf(text, sizeof(text), "data:\n  train: {images: images, labels: labels}\n"
			 "network:\n  input: [1, 28, 28]\n  gates:\n    - layers: [flatten, {dense: 10}]\n"
			 "optimizer: {type: sgd, lr: 0.1}\n");
		assert_int_equal(akk_spec_parse(&s, text, strlen(text), "h.yaml", g_dir, NULL, 0, &e), 0);
		assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), 0);
		assert_int_equal(d.x_mapped, 0);	/* opening alone does not move */
		akk_dataset_huge_pages(&d);
		assert_int_equal(d.n, sizes[k]);
		assert_memory_equal(d.x8, w.x8, d.n * d.in);
		if (k == 0 && tu_thp_offered()) {
			assert_int_equal(d.x_mapped, 6 << 20);	/* 4.7 MB in whole 2 MiB pages */
			assert_int_equal((uintptr_t)d.x8 % (2 << 20), 0);
			assert_true(huge_kb_at(d.x8) >= 2048);
		} else {
			assert_int_equal(d.x_mapped, 0);
		}
		akk_dataset_release(&d);
		akk_dataset_release(&w);
		akk_spec_release(&s);
	}
}

/* The move gives each copied piece of the old block back as it goes: in
 * a child (a fresh peak), moving 64 MiB raises the peak resident size by
 * a few MiB, where copying and then freeing would raise it by 64, and
 * every byte arrives. */
static void huge_pages_move_in_place(void **unused)
{
	pid_t pid;
	int status;

	(void)unused;
	if (!tu_thp_offered())
		skip();
#ifdef __SANITIZE_THREAD__
	skip();	/* ThreadSanitizer's shadow of every byte copied grows the peak */
#endif
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		size_t n = (size_t)64 << 20;
		unsigned char *p = malloc(n);
		struct rusage r0, r1;
		void *q;
		int bad = 0;

		if (!p)
			_exit(3);
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)(i * 7 + (i >> 20));
		getrusage(RUSAGE_SELF, &r0);
		q = p;
		if (akk_hugemem_move(&q, n) != n)
			_exit(4);
		getrusage(RUSAGE_SELF, &r1);
		for (size_t i = 0; i < n && !bad; i++)
			bad = ((unsigned char *)q)[i] != (unsigned char)(i * 7 + (i >> 20));
		if (bad)
			_exit(5);
		/* kB: 2.4 MB here, 8.8 under ASan, which marks the freed
		 * block in its shadow memory (8 MB for 64) */
		_exit(r1.ru_maxrss - r0.ru_maxrss < 16 << 10 ? 0 : 6);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(per_channel_normalize_values),
		cmocka_unit_test(per_channel_lists_checked),
		cmocka_unit_test(standardize_values),
		cmocka_unit_test(scale_default_by_type),
		cmocka_unit_test(split_stratified_and_seeded),
		cmocka_unit_test(folds_partition_stratified),
		cmocka_unit_test(subset_partitions),
		cmocka_unit_test(split_stored_and_kept_on_resume),
		cmocka_unit_test(data_section_validated),
		cmocka_unit_test(class_names_in_checkpoint),
		cmocka_unit_test(regression_linear),
		cmocka_unit_test(regression_resume_mid_epoch),
		cmocka_unit_test(best_by_loss),
		cmocka_unit_test(diabetes_linear_ceiling),
		cmocka_unit_test(samples_in_huge_pages),
		cmocka_unit_test(huge_pages_move_in_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
