/* test_spec.c - the config parser: values, defaults, shorthands, overrides
 * and the exact error line of every kind of mistake.
 *
 * Configs are parsed from memory with akk_spec_parse under the name "t.yaml"
 * (so messages read "t.yaml:LINE:COL: ..."); a few go through a real file
 * for akk_spec_load's path handling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/spec.h"
#include "testutil.h"

/* The smallest valid config, 7 lines; the error cases build on it. */
#define DATA "data:\n  train: {images: ti, labels: tl}\n"		/* 1-2 */
#define NET "network:\n  input: [784]\n  gates:\n"			\
	"    - layers: [{dense: 10}]\n"				/* 3-6 */
#define OPT "optimizer: {type: adam, lr: 0.001}\n"		/* 7 */
#define MIN DATA NET OPT

static int parse(struct akk_spec *s, const char *text, const char *base_dir,
		 const char *const *sets, int nsets, struct akk_err *e)
{
	return akk_spec_parse(s, text, strlen(text), "t.yaml", base_dir, sets,
			      nsets, e);
}

static void ok(struct akk_spec *s, const char *text, const char *const *sets,
	       int nsets)
{
	struct akk_err e;
	char buf[1200];

	if (parse(s, text, NULL, sets, nsets, &e)) {
		akk_err_format(&e, buf, sizeof(buf));
		fprintf(stderr, "unexpected error: %s\n", buf);
		fail();
	}
}

