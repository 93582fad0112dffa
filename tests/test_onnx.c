/* test_onnx.c - akkctl export --onnx: the model passes Debian python3-onnx's
 * full check and onnxruntime-node computes akkctl's probabilities.
 *
 * The group setup writes a training subset (12800 images: 200 steps of
 * 64) and a validation subset (1000) of MNIST into a temp directory, or
 * synthetic 28x28 images when datasets/mnist is absent. Each net (the
 * MLP of configs/mnist.yaml, configs/lenet.yaml, the batchnorm net of
 * tests/configs/onnx-bn.yaml, the activations of onnx-acts.yaml and the
 * residual blocks of onnx-resnet.yaml) is
 * trained one epoch with `akkctl train`, exported with `akkctl export`,
 * checked by tests/onnx/check.py and run by tests/onnx/run.js on the whole
 * test set (MNIST's 10000 t10k images) as raw float32 pixel values; its
 * probabilities must equal, within 1e-5, those `akkctl predict` prints for
 * the same images (every class, with --top). The python and node parts skip with a message when
 * python3-onnx or onnxruntime-node (npm ci in tests/onnx) is absent. */
#include <dirent.h>
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
#include "testutil.h"

#define NTRAIN 12800
#define NVAL 1000
#define NTEST_SYNTH 2000
#define TOLERANCE 1e-5
#define PYTHON "/usr/bin/python3"

