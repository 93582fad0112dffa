/* test_autoenc.c - targets that are the data's own values (data.targets
 * input and files), the denoiser's noise (data.augment.noise), PSNR and
 * eval's --pictures.
 *
 * The data are tu_dataset's images of 8 x 8 (a class pattern over noise,
 * the first two pixels the sample's index), written as IDX files. The
 * figures are checked against values computed by hand or by numpy
 * (/usr/bin/python3) from akkctl predict's outputs, the picture rendered
 * with headless Chromium (tests/render_svg.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "base/workers.h"
#include "config/spec.h"
#include "data/noise.h"
#include "data/open.h"
#include "data/targets.h"
#include "io/image_grid.h"
#include "nn/loss.h"
#include "runtime/provider.h"

#define SIDE 8
#define IN (SIDE * SIDE)
#define NTRAIN 512
#define NVAL 128

static char g_dir[512], g_out[1 << 20], g_err[1 << 14];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* A config in g_dir: the autoencoder of the tests, data keys `data` (after
 * the train and validation images), epochs, in dir `run`. */
static const char *write_config(const char *name, const char *data, const char *layers,
				int epochs, const char *run)
{
	char text[4096];
	const char *path = tu_path(g_dir, name);

	snprintf(text, sizeof(text),
		 "name: ae\nseed: 42\n"
		 "data:\n"
		 "  targets: input\n"
		 "  train: {images: tr-images}\n"
		 "  validation: {images: va-images}\n"
		 "%s"
		 "network:\n"
		 "  input: [1, %d, %d]\n"
		 "  gates:\n"
		 "    - layers: %s\n"
		 "  loss: mse\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {epochs: %d, batch_size: 32}\n"
		 "output: {dir: %s}\n",
		 data, SIDE, SIDE, layers, epochs, run);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	return path;
}

#define DENSE_AE "[flatten, {dense: 16}, relu, {dense: 64}, sigmoid]"

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "tr", NTRAIN, SIDE, 4, 7);
	tu_write_set(g_dir, "va", NVAL, SIDE, 4, 9);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- the config ------------------------------------------------------- */

/* check refuses each mistake with its place and exit 2. */
static void config_errors(void **unused)
{
	static const struct {
		const char *data, *layers, *line;
	} cases[] = {
		/* the output must be the target's shape (or flat, as many) */
		{ "", "[flatten, {dense: 10}]",
		  "ae.yaml:10:25: the network outputs [10], but its target (data.targets: input) is its input [1, 8, 8]: the output must have the input's shape, or be flat with 64 values" },
		{ "", "[{conv2d: {filters: 2, kernel: 3, padding: 1}}]",
		  "ae.yaml:10:16: the network outputs [2, 8, 8], but its target (data.targets: input) is its input [1, 8, 8]: the output must have the input's shape, or be flat with 64 values" },
		{ "  task: classification\n", DENSE_AE,
		  "ae.yaml:7:3: data.targets: input is a regression on values: data.task must be regression (or left out)" },
		{ "  augment: {flip: true}\n", DENSE_AE,
		  "ae.yaml:7:3: crop_padding, translate and flip would move the input but not its target (data.targets: input); 'noise' is the augmentation for it" },
		{ "  augment: {noise: -0.1}\n", DENSE_AE,
		  "ae.yaml:7:20: 'noise' must be at least 0, got -0.1" },
	};
	char want[1024];

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *cfg = write_config("ae.yaml", cases[i].data, cases[i].layers, 1, "run");
		assert_int_equal(ak("check", cfg, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s/%s", g_dir, cases[i].line);
		tu_assert_line(g_err, want);
	}
}

/* The keys of data.targets: files, and what check says of them. */
static void target_file_keys(void **unused)
{
	static const struct {
		const char *text, *line;
	} cases[] = {
		{ "data:\n  train: {images: tr-images, labels: tr-labels, target_images: tr-images}\n",
		  "t.yaml:2:49: 'target_images' needs data.targets: files" },
		{ "data:\n  targets: files\n  train: {images: tr-images}\n",
		  "t.yaml:3:10: missing required key 'target_images' in data.train (data.targets: files)" },
		{ "data:\n  format: csv\n  targets: files\n  train: {file: x.csv}\n",
		  "t.yaml:3:3: data.targets: files does not apply to data format 'csv' (target files are IDX or .npy: formats idx and npy)" },
		{ "data:\n  targets: pixels\n  train: {images: tr-images}\n",
		  "t.yaml:2:12: unknown targets 'pixels'" },
	};
	char text[2048], want[1024];

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text),
			 "%snetwork:\n  input: [1, 8, 8]\n  gates:\n    - layers: %s\n  loss: mse\n"
			 "optimizer: {type: adam, lr: 0.01}\n",
			 cases[i].text, DENSE_AE);
		assert_int_equal(tu_write_file(tu_path(g_dir, "t.yaml"), text, strlen(text)), 0);
		assert_int_equal(ak("check", tu_path(g_dir, "t.yaml"), NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s/%s", g_dir, cases[i].line);
		tu_assert_line(g_err, want);
	}
}

