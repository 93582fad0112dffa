/* test_onnx.c - akkctl export --onnx: the model passes Debian python3-onnx's
 * full check and onnxruntime-node computes what `akkctl predict` prints,
 * for every kind of output.
 *
 * The group setup writes a training subset (12800 images: 200 steps of
 * 64) and a validation subset (1000) of MNIST into a temp directory, or
 * synthetic 28x28 images when datasets/mnist is absent, and two synthetic
 * regression tables (CSV). The classifiers (the MLP of configs/mnist.yaml,
 * configs/lenet.yaml, the batchnorm net of tests/configs/onnx-bn.yaml, the
 * activations of onnx-acts.yaml, the residual blocks of onnx-resnet.yaml,
 * the graph layers of onnx-graph.yaml and onnx-graph-seq.yaml, the gates
 * that fork and join of onnx-gates.yaml, the two named inputs of
 * onnx-inputs.yaml (two graph inputs, run.js feeding each its slice),
 * the transposed convolutions and up-sampling of onnx-gen.yaml, the
 * sequence models of onnx-lstm.yaml and onnx-gru.yaml, which read each
 * image as 28 steps of 28 pixels)
 * end in a Softmax; onnx-sigmoid.yaml, trained with sigmoid cross-entropy,
 * in a Sigmoid; a regression net (one value of about 150, standardized
 * features, mse), an autoencoder-style net (12 values, huber) and the
 * image-to-image net of onnx-autoenc.yaml (data.targets: input, an
 * output image [1, 28, 28]) give the last layer's output as it is. Each is trained with `akkctl train`,
 * exported with `akkctl export`, checked by tests/onnx/check.py and run by
 * tests/onnx/run.js on its test set as raw float32 values; its outputs
 * must equal, within 1e-5 (relative above 1), those `akkctl predict`
 * prints for the same samples (every class, with --top), and show what
 * defines their kind (softmax rows sum to 1, sigmoid rows do not, values
 * are near the targets). The python and node parts skip with a message
 * when python3-onnx or onnxruntime-node (npm ci in tests/onnx) is
 * absent. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/batch.h"
#include "io/checkpoint.h"
#include "io/onnx.h"
#include "model/gate.h"
#include "model/model.h"
#include "nn/export.h"
#include "nn/layer.h"
#include "nn/loss.h"
#include "api/akk.h"
#include "forge.h"
#include "testutil.h"

#define NTRAIN 12800
#define NVAL 1000
#define NTEST_SYNTH 2000
#define TOLERANCE 1e-5
#define PYTHON "/usr/bin/python3"

static char g_dir[512];
static char g_train_images[600], g_train_labels[600];
static char g_val_images[600], g_val_labels[600];
static char g_test_labels[600];
static int g_mnist;		/* 1: real MNIST, 0: synthetic */
static int g_have_onnx, g_have_ort;
static struct akk_dataset g_test;

/* A test set as both sides get it: the file `akkctl predict` reads, the
 * same samples as raw float32 for run.js, and what they should come to. */
struct testset {
	char input[600];	/* predict's INPUT */
	char f32[600];		/* the raw values, float32 */
	size_t n;
	const int32_t *labels;	/* a classifier's: n labels, else NULL */
	float *targets;		/* regression: (n, ntargets), else NULL */
	int ntargets;
};
static struct testset g_images;	/* the test images (MNIST's t10k) */
static struct testset g_reg, g_vec;	/* regression: one value, a vector */
static struct testset g_ae;	/* the test images as their own targets */

static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s\n", \
			    r_, w_, g_out, g_err); \
		fail(); \
	} \
} while (0)

/* The first n samples of d written as IDX files. */
static void write_subset(const struct akk_dataset *d, size_t n,
			 const char *images, const char *labels)
{
	struct akk_dataset s = *d;

	assert_true(n <= d->n);
	s.n = n;
	tu_write_idx(images, &s, 1);
	tu_write_idx(labels, &s, 0);
}

static const char *mnist_file(const char *name)
{
	static char path[2][300];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "datasets/mnist/%s", name);
	if (access(path[k], R_OK))
		snprintf(path[k], sizeof(path[k]), "datasets/mnist/%s.gz", name);
	return path[k];
}

/* ---- regression data ------------------------------------------------- */

#define NREG_TRAIN 512
#define NREG_TEST 256
#define REG_FEATURES 10
#define VEC_FEATURES 12

/* Sample i of the regression set: features x (REG_FEATURES) of scales
 * from 0.1 to 100 around offsets (so that standardize matters) and its
 * target, about 150 +- 60 as the diabetes data's, a smooth function of
 * them. */
static float reg_sample(float *x, const float *u)
{
	for (int j = 0; j < REG_FEATURES; j++)
		x[j] = (float)(5 * j + (j + 1) * pow(10, j % 3 - 1) * u[j]);
	return (float)(150 + 40 * u[0] - 30 * u[1] + 20 * u[2] * u[3] + 10 * sin(3 * u[4]));
}

/* Sample i of the autoencoder set: VEC_FEATURES values in about -2..2,
 * mixtures of 3 hidden factors; the targets are the features. */
static void vec_sample(float *x, const float *u)
{
	for (int j = 0; j < VEC_FEATURES; j++)
		x[j] = (float)(sin(j + 1.0) * u[0] + cos(2.0 * j) * u[1] +
			       (j % 3 - 1) * u[2]);
}

/* A CSV of n rows: the features (nf each, %.9g: the float exactly), then
 * the targets (nt each) unless targets is NULL. */