static char g_dir[512];
static char g_train_images[600], g_train_labels[600];
static char g_val_images[600], g_val_labels[600];
static char g_test_images[600], g_test_labels[600];
static char g_inputs[600];	/* the test images as raw float32 */
static int g_mnist;		/* 1: real MNIST, 0: synthetic */
static int g_have_onnx, g_have_ort;
static struct akk_dataset g_test;

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
	snprintf(g_inputs, sizeof(g_inputs), "%s/inputs.f32", g_dir);
	g_mnist = !akk_idx_dataset(&train, mnist_file("train-images-idx3-ubyte"),
				    mnist_file("train-labels-idx1-ubyte"), &e) &&
		  !akk_idx_dataset(&g_test, mnist_file("t10k-images-idx3-ubyte"),
				    mnist_file("t10k-labels-idx1-ubyte"), &e);
	if (g_mnist) {
		snprintf(g_test_images, sizeof(g_test_images), "%s",
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
		snprintf(g_test_images, sizeof(g_test_images), "%s/test-images", g_dir);
		snprintf(g_test_labels, sizeof(g_test_labels), "%s/test-labels", g_dir);
		write_subset(&g_test, g_test.n, g_test_images, g_test_labels);
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
	assert_int_equal(tu_write_file(g_inputs, x, n * sizeof(*x)), 0);
	free(x);

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
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- the reference: akkctl predict ------------------------------------ */

/* Softmax probabilities (n, *classes) that `akkctl predict --top C` prints
 * for the checkpoint ckpt on the IDX images at path: row i of its CSV is
 * "i,c1,p1,c2,p2,...", every class with its probability (%.9g: the float
 * exactly), most probable first. */
static float *predict_probs(const char *ckpt, const char *images, size_t n,
			    int *classes)
{
	const char *out = tu_path(g_dir, "predict.csv");
	char *text, *line, *save = NULL;
	float *p = NULL;
	int C = 0;

	assert_rc(ak("predict", ckpt, images, "--top", "100000", "--out", out, NULL), 0);
	text = tu_slurp(out, NULL);
	assert_non_null(text);
	line = strtok_r(text, "\n", &save);
	assert_non_null(line);
	for (const char *c = line; *c; c++)	/* index,predicted,probability,top2,... */
		C += *c == ',';
	assert_true(C % 2 == 0);
	C /= 2;
	p = calloc(n * (size_t)C, sizeof(*p));
	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		char *f, *fs = NULL;
		long idx;

		line = strtok_r(NULL, "\n", &save);
		assert_non_null(line);
		assert_non_null(f = strtok_r(line, ",", &fs));
		idx = strtol(f, NULL, 10);
		assert_int_equal(idx, (long)i);
		for (int k = 0; k < C; k++) {
			char *cls = strtok_r(NULL, ",", &fs), *pr = strtok_r(NULL, ",", &fs);
			long c;

			assert_non_null(cls);
			assert_non_null(pr);
			c = strtol(cls, NULL, 10);
			assert_in_range(c, 0, C - 1);
			p[i * C + c] = strtof(pr, NULL);
		}
	}
	assert_null(strtok_r(NULL, "\n", &save));
	free(text);
	*classes = C;
	return p;
}

/* ---- train, export, check, run, compare ------------------------------ */

/* Train config one epoch on the subset into g_dir/name; return the run
 * directory (static). */
static const char *train(const char *config, const char *name)
{
	static char dir[700];
	char ti[700], tl[700], vi[700], vl[700];

	snprintf(dir, sizeof(dir), "%s/%s", g_dir, name);
	snprintf(ti, sizeof(ti), "data.train.images=%s", g_train_images);
	snprintf(tl, sizeof(tl), "data.train.labels=%s", g_train_labels);
	snprintf(vi, sizeof(vi), "data.validation.images=%s", g_val_images);
	snprintf(vl, sizeof(vl), "data.validation.labels=%s", g_val_labels);
	assert_rc(ak("train", config, "--epochs", "1", "--out", dir, "--quiet",
		     "--set", ti, "--set", tl, "--set", vi, "--set", vl, NULL), 0);
	return dir;
}

static void roundtrip(const char *config, const char *name)
{
	char model[700], probs[700], line[1400];
	const char *dir = train(config, name);
	int C, skipped = 0;

	snprintf(model, sizeof(model), "%s/%s.onnx", g_dir, name);
	snprintf(probs, sizeof(probs), "%s/%s.probs.f32", g_dir, name);
	assert_rc(ak("export", dir, "--onnx", model, NULL), 0);
	snprintf(line, sizeof(line), "using '%s/best.bin'", dir);
	tu_assert_line(g_err, line);
	tu_assert_prefix(g_out, "wrote '");
	tu_assert_contains(g_out, "ONNX opset 13, input 'input' [N, ");
	assert_true(tu_exists(model));

	if (g_have_onnx) {
		const char *argv[] = { PYTHON, "tests/onnx/check.py", model, NULL };
		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		snprintf(line, sizeof(line), "ok %s", model);
		tu_assert_line(g_out, line);
	} else {
		skipped = 1;
	}

	float *ref = predict_probs(tu_path(dir, "best.bin"), g_test_images, g_test.n, &C);
	if (g_have_ort) {
		char dims[64];
		struct akk_checkpoint ck = { 0 };
		struct akk_spec s = { 0 };
		struct akk_err e = { 0 };
		size_t len, n = g_test.n * (size_t)C;

		assert_int_equal(akk_checkpoint_read(&ck, tu_path(dir, "best.bin"), &e), 0);
		assert_int_equal(akk_checkpoint_spec(&ck, &s, NULL, 0, &e), 0);
		/* "1,28,28" or "784" */
		int k = 0;
		for (int i = 0; i < s.input.rank; i++)
			k += snprintf(dims + k, sizeof(dims) - k, "%s%d", i ? "," : "",
				      s.input.d[i]);
		akk_spec_release(&s);
		akk_checkpoint_release(&ck);
		const char *argv[] = { "node", "tests/onnx/run.js", model, g_inputs,
				       dims, probs, NULL };
		assert_rc(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		float *ort = (float *)tu_slurp(probs, &len);
		assert_non_null(ort);
		assert_int_equal(len, n * sizeof(float));
		double worst = 0;
		size_t at = 0;
		long agree = 0, right = 0;
		for (size_t i = 0; i < n; i++) {
			double d = ort[i] > ref[i] ? ort[i] - ref[i] : ref[i] - ort[i];
			if (!(d <= worst)) {
				worst = d;
				at = i;
			}
		}
		for (size_t i = 0; i < g_test.n; i++) {
			int a = 0, r = 0;
			for (int c = 1; c < C; c++) {
				a = ort[i * C + c] > ort[i * C + a] ? c : a;
				r = ref[i * C + c] > ref[i * C + r] ? c : r;
			}
			agree += a == r;
			right += a == g_test.labels[i];
		}
		print_message("%s: %zu samples x %d classes, max |onnxruntime - akkctl predict| = %.3g "
			      "(sample %zu, class %zu), same class on %ld, onnxruntime "
			      "accuracy %.2f%%\n", name, g_test.n, C, worst, at / C, at % C,
			      agree, 100.0 * right / g_test.n);
		/* real weights: 200 steps already classify most images */
		assert_true(right > 0.8 * g_test.n);
		if (!(worst <= TOLERANCE))
			fail_msg("%s: probabilities differ by %g > %g at sample %zu class %zu: "
				 "onnxruntime %.9g, akkctl %.9g", name, worst, TOLERANCE,
				 at / C, at % C, ort[at], ref[at]);
		free(ort);
	} else {
		skipped = 1;
	}
	free(ref);
	if (skipped)
		skip();
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_kind_has_an_export_hook),
		cmocka_unit_test(kind_without_hook_is_refused),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(mlp),
		cmocka_unit_test(lenet),
		cmocka_unit_test(batchnorm_net),
		cmocka_unit_test(activations_net),
		cmocka_unit_test(resnet),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