/* ---- the targets and the noise ---------------------------------------- */

/* A spec from text, its data read (targets attached) into d. */
static void load(struct akk_spec *s, struct akk_dataset *d, const char *data)
{
	char text[2048];
	struct akk_err e = { 0 };

	snprintf(text, sizeof(text),
		 "data:\n  targets: input\n  train: {images: tr-images}\n%s"
		 "network:\n  input: [1, 8, 8]\n  gates:\n    - layers: %s\n  loss: mse\n"
			 "optimizer: {type: adam, lr: 0.01}\n",
		 data, DENSE_AE);
	if (akk_spec_parse(s, text, strlen(text), "mem.yaml", g_dir, NULL, 0, &e) ||
	    akk_data_open(d, &s->data, AKK_DATA_TRAIN, &e)) {
		print_error("%s:%d:%d: %s\n", e.file, e.line, e.col, e.msg);
		fail();
	}
}

/* The sample a batch row is, from its clean target: pixels 0 and 1 hold
 * the index (tu_dataset). */
static size_t index_of(const float *t)
{
	return (size_t)lrintf(t[0] * 255) + 256 * (size_t)lrintf(t[1] * 255);
}

/* The training stream's batches: targets exactly the clean pixels / 255
 * (never normalized, never noisy), inputs the normalized pixels with
 * noise of std 0.3 in pixel units (not clipped here), reproducible per
 * (epoch, sample) and fresh each epoch; the validation stream noisy the
 * same way on every pass (noise_eval). */