static void write_csv(const char *path, const float *x, int nf, const float *targets,
		      int nt, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (size_t i = 0; i < n; i++) {
		for (int j = 0; j < nf; j++)
			fprintf(f, "%s%.9g", j ? "," : "", x[i * nf + j]);
		for (int j = 0; targets && j < nt; j++)
			fprintf(f, ",%.9g", targets[i * nt + j]);
		fprintf(f, "\n");
	}
	assert_int_equal(fclose(f), 0);
}

/* name-train.csv, name-test.csv (with targets), name-input.csv (features
 * only, for predict) and name-input.f32 for (NREG_TRAIN + NREG_TEST)
 * samples of nf features from fill, with nt targets: t gets the test
 * part. */
static void write_table(struct testset *t, const char *name, const float *x,
			const float *y, int nf, int nt)
{
	char path[700];
	const float *xt = x + (size_t)NREG_TRAIN * nf, *yt = y + (size_t)NREG_TRAIN * nt;

	snprintf(path, sizeof(path), "%s/%s-train.csv", g_dir, name);
	write_csv(path, x, nf, y, nt, NREG_TRAIN);
	snprintf(path, sizeof(path), "%s/%s-test.csv", g_dir, name);
	write_csv(path, xt, nf, yt, nt, NREG_TEST);
	snprintf(t->input, sizeof(t->input), "%s/%s-input.csv", g_dir, name);
	write_csv(t->input, xt, nf, NULL, 0, NREG_TEST);
	snprintf(t->f32, sizeof(t->f32), "%s/%s-input.f32", g_dir, name);
	assert_int_equal(tu_write_file(t->f32, xt, (size_t)NREG_TEST * nf * sizeof(float)), 0);
	t->n = NREG_TEST;
	t->ntargets = nt;
	t->targets = malloc((size_t)NREG_TEST * nt * sizeof(float));
	assert_non_null(t->targets);
	memcpy(t->targets, yt, (size_t)NREG_TEST * nt * sizeof(float));
}

/* The two regression sets and their configs, reg.yaml and vec.yaml. */
static void regression_sets(void)
{
	enum { N = NREG_TRAIN + NREG_TEST };
	float *u = malloc((size_t)N * 16 * sizeof(float));
	float *x = malloc((size_t)N * VEC_FEATURES * sizeof(float));
	float *y = malloc((size_t)N * VEC_FEATURES * sizeof(float));
	char targets[200];
	int k = 0;
	const char *reg =
		"name: onnx-reg\nseed: 5\n"
		"data:\n  format: csv\n  task: regression\n"
		"  train: {file: reg-train.csv}\n  validation: {file: reg-test.csv}\n"
		"  standardize: true\n"
		"network:\n  input: [10]\n"
		"  gates:\n    - layers: [{dense: 16}, tanh, {dense: 1}]\n  loss: mse\n"
		"optimizer: {type: adam, lr: 0.5}\n"
		"schedule: {mode: flip-flop, batch_size: 16}\n";

	assert_true(u && x && y);
	tu_fill(u, (size_t)N * 16, -1, 1, 7);
	for (size_t i = 0; i < N; i++)
		y[i] = reg_sample(x + i * REG_FEATURES, u + i * 16);
	write_table(&g_reg, "reg", x, y, REG_FEATURES, 1);
	assert_int_equal(tu_write_file(tu_path(g_dir, "reg.yaml"), reg, strlen(reg)), 0);

	for (size_t i = 0; i < N; i++)
		vec_sample(x + i * VEC_FEATURES, u + i * 16);
	memcpy(y, x, (size_t)N * VEC_FEATURES * sizeof(float));
	write_table(&g_vec, "vec", x, y, VEC_FEATURES, VEC_FEATURES);
	for (int j = 0; j < VEC_FEATURES; j++)
		k += snprintf(targets + k, sizeof(targets) - k, "%s%d", j ? ", " : "",
			      VEC_FEATURES + j);
	FILE *f = fopen(tu_path(g_dir, "vec.yaml"), "w");
	assert_non_null(f);
	fprintf(f, "name: onnx-vec\nseed: 6\n"
		"data:\n  format: csv\n  task: regression\n"
		"  train: {file: vec-train.csv}\n  validation: {file: vec-test.csv}\n"
		"  csv: {targets: [%s]}\n"
		"network:\n  input: [%d]\n"
		"  gates:\n    - layers: [{dense: 6}, tanh]\n    - layers: [{dense: %d}]\n"
		"  loss: {type: huber, delta: 0.5}\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, batch_size: 16}\n",
		targets, VEC_FEATURES, VEC_FEATURES);
	assert_int_equal(fclose(f), 0);
	free(u);
	free(x);
	free(y);
}