/* Parsing text (with overrides) fails with exactly want. */
static void bad_sets(const char *text, const char *const *sets, int nsets,
		     const char *want)
{
	struct akk_spec s;
	struct akk_err e;
	char buf[1200];

	memset(&e, 0, sizeof(e));
	assert_int_equal(parse(&s, text, NULL, sets, nsets, &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", buf, want);
		fail();
	}
	/* Nothing is left allocated: the spec is released (zeroed). */
	assert_null(s.text);
	assert_null(s.gates);
	assert_null(s.name);
	assert_null(s.sets);
}

static void bad(const char *text, const char *want)
{
	bad_sets(text, NULL, 0, want);
}

static void assert_float(double got, double want)
{
	if (fabs(got - want) > 1e-6 * fmax(1, fabs(want))) {
		fprintf(stderr, "got %.9g, want %.9g\n", got, want);
		fail();
	}
}

/* --- good configs -------------------------------------------------------- */

static const char full[] =
	"name: mnist-cnn\n"						/* 1 */
	"seed: 7\n"
	"data:\n"
	"  format: idx\n"
	"  train: {images: d/train-images, labels: d/train-labels}\n"	/* 5 */
	"  validation:\n"
	"    images: /abs/t10k-images\n"
	"    labels: d/t10k-labels\n"
	"  scale: 1\n"
	"  normalize: {mean: 0.1307, std: 0.3081}\n"			/* 10 */
	"network:\n"
	"  input: [1, 28, 28]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 8, kernel: 5, stride: 2, padding: 1,"
	" bias: false, init: constant, init_value: 0.5}}, relu,"
	" {maxpool2d: 2}, flatten]\n"
	"    - layers:\n"						/* 15 */
	"        - dense: {units: 64, init: he_normal}\n"
	"        - batchnorm: {momentum: 0.2, eps: 1e-3}\n"
	"        - leaky_relu: {alpha: 0.2}\n"
	"        - dropout: {rate: 0.25}\n"
	"      optimizer: {lr: 0.01}\n"					/* 20 */
	"    - layers: [{dense: 10}]\n"
	"  loss: {type: huber, delta: 2}\n"
	"optimizer:\n"
	"  type: adamw\n"
	"  lr: 1e-3\n"							/* 25 */
	"  beta1: 0.8\n"
	"  beta2: 0.99\n"
	"  eps: 1e-6\n"
	"  weight_decay: 0.01\n"
	"  clip_norm: 5\n"						/* 30 */
	"  schedule: {type: step, gamma: 0.5, step_epochs: 2,"
	" warmup_epochs: 1}\n"
	"schedule:\n"
	"  mode: flip-flop\n"
	"  epochs: 3\n"
	"  batch_size: 128\n"						/* 35 */
	"  concurrency: {train: 8, validation: 2}\n"
	"  weight_stashing: false\n"
	"  threads: 2\n"
	"output:\n"
	"  dir: out/cnn\n"						/* 40 */
	"  checkpoint_every: 0\n"
	"  keep: 5\n"
	"  metrics: log.csv\n";

static void test_full(void **ctx)
{
	struct akk_spec s;
	struct akk_err e;
	const struct akk_layer_spec *l;

	(void)ctx;
	assert_int_equal(parse(&s, full, "cfg", NULL, 0, &e), 0);
	assert_string_equal(s.path, "t.yaml");
	assert_string_equal(s.text, full);
	assert_string_equal(s.name, "mnist-cnn");
	assert_true(s.seed == 7);

	assert_string_equal(s.data.format, "idx");
	assert_string_equal(s.data.train.images, "cfg/d/train-images");
	assert_string_equal(s.data.train.labels, "cfg/d/train-labels");
	assert_string_equal(s.data.val.images, "/abs/t10k-images");
	assert_string_equal(s.data.val.labels, "cfg/d/t10k-labels");
	assert_float(s.data.scale, 1);
	assert_int_equal(s.data.normalize, 1);
	assert_float(s.data.mean, 0.1307);
	assert_float(s.data.std, 0.3081);
	assert_int_equal(s.data.mark.line, 3);
	assert_int_equal(s.data.mark.col, 1);
	assert_int_equal(s.data.train_mark.line, 5);
	assert_int_equal(s.data.val_mark.line, 6);

	assert_int_equal(s.input.rank, 3);
	assert_int_equal(s.input.d[0], 1);
	assert_int_equal(s.input.d[1], 28);
	assert_int_equal(s.input.d[2], 28);
	assert_int_equal(s.input_mark.line, 12);
	assert_int_equal(s.input_mark.col, 10);
	assert_int_equal(s.loss, AKK_LOSS_HUBER);
	assert_float(s.huber_delta, 2);
	assert_int_equal(s.loss_mark.line, 22);

	assert_int_equal(s.ngates, 3);
	assert_int_equal(s.gates[0].nlayers, 4);
	assert_int_equal(s.gates[0].mark.line, 14);
	assert_int_equal(s.gates[0].mark.col, 7);
	l = &s.gates[0].layers[0];
	assert_ptr_equal(l->ops, &akk_layer_conv2d);
	assert_int_equal(l->mark.line, 14);
	assert_int_equal(l->mark.col, 16);
	assert_int_equal(l->filters, 8);
	assert_int_equal(l->kernel, 5);
	assert_int_equal(l->stride, 2);
	assert_int_equal(l->padding, 1);
	assert_int_equal(l->bias, 0);
	assert_int_equal(l->init, AKK_INIT_CONSTANT);
	assert_float(l->init_value, 0.5);
	assert_ptr_equal(s.gates[0].layers[1].ops, &akk_layer_relu);
	l = &s.gates[0].layers[2];
	assert_ptr_equal(l->ops, &akk_layer_maxpool2d);
	assert_int_equal(l->kernel, 2);
	assert_int_equal(l->stride, 0);	/* the default: the kernel */
	assert_int_equal(akk_pool2d_stride(l), 2);
	assert_int_equal(l->padding, 0);
	assert_ptr_equal(s.gates[0].layers[3].ops, &akk_layer_flatten);

	assert_int_equal(s.gates[1].nlayers, 4);
	l = &s.gates[1].layers[0];
	assert_ptr_equal(l->ops, &akk_layer_dense);
	assert_int_equal(l->units, 64);
	assert_int_equal(l->bias, 1);
	assert_int_equal(l->init, AKK_INIT_HE_NORMAL);
	assert_int_equal(l->mark.line, 16);
	assert_int_equal(l->mark.col, 11);
	l = &s.gates[1].layers[1];
	assert_ptr_equal(l->ops, &akk_layer_batchnorm);
	assert_float(l->momentum, 0.2);
	assert_float(l->eps, 1e-3);
	assert_float(s.gates[1].layers[2].alpha, 0.2);
	assert_float(s.gates[1].layers[3].rate, 0.25);
	assert_int_equal(s.gates[1].has_optim, 1);
	assert_int_equal(s.gates[1].optim.mark.line, 20);
	assert_float(s.gates[1].optim.lr, 0.01);
	assert_int_equal(s.gates[1].optim.kind, AKK_OPT_ADAMW);
	assert_float(s.gates[1].optim.beta1, 0.8);
	assert_int_equal(s.gates[1].optim.sched.kind, AKK_LR_STEP);
	assert_int_equal(s.gates[2].has_optim, 0);
	assert_float(s.gates[2].optim.lr, 1e-3);

	assert_int_equal(s.optim.kind, AKK_OPT_ADAMW);
	assert_float(s.optim.lr, 1e-3);
	assert_float(s.optim.beta1, 0.8);
	assert_float(s.optim.beta2, 0.99);
	assert_float(s.optim.eps, 1e-6);
	assert_float(s.optim.weight_decay, 0.01);
	assert_float(s.optim.clip_norm, 5);
	assert_int_equal(s.optim.sched.kind, AKK_LR_STEP);
	assert_float(s.optim.sched.gamma, 0.5);
	assert_float(s.optim.sched.step_epochs, 2);
	assert_float(s.optim.sched.warmup_epochs, 1);
	assert_int_equal(s.optim.mark.line, 23);
	assert_int_equal(s.optim.sched.mark.line, 31);

	assert_int_equal(s.sched.mode, AKK_MODE_FLIPFLOP);
	assert_int_equal(s.sched.epochs, 3);
	assert_int_equal(s.sched.batch_size, 128);
	assert_int_equal(s.sched.conc_train, 8);
	assert_int_equal(s.sched.conc_val, 2);
	assert_int_equal(s.sched.stashing, 0);
	assert_int_equal(s.sched.threads, 2);
	assert_int_equal(s.sched.mark.line, 32);

	assert_string_equal(s.out.dir, "cfg/out/cnn");
	assert_int_equal(s.out.checkpoint_every, 0);
	assert_int_equal(s.out.keep, 5);
	assert_string_equal(s.out.metrics, "log.csv");
	assert_int_equal(s.nsets, 0);
	akk_spec_release(&s);
}

static void test_defaults(void **ctx)
{
	struct akk_spec s;
	struct akk_err e;
	const struct akk_layer_spec *l;

	(void)ctx;
	assert_int_equal(akk_spec_parse(&s, MIN, strlen(MIN),
					"configs/mnist.v2.yaml", NULL, NULL,
					0, &e), 0);
	assert_string_equal(s.name, "mnist.v2");
	assert_true(s.seed == 42);
	assert_string_equal(s.data.format, "idx");
	assert_string_equal(s.data.train.images, "ti");
	assert_null(s.data.val.images);
	assert_null(s.data.val.labels);
	assert_int_equal(s.data.val_mark.line, 0);
	assert_float(s.data.scale, 255);
	assert_int_equal(s.data.normalize, 0);
	assert_int_equal(s.input.rank, 1);
	assert_int_equal(s.input.d[0], 784);
	assert_int_equal(s.loss, AKK_LOSS_SOFTMAX_CE);
	assert_float(s.huber_delta, 1);
	assert_int_equal(s.loss_mark.line, 0);

	assert_int_equal(s.ngates, 1);
	assert_int_equal(s.gates[0].has_optim, 0);
	l = &s.gates[0].layers[0];
	assert_int_equal(l->units, 10);
	assert_int_equal(l->bias, 1);
	assert_int_equal(l->init, AKK_INIT_DEFAULT);
	assert_float(l->init_value, 0);
	/* Not dense options: left zero. */
	assert_int_equal(l->stride, 0);
	assert_float(l->alpha, 0);
	assert_float(l->momentum, 0);

	assert_int_equal(s.optim.kind, AKK_OPT_ADAM);
	assert_float(s.optim.momentum, 0.9);
	assert_float(s.optim.beta1, 0.9);
	assert_float(s.optim.beta2, 0.999);
	assert_float(s.optim.rho, 0.99);
	assert_float(s.optim.eps, 1e-8);
	assert_float(s.optim.weight_decay, 0);
	assert_float(s.optim.clip_norm, 0);
	assert_int_equal(s.optim.sched.kind, AKK_LR_CONSTANT);
	assert_float(s.optim.sched.warmup_epochs, 0);
	assert_int_equal(s.optim.sched.mark.line, 0);

	assert_int_equal(s.sched.mode, AKK_MODE_WHEELS);
	assert_int_equal(s.sched.epochs, 10);
	assert_int_equal(s.sched.batch_size, 64);
	assert_int_equal(s.sched.conc_train, 4);
	assert_int_equal(s.sched.conc_val, 1);
	assert_int_equal(s.sched.stashing, 1);
	assert_int_equal(s.sched.threads, 0);
	assert_int_equal(s.sched.mark.line, 0);

	assert_string_equal(s.out.dir, "runs/mnist.v2");
	assert_int_equal(s.out.checkpoint_every, 1);
	assert_int_equal(s.out.keep, 3);
	assert_string_equal(s.out.metrics, "metrics.csv");
	akk_spec_release(&s);
}

/* A gate's optimizer keys go on top of the global optimizer; a schedule of
 * another type starts from that type's defaults. */
static void test_gate_optimizer(void **ctx)
{
	static const char text[] = DATA
		"network:\n"
		"  input: [784]\n"
		"  gates:\n"
		"    - layers: [{dense: 10}]\n"
		"    - layers: [{dense: 10}]\n"
		"      optimizer: {lr: 0.01, schedule: {warmup_epochs: 2}}\n"
		"    - layers: [{dense: 10}]\n"
		"      optimizer:\n"
		"        type: momentum\n"
		"        momentum: 0.5\n"
		"        schedule: step\n"
		"optimizer:\n"
		"  type: adam\n"
		"  lr: 0.001\n"
		"  weight_decay: 0.01\n"
		"  schedule: {type: exponential, gamma: 0.9}\n";
	struct akk_spec s;
	const struct akk_optim_spec *o;

	(void)ctx;
	ok(&s, text, NULL, 0);
	o = &s.gates[0].optim;
	assert_int_equal(s.gates[0].has_optim, 0);
	assert_int_equal(o->kind, AKK_OPT_ADAM);
	assert_float(o->lr, 0.001);
	assert_int_equal(o->sched.kind, AKK_LR_EXPONENTIAL);
	assert_float(o->sched.gamma, 0.9);

	o = &s.gates[1].optim;
	assert_int_equal(s.gates[1].has_optim, 1);
	assert_int_equal(o->kind, AKK_OPT_ADAM);
	assert_float(o->lr, 0.01);
	assert_float(o->weight_decay, 0.01);
	assert_int_equal(o->sched.kind, AKK_LR_EXPONENTIAL);
	assert_float(o->sched.gamma, 0.9);
	assert_float(o->sched.warmup_epochs, 2);

	o = &s.gates[2].optim;
	assert_int_equal(s.gates[2].has_optim, 1);
	assert_int_equal(o->kind, AKK_OPT_MOMENTUM);
	assert_float(o->lr, 0.001);
	assert_float(o->momentum, 0.5);
	assert_float(o->weight_decay, 0.01);
	assert_int_equal(o->sched.kind, AKK_LR_STEP);
	assert_float(o->sched.gamma, 0.1);
	assert_float(o->sched.step_epochs, 1);
	assert_int_equal(o->mark.line, 10);

	/* The global one is untouched. */
	assert_float(s.optim.lr, 0.001);
	assert_float(s.optim.sched.warmup_epochs, 0);
	akk_spec_release(&s);
}

static void test_shorthands(void **ctx)
{
	static const char text[] = DATA
		"network:\n"
		"  input: [3, 32, 32]\n"
		"  gates:\n"
		"    - layers:\n"
		"        - relu\n"
		"        - {maxpool2d: 3}\n"
		"        - {avgpool2d: {kernel: 3, stride: 1, padding: 1}}\n"
		"        - batchnorm\n"
		"        - batchnorm: {}\n"
		"        - batchnorm: ~\n"
		"        - flatten: null\n"
		"        - dense: 10\n"
		"        - dropout: 0.25\n"
		"        - leaky_relu\n"
		"        - leaky_relu: 0.3\n"
		"        - leaky_relu: {}\n"
		"        - sigmoid\n"
		"        - tanh: {}\n"
		"        - softplus\n"
		"  loss: mse\n"
		"optimizer: {type: rmsprop, lr: 1, rho: 0.9, eps: 1e-10,"
		" schedule: cosine}\n";
	static const struct akk_layer_ops *const want[] = {
		&akk_layer_relu, &akk_layer_maxpool2d, &akk_layer_avgpool2d,
		&akk_layer_batchnorm, &akk_layer_batchnorm, &akk_layer_batchnorm,
		&akk_layer_flatten, &akk_layer_dense, &akk_layer_dropout,
		&akk_layer_leaky_relu, &akk_layer_leaky_relu,
		&akk_layer_leaky_relu, &akk_layer_sigmoid, &akk_layer_tanh,
		&akk_layer_softplus,
	};
	struct akk_spec s;
	const struct akk_layer_spec *l;

	(void)ctx;
	ok(&s, text, NULL, 0);
	assert_int_equal(s.gates[0].nlayers, (int)(sizeof(want) / sizeof(*want)));
	l = s.gates[0].layers;
	for (int i = 0; i < s.gates[0].nlayers; i++) {
		assert_ptr_equal(l[i].ops, want[i]);
		assert_int_equal(l[i].mark.line, 7 + i);
		assert_int_equal(l[i].mark.col, 11);
	}
	assert_int_equal(l[1].kernel, 3);
	assert_int_equal(akk_pool2d_stride(&l[1]), 3);
	assert_int_equal(l[2].stride, 1);
	assert_int_equal(l[2].padding, 1);
	assert_float(l[3].momentum, 0.1);
	assert_int_equal(l[7].units, 10);
	assert_float(l[8].rate, 0.25);
	assert_float(l[9].alpha, 0.01);
	assert_float(l[10].alpha, 0.3);
	assert_float(l[11].alpha, 0.01);
	assert_int_equal(s.loss, AKK_LOSS_MSE);
	assert_int_equal(s.loss_mark.line, 22);
	assert_int_equal(s.optim.kind, AKK_OPT_RMSPROP);
	assert_float(s.optim.lr, 1);
	assert_float(s.optim.rho, 0.9);
	assert_float(s.optim.eps, 1e-10);
	assert_int_equal(s.optim.sched.kind, AKK_LR_COSINE);
	assert_float(s.optim.sched.min_lr, 0);
	akk_spec_release(&s);
}

/* Numbers as YAML 1.2 writes them; ints are ints, floats take both. */
static void test_numbers(void **ctx)
{
	static const char *const floats[] = { "1", "0.5", ".5", "5.", "1e-3",
		"1E+2", "+2.5", "3e0" };
	static const double fvals[] = { 1, 0.5, 0.5, 5, 1e-3, 100, 2.5, 3 };
	char text[512];
	struct akk_spec s;

	(void)ctx;
	for (size_t i = 0; i < sizeof(floats) / sizeof(*floats); i++) {
		snprintf(text, sizeof(text), DATA NET
			 "optimizer: {type: sgd, lr: %s}\n", floats[i]);
		ok(&s, text, NULL, 0);
		assert_float(s.optim.lr, fvals[i]);
		akk_spec_release(&s);
	}
	ok(&s, MIN "seed: 18446744073\nschedule: {epochs: +007}\n", NULL, 0);
	assert_true(s.seed == 18446744073ull);
	assert_int_equal(s.sched.epochs, 7);
	akk_spec_release(&s);

	bad(MIN "schedule: {epochs: 0x10}\n",
	    "t.yaml:8:20: 'epochs' must be an integer, got '0x10'");
	bad(MIN "schedule: {epochs: 3000000000}\n",
	    "t.yaml:8:20: 'epochs' must be at most 2147483647, got 3000000000");
	bad(MIN "seed: 99999999999999999999\n",
	    "t.yaml:8:7: 'seed' is out of range, got 99999999999999999999");
	bad(DATA NET "optimizer: {type: sgd, lr: .inf}\n",
	    "t.yaml:7:28: 'lr' must be a number, got '.inf'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1e999}\n",
	    "t.yaml:7:28: 'lr' is out of range, got 1e999");
	bad(DATA NET "optimizer: {type: sgd, lr: 1.2.3}\n",
	    "t.yaml:7:28: 'lr' must be a number, got '1.2.3'");
	bad(DATA NET "optimizer: {type: sgd, lr: '0.1'}\n",
	    "t.yaml:7:28: 'lr' must be a number, got the string '0.1'");
	bad(DATA NET "optimizer: {type: sgd, lr: [0.1]}\n",
	    "t.yaml:7:28: 'lr' must be a number, got a list");
	bad(MIN "schedule: {weight_stashing: True}\n",
	    "t.yaml:8:29: 'weight_stashing' must be true or false, got 'True'");
	bad(MIN "schedule: {weight_stashing: }\n",
	    "t.yaml:8:29: 'weight_stashing' must be true or false, got null");
}

static void test_paths(void **ctx)
{
	static const char text[] =
		"data:\n"
		"  train: {images: a/ti, labels: /abs/tl}\n"
		"  validation: {images: vi, labels: \"v l\"}\n"
		NET OPT
		"output: {dir: out}\n";
	const char *dir = tu_tmpdir();
	char path[1024], want[1100];
	struct akk_spec s;
	struct akk_err e;

	(void)ctx;
	/* In memory: against base_dir, with or without its trailing '/'. */
	assert_int_equal(parse(&s, text, "base/", NULL, 0, &e), 0);
	assert_string_equal(s.data.train.images, "base/a/ti");
	assert_string_equal(s.data.train.labels, "/abs/tl");
	assert_string_equal(s.data.val.images, "base/vi");
	assert_string_equal(s.data.val.labels, "base/v l");
	assert_string_equal(s.out.dir, "base/out");
	akk_spec_release(&s);
	assert_int_equal(parse(&s, text, NULL, NULL, 0, &e), 0);
	assert_string_equal(s.data.train.images, "a/ti");
	assert_string_equal(s.out.dir, "out");
	akk_spec_release(&s);

	/* From a file: against the file's directory. */
	snprintf(path, sizeof(path), "%s/run1.yaml", dir);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	assert_int_equal(akk_spec_load(&s, path, NULL, 0, &e), 0);
	assert_string_equal(s.path, path);
	assert_string_equal(s.text, text);
	assert_string_equal(s.name, "run1");
	snprintf(want, sizeof(want), "%s/a/ti", dir);
	assert_string_equal(s.data.train.images, want);
	snprintf(want, sizeof(want), "%s/out", dir);
	assert_string_equal(s.out.dir, want);
	akk_spec_release(&s);

	/* "../" taken back from a real directory, so that messages name
	 * dir/out, not dir/cfg/../out; through a symbolic link it stays, as
	 * link/.. is the link target's parent, not dir. */
	{
		static const char up[] =
			"data:\n  train: {images: ../ti, labels: ../../tl}\n"
			NET OPT "output: {dir: ../out}\n";
		char sub[600], link[600], *base = strdup(dir), *slash;

		assert_non_null(base);
		slash = strrchr(base, '/');
		*(slash == base ? slash + 1 : slash) = '\0';
		snprintf(sub, sizeof(sub), "%s/cfg", dir);
		snprintf(link, sizeof(link), "%s/link", dir);
		assert_int_equal(mkdir(sub, 0755), 0);
		assert_int_equal(symlink(sub, link), 0);
		snprintf(path, sizeof(path), "%s/up.yaml", sub);
		assert_int_equal(tu_write_file(path, up, strlen(up)), 0);
		assert_int_equal(akk_spec_load(&s, path, NULL, 0, &e), 0);
		snprintf(want, sizeof(want), "%s/ti", dir);
		assert_string_equal(s.data.train.images, want);
		snprintf(want, sizeof(want), "%s%stl", base, strcmp(base, "/") ? "/" : "");
		assert_string_equal(s.data.train.labels, want);
		snprintf(want, sizeof(want), "%s/out", dir);
		assert_string_equal(s.out.dir, want);
		akk_spec_release(&s);
		snprintf(path, sizeof(path), "%s/up.yaml", link);
		assert_int_equal(akk_spec_load(&s, path, NULL, 0, &e), 0);
		snprintf(want, sizeof(want), "%s/../ti", link);
		assert_string_equal(s.data.train.images, want);
		akk_spec_release(&s);
		free(base);
	}

	/* No output.dir: runs/<name>, relative to the current directory. */
	snprintf(path, sizeof(path), "%s/run2.yaml", dir);
	assert_int_equal(tu_write_file(path, MIN, strlen(MIN)), 0);
	assert_int_equal(akk_spec_load(&s, path, NULL, 0, &e), 0);
	assert_string_equal(s.out.dir, "runs/run2");
	akk_spec_release(&s);

	/* A file that is not there. */
	snprintf(path, sizeof(path), "%s/none.yaml", dir);
	assert_int_equal(akk_spec_load(&s, path, NULL, 0, &e), -1);
	snprintf(want, sizeof(want),
		 "cannot open '%s': No such file or directory", path);
	assert_string_equal(e.msg, want);
	assert_string_equal(e.file, "");
	assert_null(s.text);
}

/* --- errors -------------------------------------------------------------- */

static void test_syntax(void **ctx)
{
	(void)ctx;
	bad(DATA NET "optimizer\n  type: adam\n",
	    "t.yaml:8:7: syntax error: could not find expected ':'");
	bad(DATA "network:\n  input: [784\n  gates: []\n" OPT,
	    "t.yaml:5:8: syntax error: did not find expected ',' or ']'");
	bad(MIN "seed: *s\n", "t.yaml:8:7: syntax error: found undefined alias");
	bad(MIN "name: \"\xff\"\n",
	    "t.yaml:8:8: syntax error: invalid leading UTF-8 octet");
	bad(MIN "---\nseed: 1\n",
	    "t.yaml:8:1: the config must be a single document");
	bad("", "t.yaml: the config must be a mapping, got an empty file");
	bad("# only a comment\n",
	    "t.yaml: the config must be a mapping, got an empty file");
	bad("---\n", "t.yaml:2:1: the config must be a mapping, got null");
	bad("- a\n- b\n", "t.yaml:1:1: the config must be a mapping, got a list");
	bad("hello\n", "t.yaml:1:1: the config must be a mapping, got 'hello'");
}

static void test_keys(void **ctx)
{
	(void)ctx;
	/* Unknown keys at every level, suggested when near. */
	bad(MIN "optimiser: {}\n",
	    "t.yaml:8:1: unknown key 'optimiser' (did you mean 'optimizer'?)");
	bad(MIN "colour: red\n", "t.yaml:8:1: unknown key 'colour'");
	bad(MIN "schedule: {batchsize: 3}\n",
	    "t.yaml:8:12: unknown key 'batchsize' in schedule "
	    "(did you mean 'batch_size'?)");
	bad(MIN "schedule: {concurrency: {training: 3}}\n",
	    "t.yaml:8:26: unknown key 'training' in schedule.concurrency");
	bad(MIN "output: {metric: m.csv}\n",
	    "t.yaml:8:10: unknown key 'metric' in output "
	    "(did you mean 'metrics'?)");
	bad("data:\n  train: {images: a, labels: b}\n  normalise: {}\n"
	    NET OPT,
	    "t.yaml:3:3: unknown key 'normalise' in data "
	    "(did you mean 'normalize'?)");
	bad("data:\n  train: {image: a, labels: b}\n" NET OPT,
	    "t.yaml:2:11: unknown key 'image' in data.train "
	    "(did you mean 'images'?)");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: 0, sd: 1}\n" NET OPT,
	    "t.yaml:3:24: unknown key 'sd' in data.normalize "
	    "(did you mean 'std'?)");
	bad(DATA "network:\n  inptu: [1]\n" OPT,
	    "t.yaml:4:3: unknown key 'inptu' in network "
	    "(did you mean 'input'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - {layers: [relu], optim: {}}\n" OPT,
	    "t.yaml:6:24: unknown key 'optim' in gate 1");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - {layers: [relu]}\n"
	    "    - {layers: [relu], optimizer: {lrate: 1}}\n" OPT,
	    "t.yaml:7:36: unknown key 'lrate' in gate 2 optimizer");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, shedule: step}\n",
	    "t.yaml:7:31: unknown key 'shedule' in optimizer "
	    "(did you mean 'schedule'?)");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type: step,"
	    " gama: 0.5}}\n",
	    "t.yaml:7:54: unknown key 'gama' in optimizer.schedule "
	    "(did you mean 'gamma'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - {layers: [relu]}\n"
	    "    - {layers: [relu], optimizer: {schedule: {min: 0}}}\n" OPT,
	    "t.yaml:7:47: unknown key 'min' in gate 2 optimizer.schedule");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: {units: 3, bais: false}}]\n" OPT,
	    "t.yaml:6:35: unknown key 'bais' in layer 'dense' "
	    "(did you mean 'bias'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{relu: {alpha: 1}}]\n" OPT,
	    "t.yaml:6:24: unknown key 'alpha' in layer 'relu'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: {type: huber, detla: 1}\n" OPT,
	    "t.yaml:7:23: unknown key 'detla' in network.loss "
	    "(did you mean 'delta'?)");
	bad(MIN "{a: 1}: 2\n", "t.yaml:8:1: a key must be a name, got a mapping");

	/* Duplicates, at the second key. */
	bad(DATA NET "optimizer:\n  type: sgd\n  lr: 1\n  lr: 2\n",
	    "t.yaml:10:3: duplicate key 'lr' in optimizer (first at line 9)");
	bad(MIN "seed: 1\nseed: 2\n",
	    "t.yaml:9:1: duplicate key 'seed' (first at line 8)");

	/* Missing required keys, at the mapping that lacks them. */
	bad(DATA NET, "t.yaml:1:1: missing required key 'optimizer'");
	bad(NET OPT, "t.yaml:1:1: missing required key 'data'");
	bad(DATA OPT, "t.yaml:1:1: missing required key 'network'");
	bad(DATA NET "optimizer: {lr: 1}\n",
	    "t.yaml:7:12: missing required key 'type' in optimizer");
	bad(DATA NET "optimizer: {type: sgd}\n",
	    "t.yaml:7:12: missing required key 'lr' in optimizer");
	bad("data:\n  validation: {images: a, labels: b}\n" NET OPT,
	    "t.yaml:2:3: missing required key 'train' in data");
	bad("data:\n  train: {images: a}\n" NET OPT,
	    "t.yaml:2:10: missing required key 'labels' in data.train");
	bad(DATA "network:\n  gates: [{layers: [relu]}]\n" OPT,
	    "t.yaml:4:3: missing required key 'input' in network");
	bad(DATA "network:\n  input: [784]\n" OPT,
	    "t.yaml:4:3: missing required key 'gates' in network");
	bad(DATA "network:\n  input: [784]\n  gates:\n    - optimizer: {}\n"
	    OPT, "t.yaml:6:7: missing required key 'layers' in gate 1");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: {delta: 1}\n" OPT,
	    "t.yaml:7:9: missing required key 'type' in network.loss");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [dense]\n" OPT,
	    "t.yaml:6:16: missing required key 'units' in layer 'dense'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: {bias: false}}]\n" OPT,
	    "t.yaml:6:24: missing required key 'units' in layer 'dense'");
	bad(DATA "network:\n  input: [1, 8, 8]\n  gates:\n"
	    "    - layers: [{conv2d: {kernel: 3}}]\n" OPT,
	    "t.yaml:6:25: missing required key 'filters' in layer 'conv2d'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dropout: }]\n" OPT,
	    "t.yaml:6:16: missing required key 'rate' in layer 'dropout'");
	bad("data:\n  train: {images: a, labels: b}\n  normalize: {mean: 0}\n"
	    NET OPT, "t.yaml:3:14: missing required key 'std' in "
	    "data.normalize");
}