static void noise_on_input_only(void **unused)
{
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_preprocess pre;
	struct akk_provider tp, vp;
	struct akk_workers w;
	struct akk_noise nz;
	struct akk_err e = { 0 };
	static float first[NTRAIN][IN], again[NTRAIN][IN];
	double sq = 0, moved = 0;
	long n = 0, below = 0;

	(void)unused;
	load(&s, &d, "  normalize: {mean: 0.5, std: 0.25}\n"
		 "  augment: {noise: 0.3, noise_eval: true, noise_clip: false}\n");
	assert_null(d.labels);
	assert_int_equal(d.targets, IN);
	assert_int_equal(akk_preprocess_init(&pre, &s.data, IN, 1, &d, &e), 0);
	akk_noise_init(&nz, &s.data, &pre, d.xtype, 42);
	assert_int_equal(akk_provider_init(&tp, &d, &pre, &(struct akk_provider_config){
			.ds = &s.data, .shuffle = 1, .seed = 42, .bs = 64, .in = IN, .classes = IN,
			.npool = 2, .shards = 1 }, &e), 0);
	assert_int_equal(akk_provider_init(&vp, &d, &pre, &(struct akk_provider_config){
			.ds = &s.data, .seed = 42, .bs = 64, .in = IN, .classes = IN,
			.npool = 2, .shards = 1 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&tp, &w);
	akk_provider_start(&vp, &w);
	for (int i = 0; i < 2 * NTRAIN / 64; i++) {	/* two epochs */
		struct akk_batch *b = akk_provider_next(&tp);
		assert_non_null(b);
		for (int j = 0; j < b->B; j++) {
			const float *t = b->targets + (size_t)j * IN, *x = b->x + (size_t)j * IN;
			size_t idx = index_of(t);
			float u[IN];
			assert_true(idx < NTRAIN);
			for (int k = 0; k < IN; k++) {
				float clean = d.x8[idx * IN + k] / 255.0f;
				/* the target: the clean pixel, not normalized */
				assert_float_equal(t[k], clean, 0);
				/* the input: normalized, noisy */
				u[k] = x[k] * 0.25f + 0.5f;
				sq += (u[k] - clean) * (u[k] - clean);
				n++;
				below += u[k] < 0;
			}
			memcpy(b->epoch ? again[idx] : first[idx], u, sizeof(u));
		}
		assert_int_equal(akk_provider_recycle(&tp, b), 0);
	}
	/* noise of std 0.3, not clipped: some pixels fall below 0 */
	assert_int_equal(n, 2 * NTRAIN * IN);
	assert_float_equal(sqrt(sq / n), 0.3, 0.005);
	assert_true(below > 100);
	/* a fresh draw each epoch, from the sample's own stream */
	for (int i = 0; i < NTRAIN; i++) {
		float x[IN];
		for (int k = 0; k < IN; k++)
			moved += fabsf(first[i][k] - again[i][k]);
		for (int k = 0; k < IN; k++)
			x[k] = (d.x8[(size_t)i * IN + k] / 255.0f - 0.5f) / 0.25f;
		akk_noise_sample(&nz, x, 1, (size_t)i);
		for (int k = 0; k < IN; k++)
			assert_float_equal(x[k] * 0.25f + 0.5f, again[i][k], 1e-5);
	}
	assert_true(moved / (NTRAIN * IN) > 0.1);
	/* validation: noisy, the same on two passes, clean targets */
	for (int i = 0; i < 2 * NTRAIN / 64; i++) {
		struct akk_batch *b = akk_provider_next(&vp);
		for (int j = 0; j < b->B; j++) {
			size_t idx = (size_t)(i % 8) * 64 + j;
			double diff = 0;
			for (int k = 0; k < IN; k++) {
				float u = b->x[(size_t)j * IN + k] * 0.25f + 0.5f;
				assert_float_equal(b->targets[(size_t)j * IN + k],
						   d.x8[idx * IN + k] / 255.0f, 0);
				if (i < 8)
					first[idx][k] = u;
				else
					assert_float_equal(u, first[idx][k], 0);
				diff += fabsf(u - d.x8[idx * IN + k] / 255.0f);
			}
			assert_true(diff / IN > 0.1);
		}
		assert_int_equal(akk_provider_recycle(&vp, b), 0);
	}
	akk_workers_stop(&w);
	akk_provider_release(&tp);
	akk_provider_release(&vp);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
	akk_spec_release(&s);
}

/* Without noise_eval the validation stream is clean; the training
 * stream's noise is clipped to [0, 1] (noise_clip's default). */
static void validation_clean_unless_asked(void **unused)
{
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_preprocess pre;
	struct akk_provider vp, tp;
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct akk_batch *b;
	long zeros = 0, ones = 0;

	(void)unused;
	load(&s, &d, "  augment: {noise: 0.3}\n");
	assert_int_equal(akk_preprocess_init(&pre, &s.data, IN, 1, &d, &e), 0);
	assert_int_equal(akk_provider_init(&vp, &d, &pre, &(struct akk_provider_config){
			.ds = &s.data, .seed = 42, .bs = 64, .in = IN, .classes = IN,
			.npool = 2, .shards = 1 }, &e), 0);
	assert_int_equal(akk_provider_init(&tp, &d, &pre, &(struct akk_provider_config){
			.ds = &s.data, .shuffle = 1, .seed = 42, .bs = 64, .in = IN, .classes = IN,
			.npool = 2, .shards = 1 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&vp, &w);
	akk_provider_start(&tp, &w);
	b = akk_provider_next(&vp);
	assert_non_null(b);
	for (int k = 0; k < 64 * IN; k++)
		assert_float_equal(b->x[k], b->targets[k], 1e-6);
	b = akk_provider_next(&tp);
	assert_non_null(b);
	for (int k = 0; k < 64 * IN; k++) {
		assert_true(b->x[k] >= 0 && b->x[k] <= 1);
		zeros += b->x[k] == 0;
		ones += b->x[k] == 1;
	}
	/* pixels of 20 / 255 and more: std 0.3 takes a good share below 0 */
	assert_true(zeros > 64 * IN / 20);
	assert_true(ones > 0);
	akk_workers_stop(&w);
	akk_provider_release(&vp);
	akk_provider_release(&tp);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
	akk_spec_release(&s);
}

/* data.targets: files: the target file's scaled pixels, sample by
 * sample; a file of another count is refused, named. */
static void targets_from_a_file(void **unused)
{
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_err e = { 0 };
	char text[1024];
	static const char *const fmt =
		"data:\n  targets: files\n  train: {images: tr-images, target_images: %s}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n    - layers: " DENSE_AE "\n  loss: mse\n"
		"optimizer: {type: adam, lr: 0.01}\n";
	size_t n;
	unsigned char *va;

	(void)unused;
	/* the first 128 training images, their targets the validation set */
	tu_write_set(g_dir, "tr128", NVAL, SIDE, 4, 7);
	snprintf(text, sizeof(text), fmt, "va-images");
	assert_int_equal(akk_spec_parse(&s, text, strlen(text), "f.yaml", g_dir, NULL, 0, &e), 0);
	free(s.data.train.images);
	s.data.train.images = strdup(tu_path(g_dir, "tr128-images"));
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), 0);
	va = (unsigned char *)tu_slurp(tu_path(g_dir, "va-images"), &n);
	assert_int_equal(n, 16 + NVAL * IN);
	assert_int_equal(d.n, NVAL);
	for (size_t i = 0; i < NVAL * IN; i++)
		assert_float_equal(d.y[i], va[16 + i] / 255.0f, 0);
	free(va);
	akk_dataset_release(&d);
	akk_spec_release(&s);
	/* 512 inputs, 128 targets */
	snprintf(text, sizeof(text), fmt, "va-images");
	assert_int_equal(akk_spec_parse(&s, text, strlen(text), "f.yaml", g_dir, NULL, 0, &e), 0);
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), -1);
	assert_string_equal(e.file, tu_path(g_dir, "va-images"));
	assert_string_equal(e.msg, "128 target samples, but the inputs are 512");
	akk_spec_release(&s);
}