static int group_setup(void **state)
{
	struct akk_dataset train = { 0 };
	struct akk_err e = { 0 };
	const char *py[] = { PYTHON, "-c", "import onnx", NULL };
	const char *node[] = { "node", "tests/onnx/run.js", NULL };
	int rc;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	snprintf(g_train_images, sizeof(g_train_images), "%s/train-images", g_dir);
	snprintf(g_train_labels, sizeof(g_train_labels), "%s/train-labels", g_dir);
	snprintf(g_val_images, sizeof(g_val_images), "%s/val-images", g_dir);
	snprintf(g_val_labels, sizeof(g_val_labels), "%s/val-labels", g_dir);
	snprintf(g_images.f32, sizeof(g_images.f32), "%s/inputs.f32", g_dir);
	g_mnist = !akk_idx_dataset(&train, mnist_file("train-images-idx3-ubyte"),
				    mnist_file("train-labels-idx1-ubyte"), &e) &&
		  !akk_idx_dataset(&g_test, mnist_file("t10k-images-idx3-ubyte"),
				    mnist_file("t10k-labels-idx1-ubyte"), &e);
	if (g_mnist) {
		snprintf(g_images.input, sizeof(g_images.input), "%s",
			 mnist_file("t10k-images-idx3-ubyte"));
		snprintf(g_test_labels, sizeof(g_test_labels), "%s",
			 mnist_file("t10k-labels-idx1-ubyte"));
	} else {
		fprintf(stderr, "test_onnx: no MNIST in datasets/mnist ('make data'): "
			"synthetic 28x28 images instead\n");
		akk_dataset_release(&train);
		akk_dataset_release(&g_test);
		tu_dataset(&train, NTRAIN, 28, 10, 1);
		tu_dataset(&g_test, NTEST_SYNTH, 28, 10, 2);
		snprintf(g_images.input, sizeof(g_images.input), "%s/test-images", g_dir);
		snprintf(g_test_labels, sizeof(g_test_labels), "%s/test-labels", g_dir);
		write_subset(&g_test, g_test.n, g_images.input, g_test_labels);
	}
	write_subset(&train, NTRAIN, g_train_images, g_train_labels);
	write_subset(&g_test, NVAL, g_val_images, g_val_labels);
	akk_dataset_release(&train);

	/* The test images as onnxruntime gets them: raw values, float32. */
	size_t n = g_test.n * g_test.in;
	float *x = malloc(n * sizeof(*x));
	assert_non_null(x);
	for (size_t i = 0; i < n; i++)
		x[i] = g_test.x8[i];
	assert_int_equal(tu_write_file(g_images.f32, x, n * sizeof(*x)), 0);
	free(x);
	g_images.n = g_test.n;
	g_images.labels = g_test.labels;
	/* data.targets: input: each image its own target, scaled by 255 */
	g_ae = g_images;
	g_ae.labels = NULL;
	g_ae.ntargets = (int)g_test.in;
	g_ae.targets = malloc(n * sizeof(float));
	assert_non_null(g_ae.targets);
	for (size_t i = 0; i < n; i++)
		g_ae.targets[i] = g_test.x8[i] / 255.0f;
	regression_sets();

	g_have_onnx = tu_run(py, NULL, 0, NULL, 0) == 0;
	if (!g_have_onnx)
		fprintf(stderr, "test_onnx: python3-onnx is missing (%s cannot import onnx): "
			"the checker parts skip; sh datasets/deps.sh installs it\n", PYTHON);
	/* run.js without arguments: 3 without onnxruntime-node, 1 (usage) with */
	rc = tu_run(node, NULL, 0, g_err, sizeof(g_err));
	g_have_ort = rc == 1;
	if (!g_have_ort)
		fprintf(stderr, "test_onnx: %s: the onnxruntime parts skip; "
			"'make test' runs 'npm ci' in tests/onnx\n",
			rc == 3 ? "onnxruntime-node is not installed" : "node cannot run tests/onnx/run.js");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	akk_dataset_release(&g_test);
	free(g_reg.targets);
	free(g_vec.targets);
	free(g_ae.targets);
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- the reference: akkctl predict ------------------------------------ */

/* The outputs (n, *outputs) `akkctl predict` prints for the checkpoint
 * ckpt on t's input, as floats (%.9g: the float exactly). A classifier
 * (want not AKK_OUTPUT_VALUES), with --top C: row i of its CSV is
 * "i,c1,p1,c2,p2,...", every class with its probability, most probable
 * first; a regression network's: "i,v1,...,vN". */
static float *predict_outputs(const char *ckpt, const struct testset *t,
			      enum akk_output_kind want, int *outputs)
{
	const char *out = tu_path(g_dir, "predict.csv");
	int values = want == AKK_OUTPUT_VALUES;
	char *text, *line, *save = NULL;
	float *p = NULL;
	int C = 0;

	if (values)
		assert_rc(ak("predict", ckpt, t->input, "--out", out, NULL), 0);
	else
		assert_rc(ak("predict", ckpt, t->input, "--top", "100000", "--out", out, NULL), 0);
	text = tu_slurp(out, NULL);
	assert_non_null(text);
	line = strtok_r(text, "\n", &save);
	assert_non_null(line);
	/* index,value1,... or index,predicted,probability,top2,... */
	tu_assert_prefix(line, values ? "index,value1" : "index,predicted,probability");
	for (const char *c = line; *c; c++)
		C += *c == ',';
	if (!values) {
		assert_true(C % 2 == 0);
		C /= 2;
	}
	p = calloc(t->n * (size_t)C, sizeof(*p));
	assert_non_null(p);
	for (size_t i = 0; i < t->n; i++) {
		char *f, *fs = NULL;

		line = strtok_r(NULL, "\n", &save);
		assert_non_null(line);
		assert_non_null(f = strtok_r(line, ",", &fs));
		assert_int_equal(strtol(f, NULL, 10), (long)i);
		for (int k = 0; k < C; k++) {
			char *cls = values ? NULL : strtok_r(NULL, ",", &fs);
			char *pr = strtok_r(NULL, ",", &fs);
			long c = k;

			assert_non_null(pr);
			if (!values) {
				assert_non_null(cls);
				c = strtol(cls, NULL, 10);
				assert_in_range(c, 0, C - 1);
			}
			p[i * C + c] = strtof(pr, NULL);
		}
		assert_null(strtok_r(NULL, ",", &fs));
	}
	assert_null(strtok_r(NULL, "\n", &save));
	free(text);
	*outputs = C;
	return p;
}

/* ---- train, export, check, run, compare ------------------------------ */

/* Train config for epochs into g_dir/name (on the MNIST subsets when
 * mnist is set, else on the data the config names); return the run
 * directory (static). */
static const char *train_for(const char *config, const char *name, int mnist,
			     const char *epochs)
{
	static char dir[700];
	char ti[700], tl[700], vi[700], vl[700];

	snprintf(dir, sizeof(dir), "%s/%s", g_dir, name);
	snprintf(ti, sizeof(ti), "data.train.images=%s", g_train_images);
	snprintf(tl, sizeof(tl), "data.train.labels=%s", g_train_labels);
	snprintf(vi, sizeof(vi), "data.validation.images=%s", g_val_images);
	snprintf(vl, sizeof(vl), "data.validation.labels=%s", g_val_labels);
	if (mnist)
		assert_rc(ak("train", config, "--epochs", epochs, "--out", dir, "--quiet",
			     "--set", ti, "--set", tl, "--set", vi, "--set", vl, NULL), 0);
	else
		assert_rc(ak("train", config, "--epochs", epochs, "--out", dir, "--quiet",
			     NULL), 0);
	return dir;
}

static const char *train(const char *config, const char *name)
{
	return train_for(config, name, 1, "1");
}

/* The shape of one input sample: "1,28,28" or "784". */
static void input_dims(const char *ckpt, char *dims, size_t size)
{
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_err e = { 0 };
	int k = 0;

	assert_int_equal(akk_checkpoint_read(&ck, ckpt, &e), 0);
	assert_int_equal(akk_checkpoint_spec(&ck, &s, NULL, 0, &e), 0);
	for (int i = 0; !s.ninputs && i < s.input.rank; i++)
		k += snprintf(dims + k, size - k, "%s%d", i ? "," : "", s.input.d[i]);
	/* named inputs: "top=1,12,28+bottom=448", a slice of each sample each */
	for (int i = 0; i < s.ninputs; i++) {
		k += snprintf(dims + k, size - k, "%s%s=", i ? "+" : "", s.inputs[i].name);
		for (int d = 0; d < s.inputs[i].shape.rank; d++)
			k += snprintf(dims + k, size - k, "%s%d", d ? "," : "",
				      s.inputs[i].shape.d[d]);
	}
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
}

/* What defines each kind of output, beyond equality with predict: a
 * softmax row sums to 1; sigmoid outputs are each in (0, 1) and, on
 * MNIST, do not sum to 1 (a Softmax would); values are the network's own, not
 * squeezed into [0, 1], and close to the targets. ort is (t->n, C). */
static void check_kind(const char *name, const float *ort, const struct testset *t,
		       int C, enum akk_output_kind want)
{
	long right = 0, off_one = 0, outside = 0, targets_outside = 0;
	double sse = 0, sy = 0, syy = 0;
	size_t n = t->n * (size_t)C;

	for (size_t i = 0; i < t->n; i++) {
		const float *row = ort + i * C;
		double sum = 0;
		int a = 0;

		for (int c = 0; c < C; c++) {
			sum += row[c];
			a = row[c] > row[a] ? c : a;
			outside += row[c] < 0 || row[c] > 1;
		}
		off_one += fabs(sum - 1) > 0.05;
		if (want == AKK_OUTPUT_SOFTMAX && fabs(sum - 1) > 1e-5)
			fail_msg("%s: softmax row %zu sums to %.9g", name, i, sum);
		if (t->labels)
			right += a == t->labels[i];
	}
	for (size_t k = 0; t->targets && k < n; k++) {
		sse += (ort[k] - t->targets[k]) * (double)(ort[k] - t->targets[k]);
		sy += t->targets[k];
		syy += t->targets[k] * (double)t->targets[k];
		targets_outside += t->targets[k] < 0 || t->targets[k] > 1;
	}
	switch (want) {
	case AKK_OUTPUT_SOFTMAX:
	case AKK_OUTPUT_SIGMOID:
		print_message("%s: onnxruntime accuracy %.2f%%, %ld of %zu rows do not sum "
			      "to 1\n", name, 100.0 * right / t->n, off_one, t->n);
		/* real weights: 200 steps already classify most images */
		assert_true(right > 0.8 * t->n);
		assert_int_equal(outside, 0);
		/* Trained on the synthetic images, a net is so sure that its ten
		 * sigmoids sum to 1 too; then only check.py's operator tells. */
		if (want == AKK_OUTPUT_SIGMOID && g_mnist && off_one < (long)t->n / 10)
			fail_msg("%s: only %ld of %zu rows of sigmoid outputs are off 1 by "
				 "more than 0.05: a softmax?", name, off_one, t->n);
		break;
	case AKK_OUTPUT_VALUES: {
		double r2 = 1 - sse / (syy - sy * sy / n);

		print_message("%s: onnxruntime R^2 %.4f against the targets, %ld of %zu "
			      "values outside [0, 1]\n", name, r2, outside, n);
		assert_true(r2 > 0.5);
		/* targets mostly outside [0, 1]: a squashing output could not
		 * reach them (pixel targets, an autoencoder's, are inside it:
		 * there only check.py's Identity tells) */
		if (targets_outside > (long)n / 2)
			assert_true(outside > (long)n / 4);
		break;
	}
	}
}

/* Train config, export it, check the model with python3-onnx and run it
 * in onnxruntime-node on t: its outputs must equal those `akkctl predict`
 * prints within TOLERANCE, relative to values larger than 1 (float32
 * carries about 7 digits: a value of 150 has steps of 1.5e-5), and be of
 * the kind want. */
static void roundtrip_on(const char *config, const char *name, int mnist,
			 const char *epochs, const struct testset *t,
			 enum akk_output_kind want)
{
	char model[700], outs[700], line[1400], ckpt[700], *wrote;
	const char *dir = train_for(config, name, mnist, epochs);
	const char *oname = want == AKK_OUTPUT_VALUES ? "values" : "probabilities";
	int C, skipped = 0;

	snprintf(ckpt, sizeof(ckpt), "%s/best.bin", dir);
	snprintf(model, sizeof(model), "%s/%s.onnx", g_dir, name);
	snprintf(outs, sizeof(outs), "%s/%s.out.f32", g_dir, name);
	assert_rc(ak("export", dir, "--onnx", model, NULL), 0);
	snprintf(line, sizeof(line), "using '%s'", ckpt);
	tu_assert_line(g_err, line);
	tu_assert_prefix(g_out, "wrote '");
	if (strcmp(name, "inputs"))
		tu_assert_contains(g_out, "ONNX opset 13, input 'input' [N, ");
	else	/* one graph input per named input, each its own shape */
		tu_assert_contains(g_out, "ONNX opset 13, inputs 'top' [N, 1, 12, 28], "
				   "'bottom' [N, 448] float32 raw values, ");
	assert_non_null(wrote = strdup(g_out));
	float *ref = predict_outputs(ckpt, t, want, &C);
	assert_true(tu_exists(model));

	if (g_have_onnx) {
		const char *plain[] = { PYTHON, "tests/onnx/check.py", model, NULL };
		/* one graph input per named input */
		const char *named[] = { PYTHON, "tests/onnx/check.py", "--inputs", "top,bottom",
					model, NULL };
		const char *const *argv = strcmp(name, "inputs") ? plain : named;
		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		/* the operator that writes the output: what defines its kind */
		snprintf(line, sizeof(line), "ok %s: last node %s", model,
			 want == AKK_OUTPUT_SOFTMAX ? "Softmax" :
			 want == AKK_OUTPUT_SIGMOID ? "Sigmoid" : "Identity");
		tu_assert_line(g_out, line);
	} else {
		skipped = 1;
	}

	if (g_have_ort) {
		char dims[64];
		size_t len, n = t->n * (size_t)C;

		input_dims(ckpt, dims, sizeof(dims));
		const char *argv[] = { "node", "tests/onnx/run.js", model, t->f32,
				       dims, outs, NULL };
		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		float *ort = (float *)tu_slurp(outs, &len);
		assert_non_null(ort);
		assert_int_equal(len, n * sizeof(float));
		double worst = 0;
		size_t at = 0;
		long agree = 0;
		for (size_t i = 0; i < n; i++) {
			double d = fabs((double)ort[i] - ref[i]) / fmax(1, fabs(ref[i]));
			if (!(d <= worst)) {
				worst = d;
				at = i;
			}
		}
		for (size_t i = 0; i < t->n; i++) {
			int a = 0, r = 0;
			for (int c = 1; c < C; c++) {
				a = ort[i * C + c] > ort[i * C + a] ? c : a;
				r = ref[i * C + c] > ref[i * C + r] ? c : r;
			}
			agree += a == r;
		}
		print_message("%s: %zu samples x %d outputs, max |onnxruntime - akkctl predict| "
			      "= %.3g (sample %zu, output %zu), same argmax on %ld\n",
			      name, t->n, C, worst, at / C, at % C, agree);
		if (!(worst <= TOLERANCE))
			fail_msg("%s: outputs differ by %g > %g at sample %zu output %zu: "
				 "onnxruntime %.9g, akkctl %.9g", name, worst, TOLERANCE,
				 at / C, at % C, ort[at], ref[at]);
		check_kind(name, ort, t, C, want);
		free(ort);
	} else {
		skipped = 1;
	}
	free(ref);
	/* the output the export line names: checked last, so that a wrong
	 * output shows first as wrong numbers */
	if (t == &g_ae)	/* an image stays an image */
		snprintf(line, sizeof(line), "float32 raw values, output '%s' [N, 1, 28, 28]\n",
			 oname);
	else
		snprintf(line, sizeof(line), "float32 raw values, output '%s' [N, %d]\n",
			 oname, C);
	tu_assert_contains(wrote, line);
	free(wrote);
	if (skipped)
		skip();
}

static void roundtrip(const char *config, const char *name)
{
	roundtrip_on(config, name, 1, "1", &g_images, AKK_OUTPUT_SOFTMAX);
}

static void mlp(void **state)
{
	(void)state;
	roundtrip("configs/mnist.yaml", "mlp");
}

static void lenet(void **state)
{
	(void)state;
	roundtrip("configs/lenet.yaml", "lenet");
}

static void batchnorm_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-bn.yaml", "bn");
}