static void test_types(void **ctx)
{
	(void)ctx;
	bad(DATA "network:\n  input: [784]\n  gates: relu\n" OPT,
	    "t.yaml:5:10: 'gates' must be a list, got 'relu'");
	bad(DATA "network:\n  input: 784\n  gates: []\n" OPT,
	    "t.yaml:4:10: 'input' must be a list, got '784'");
	bad(DATA "network: [1]\n" OPT,
	    "t.yaml:3:10: 'network' must be a mapping, got a list");
	bad(MIN "schedule:\n", "t.yaml:8:10: 'schedule' must be a mapping, "
	    "got null");
	bad(MIN "name: [a]\n", "t.yaml:8:7: 'name' must be a string, got a list");
	bad(MIN "name: ''\n", "t.yaml:8:7: 'name' must not be empty");
	bad("data:\n  train: {images: , labels: b}\n" NET OPT,
	    "t.yaml:2:19: 'images' must be a string, got null");
	bad(DATA NET "optimizer: {type: [sgd], lr: 1}\n",
	    "t.yaml:7:19: 'type' must be a name, got a list");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: }\n",
	    "t.yaml:7:41: 'schedule' must be a name, got null");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss:\n" OPT,
	    "t.yaml:7:8: 'loss' must be a name, got null");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: [step]}\n",
	    "t.yaml:7:41: 'schedule' must be a name or a mapping, got a list");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: [mse]\n" OPT,
	    "t.yaml:7:9: 'loss' must be a name or a mapping, got a list");
	bad(DATA "network:\n  input: [784]\n  gates:\n    - relu\n" OPT,
	    "t.yaml:6:7: gate 1 must be a mapping, got 'relu'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: relu\n" OPT,
	    "t.yaml:6:15: 'layers' must be a list, got 'relu'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [[relu]]\n" OPT,
	    "t.yaml:6:16: a layer must be a name or a mapping, got a list");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{}]\n" OPT,
	    "t.yaml:6:16: a layer must be a name or a mapping with one key, "
	    "got an empty mapping");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: 3, relu: }]\n" OPT,
	    "t.yaml:6:27: a layer must be a mapping with one key, got a "
	    "second key 'relu' (each layer is its own list item)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: [3]}]\n" OPT,
	    "t.yaml:6:24: 'dense' must be an integer or a mapping, got a list");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: abc}]\n" OPT,
	    "t.yaml:6:24: 'units' must be an integer, got 'abc'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{relu: 3}]\n" OPT,
	    "t.yaml:6:23: 'relu' must be a mapping, got '3'");
	bad(DATA "network:\n  input: [1, 9, 9]\n  gates:\n"
	    "    - layers: [{conv2d: 3}]\n" OPT,
	    "t.yaml:6:25: 'conv2d' must be a mapping, got '3'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: {units: 3, bias: no}}]\n" OPT,
	    "t.yaml:6:41: 'bias' must be true or false, got 'no'");
}