/* Through the CLI: a network trained on target files, evaluated with the
 * input's PSNR against its target; a target file of another image size is
 * refused before training, named. */
static void train_on_target_files(void **unused)
{
	const char *cfg = tu_path(g_dir, "files.yaml");
	char text[2048], want[1024];
	static const char *const fmt =
		"data:\n  targets: files\n"
		"  train: {images: tr-images, target_images: %s}\n"
		"  validation: {images: va-images, target_images: va-images}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n    - layers: " DENSE_AE "\n  loss: mse\n"
		"optimizer: {type: adam, lr: 0.01}\nschedule: {epochs: 2, batch_size: 32}\n"
		"output: {dir: files}\n";

	(void)unused;
	tu_write_set(g_dir, "small", NTRAIN, 4, 4, 3);
	snprintf(text, sizeof(text), fmt, "small-images");
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_int_equal(ak("check", cfg, NULL), 0);
	assert_int_equal(ak("train", cfg, "--quiet", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: training data has 16 targets per sample, but the network outputs 64",
		 tu_path(g_dir, "small-images"));
	tu_assert_line(g_err, want);
	snprintf(text, sizeof(text), fmt, "tr-images");
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_int_equal(ak("train", cfg, "--quiet", NULL), 0);
	assert_int_equal(ak("eval", tu_path(g_dir, "files"), NULL), 0);
	/* the validation inputs are their own targets: a perfect copy */
	tu_assert_line(g_out, "input psnr 100.00 dB (the input against its target)");
}

/* ---- PSNR ------------------------------------------------------------- */

/* By hand: two samples of 4 values whose MSEs are 0.04 and 0.01 have PSNRs
 * 10 log10(1 / 0.04) = 13.9794 and 20 dB, mean 16.9897 (pooled, MSE 0.025,
 * it would be 16.0206); at peak 255 each is 48.1308 dB more. */
static void psnr_by_hand(void **unused)
{
	const float out[8] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.2f, 0.2f, 0.2f, 0.2f };
	const float tgt[8] = { 0.5f, 0.5f, 0.5f, 0.1f, 0.2f, 0.2f, 0.0f, 0.2f };
	struct akk_reg_sums rs = { 0 };
	double loss;

	(void)unused;
	loss = akk_loss_targets(AKK_LOSS_MSE, 1, NULL, out, tgt, 2, 4, &rs);
	assert_float_equal(loss, 0.025, 1e-7);
	assert_float_equal(akk_reg_rmse(&rs), sqrt(0.025), 1e-7);
	assert_int_equal(rs.samples, 2);
	assert_float_equal(akk_reg_psnr(&rs, 1), 16.98970004, 1e-5);
	assert_float_equal(akk_reg_psnr(&rs, 255), 16.98970004 + 48.13080361, 1e-5);
	assert_float_equal(akk_psnr(out, tgt, 4, 1), 13.97940009, 1e-5);
	assert_float_equal(akk_psnr(out + 4, tgt + 4, 4, 2), 20 + 6.02059991, 1e-5);
	/* a perfect copy: the floor, 100 dB */
	assert_float_equal(akk_psnr(out, out, 4, 1), 100, 1e-9);
	/* the peak of the scaled data */
	{
		struct akk_data_spec ds = { .scale = 255 };
		assert_float_equal(akk_targets_peak(&ds, AKK_X_U8), 1, 0);
		ds.scale = 1;
		ds.scale_given = 1;
		assert_float_equal(akk_targets_peak(&ds, AKK_X_U8), 255, 0);
		assert_float_equal(akk_targets_peak(&ds, AKK_X_F32), 1, 0);
	}
}