static void activations_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-acts.yaml", "acts");
}

/* Residual blocks (identity with batchnorm inside, a strided 1x1 conv and
 * a dense projection) and global_avgpool: Add and GlobalAveragePool. */
static void resnet(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-resnet.yaml", "resnet");
}

/* Gates that fork and join: a stem read by two branch gates joined by
 * concat on the channels, then two dense gates joined by add: Concat on
 * axis 1 and Add between the gates' layers. */
static void gates_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-gates.yaml", "gates");
}

/* Two named inputs, each a slice of the image with a shape of its own
 * (a convolution on [1, 12, 28], a dense layer on [448]), joined by
 * concat: two graph inputs, each with its slice of the input map; run.js
 * feeds each its slice of every sample. */
static void inputs_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-inputs.yaml", "inputs");
}

/* Transposed convolutions (stride, padding, output padding, with and
 * without bias) and up-sampling (bilinear and nearest): ConvTranspose
 * and Resize with the coordinate transformation each mode means. */
static void generators_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-gen.yaml", "gen");
}

/* Sequences: each image read as 28 steps of 28 pixels. A dense layer on
 * every step (MatMul + Add on [N, T, F]), an lstm returning every step
 * and a bidirectional one its last states: ONNX's LSTM (gates reordered
 * i, o, f, c) between Transposes, its Y and its Y_h. Two epochs: one
 * leaves the recurrent nets short of the accuracy check_kind asks. */