static void test_values(void **ctx)
{
	(void)ctx;
	bad(MIN "schedule: {batch_size: abc}\n",
	    "t.yaml:8:24: 'batch_size' must be an integer, got 'abc'");
	bad(MIN "schedule: {batch_size: 1.5}\n",
	    "t.yaml:8:24: 'batch_size' must be an integer, got '1.5'");
	bad(MIN "schedule: {batch_size: 1e3}\n",
	    "t.yaml:8:24: 'batch_size' must be an integer, got '1e3'");
	bad(MIN "schedule: {batch_size: 0}\n",
	    "t.yaml:8:24: 'batch_size' must be at least 1, got 0");
	bad(MIN "schedule: {batch_size: 65537}\n",
	    "t.yaml:8:24: 'batch_size' must be at most 65536, got 65537");
	bad(MIN "schedule: {epochs: 0}\n",
	    "t.yaml:8:20: 'epochs' must be at least 1, got 0");
	bad(MIN "schedule: {threads: 257}\n",
	    "t.yaml:8:21: 'threads' must be at most 256, got 257");
	bad(MIN "schedule: {concurrency: {validation: 0}}\n",
	    "t.yaml:8:38: 'validation' must be at least 1, got 0");
	bad(MIN "output: {keep: 0}\n",
	    "t.yaml:8:16: 'keep' must be at least 1, got 0");
	bad(MIN "output: {checkpoint_every: -1}\n",
	    "t.yaml:8:28: 'checkpoint_every' must be at least 0, got -1");
	bad(MIN "output: {metrics: a/b.csv}\n",
	    "t.yaml:8:19: 'metrics' must be a file name without '/', "
	    "got 'a/b.csv'");
	bad(MIN "seed: -1\n", "t.yaml:8:7: 'seed' must be at least 0, got -1");
	bad(DATA NET "optimizer: {type: sgd, lr: -0.1}\n",
	    "t.yaml:7:28: 'lr' must be greater than 0, got -0.1");
	bad(DATA NET "optimizer: {type: sgd, lr: 0}\n",
	    "t.yaml:7:28: 'lr' must be greater than 0, got 0");
	bad(DATA NET "optimizer: {type: nesterov, lr: 1, momentum: 1.0}\n",
	    "t.yaml:7:46: 'momentum' must be less than 1, got 1.0");
	bad(DATA NET "optimizer: {type: adam, lr: 1, beta2: -0.5}\n",
	    "t.yaml:7:39: 'beta2' must be at least 0, got -0.5");
	bad(DATA NET "optimizer: {type: adam, lr: 1, eps: 0}\n",
	    "t.yaml:7:37: 'eps' must be greater than 0, got 0");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, weight_decay: -1}\n",
	    "t.yaml:7:45: 'weight_decay' must be at least 0, got -1");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type: step,"
	    " gamma: 1.5}}\n",
	    "t.yaml:7:61: 'gamma' must be at most 1, got 1.5");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type: step,"
	    " step_epochs: 0}}\n",
	    "t.yaml:7:67: 'step_epochs' must be greater than 0, got 0");
	bad("data:\n  train: {images: a, labels: b}\n  scale: 0\n" NET OPT,
	    "t.yaml:3:10: 'scale' must be greater than 0, got 0");
	bad(DATA "network:\n  input: [1, 1, 28, 28]\n  gates: []\n" OPT,
	    "t.yaml:4:10: 'input' must have 1, 2 or 3 dimensions, got 4");
	bad(DATA "network:\n  input: []\n  gates: []\n" OPT,
	    "t.yaml:4:10: 'input' must have 1, 2 or 3 dimensions, got 0");
	bad(DATA "network:\n  input: [1, -28, 28]\n  gates: []\n" OPT,
	    "t.yaml:4:14: 'input' must be at least 1, got -28");
	bad(DATA "network:\n  input: [1, x, 28]\n  gates: []\n" OPT,
	    "t.yaml:4:14: 'input' must be an integer, got 'x'");
	bad(DATA "network:\n  input: [784]\n  gates: []\n" OPT,
	    "t.yaml:5:10: 'gates' must not be empty");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n    - layers: []\n" OPT,
	    "t.yaml:7:15: gate 2 has no layers");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: 0}]\n" OPT,
	    "t.yaml:6:24: 'units' must be at least 1, got 0");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{maxpool2d: {kernel: 2, stride: 0}}]\n" OPT,
	    "t.yaml:6:48: 'stride' must be at least 1, got 0");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dropout: 1}]\n" OPT,
	    "t.yaml:6:26: 'rate' must be less than 1, got 1");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{leaky_relu: -0.1}]\n" OPT,
	    "t.yaml:6:29: 'alpha' must be at least 0, got -0.1");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{batchnorm: {momentum: 0}}]\n" OPT,
	    "t.yaml:6:39: 'momentum' must be greater than 0, got 0");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: {type: huber, delta: 0}\n" OPT,
	    "t.yaml:7:30: 'delta' must be greater than 0, got 0");
}