/* ---- through the CLI -------------------------------------------------- */

/* The last row of phase in a metrics file: its loss and psnr columns. */
static void last_row(const char *csv, const char *phase, double *loss, double *psnr)
{
	char key[32];
	const char *p = NULL, *q = csv;
	int n = snprintf(key, sizeof(key), ",%s,", phase);

	while ((q = strstr(q, key))) {
		p = q;
		q += n;
	}
	assert_non_null(p);
	/* epoch,phase,samples,loss,r2,rmse,psnr,... */
	p = strchr(p + n, ',') + 1;
	*loss = atof(p);
	p = strchr(strchr(strchr(p, ',') + 1, ',') + 1, ',') + 1;
	*psnr = atof(p);
}

/* The MSE of the best constant output, the training set's mean image,
 * on the validation set: what a network that ignores its input gets. */
static double mean_image_mse(void)
{
	size_t n;
	unsigned char *tr = (unsigned char *)tu_slurp(tu_path(g_dir, "tr-images"), &n);
	unsigned char *va = (unsigned char *)tu_slurp(tu_path(g_dir, "va-images"), NULL);
	double mean[IN] = { 0 }, sse = 0;

	assert_true(tr && va);
	for (size_t i = 0; i < NTRAIN; i++)
		for (int k = 0; k < IN; k++)
			mean[k] += tr[16 + i * IN + k] / 255.0 / NTRAIN;
	for (size_t i = 0; i < NVAL; i++)
		for (int k = 0; k < IN; k++) {
			double r = va[16 + i * IN + k] / 255.0 - mean[k];
			sse += r * r;
		}
	free(tr);
	free(va);
	return sse / (NVAL * IN);
}