static void lstm_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-lstm.yaml", "lstm", 1, "2", &g_images,
		     AKK_OUTPUT_SOFTMAX);
}

/* A reverse gru and a bidirectional relu rnn returning every step, a
 * tanh rnn, a gru's last state: ONNX's GRU with linear_before_reset (the
 * reset gate on R_h h + Rb_h, as akkctl and torch compute it) and RNN
 * with Relu and with its default Tanh. */
static void gru_rnn_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-gru.yaml", "gru", 1, "3", &g_images,
		     AKK_OUTPUT_SOFTMAX);
}

/* Convolutions and pools over time: ONNX's Conv, MaxPool and AveragePool
 * between Transposes (channels first), ReduceMean over the steps, a
 * dense on every step. */
static void conv1d_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-conv1d.yaml", "conv1d", 1, "2", &g_images,
		     AKK_OUTPUT_SOFTMAX);
}

/* Graph layers: joins on the channels of images (Concat axis 1, Slice
 * through Constant starts, ends and axes, Add), on features (Concat, a
 * chain of Add for three inputs, a residual block as a node, the output
 * node written first) and on the features of each step of a sequence
 * (Concat and Slice on axis 2). */
static void graph_net(void **state)
{
	(void)state;
	roundtrip("tests/configs/onnx-graph.yaml", "graph");
	roundtrip_on("tests/configs/onnx-graph-seq.yaml", "graph-seq", 1, "2",
		     &g_images, AKK_OUTPUT_SOFTMAX);
}