static void test_names(void **ctx)
{
	(void)ctx;
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense2: 10}]\n" OPT,
	    "t.yaml:6:17: unknown layer 'dense2' (did you mean 'dense'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [tanhh]\n" OPT,
	    "t.yaml:6:16: unknown layer 'tanhh' (did you mean 'tanh'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [linear]\n" OPT,
	    "t.yaml:6:16: unknown layer 'linear'");
	bad(DATA NET "optimizer: {type: adamm, lr: 1}\n",
	    "t.yaml:7:19: unknown optimizer 'adamm' (did you mean 'adam'?)");
	bad(DATA NET "optimizer: {type: lbfgs, lr: 1}\n",
	    "t.yaml:7:19: unknown optimizer 'lbfgs'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: cosin}\n",
	    "t.yaml:7:41: unknown lr schedule 'cosin' "
	    "(did you mean 'cosine'?)");
	bad(MIN "schedule: {mode: flipflop}\n",
	    "t.yaml:8:18: unknown mode 'flipflop' (did you mean 'flip-flop'?)");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: cross_entropy\n" OPT,
	    "t.yaml:7:9: unknown loss 'cross_entropy'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: {units: 1, init: he_norma}}]\n" OPT,
	    "t.yaml:6:41: unknown init 'he_norma' (did you mean 'he_normal'?)");
	bad("data:\n  format: hdf5\n  train: {images: a, labels: b}\n" NET OPT,
	    "t.yaml:2:11: unknown data format 'hdf5'");
}

/* The two generic key kinds (name lists and sub-sections) and the layer
 * option tables report exactly what the per-kind handlers did. */
#define GATE DATA "network:\n  input: [784]\n  gates:\n    - layers: "

static void test_generic_keys(void **ctx)
{
	(void)ctx;
	bad(MIN "schedule: {mode: wheel}\n",
	    "t.yaml:8:18: unknown mode 'wheel'"
	    " (did you mean 'wheels'?)");
	bad(MIN "schedule: {parallel: [data]}\n",
	    "t.yaml:8:22: 'parallel' must be a name, got a list");
	bad(DATA "network:\n  input: [784]\n  placement: contig\n  gates:\n"
	    "    - layers: [relu]\n" OPT,
	    "t.yaml:5:14: unknown placement 'contig'");
	bad(MIN "schedule: {concurrency: {trian: 2}}\n",
	    "t.yaml:8:26: unknown key 'trian' in schedule.concurrency"
	    " (did you mean 'train'?)");
	bad(MIN "schedule: {concurrency: 3}\n",
	    "t.yaml:8:25: 'concurrency' must be a mapping, got '3'");
	bad("data:\n  train: {images: ti, labels: tl}\n  normalize: {mean: 0.1}\n"
	    NET OPT,
	    "t.yaml:3:14: missing required key 'std' in data.normalize");
	bad("data:\n  train: {images: ti}\n" NET OPT,
	    "t.yaml:2:10: missing required key 'labels' in data.train");
	bad(MIN "output: {keep: 0}\n",
	    "t.yaml:8:16: 'keep' must be at least 1, got 0");
	bad(GATE "[{dropout: [1]}]\n" OPT,
	    "t.yaml:6:26: 'dropout' must be a number or a mapping, got a list");
	bad(GATE "[{conv2d: 3}]\n" OPT,
	    "t.yaml:6:25: 'conv2d' must be a mapping, got '3'");
	bad(GATE "[{maxpool2d: {kernel: 2, strid: 1}}]\n" OPT,
	    "t.yaml:6:40: unknown key 'strid' in layer 'maxpool2d'"
	    " (did you mean 'stride'?)");
	bad(GATE "[{upsample2d: {mode: bilinar}}]\n" OPT,
	    "t.yaml:6:36: unknown mode 'bilinar'"
	    " (did you mean 'bilinear'?)");
	bad(GATE "[{upsample2d: 0}]\n" OPT,
	    "t.yaml:6:29: 'scale' must be at least 1, got 0");
	bad(GATE "[{conv_transpose2d: {filters: 2, kernel: 3, output_padding: -1}}]\n"
	    OPT, "t.yaml:6:75: 'output_padding' must be at least 0, got -1");
	bad(GATE "[{conv_transpose2d: {kernel: 3}}]\n" OPT,
	    "t.yaml:6:35: missing required key 'filters' in layer "
	    "'conv_transpose2d'");
	bad(GATE "[{dense: {units: 0}}]\n" OPT,
	    "t.yaml:6:32: 'units' must be at least 1, got 0");
	bad(GATE "[{batchnorm: {momentum: 0}}]\n" OPT,
	    "t.yaml:6:39: 'momentum' must be greater than 0, got 0");
	bad(GATE "[dropout]\n" OPT,
	    "t.yaml:6:16: missing required key 'rate' in layer 'dropout'");
	bad(GATE "[{leaky_relu: -1}]\n" OPT,
	    "t.yaml:6:29: 'alpha' must be at least 0, got -1");
	bad(GATE "[{dense: {units: 2, bias: 1}}]\n" OPT,
	    "t.yaml:6:41: 'bias' must be true or false, got '1'");
	bad(GATE "[relu]\n"
	    "      optimizer: 1\n" OPT,
	    "t.yaml:7:18: 'optimizer' must be a mapping, got '1'");
}