/* A dense autoencoder with a bottleneck of 16 learns the class patterns:
 * its validation loss ends well below the mean image's MSE, and
 * metrics.csv carries the psnr column. */
static void autoencoder_learns(void **unused)
{
	const char *cfg = write_config("learn.yaml", "", DENSE_AE, 30, "learn");
	double base = mean_image_mse(), loss, psnr;
	char *csv;

	(void)unused;
	assert_int_equal(ak("train", cfg, "--quiet", NULL), 0);
	csv = tu_slurp(tu_path(g_dir, "learn/metrics.csv"), NULL);
	assert_non_null(csv);
	tu_assert_prefix(csv, "epoch,phase,samples,loss,r2,rmse,psnr,lr,");
	last_row(csv, "validation", &loss, &psnr);
	if (!(loss < 0.5 * base)) {
		print_error("validation loss %g, the mean image's %g\n", loss, base);
		fail();
	}
	assert_true(psnr > 10 * log10(1 / (0.5 * base)) - 1);
	free(csv);
}

/* eval's figures against numpy's on predict's outputs: the loss (the mean
 * of squares) and the PSNR per image, averaged; no noisy line without
 * noise. */
static void eval_matches_numpy(void **unused)
{
	const char *run = tu_path(g_dir, "learn"), *preds = tu_path(g_dir, "preds.csv");
	const char *py[] = { "/usr/bin/python3", "-c",
		"import sys, numpy as np\n"
		"x = np.fromfile(sys.argv[1], np.uint8)[16:].reshape(-1, 64) / 255.0\n"
		"y = np.loadtxt(sys.argv[2], delimiter=',', skiprows=1)[:, 1:]\n"
		"mse = ((y - x) ** 2).mean(axis=1)\n"
		"print('%.6f %.4f' % (mse.mean(), (10 * np.log10(1 / mse)).mean()))\n",
		tu_path(g_dir, "va-images"), preds, NULL };
	double loss, psnr, nloss, npsnr;
	long n;

	(void)unused;
	if (!tu_exists(tu_path(run, "metrics.csv")))
		skip();
	assert_int_equal(ak("eval", run, NULL), 0);
	assert_int_equal(sscanf(g_out, "samples %ld  loss %lf  rmse %*g  r2 %*g  psnr %lf dB",
				&n, &loss, &psnr), 3);
	assert_int_equal(n, NVAL);
	tu_assert_not_contains(g_out, "noisy input");
	assert_int_equal(ak("predict", run, tu_path(g_dir, "va-images"), "--out", preds, NULL), 0);
	if (tu_run(py, g_out, sizeof(g_out), g_err, sizeof(g_err))) {
		print_error("numpy: %s\n", g_err);
		skip();
	}
	assert_int_equal(sscanf(g_out, "%lf %lf", &nloss, &npsnr), 2);
	assert_float_equal(loss, nloss, 1e-4);
	assert_float_equal(psnr, npsnr, 0.01);
}

/* A denoiser: eval prints the noisy input's PSNR beside the output's, the
 * same on every run (seeded per sample); the noisy input's is what numpy
 * expects of noise of std 0.2 clipped to [0, 1] on these images, and the
 * output's is better. */