/* Token ids: the pixel values through an embedding (Cast to int64, then
 * Gather), conv1d over each row's ids and then the rows, the maximum over
 * them (ReduceMax). */
static void embedding_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-embedding.yaml", "embedding", 1, "3", &g_images,
		     AKK_OUTPUT_SOFTMAX);
}

/* A language model: token ids into an embedding, an lstm returning every
 * step, a dense per step, softmax cross-entropy at every step: the graph's
 * output is [N, T, classes] with a Softmax on the last axis, and
 * onnxruntime's probabilities equal the library's (akk_predict) for every
 * step of every window. */
static void language_model(void **state)
{
	enum { T = 12, WINDOWS = 40 };
	char cfg[1024], ckpt[700], model[700], in[700], out[700], err[256];
	char *text = malloc(4096);
	size_t len = 0, no;
	float *x, *ort, *lib;
	akk_model *m;

	(void)state;
	assert_non_null(text);
	for (int i = 0; len < 3000; i++)
		len += (size_t)snprintf(text + len, 4096 - len, "%s %d. ",
					i % 3 ? "the cat sat" : "a dog ran", i % 7);
	assert_int_equal(tu_write_file(tu_path(g_dir, "lm.txt"), text, len), 0);
	snprintf(cfg, sizeof(cfg),
		 "name: lm\nseed: 3\ndata:\n  format: text\n  train: {file: lm.txt}\n"
		 "  validation: {split: 0.1}\n  text: {seq_len: %d}\n"
		 "network:\n  input: [%d]\n  gates:\n"
		 "    - layers: [{embedding: {vocab: 20, units: 8}}, {lstm: {units: 16, return_sequences: true}}]\n"
		 "    - layers: [{dense: 20}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\noutput: {dir: lm-run}\n", T, T);
	assert_int_equal(tu_write_file(tu_path(g_dir, "lm.yaml"), cfg, strlen(cfg)), 0);
	if (ak("train", tu_path(g_dir, "lm.yaml"), "--quiet", NULL))
		fail_msg("train: %s", g_err);
	snprintf(ckpt, sizeof(ckpt), "%s/lm-run/best.bin", g_dir);
	snprintf(model, sizeof(model), "%s/lm.onnx", g_dir);
	assert_rc(ak("export", ckpt, "--onnx", model, NULL), 0);
	tu_assert_contains(g_out, "output 'probabilities' [N, 12, ");
	m = akk_open(ckpt, err, sizeof(err));
	if (!m)
		fail_msg("akk_open: %s", err);
	assert_int_equal(akk_steps(m), T);
	no = (size_t)WINDOWS * T * (size_t)akk_outputs(m);
	x = malloc(WINDOWS * T * sizeof(*x));
	lib = malloc(no * sizeof(*lib));
	assert_true(x && lib);
	for (int i = 0; i < WINDOWS * T; i++)	/* ids of the vocabulary */
		x[i] = (float)((i * 7 + i / T) % akk_outputs(m));
	assert_int_equal(akk_predict(m, x, WINDOWS * T, lib, no, err, sizeof(err)), 0);
	if (g_have_onnx) {
		const char *argv[] = { PYTHON, "tests/onnx/check.py", model, NULL };
		char line[800];

		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		snprintf(line, sizeof(line), "ok %s: last node Softmax", model);
		tu_assert_line(g_out, line);
	}
	if (g_have_ort) {
		char dims[16];
		const char *argv[] = { "node", "tests/onnx/run.js", model, in, dims, out, NULL };
		size_t got;
		double worst = 0;

		snprintf(in, sizeof(in), "%s/lm.in.f32", g_dir);
		snprintf(out, sizeof(out), "%s/lm.out.f32", g_dir);
		snprintf(dims, sizeof(dims), "%d", T);
		unlink(out);
		assert_int_equal(tu_write_file(in, x, WINDOWS * T * sizeof(*x)), 0);
		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		ort = (float *)tu_slurp(out, &got);
		assert_non_null(ort);
		assert_int_equal(got, no * sizeof(float));
		for (size_t k = 0; k < no; k++)
			worst = fmax(worst, fabs((double)ort[k] - lib[k]));
		print_message("lm: %d windows x %d steps x %d outputs, max |onnxruntime - "
			      "akk_predict| = %.3g\n", WINDOWS, T, akk_outputs(m), worst);
		assert_true(worst <= TOLERANCE);
		free(ort);
	}
	akk_close(m);
	free(x);
	free(lib);
	free(text);
}