/* Keys that do not apply to the chosen kind. */
static void test_applies(void **ctx)
{
	(void)ctx;
	bad(DATA NET "optimizer: {type: sgd, lr: 1, beta1: 0.9}\n",
	    "t.yaml:7:31: 'beta1' does not apply to optimizer 'sgd'");
	bad(DATA NET "optimizer: {type: adam, lr: 1, momentum: 0.9}\n",
	    "t.yaml:7:32: 'momentum' does not apply to optimizer 'adam'");
	bad(DATA NET "optimizer: {type: momentum, lr: 1, rho: 0.9}\n",
	    "t.yaml:7:36: 'rho' does not apply to optimizer 'momentum'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, eps: 1e-8}\n",
	    "t.yaml:7:31: 'eps' does not apply to optimizer 'sgd'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type: cosine,"
	    " gamma: 0.5}}\n",
	    "t.yaml:7:56: 'gamma' does not apply to schedule 'cosine'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {min_lr: 0}}\n",
	    "t.yaml:7:42: 'min_lr' does not apply to schedule 'constant'");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type:"
	    " exponential, step_epochs: 2}}\n",
	    "t.yaml:7:61: 'step_epochs' does not apply to schedule "
	    "'exponential'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n  loss: {type: mse, delta: 1}\n" OPT,
	    "t.yaml:7:21: 'delta' does not apply to loss 'mse'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [{dense: {units: 1, init_value: 2}}]\n" OPT,
	    "t.yaml:6:35: 'init_value' does not apply to init 'default'");
	/* In a gate: against the gate's type, which may differ. */
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n"
	    "      optimizer: {type: sgd, beta1: 0.5}\n"
	    "optimizer: {type: adam, lr: 1}\n",
	    "t.yaml:7:30: 'beta1' does not apply to optimizer 'sgd'");
	bad(DATA "network:\n  input: [784]\n  gates:\n"
	    "    - layers: [relu]\n"
	    "      optimizer: {momentum: 0.5}\n"
	    "optimizer: {type: adam, lr: 1}\n",
	    "t.yaml:7:19: 'momentum' does not apply to optimizer 'adam'");
}

/* --- overrides ----------------------------------------------------------- */

static void test_sets(void **ctx)
{
	static const char text[] = DATA
		"network:\n"
		"  input: [784]\n"
		"  gates:\n"
		"    - layers: [{dense: 128}, relu]\n"
		"    - layers: [{dense: 10}]\n"
		OPT
		"schedule: {batch_size: 32}\n";
	const char *sets[] = {
		"schedule.batch_size=128",		/* a scalar */
		"schedule.mode=flip-flop",		/* an absent key */
		"output.keep=7",			/* an absent mapping */
		"network.gates.0.layers.0.dense=64",	/* by index */
		"network.gates.1.layers.0={dense: {units: 5, bias: false}}",
		"network.input=[1, 28, 28]",		/* a flow list */
		"network.gates.1.optimizer.lr=0.5",	/* a gate override */
		"name=a=b",				/* '=' in the value */
		"schedule.batch_size=256",		/* the last one wins */
	};
	const int n = (int)(sizeof(sets) / sizeof(*sets));
	struct akk_spec s;

	(void)ctx;
	ok(&s, text, sets, n);
	assert_int_equal(s.sched.batch_size, 256);
	assert_int_equal(s.sched.mode, AKK_MODE_FLIPFLOP);
	assert_int_equal(s.out.keep, 7);
	assert_int_equal(s.gates[0].layers[0].units, 64);
	assert_int_equal(s.gates[0].layers[0].mark.line, 6);
	assert_int_equal(s.gates[1].layers[0].units, 5);
	assert_int_equal(s.gates[1].layers[0].bias, 0);
	/* A node from an override has no place in the file. */
	assert_int_equal(s.gates[1].layers[0].mark.line, 0);
	assert_int_equal(s.input.rank, 3);
	assert_int_equal(s.input.d[1], 28);
	assert_int_equal(s.input_mark.line, 0);
	assert_int_equal(s.gates[1].has_optim, 1);
	assert_float(s.gates[1].optim.lr, 0.5);
	assert_int_equal(s.gates[0].has_optim, 0);
	assert_string_equal(s.name, "a=b");
	assert_string_equal(s.out.dir, "runs/a=b");
	/* The text is the file's, the overrides are kept beside it. */
	assert_string_equal(s.text, text);
	assert_int_equal(s.nsets, n);
	for (int i = 0; i < n; i++) {
		assert_string_equal(s.sets[i], sets[i]);
		assert_ptr_not_equal(s.sets[i], sets[i]);
	}
	akk_spec_release(&s);
}

static void test_set_errors(void **ctx)
{
	const char *set[1];

	(void)ctx;
#define BAD_SET(arg, want)                                                   \
	do {                                                                 \
		set[0] = arg;                                                \
		bad_sets(MIN, set, 1, want);                                 \
	} while (0)
	/* Bad values are reported against the argument. */
	BAD_SET("schedule.batch_size=0",
		"--set schedule.batch_size=0: 'batch_size' must be at least 1, "
		"got 0");
	BAD_SET("schedule.batchsize=3",
		"--set schedule.batchsize=3: unknown key 'batchsize' in "
		"schedule (did you mean 'batch_size'?)");
	BAD_SET("optimizer.type=sgdd",
		"--set optimizer.type=sgdd: unknown optimizer 'sgdd' "
		"(did you mean 'sgd'?)");
	BAD_SET("optimizer.beta1=0.5x",
		"--set optimizer.beta1=0.5x: 'beta1' must be a number, "
		"got '0.5x'");
	BAD_SET("network.gates.0.layers.0=dense2",
		"--set network.gates.0.layers.0=dense2: unknown layer 'dense2' "
		"(did you mean 'dense'?)");
	BAD_SET("network.gates.0.layers.0.dense={units: 3, bais: 1}",
		"--set network.gates.0.layers.0.dense={units: 3, bais: 1}: "
		"unknown key 'bais' in layer 'dense' (did you mean 'bias'?)");
	BAD_SET("schedule.concurrency=4",
		"--set schedule.concurrency=4: 'concurrency' must be a "
		"mapping, got '4'");
	BAD_SET("network.input=[1,2",
		"--set network.input=[1,2: syntax error: did not find "
		"expected ',' or ']'");
	BAD_SET("name=",
		"--set name=: 'name' must be a string, got null");
	BAD_SET("data.normalize.mean=0",
		"--set data.normalize.mean=0: missing required key 'std' in "
		"data.normalize");
	BAD_SET("optimizer.momentum=0.5",
		"--set optimizer.momentum=0.5: 'momentum' does not apply to "
		"optimizer 'adam'");
	/* Malformed overrides. */
	BAD_SET("schedule.batch_size", "--set schedule.batch_size: expected "
		"KEY=VALUE");
	BAD_SET("=3", "--set =3: empty key");
	BAD_SET("schedule..epochs=3",
		"--set schedule..epochs=3: empty name in key 'schedule..epochs'");
	BAD_SET("schedule.=3", "--set schedule.=3: empty name in key "
		"'schedule.'");
	BAD_SET("optimizer.lr.x=3", "--set optimizer.lr.x=3: 'optimizer.lr' is "
		"not a mapping or a list");
	BAD_SET("seed.x=3", "--set seed.x=3: 'seed' must be an integer, got a "
		"mapping");
	BAD_SET("network.gates.x.layers=[]",
		"--set network.gates.x.layers=[]: 'network.gates' is a list: "
		"'x' is not an index");
	BAD_SET("network.gates.1.layers=[relu]",
		"--set network.gates.1.layers=[relu]: index 1 is out of range "
		"for 'network.gates' (1 items)");
	BAD_SET("network.gates.0.layers.0.dense.units=3",
		"--set network.gates.0.layers.0.dense.units=3: "
		"'network.gates.0.layers.0.dense' is not a mapping or a list");
#undef BAD_SET
	/* The file's own errors still point into the file. */
	set[0] = "schedule.epochs=2";
	bad_sets(MIN "seed: x\n", set, 1,
		 "t.yaml:8:7: 'seed' must be an integer, got 'x'");
}