static void eval_noisy_baseline(void **unused)
{
	const char *cfg = write_config("noisy.yaml", "  augment: {noise: 0.2, noise_eval: true}\n",
				       DENSE_AE, 20, "noisy");
	static char first[sizeof(g_out)];
	double loss, psnr, base, std, want;
	const char *py[] = { "/usr/bin/python3", "-c",
		"import sys, numpy as np\n"
		"x = np.fromfile(sys.argv[1], np.uint8)[16:].reshape(-1, 64) / 255.0\n"
		"r = np.random.default_rng(1)\n"
		"p = [(10 * np.log10(1 / ((np.clip(x + r.normal(0, 0.2, x.shape), 0, 1) - x) ** 2)"
		".mean(axis=1))).mean() for _ in range(400)]\n"
		"print('%.4f' % np.mean(p))\n",
		tu_path(g_dir, "va-images"), NULL };

	(void)unused;
	assert_int_equal(ak("train", cfg, "--quiet", NULL), 0);
	assert_int_equal(ak("eval", tu_path(g_dir, "noisy"), NULL), 0);
	memcpy(first, g_out, sizeof(first));
	assert_int_equal(sscanf(g_out, "samples 128  loss %lf  rmse %*g  r2 %*g  psnr %lf dB\n"
				"noisy input psnr %lf dB (noise std %lf, seeded per sample)",
				&loss, &psnr, &base, &std), 4);
	assert_float_equal(std, 0.2, 1e-6);
	/* numpy's expectation: the same noise, clipped, 400 draws */
	if (tu_run(py, g_out, sizeof(g_out), g_err, sizeof(g_err)) ||
	    sscanf(g_out, "%lf", &want) != 1) {
		print_error("numpy: %s\n", g_err);
		skip();
	}
	if (fabs(base - want) > 0.3) {
		print_error("noisy input psnr %g, numpy's %g\n", base, want);
		fail();
	}
	/* the denoiser gains on its noisy input */
	assert_true(psnr > base + 1);
	assert_int_equal(ak("eval", tu_path(g_dir, "noisy"), NULL), 0);
	assert_string_equal(g_out, first);
	/* training's final validation pass (wheels: on the final weights)
	 * saw the same seeded noise as eval of the last weights: the same
	 * loss and PSNR */
	{
		char *csv = tu_slurp(tu_path(g_dir, "noisy/metrics.csv"), NULL);
		double vloss, vpsnr;

		assert_non_null(csv);
		last_row(csv, "final", &vloss, &vpsnr);
		free(csv);
		assert_int_equal(ak("eval", tu_path(g_dir, "noisy/last.bin"), NULL), 0);
		assert_int_equal(sscanf(g_out, "samples 128  loss %lf  rmse %*g  r2 %*g  psnr %lf dB",
					&loss, &psnr), 2);
		assert_float_equal(loss, vloss, 1e-4);
		assert_float_equal(psnr, vpsnr, 0.005);
	}
}

/* ---- the picture ------------------------------------------------------ */

/* The grey of pixel (x, y) of image j in row r of the rendered grid. */
static int grey_at(const struct tu_png *img, int r, int j, int x, int y)
{
	int px = AKK_GRID_LEFT + j * (SIDE * AKK_GRID_PIXEL + AKK_GRID_GAP) + x * AKK_GRID_PIXEL + 1;
	int py = AKK_GRID_TOP + r * (SIDE * AKK_GRID_PIXEL + AKK_GRID_GAP) + y * AKK_GRID_PIXEL + 1;
	const unsigned char *p = img->px + ((size_t)py * img->w + (size_t)px) * img->ch;

	assert_true(p[0] == p[1] && p[1] == p[2]);
	return p[0];
}

/* eval --pictures: three rows of the first 8 validation images, every
 * pixel a rect; rendered, the input row shows the images' own bytes, the
 * noisy row other values, the output row the network's (not the noisy
 * input's, not the input's). */