/* Sigmoid cross-entropy: ten independent probabilities, a Sigmoid. */
static void sigmoid_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-sigmoid.yaml", "sigmoid", 1, "1", &g_images,
		     AKK_OUTPUT_SIGMOID);
}

/* Regression, one value of about 150 (the diabetes data's scale), features
 * standardized, loss mse: the last layer's output as it is. */
static void regression_net(void **state)
{
	(void)state;
	roundtrip_on(tu_path(g_dir, "reg.yaml"), "reg", 0, "40", &g_reg, AKK_OUTPUT_VALUES);
}

/* Several outputs, autoencoder-style (the targets are the inputs), loss
 * huber: a vector of values. */
static void vector_net(void **state)
{
	(void)state;
	roundtrip_on(tu_path(g_dir, "vec.yaml"), "vec", 0, "40", &g_vec, AKK_OUTPUT_VALUES);
}

/* An image-to-image network (data.targets: input): its output an image,
 * [N, 1, 28, 28], the values as they are. */
static void image_autoencoder_net(void **state)
{
	(void)state;
	roundtrip_on("tests/configs/onnx-autoenc.yaml", "autoenc", 1, "1", &g_ae,
		     AKK_OUTPUT_VALUES);
}

/* ---- the export hooks ------------------------------------------------ */

static void every_kind_has_an_export_hook(void **state)
{
	(void)state;
	for (int i = 0; akk_layer_names[i]; i++) {
		const struct akk_layer_ops *ops = akk_layer_find(akk_layer_names[i]);
		assert_non_null(ops);
		if (!ops->export)
			fail_msg("layer kind '%s' has no export hook", ops->name);
	}
}

/* A kind without a hook is refused by name, before anything is written. */
static void kind_without_hook_is_refused(void **state)
{
	struct akk_layer_ops fancy = akk_layer_relu;
	struct akk_layer_spec sp = { .ops = &fancy };
	struct akk_layer layers[2] = {
		{ .ops = &akk_layer_relu, .spec = &sp },
		{ .ops = &fancy, .spec = &sp },
	};
	struct akk_gate_plan plans[2] = { { .index = 0 },
					  { .index = 1, .layers = layers, .nlayers = 2 } };
	struct akk_model m = { .gates = plans, .ngates = 2, .classes = 2 };
	struct akk_err e = { 0 };
	char buf[512];

	(void)state;
	fancy.name = "fancy";
	fancy.export = NULL;
	assert_int_equal(akk_onnx_check(&m, "x.bin", &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	assert_string_equal(buf, "x.bin: layer kind 'fancy' (gate 2, layer 2) "
			    "cannot be exported to ONNX");
	layers[1].ops = &akk_layer_relu;
	assert_int_equal(akk_onnx_check(&m, "x.bin", &e), 0);
}

/* ---- bad input -------------------------------------------------------- */

static void no_temp_files(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".tmp."))
			fail_msg("'%s/%s' was left behind", path, de->d_name);
	closedir(d);
}

static void bad_input(void **state)
{
	const char *dir = tu_path(g_dir, "bad");
	char ckpt[700], trunc[700], model[700], line[2000];
	size_t len;

	(void)state;
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(ckpt, sizeof(ckpt), "%s/best.bin", train("tests/configs/onnx-acts.yaml", "bad/run"));
	snprintf(trunc, sizeof(trunc), "%s/trunc.bin", dir);
	snprintf(model, sizeof(model), "%s/model.onnx", dir);

	/* usage */
	assert_rc(ak("export", ckpt, NULL), 2);
	tu_assert_line(g_err, "akkctl: export needs --onnx FILE");
	tu_assert_line(g_err, "usage: akkctl export CHECKPOINT|DIR --onnx FILE.onnx");
	assert_rc(ak("export", "--onnx", model, NULL), 2);
	tu_assert_line(g_err, "akkctl: export needs a CHECKPOINT");
	assert_rc(ak("export", ckpt, "--onnx", model, "extra", NULL), 2);
	tu_assert_line(g_err, "akkctl: unexpected argument 'extra'");
	assert_rc(ak("export", "--help", NULL), 0);
	tu_assert_prefix(g_out, "usage: akkctl export CHECKPOINT|DIR --onnx FILE.onnx\n");

	/* A model already there stays whole whatever fails. */
	assert_int_equal(tu_write_file(model, "keep", 4), 0);

	/* a foreign file */
	assert_rc(ak("export", "configs/mnist.yaml", "--onnx", model, NULL), 2);
	assert_string_equal(g_err, "akkctl: configs/mnist.yaml: not an akkctl checkpoint (bad magic)\n");

	/* a truncated checkpoint */
	char *bytes = tu_slurp(ckpt, &len);
	assert_non_null(bytes);
	assert_int_equal(tu_write_file(trunc, bytes, len / 2), 0);
	free(bytes);
	assert_rc(ak("export", trunc, "--onnx", model, NULL), 2);
	snprintf(line, sizeof(line), "akkctl: %s: truncated checkpoint: the header says %zu "
		 "bytes, the file has %zu", trunc, len, len / 2);
	tu_assert_line(g_err, line);
	/* one from a newer format (the next version in the header) */
	bytes = tu_slurp(ckpt, &len);
	assert_non_null(bytes);
	bytes[8] = AKK_CKPT_VERSION + 1;
	assert_int_equal(tu_write_file(trunc, bytes, len), 0);
	free(bytes);
	assert_rc(ak("export", trunc, "--onnx", model, NULL), 2);
	snprintf(line, sizeof(line), "akkctl: %s: checkpoint format version %d is not supported "
		 "(this akkctl reads versions 1 to %d)", trunc, AKK_CKPT_VERSION + 1, AKK_CKPT_VERSION);
	tu_assert_line(g_err, line);
	/* a missing one */
	assert_rc(ak("export", tu_path(dir, "none.bin"), "--onnx", model, NULL), 2);
	tu_assert_contains(g_err, "none.bin");
	bytes = tu_slurp(model, &len);
	assert_non_null(bytes);
	assert_int_equal(len, 4);
	assert_memory_equal(bytes, "keep", 4);
	free(bytes);

	/* an output that cannot be written: no directory, a directory */
	snprintf(line, sizeof(line), "%s/no/m.onnx", dir);
	assert_rc(ak("export", ckpt, "--onnx", line, NULL), 2);
	snprintf(line, sizeof(line), "akkctl: %s/no/m.onnx: cannot write the model: "
		 "cannot create '%s/no/m.onnx.tmp.", dir, dir);
	tu_assert_prefix(g_err, line);
	tu_assert_contains(g_err, "': No such file or directory\n");
	assert_string_equal(g_out, "");
	assert_rc(ak("export", ckpt, "--onnx", dir, NULL), 2);
	snprintf(line, sizeof(line), "akkctl: %s: cannot write the model: cannot rename '%s.tmp.",
		 dir, dir);
	tu_assert_prefix(g_err, line);
	tu_assert_contains(g_err, "': Is a directory\n");
	assert_string_equal(g_out, "");
	/* no temporary file left behind */
	no_temp_files(g_dir);
	no_temp_files(dir);

	/* and a good export replaces the old file with a whole model */
	assert_rc(ak("export", ckpt, "--onnx", model, NULL), 0);
	assert_string_equal(g_err, "");
	snprintf(line, sizeof(line), "wrote '%s': ONNX opset 13, input 'input' [N, 784] "
		 "float32 raw values, output 'probabilities' [N, 10]", model);
	tu_assert_line(g_out, line);
	bytes = tu_slurp(model, &len);
	assert_non_null(bytes);
	assert_true(len > 4 * (784 * 64 + 64 * 48 + 48 * 32 + 32 * 10));
	free(bytes);
}