/* --- limits, tags and floats as stored ------------------------------------ */

/* text, then n copies of c, then tail; caller frees. */
static char *repeat(const char *text, char ch, size_t n, const char *tail)
{
	size_t a = strlen(text), b = strlen(tail);
	char *t = malloc(a + n + b + 1);

	assert_non_null(t);
	memcpy(t, text, a);
	memset(t + a, ch, n);
	memcpy(t + a + n, tail, b + 1);
	return t;
}

static void test_gate_limit(void **ctx)
{
	char *text = malloc(64 + (AKK_MAX_GATES + 1) * 32 + sizeof(OPT));
	struct akk_spec s;
	size_t n;

	(void)ctx;
	assert_non_null(text);
	n = (size_t)sprintf(text, DATA "network:\n  input: [784]\n  gates:\n");
	for (int i = 0; i < AKK_MAX_GATES; i++)
		n += (size_t)sprintf(text + n, "    - layers: [relu]\n");
	strcpy(text + n, OPT);
	ok(&s, text, NULL, 0);
	assert_int_equal(s.ngates, AKK_MAX_GATES);
	akk_spec_release(&s);
	/* Gate 257 is reported where it starts: line 5 + 257. */
	n += (size_t)sprintf(text + n, "    - layers: [relu]\n");
	strcpy(text + n, OPT);
	bad(text, "t.yaml:262:7: too many gates: 257, at most 256");
	free(text);
}

static void test_size_limit(void **ctx)
{
	char want[200], *text;
	struct akk_spec s;
	struct akk_err e;
	const char *set[1];

	(void)ctx;
	/* Exactly the limit parses (a comment pads it); one byte more is
	 * reported where the limit is passed. */
	text = repeat(MIN "#", 'x', AKK_SPEC_MAX_BYTES - strlen(MIN "#") - 1,
		      "\n");
	assert_int_equal(strlen(text), AKK_SPEC_MAX_BYTES);
	ok(&s, text, NULL, 0);
	akk_spec_release(&s);
	free(text);
	text = repeat(MIN "#", 'x', AKK_SPEC_MAX_BYTES - strlen(MIN "#"),
		      "\n");
	snprintf(want, sizeof(want), "t.yaml:8:%d: the config is larger than "
		 "1048576 bytes", (int)(AKK_SPEC_MAX_BYTES - strlen(MIN)) + 1);
	bad(text, want);
	free(text);
	/* A file that never ends is read only up to the limit. */
	assert_int_equal(akk_spec_load(&s, "/dev/zero", NULL, 0, &e), -1);
	akk_err_format(&e, want, sizeof(want));
	assert_string_equal(want, "/dev/zero:1:1048577: the config is larger "
			    "than 1048576 bytes");
	/* A --set value too. */
	set[0] = text = repeat("name=", 'x', AKK_SPEC_MAX_BYTES + 1, "");
	assert_int_equal(parse(&s, MIN, NULL, set, 1, &e), -1);
	assert_string_equal(e.msg, "the value is longer than 1048576 bytes");
	assert_memory_equal(e.file, "--set name=xxx", 14);
	free(text);
}

static void test_depth_limit(void **ctx)
{
	char *text;
	const char *set[1];
	struct akk_spec s;

	(void)ctx;
	/* The top mapping is level 1: 63 lists more still parse (and fail
	 * on the unknown key), 64 do not, and are reported at the list that
	 * passes the limit, before libyaml builds anything. */
	text = repeat(MIN "x: ", '[', 63, "");
	{
		char *closed = repeat(text, ']', 63, "\n");
		bad(closed, "t.yaml:8:1: unknown key 'x'");
		free(closed);
	}
	free(text);
	text = repeat(MIN "x: ", '[', 64, "\n");
	bad(text, "t.yaml:8:67: nested too deeply: more than 64 levels of "
	    "lists and mappings");
	free(text);
	/* 100,000 of them, unclosed: the same, at once. */
	text = repeat(MIN "x: ", '[', 100000, "\n");
	bad(text, "t.yaml:8:67: nested too deeply: more than 64 levels of "
	    "lists and mappings");
	free(text);
	/* --set values, unclosed too. */
	set[0] = text = repeat("network.input=", '[', 100000, "");
	{
		struct akk_err e;
		assert_int_equal(parse(&s, MIN, NULL, set, 1, &e), -1);
		assert_string_equal(e.msg, "the value is nested too deeply");
	}
	free(text);
}

static void test_tags(void **ctx)
{
	struct akk_spec s;
	const char *set[1];

	(void)ctx;
	/* Tags that fit are honoured. */
	ok(&s, MIN "seed: !!int 7\nname: !!str 42\n", NULL, 0);
	assert_int_equal(s.seed, 7);
	assert_string_equal(s.name, "42");
	akk_spec_release(&s);
	ok(&s, DATA NET "optimizer: {type: !!str sgd, lr: !!float 0.5, "
	   "clip_norm: !!int 2}\n", NULL, 0);
	assert_int_equal(s.optim.kind, AKK_OPT_SGD);
	assert_float(s.optim.lr, 0.5);
	assert_float(s.optim.clip_norm, 2);
	akk_spec_release(&s);
	ok(&s, DATA "network: !!map\n  input: !!seq [784]\n  gates:\n"
	   "    - layers: [{dense: 10}]\n" OPT, NULL, 0);
	akk_spec_release(&s);
	/* Tags that do not fit the key, at the value. */
	bad(MIN "seed: !!str 42\n",
	    "t.yaml:8:7: 'seed' must be an integer, got the string '42'");
	bad(MIN "seed: ! 42\n",
	    "t.yaml:8:7: 'seed' must be an integer, got the string '42'");
	bad(MIN "seed: !!float 42\n",
	    "t.yaml:8:7: 'seed' must be an integer, got !!float '42'");
	bad(MIN "name: !!int 42\n",
	    "t.yaml:8:7: 'name' must be a string, got !!int '42'");
	bad(MIN "schedule: {weight_stashing: !!str true}\n",
	    "t.yaml:8:29: 'weight_stashing' must be true or false, got the "
	    "string 'true'");
	bad(MIN "schedule: {epochs: !!null 3}\n",
	    "t.yaml:8:20: 'epochs' must be an integer, got null");
	bad(DATA NET "optimizer: {type: sgd, lr: !!int 0.5}\n",
	    "t.yaml:7:28: 'lr' must be a number, got !!int '0.5'");
	bad(DATA NET "optimizer: {type: !!bool sgd, lr: 1}\n",
	    "t.yaml:7:19: 'type' must be a name, got !!bool 'sgd'");
	bad(MIN "!!int 5: 3\n",
	    "t.yaml:8:1: a key must be a name, got !!int '5'");
	/* Tags that fit no value here, or that nobody knows. */
	bad(MIN "seed: !!binary 42\n",
	    "t.yaml:8:7: tag '!!binary' does not fit a scalar");
	bad(DATA "network:\n  input: !!map [784]\n", 
	    "t.yaml:4:10: tag '!!map' does not fit a list");
	bad(MIN "seed: !foo 42\n", "t.yaml:8:7: unknown tag '!foo'");
	bad(MIN "seed: !<tag:example.com,2000:x> 42\n",
	    "t.yaml:8:7: unknown tag 'tag:example.com,2000:x'");
	/* In --set values the same. */
	set[0] = "seed=!!str 5";
	bad_sets(MIN, set, 1, "--set seed=!!str 5: 'seed' must be an integer, "
		 "got the string '5'");
	set[0] = "seed=!!int 5";
	ok(&s, MIN, set, 1);
	assert_int_equal(s.seed, 5);
	akk_spec_release(&s);
	set[0] = "network.input=!x [1]";
	bad_sets(MIN, set, 1, "--set network.input=!x [1]: unknown tag '!x'");
}