static void pictures(void **unused)
{
	const char *svg = tu_path(g_dir, "pics.svg");
	unsigned char *va = (unsigned char *)tu_slurp(tu_path(g_dir, "va-images"), NULL);
	char *text;
	const char *p;
	int width, height, images = 0, off_noisy = 0, off_out = 0, out_vs_noisy = 0;
	struct tu_png img;

	(void)unused;
	if (!tu_exists(tu_path(g_dir, "noisy/metrics.csv")))
		skip();
	assert_int_equal(ak("eval", tu_path(g_dir, "noisy"), "--pictures", svg, NULL), 0);
	tu_assert_prefix(g_out, "samples 128  loss ");
	text = tu_slurp(svg, NULL);
	assert_non_null(text);
	for (p = text; (p = strstr(p, "<g class=\"image\"")); p++)
		images++;
	assert_int_equal(images, 3 * 8);
	tu_assert_contains(text, "class=\"row-2\"");
	tu_assert_contains(text, ">noisy input</text>");
	free(text);
	akk_image_grid_size(3, 8, SIDE, SIDE, &width, &height);
	/* Chromium's window is at least 500 wide: a larger one, the picture
	 * at its top left at 100% */
	if (tu_render(svg, width < 800 ? 800 : width, height < 600 ? 600 : height, &img)) {
		free(va);
		skip();
	}
	for (int j = 0; j < 8; j++)
		for (int y = 0; y < SIDE; y++)
			for (int x = 0; x < SIDE; x++) {
				int v = va[16 + (size_t)j * IN + y * SIDE + x];
				int in = grey_at(&img, 0, j, x, y), nz = grey_at(&img, 1, j, x, y);
				int out = grey_at(&img, 2, j, x, y);
				if (abs(in - v) > 1)
					fail_msg("image %d (%d, %d): grey %d, the byte %d", j, x, y, in, v);
				off_noisy += abs(nz - v) > 8;
				off_out += abs(out - v) > 2;
				out_vs_noisy += abs(out - nz) > 8;
			}
	/* noise of 0.2 (51 grey levels) moves most pixels by more than 8 */
	assert_true(off_noisy > 8 * IN / 2);
	assert_true(off_out > 8 * IN / 4);
	assert_true(out_vs_noisy > 8 * IN / 2);
	free(img.px);
	free(va);
	/* a forward pass of 3 (--batch 3): 3 samples a row, the SVG alone on
	 * stdout */
	assert_int_equal(ak("eval", tu_path(g_dir, "noisy"), "--batch", "3", "--pictures", "-",
			    NULL), 0);
	tu_assert_prefix(g_out, "<?xml");
	images = 0;
	for (p = g_out; (p = strstr(p, "<g class=\"image\"")); p++)
		images++;
	assert_int_equal(images, 3 * 3);
	tu_assert_not_contains(g_out, "samples 128");
}

/* --pictures draws the data's own values: a classifier's checkpoint is
 * refused, exit 2. */
static void pictures_need_value_targets(void **unused)
{
	const char *cfg = tu_path(g_dir, "cls.yaml");
	static const char text[] =
		"data:\n  train: {images: tr-images, labels: tr-labels}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n    - layers: [flatten, {dense: 4}]\n"
		"optimizer: {type: adam, lr: 0.01}\nschedule: {epochs: 1, batch_size: 32}\n"
		"output: {dir: cls}\n";

	(void)unused;
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_int_equal(ak("train", cfg, "--quiet", NULL), 0);
	assert_int_equal(ak("eval", tu_path(g_dir, "cls"), "--images", tu_path(g_dir, "va-images"),
			    "--labels", tu_path(g_dir, "va-labels"), "--pictures",
			    tu_path(g_dir, "no.svg"), NULL), 2);
	tu_assert_line(g_err, "akkctl: --pictures draws inputs and outputs of data.targets input or files; the checkpoint's targets are labels");
	assert_false(tu_exists(tu_path(g_dir, "no.svg")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_errors),
		cmocka_unit_test(target_file_keys),
		cmocka_unit_test(noise_on_input_only),
		cmocka_unit_test(validation_clean_unless_asked),
		cmocka_unit_test(targets_from_a_file),
		cmocka_unit_test(train_on_target_files),
		cmocka_unit_test(psnr_by_hand),
		cmocka_unit_test(autoencoder_learns),
		cmocka_unit_test(eval_matches_numpy),
		cmocka_unit_test(eval_noisy_baseline),
		cmocka_unit_test(pictures),
		cmocka_unit_test(pictures_need_value_targets),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