/* Weights so large that the outputs overflow: eval and predict refuse
 * them on their data, and export refuses them too, naming the layer (the
 * prefix of its tensors), with nothing written. onnx-acts: gate 2 is
 * dense 32, softplus, dense 10. */
static void overflowing_weights_are_refused(void **state)
{
	const char *model = tu_path(g_dir, "overflow.onnx");
	char ckpt[700], forged[700], line[2000];
	struct forge fg;
	const struct forge_field *bias, *weight;

	(void)state;
	snprintf(ckpt, sizeof(ckpt), "%s/best.bin", train("tests/configs/onnx-acts.yaml", "overflow"));
	snprintf(forged, sizeof(forged), "%s/overflow.bin", g_dir);
	assert_int_equal(forge_load(&fg, ckpt), 0);
	bias = forge_find(&fg, "g2.l1.dense.bias.value0");
	weight = forge_find(&fg, "g2.l3.dense.weight.value0");
	assert_non_null(bias);
	assert_non_null(weight);

	/* A bias of 3e38 alone: softplus passes it on, the last dense
	 * scales it down: large but finite outputs, a model. */
	forge_set_f(&fg, bias, 3e38);
	assert_int_equal(forge_save(&fg, forged), 0);
	assert_rc(ak("export", forged, "--onnx", model, NULL), 0);
	assert_true(tu_exists(model));
	assert_int_equal(unlink(model), 0);

	/* and a weight of 3e38 after it: 3e38 * 3e38 overflows on any input */
	forge_set_f(&fg, weight, 3e38);
	assert_int_equal(forge_save(&fg, forged), 0);
	forge_release(&fg);
	assert_true(ak("eval", forged, "--images", g_images.input, "--labels", g_test_labels,
		       NULL) != 0);
	tu_assert_contains(g_err, "the weights overflow");
	assert_true(ak("predict", forged, g_images.input, NULL) != 0);
	tu_assert_contains(g_err, "the weights overflow");
	assert_rc(ak("export", forged, "--onnx", model, NULL), 2);
	snprintf(line, sizeof(line), "akkctl: %s: the weights overflow: layer 'g2.l3.dense' "
		 "gives an infinite value on a probe input (every network input -1 or +1)\n",
		 forged);
	assert_string_equal(g_err, line);
	assert_string_equal(g_out, "");
	assert_false(tu_exists(model));
	no_temp_files(g_dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_kind_has_an_export_hook),
		cmocka_unit_test(kind_without_hook_is_refused),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(overflowing_weights_are_refused),
		cmocka_unit_test(mlp),
		cmocka_unit_test(lenet),
		cmocka_unit_test(batchnorm_net),
		cmocka_unit_test(activations_net),
		cmocka_unit_test(resnet),
		cmocka_unit_test(gates_net),
		cmocka_unit_test(inputs_net),
		cmocka_unit_test(graph_net),
		cmocka_unit_test(conv1d_net),
		cmocka_unit_test(embedding_net),
		cmocka_unit_test(language_model),
		cmocka_unit_test(generators_net),
		cmocka_unit_test(sigmoid_net),
		cmocka_unit_test(lstm_net),
		cmocka_unit_test(gru_rnn_net),
		cmocka_unit_test(regression_net),
		cmocka_unit_test(vector_net),
		cmocka_unit_test(image_autoencoder_net),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