static void test_floats_as_stored(void **ctx)
{
	struct akk_spec s;

	(void)ctx;
	/* A value that the float it is stored as puts on the wrong side of
	 * a bound, or that becomes 0 (or subnormal) as a float. */
	bad(DATA NET "optimizer: {type: sgd, lr: 1e-50}\n",
	    "t.yaml:7:28: 'lr' is too small for a float: 1e-50 is stored as 0");
	bad(DATA NET "optimizer: {type: sgd, lr: 1e-40}\n",
	    "t.yaml:7:28: 'lr' is too small for a float: 1e-40 is stored as "
	    "9.9999461e-41");
	bad(DATA NET "optimizer: {type: momentum, lr: 1, momentum: "
	    "0.99999999999}\n",
	    "t.yaml:7:46: 'momentum' must be less than 1, got 0.99999999999 "
	    "(1 as a float)");
	bad(DATA NET "optimizer: {type: adam, lr: 1, beta2: 0.999999999}\n",
	    "t.yaml:7:39: 'beta2' must be less than 1, got 0.999999999 "
	    "(1 as a float)");
	bad(DATA NET "optimizer: {type: sgd, lr: 1, schedule: {type: cosine, "
	    "min_lr: 1e-50}}\n",
	    "t.yaml:7:64: 'min_lr' is too small for a float: 1e-50 is stored "
	    "as 0");
	bad("data:\n  train: {images: a, labels: b}\n"
	    "  normalize: {mean: 0.5, std: 1e-50}\n" NET OPT,
	    "t.yaml:3:31: 'std' is too small for a float: 1e-50 is stored as 0");
	/* What fits is stored as its float. */
	ok(&s, DATA NET "optimizer: {type: momentum, lr: 1e-30, momentum: "
	   "0.9999999}\n", NULL, 0);
	assert_true(s.optim.lr == 1e-30f);
	assert_true(s.optim.momentum == 0.9999999f && s.optim.momentum < 1);
	akk_spec_release(&s);
}

static void test_layer_limit(void **ctx)
{
	/* Aliases repeat one list of 300 layers in 256 gates: 76,800 layers
	 * from 3 KB of text. The first layer past 65,536 is reported, in
	 * gate 219 (218 x 300 = 65,400), at its item of the anchored list. */
	char *text = malloc(64 * 1024), *p = text;

	(void)ctx;
	assert_non_null(text);
	p += sprintf(p, DATA "network:\n  input: [784]\n  gates:\n"
		     "    - layers: &l [relu");
	for (int i = 1; i < 300; i++)
		p += sprintf(p, ", relu");
	p += sprintf(p, "]\n");
	for (int i = 1; i < AKK_MAX_GATES; i++)
		p += sprintf(p, "    - layers: *l\n");
	strcpy(p, OPT);
	/* item 137 (0-based 136) starts at column 19 + 6 * 136 */
	bad(text, "t.yaml:6:835: too many layers: more than 65536 in the network");
	free(text);
}

static void test_pixel_overflow(void **ctx)
{
	(void)ctx;
	bad("data:\n  train: {images: a, labels: b}\n  scale: 1e-30\n"
	    "  normalize: {mean: 0.5, std: 1e-30}\n" NET OPT,
	    "t.yaml:1:1: pixels would become (pixel / 1e-30 - 0.5) / 1e-30, "
	    "which overflows a float");
}

/* A whole-number bound is printed whole, not as 2.14748e+09. */
static void test_int_bound_printed_whole(void **ctx)
{
	(void)ctx;
	bad("data:\n  format: csv\n  train: {file: a.csv}\n  csv: {skip: 9999999999}\n" NET OPT,
	    "t.yaml:4:15: 'skip' must be at most 2147483647, got 9999999999");
}

/* --- release ------------------------------------------------------------- */

/* Early stopping and the plateau schedule watch validation data of any
 * form: a held-out split is validation data too. */
static void test_watch_split(void **ctx)
{
	struct akk_spec s;

	(void)ctx;
	ok(&s, "data:\n  train: {images: ti, labels: tl}\n  validation: {split: 0.1}\n"
	   NET OPT "schedule: {early_stopping: 2}\n", NULL, 0);
	assert_true(s.sched.early.on);
	akk_spec_release(&s);
	ok(&s, "data:\n  train: {images: ti, labels: tl}\n  validation: {split: 0.1}\n"
	   NET "optimizer: {type: sgd, lr: 0.1, schedule: plateau}\n", NULL, 0);
	akk_spec_release(&s);
	bad(MIN "schedule: {early_stopping: 2}\n",
	    "t.yaml:8:12: 'early_stopping' watches validation data, but the config has no data.validation");
}


/* A validation part in every format is validation data for early stopping
 * and the plateau schedule (a CSV validation file was once missed). */
static void test_watch_every_format(void **ctx)
{
	static const char *const data[][2] = {
		{ "data:\n  train: {images: ti, labels: tl}\n  validation: {images: vi, labels: vl}\n",
		  "[784]" },
		{ "data:\n  format: npy\n  train: {features: tf, labels: tl}\n"
		  "  validation: {features: vf, labels: vl}\n", "[784]" },
		{ "data:\n  format: cifar10\n  train: {files: [t]}\n  validation: {files: [v]}\n",
		  "[3, 32, 32]" },
		{ "data:\n  format: csv\n  train: {file: t.csv}\n  validation: {file: v.csv}\n",
		  "[784]" },
		{ "data:\n  format: images\n  train: {folder: t}\n  validation: {folder: v}\n",
		  "[1, 28, 28]" },
		{ "data:\n  format: images\n  train: {list: t.txt}\n  validation: {list: v.txt}\n",
		  "[1, 28, 28]" },
	};
	struct akk_spec s;
	char text[1024];

	(void)ctx;
	for (size_t i = 0; i < sizeof(data) / sizeof(data[0]); i++) {
		for (int plateau = 0; plateau < 2; plateau++) {
			snprintf(text, sizeof(text),
				 "%snetwork: {input: %s, gates: [{layers: [flatten, {dense: 10}]}]}\n%s",
				 data[i][0], data[i][1],
				 plateau ? "optimizer: {type: sgd, lr: 0.1, schedule: plateau}\n"
					 : OPT "schedule: {early_stopping: 2}\n");
			ok(&s, text, NULL, 0);
			assert_true(plateau || s.sched.early.on);
			akk_spec_release(&s);
		}
	}
}

/* validation: {folds: K}, and augmentation refused for tables. */
static void test_folds_and_table_augment(void **ctx)
{
	struct akk_spec s;

	(void)ctx;
	ok(&s, "data:\n  train: {images: ti, labels: tl}\n  validation: {folds: 5}\n"
	   NET OPT "schedule: {early_stopping: 2}\n", NULL, 0);
	assert_int_equal(s.data.folds, 5);
	assert_true(s.data.split == 0);
	akk_spec_release(&s);
	bad("data:\n  train: {images: ti, labels: tl}\n  validation: {folds: 1}\n" NET OPT,
	    "t.yaml:3:23: 'folds' must be at least 2, got 1");
	bad("data:\n  train: {images: ti, labels: tl}\n  validation: {folds: 5, split: 0.2}\n"
	    NET OPT,
	    "t.yaml:3:16: 'folds' and 'split' do not go together in data.validation: folds hold out each part in turn");
	bad("data:\n  train: {images: ti, labels: tl}\n"
	    "  validation: {folds: 5, images: vi, labels: vl}\n" NET OPT,
	    "t.yaml:3:26: unknown key 'images' in data.validation");
	bad("data:\n  format: csv\n  train: {file: t.csv}\n  augment: {flip: true}\n" NET OPT,
	    "t.yaml:4:3: 'augment' needs images, but data format 'csv' gives a table (one row of features a sample)");
	bad("data:\n  format: npy\n  train: {features: f, labels: l}\n"
	    "  augment: {translate: 2}\n" NET OPT,
	    "t.yaml:4:3: 'augment' needs images, but data format 'npy' gives a table (network.input has one dimension)");
	bad("data:\n  train: {images: ti, labels: tl}\n  augment: {flip: true}\n"
	    "network: {input: [28, 28], gates: [{layers: [{dense: 3}]}]}\n" OPT,
	    "t.yaml:3:3: 'augment' needs images, but network.input [28, 28] is a sequence");
	ok(&s, "data:\n  format: npy\n  train: {features: f, labels: l}\n"
	   "  augment: {translate: 2}\n"
	   "network: {input: [1, 4, 4], gates: [{layers: [{dense: 3}]}]}\n" OPT, NULL, 0);
	akk_spec_release(&s);
}

static void test_release(void **ctx)
{
	struct akk_spec s;

	(void)ctx;
	memset(&s, 0, sizeof(s));
	akk_spec_release(&s);
	akk_spec_release(&s);
	ok(&s, MIN, NULL, 0);
	akk_spec_release(&s);
	akk_spec_release(&s);
	assert_null(s.gates);
	assert_string_equal(akk_mode_name(AKK_MODE_FLIPFLOP), "flip-flop");
	assert_string_equal(akk_mode_name(AKK_MODE_WHEELS), "wheels");
	assert_null(akk_mode_name((enum akk_mode)7));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_gate_optimizer),
		cmocka_unit_test(test_shorthands),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_generic_keys),
		cmocka_unit_test(test_applies),
		cmocka_unit_test(test_sets),
		cmocka_unit_test(test_set_errors),
		cmocka_unit_test(test_gate_limit),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_tags),
		cmocka_unit_test(test_floats_as_stored),
		cmocka_unit_test(test_layer_limit),
		cmocka_unit_test(test_pixel_overflow),
		cmocka_unit_test(test_int_bound_printed_whole),
		cmocka_unit_test(test_watch_split),
		cmocka_unit_test(test_watch_every_format),
		cmocka_unit_test(test_folds_and_table_augment),
		cmocka_unit_test(test_release),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
