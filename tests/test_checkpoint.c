/* test_checkpoint.c - the checkpoint format: round trips, damage, resume.
 *
 * Everything runs in-process on synthetic data (class patterns in 8x8
 * images, as in test_runtime.c). Round trips cover every layer kind that has
 * parameters or state and every optimizer kind; damaged files (every
 * truncation, single-bit flips, foreign files, a future version, a stored
 * config that no longer parses, crafted fields with a valid CRC) must be
 * rejected with a message, never a crash (the suite also runs under ASan);
 * resuming a flip-flop run mid-epoch or at an epoch boundary must give the
 * weights of the run that never stopped, bit for bit. Nothing depends on
 * timing: interrupts come from the sentinel's own progress callback. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"
#include "forge.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "runtime/provider.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "config/spec.h"

#define SIDE 8
#define CLASSES 4

static void parse(struct akk_spec *s, struct akk_model *m, const char *text,
		  const char *const *sets, int nsets)
{
	struct akk_err e = { 0 };

	memset(s, 0, sizeof(*s));
	memset(m, 0, sizeof(*m));
	if (akk_spec_parse(s, text, strlen(text), "test.yaml", "/base/dir", sets,
			   nsets, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(m, s, &e))
		fail_msg("plan: %s", e.msg);
}

/* Fresh gates of model m, initialised from seed. */
static struct akk_gate *fresh_gates(const struct akk_model *m, uint64_t seed)
{
	struct akk_gate *g = calloc(m->ngates, sizeof(*g));
	struct akk_err e = { 0 };

	assert_non_null(g);
	for (int i = 0; i < m->ngates; i++)
		if (akk_gate_init(&g[i], &m->gates[i],
				  &(struct akk_gate_config){ .max_batch = m->spec->sched.batch_size,
							     .ntapes = 1, .nevals = 1,
							     .steps_per_epoch = 7,
							     .epochs = m->spec->sched.epochs,
							     .seed = seed }, &e))
			fail_msg("gate init: %s", e.msg);
	return g;
}

static void free_gates(struct akk_gate *g, int n)
{
	for (int i = 0; i < n; i++)
		akk_gate_release(&g[i]);
	free(g);
}

static size_t opt_floats(const struct akk_gate *g)
{
	return g->plan->nparams * akk_optim_state_per_param(g->plan->optim->kind);
}

/* Byte for byte: params, running state, optimizer moments, step, RNG. */
static void assert_gate_equal(const struct akk_gate *a, const struct akk_gate *b)
{
	const struct akk_gate_plan *p = a->plan;

	assert_int_equal(p->nparams, b->plan->nparams);
	assert_int_equal(p->nstate, b->plan->nstate);
	assert_int_equal(opt_floats(a), opt_floats(b));
	assert_int_equal(a->step, b->step);
	assert_memory_equal(&a->rng, &b->rng, sizeof(a->rng));
	assert_memory_equal(a->params, b->params, p->nparams * sizeof(float));
	if (p->nstate)
		assert_memory_equal(a->state, b->state, p->nstate * sizeof(float));
	if (opt_floats(a))
		assert_memory_equal(a->opt, b->opt, opt_floats(a) * sizeof(float));
}

static int any_nonzero(const float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] != 0)
			return 1;
	return 0;
}

static int write_ckpt(const char *path, const struct akk_spec *s,
		      const struct akk_gate *gates, int ngates, int mode,
		      struct akk_position pos, struct akk_ckpt_metrics met,
		      struct akk_err *e)
{
	const struct akk_gate *gp[64];

	assert_true(ngates <= 64);
	/* a gate steps once per training batch: the reader checks it */
	for (int i = 0; i < ngates; i++) {
		((struct akk_gate *)&gates[i])->step = pos.id;
		gp[i] = &gates[i];
	}
	struct akk_ckpt_source src = {
		.spec = s, .base_dir = "/base/dir", .mode = mode, .gates = gp,
		.ngates = ngates, .pos = pos, .metrics = met,
	};
	return akk_checkpoint_write(path, &src, e);
}

static int restore(const struct akk_checkpoint *c, struct akk_gate *gates,
		   int ngates, struct akk_err *e)
{
	struct akk_gate *gp[64];

	assert_true(ngates <= 64);
	for (int i = 0; i < ngates; i++)
		gp[i] = &gates[i];
	return akk_checkpoint_restore(c, gp, ngates, "ck.bin", e);
}

/* Replace path's contents. Unlinking first avoids truncating a file in
 * place, which ext4 follows with a flush on close (auto_da_alloc): the
 * loops below write thousands of files. */
static void put_file(const char *path, const void *data, size_t len)
{
	unlink(path);
	assert_int_equal(tu_write_file(path, data, len), 0);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Recompute the trailing CRC-32 so only the deliberate damage remains. */
static void fix_crc(unsigned char *p, size_t len)
{
	put_le32(p + len - 4, (uint32_t)crc32(0L, p, (uInt)(len - 4)));
}

/* Temporary directories of the running test, removed by its teardown
 * even when it fails. */
static char *dirs[8];
static int ndirs;

static char *tmpdir(void)
{
	const char *d = tu_tmpdir();

	assert_non_null(d);
	assert_true(ndirs < 8);
	dirs[ndirs] = strdup(d);
	assert_non_null(dirs[ndirs]);
	return dirs[ndirs++];
}

static int remove_dirs(void **unused)
{
	(void)unused;
	for (int i = 0; i < ndirs; i++) {
		tu_rm_tree(dirs[i]);
		free(dirs[i]);
	}
	ndirs = 0;
	return 0;
}

/* A read that must fail: c is left empty and the message is non-empty. */
static void assert_read_fails(const char *path, struct akk_err *e)
{
	struct akk_checkpoint c;

	memset(e, 0, sizeof(*e));
	memset(&c, 0xa5, sizeof(c));
	assert_int_equal(akk_checkpoint_read(&c, path, e), -1);
	assert_true(e->msg[0] != '\0');
	assert_null(c.gates);
	assert_null(c.config);
	assert_null(c.sets);
}

/* ---- round trips ---------------------------------------------------- */

/* Every layer kind with parameters or state (dense with and without bias,
 * conv2d with and without bias, batchnorm after conv2d and after dense) and
 * the parameter-free ones around them. */
static const char *all_layers_yaml =
	"seed: 11\n"
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 3, kernel: 3, padding: 1}}, batchnorm, relu, {maxpool2d: 2}]\n"
	"    - layers: [{conv2d: {filters: 4, kernel: 3, padding: 1, bias: false}}, leaky_relu, {avgpool2d: 2}, flatten]\n"
	"    - layers: [{dense: 12}, batchnorm, sigmoid, {dropout: 0.2}]\n"
	"    - layers: [{dense: {units: 10, bias: false}}, softplus, tanh, {dense: 4}]\n"
	"optimizer: {type: %s, lr: 0.01}\n"
	"schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\n";

static void round_trip(const char *text, const char *const *sets, int nsets)
{
	struct akk_spec s, s2;
	struct akk_model m, m2;
	struct akk_dataset train;
	struct akk_reference ref;
	struct akk_checkpoint c;
	struct akk_gate *fresh;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];
	struct akk_position pos = { .epoch = 1, .index = 3, .id = 10, .loss_sum = 12.5,
				    .correct = 37, .samples = 48, .seconds = 1.25 };
	struct akk_ckpt_metrics met = { 1, 0.875, 0.5, 0.75, 0.625, 0.6875, 0 };

	parse(&s, &m, text, sets, nsets);
	tu_dataset(&train, 100, SIDE, CLASSES, 3);	/* 7 batches per epoch, the last of 4 */
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &m, &train, &e), 0);
	for (int i = 0; i < 10; i++)	/* across an epoch boundary */
		if (akk_reference_step(&ref, NULL, NULL, &e))
			fail_msg("step: %s", e.msg);
	snprintf(path, sizeof(path), "%s/ck.bin", dir);
	if (write_ckpt(path, &s, ref.gates, m.ngates, AKK_MODE_WHEELS, pos, met, &e))
		fail_msg("write: %s", e.msg);
	if (akk_checkpoint_read(&c, path, &e))
		fail_msg("read: %s", e.msg);

	assert_int_equal(c.version, AKK_CKPT_VERSION);
	assert_string_equal(c.config, s.text);
	assert_string_equal(c.config_name, "test.yaml");
	assert_string_equal(c.base_dir, "/base/dir");
	assert_int_equal(c.nsets, nsets);
	for (int i = 0; i < nsets; i++)
		assert_string_equal(c.sets[i], sets[i]);
	assert_int_equal(c.mode, AKK_MODE_WHEELS);
	assert_int_equal(c.pos.epoch, pos.epoch);
	assert_int_equal(c.pos.index, pos.index);
	assert_int_equal(c.pos.id, pos.id);
	assert_true(c.pos.loss_sum == pos.loss_sum);
	assert_int_equal(c.pos.correct, pos.correct);
	assert_int_equal(c.pos.samples, pos.samples);
	assert_true(c.pos.seconds == pos.seconds);
	assert_int_equal(c.metrics.epoch, met.epoch);
	assert_true(c.metrics.train_loss == met.train_loss);
	assert_true(c.metrics.train_acc == met.train_acc);
	assert_true(c.metrics.val_loss == met.val_loss);
	assert_true(c.metrics.val_acc == met.val_acc);
	assert_true(c.metrics.best_val_acc == met.best_val_acc);
	assert_int_equal(c.ngates, m.ngates);

	/* the stored config parses back to the same network */
	if (akk_checkpoint_spec(&c, &s2, NULL, 0, &e))
		fail_msg("stored spec: %s", e.msg);
	assert_string_equal(s2.text, s.text);
	assert_int_equal(s2.seed, s.seed);
	assert_int_equal(s2.sched.batch_size, s.sched.batch_size);
	assert_string_equal(s2.data.train.images, s.data.train.images);
	if (akk_model_plan(&m2, &s2, &e))
		fail_msg("stored plan: %s", e.msg);
	assert_int_equal(m2.ngates, m.ngates);
	assert_int_equal(m2.nparams, m.nparams);

	/* different values before the restore, identical after */
	fresh = fresh_gates(&m2, 4242);
	for (int g = 0; g < m.ngates; g++) {
		const struct akk_gate *a = &ref.gates[g];
		assert_int_not_equal(fresh[g].step, a->step);
		assert_memory_not_equal(&fresh[g].rng, &a->rng, sizeof(a->rng));
		assert_memory_not_equal(fresh[g].params, a->params,
					a->plan->nparams * sizeof(float));
		if (opt_floats(a)) {
			assert_true(any_nonzero(a->opt, opt_floats(a)));
			assert_false(any_nonzero(fresh[g].opt, opt_floats(a)));
		}
		if (a->plan->nstate)
			assert_memory_not_equal(fresh[g].state, a->state,
						a->plan->nstate * sizeof(float));
	}
	if (restore(&c, fresh, m2.ngates, &e))
		fail_msg("restore: %s", e.msg);
	for (int g = 0; g < m.ngates; g++)
		assert_gate_equal(&fresh[g], &ref.gates[g]);

	free_gates(fresh, m2.ngates);
	akk_checkpoint_release(&c);
	assert_null(c.gates);
	akk_model_release(&m2);
	akk_spec_release(&s2);
	akk_reference_release(&ref);
	akk_dataset_release(&train);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* Every layer kind, once with each optimizer as the global one. */
static void round_trip_every_layer_and_optimizer(void **unused)
{
	const char *sets[] = { "schedule.batch_size=16", "seed=7" };

	(void)unused;
	for (int k = 0; akk_optim_names[k]; k++) {
		char text[2048];
		snprintf(text, sizeof(text), all_layers_yaml, akk_optim_names[k]);
		round_trip(text, k % 2 ? sets : NULL, k % 2 ? 2 : 0);
	}
}

/* Residual blocks (batchnorm state inside, a projection shortcut) and
 * global_avgpool: their flat params and state views round-trip. */
static void round_trip_residual(void **unused)
{
	static const char *yaml =
		"seed: 3\n"
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [1, 8, 8]\n"
		"  gates:\n"
		"    - layers: [{conv2d: {filters: 3, kernel: 3, padding: 1}}, relu,\n"
		"               residual: [{conv2d: {filters: 3, kernel: 3, padding: 1}}, batchnorm, relu]]\n"
		"    - layers: [{residual: {layers: [{conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}}, batchnorm],\n"
		"                           shortcut: [{conv2d: {filters: 4, kernel: 1, stride: 2}}]}},\n"
		"               global_avgpool, {dense: 4}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\n";

	(void)unused;
	round_trip(yaml, NULL, 0);
}

/* Seven gates, each with its own optimizer kind. */
static void round_trip_per_gate_optimizers(void **unused)
{
	char text[4096];
	int n = snprintf(text, sizeof(text),
			 "data: {train: {images: x, labels: y}}\n"
			 "network:\n"
			 "  input: [64]\n"
			 "  gates:\n");

	(void)unused;
	for (int k = 0; akk_optim_names[k]; k++)
		n += snprintf(text + n, sizeof(text) - n,
			      "    - {layers: [{dense: %d}, %s], optimizer: {type: %s}}\n",
			      akk_optim_names[k + 1] ? 6 : CLASSES,
			      k == 3 ? "batchnorm" : "tanh", akk_optim_names[k]);
	snprintf(text + n, sizeof(text) - n,
		 "optimizer: {type: sgd, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 2, batch_size: 16}\n");
	round_trip(text, NULL, 0);
}

/* The tensor names and their order, as akkctl-checkpoint(5) documents. */
static void tensor_names(void **unused)
{
	static const char *want[][8] = {
		{ "g1.l1.conv2d.weight", "g1.l1.conv2d.bias", "g1.l2.batchnorm.gamma",
		  "g1.l2.batchnorm.beta", "g1.l2.batchnorm.running_mean",
		  "g1.l2.batchnorm.running_var", "g1.optimizer.adam", NULL },
		{ "g2.l1.conv2d.weight", "g2.optimizer.adam", NULL },
		{ "g3.l1.dense.weight", "g3.l1.dense.bias", "g3.l2.batchnorm.gamma",
		  "g3.l2.batchnorm.beta", "g3.l2.batchnorm.running_mean",
		  "g3.l2.batchnorm.running_var", "g3.optimizer.adam", NULL },
		{ "g4.l1.dense.weight", "g4.l4.dense.weight", "g4.l4.dense.bias",
		  "g4.optimizer.adam", NULL },
	};
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	char text[2048], *dir = tmpdir(), path[600];

	(void)unused;
	snprintf(text, sizeof(text), all_layers_yaml, "adam");
	parse(&s, &m, text, NULL, 0);
	g = fresh_gates(&m, 1);
	snprintf(path, sizeof(path), "%s/ck.bin", dir);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0,
				    (struct akk_position){ 0 },
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(akk_checkpoint_read(&c, path, &e), 0);
	assert_int_equal(c.ngates, 4);
	for (int i = 0; i < 4; i++) {
		int t = 0;
		for (; want[i][t]; t++) {
			assert_true(t < c.gates[i].ntensors);
			assert_string_equal(c.gates[i].tensors[t].name, want[i][t]);
		}
		assert_int_equal(c.gates[i].ntensors, t);
	}
	/* conv2d weight is (filters, channels, k, k); the optimizer block
	 * holds m then v over the gate's whole parameter block */
	assert_int_equal(c.gates[0].tensors[0].rank, 4);
	assert_int_equal(c.gates[0].tensors[0].dims[0], 3);
	assert_int_equal(c.gates[0].tensors[0].dims[1], 1);
	assert_int_equal(c.gates[0].tensors[0].dims[2], 3);
	assert_int_equal(c.gates[0].tensors[0].dims[3], 3);
	assert_int_equal(c.gates[0].tensors[6].rank, 1);
	assert_int_equal(c.gates[0].tensors[6].count, 2 * m.gates[0].nparams);
	akk_checkpoint_release(&c);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* ---- a file built by hand from the documented layout ----------------- */

struct hb {
	unsigned char p[4096];
	size_t n;
};

static void hb_u32(struct hb *b, uint32_t v)
{
	put_le32(b->p + b->n, v);
	b->n += 4;
}

static void hb_u64(struct hb *b, uint64_t v)
{
	hb_u32(b, (uint32_t)v);
	hb_u32(b, (uint32_t)(v >> 32));
}

static void hb_f64(struct hb *b, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	hb_u64(b, v);
}

static void hb_str(struct hb *b, const char *s)
{
	hb_u32(b, (uint32_t)strlen(s));
	memcpy(b->p + b->n, s, strlen(s));
	b->n += strlen(s);
}

static const char *tiny_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network: {input: [3], gates: [{layers: [{dense: 2}]}]}\n"
	"optimizer: {type: momentum, lr: 0.1}\n";

/* One gate, dense 3 -> 2 with momentum, written field by field as the man
 * page says; rank, dims and count are the weight tensor's shape fields, and
 * with_data 0 leaves out its values. */
static void hand_build(struct hb *b, uint32_t rank, const uint32_t *dims,
		       uint64_t count, int with_data)
{
	b->n = 0;
	memcpy(b->p, "AKKCKPT1", 8);
	b->n = 8;
	hb_u32(b, 1);		/* version */
	hb_u32(b, 0);		/* reserved */
	hb_u64(b, 0);		/* length, patched */
	hb_str(b, "tiny.yaml");
	hb_str(b, "/base/dir");
	hb_str(b, tiny_yaml);
	hb_u32(b, 1);
	hb_str(b, "seed=5");
	hb_u32(b, 0);		/* mode: flip-flop */
	hb_u32(b, 2);		/* position: epoch, index, id */
	hb_u64(b, 1);
	hb_u64(b, 9);
	hb_f64(b, 0.5);		/* loss_sum, correct, samples, seconds */
	hb_u64(b, 3);
	hb_u64(b, 4);
	hb_f64(b, 2.0);
	hb_u32(b, 2);		/* metrics: epoch, train loss/acc, val loss/acc, best */
	for (int i = 0; i < 5; i++)
		hb_f64(b, 0.25 * i);
	hb_u32(b, 1);		/* ngates */
	hb_u64(b, 9);		/* step */
	for (int i = 0; i < 4; i++)
		hb_u64(b, 0x0101010101010101ull * (i + 1));
	hb_u32(b, 3);		/* ntensors */
	hb_str(b, "g1.l1.dense.weight");
	hb_u32(b, rank);
	for (uint32_t i = 0; i < rank; i++)
		hb_u32(b, dims[i]);
	hb_u64(b, count);
	for (uint64_t i = 0; with_data && i < count; i++) {
		float f = (float)i;
		uint32_t v;
		memcpy(&v, &f, 4);
		hb_u32(b, v);
	}
	hb_str(b, "g1.l1.dense.bias");
	hb_u32(b, 1);
	hb_u32(b, 2);
	hb_u64(b, 2);
	hb_u32(b, 0x3f800000);	/* 1.0f */
	hb_u32(b, 0xbf800000);	/* -1.0f */
	hb_str(b, "g1.optimizer.momentum");
	hb_u32(b, 1);
	hb_u32(b, 8);
	hb_u64(b, 8);
	for (int i = 0; i < 8; i++)
		hb_u32(b, 0x40000000);	/* 2.0f */
	for (int i = 0; i < 8; i++)
		b->p[16 + i] = (unsigned char)((uint64_t)(b->n + 4) >> (8 * i));
	b->n += 4;
	fix_crc(b->p, b->n);
}

static void hand_built_file_reads(void **unused)
{
	static const uint32_t dims[2] = { 2, 3 };
	struct hb b;
	struct akk_checkpoint c;
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];

	(void)unused;
	hand_build(&b, 2, dims, 6, 1);
	snprintf(path, sizeof(path), "%s/hand.bin", dir);
	assert_int_equal(tu_write_file(path, b.p, b.n), 0);
	if (akk_checkpoint_read(&c, path, &e))
		fail_msg("read: %s", e.msg);
	assert_string_equal(c.config_name, "tiny.yaml");
	assert_string_equal(c.base_dir, "/base/dir");
	assert_string_equal(c.config, tiny_yaml);
	assert_int_equal(c.nsets, 1);
	assert_string_equal(c.sets[0], "seed=5");
	assert_int_equal(c.pos.epoch, 2);
	assert_int_equal(c.pos.index, 1);
	assert_int_equal(c.pos.id, 9);
	assert_true(c.pos.seconds == 2.0);
	assert_int_equal(c.metrics.epoch, 2);
	assert_true(c.metrics.best_val_acc == 1.0);
	assert_int_equal(c.gates[0].step, 9);
	assert_int_equal(c.gates[0].rng.s[3], 0x0404040404040404ull);
	assert_true(c.gates[0].tensors[0].data[5] == 5.0f);
	assert_true(c.gates[0].tensors[1].data[1] == -1.0f);

	/* and it restores into the network its own config builds */
	assert_int_equal(akk_checkpoint_spec(&c, &s, NULL, 0, &e), 0);
	assert_int_equal(s.seed, 5);
	assert_int_equal(akk_model_plan(&m, &s, &e), 0);
	g = fresh_gates(&m, 1);
	if (restore(&c, g, 1, &e))
		fail_msg("restore: %s", e.msg);
	assert_int_equal(g[0].step, 9);
	assert_true(g[0].params[4] == 4.0f && g[0].params[6] == 1.0f);
	assert_true(g[0].opt[7] == 2.0f);
	free_gates(g, 1);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&c);
}

/* Write b to path and expect the reader to call it corrupt. */
static void expect_corrupt(const char *path, const struct hb *b, const char *what)
{
	struct akk_checkpoint c;
	struct akk_err e = { 0 };

	assert_int_equal(tu_write_file(path, b->p, b->n), 0);
	if (!akk_checkpoint_read(&c, path, &e)) {
		akk_checkpoint_release(&c);
		fail_msg("%s: accepted", what);
	}
	if (!strstr(e.msg, "corrupt checkpoint"))
		fail_msg("%s: %s", what, e.msg);
	assert_null(c.gates);
}

/* Offsets in a hand-built file: header 24, "tiny.yaml" and "/base/dir"
 * strings, then the config text, one set, then mode. */
#define HB_CONFIG_LEN (24 + 4 + 9 + 4 + 9)
#define HB_NSETS (HB_CONFIG_LEN + 4 + strlen(tiny_yaml))
#define HB_MODE (HB_NSETS + 4 + 4 + 6)
#define HB_NGATES (HB_MODE + 4 + 4 + 8 * 6 + 4 + 8 * 5)

/* Fields the CRC cannot vouch for, crafted with a valid CRC. */
static void crafted_fields_rejected(void **unused)
{
	static const uint32_t ok[2] = { 2, 3 }, five[5] = { 1, 1, 2, 3, 1 };
	struct hb b;
	char *dir = tmpdir(), path[600];

	(void)unused;
	snprintf(path, sizeof(path), "%s/crafted.bin", dir);
	hand_build(&b, 2, ok, 6, 1);
	assert_int_equal(le32(b.p + HB_NSETS), 1);
	assert_int_equal(le32(b.p + HB_NGATES), 1);

	hand_build(&b, 2, ok, 7, 1);
	expect_corrupt(path, &b, "count != product of dims");
	hand_build(&b, 5, five, 6, 1);
	expect_corrupt(path, &b, "rank 5");
	hand_build(&b, 0, ok, 1, 1);
	expect_corrupt(path, &b, "rank 0");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_CONFIG_LEN, 0xffffffffu);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "config length past the end");

	hand_build(&b, 2, ok, 6, 1);
	b.p[24 + 4 + 2] = '\0';
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "a NUL inside a string");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_NSETS, 0x7fffffffu);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "2^31-1 overrides");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_MODE, 3);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "mode 3");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_MODE + 4, 0x80000000u);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "a negative epoch");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_NGATES, 0);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "no gates");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_NGATES, 2);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "a gate more than stored");

	hand_build(&b, 2, ok, 6, 1);
	put_le32(b.p + HB_NGATES + 4 + 8 + 32, 2);
	fix_crc(b.p, b.n);
	expect_corrupt(path, &b, "a tensor less than stored");
}

/* A shape whose element count overflows 64 bits (2^17 * 2^17 * 2^30 =
 * 2^64, which wraps to 0) must not pass as an empty tensor. */
static void tensor_shape_overflow_rejected(void **unused)
{
	static const uint32_t wrap[4] = { 1u << 17, 1u << 17, 1u << 30, 1 };
	struct hb b;
	char *dir = tmpdir(), path[600];

	(void)unused;
	snprintf(path, sizeof(path), "%s/crafted.bin", dir);
	hand_build(&b, 4, wrap, 0, 0);
	expect_corrupt(path, &b, "dims 2^17 x 2^17 x 2^30 x 1 with 0 values");
}

/* ---- damaged and foreign files ---------------------------------------- */

static const char *small_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [4]\n"
	"  gates:\n"
	"    - layers: [{dense: 3}, batchnorm]\n"
	"    - layers: [{dense: 2}]\n"
	"optimizer: {type: adam, lr: 0.01}\n";

/* A small valid checkpoint at dir/small.bin; returns its bytes. */
static unsigned char *small_ckpt(const char *dir, char *path, size_t pathsz,
				 size_t *len)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_err e = { 0 };
	unsigned char *data;

	parse(&s, &m, small_yaml, NULL, 0);
	g = fresh_gates(&m, 3);
	snprintf(path, pathsz, "%s/small.bin", dir);
	if (write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ .epoch = 1, .index = 2, .id = 3 },
		       (struct akk_ckpt_metrics){ .epoch = 1 }, &e))
		fail_msg("write: %s", e.msg);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
	data = (unsigned char *)tu_slurp(path, len);
	assert_non_null(data);
	return data;
}

/* Every proper prefix of a checkpoint is rejected. */
static void every_truncation_rejected(void **unused)
{
	char *dir = tmpdir(), path[600], cut[640];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
	struct akk_err e;

	(void)unused;
	snprintf(cut, sizeof(cut), "%s/cut.bin", dir);
	for (size_t n = 0; n < len; n++) {
		put_file(cut, data, n);
		assert_read_fails(cut, &e);
		assert_string_equal(e.file, cut);
		if (n < 8) {
			if (!strstr(e.msg, "magic") && !strstr(e.msg, "truncated"))
				fail_msg("%zu bytes: %s", n, e.msg);
		} else if (!strstr(e.msg, "truncated")) {
			fail_msg("%zu bytes: %s", n, e.msg);
		}
	}
	/* one byte too many is corrupt, not truncated */
	data = realloc(data, len + 1);
	assert_non_null(data);
	data[len] = 0;
	assert_int_equal(tu_write_file(cut, data, len + 1), 0);
	assert_read_fails(cut, &e);
	assert_non_null(strstr(e.msg, "corrupt checkpoint"));
	free(data);
}

static void assert_flip_rejected(const char *path, unsigned char *data,
				 size_t len, size_t pos, int bit)
{
	struct akk_err e;

	data[pos] ^= (unsigned char)(1u << bit);
	put_file(path, data, len);
	data[pos] ^= (unsigned char)(1u << bit);
	assert_read_fails(path, &e);
	if (!strstr(e.msg, "corrupt") && !strstr(e.msg, "truncated") &&
	    !strstr(e.msg, "magic") && !strstr(e.msg, "version"))
		fail_msg("bit %d of byte %zu: %s", bit, pos, e.msg);
}

/* Every single-bit flip of the small checkpoint is rejected. */
static void every_bit_flip_rejected(void **unused)
{
	char *dir = tmpdir(), path[600], bad[640];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);

	(void)unused;
	snprintf(bad, sizeof(bad), "%s/flip.bin", dir);
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++)
			assert_flip_rejected(bad, data, len, i, bit);
	free(data);
}

/* 300 seeded flips of a larger checkpoint (every layer kind), plus the
 * first and last byte. */
static void random_bit_flips_rejected(void **unused)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_err e = { 0 };
	char text[2048], *dir = tmpdir(), path[600], bad[640];
	unsigned char *data;
	size_t len;
	uint32_t r = 12345;

	(void)unused;
	snprintf(text, sizeof(text), all_layers_yaml, "radam");
	parse(&s, &m, text, NULL, 0);
	g = fresh_gates(&m, 9);
	snprintf(path, sizeof(path), "%s/big.bin", dir);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	data = (unsigned char *)tu_slurp(path, &len);
	assert_non_null(data);
	snprintf(bad, sizeof(bad), "%s/flip.bin", dir);
	assert_flip_rejected(bad, data, len, 0, 0);
	assert_flip_rejected(bad, data, len, len - 1, 7);
	for (int i = 0; i < 300; i++) {
		r = r * 1664525u + 1013904223u;
		size_t pos = (r >> 8) % len;
		r = r * 1664525u + 1013904223u;
		assert_flip_rejected(bad, data, len, pos, (int)(r >> 29));
	}
	free(data);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
}

static void foreign_files_rejected(void **unused)
{
	static const unsigned char png[] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H',
		'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4,
		0x89,
	};
	/* an IDX label file: 0x00000801, 4 items */
	static const unsigned char idx[] = { 0, 0, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4 };
	char *dir = tmpdir(), path[600];
	unsigned char rnd[1000];
	uint32_t s = 99;
	struct akk_err e;

	(void)unused;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		s = s * 1664525u + 1013904223u;
		rnd[i] = (unsigned char)(s >> 24);
	}
	snprintf(path, sizeof(path), "%s/foreign", dir);
	const struct { const void *p; size_t n; } files[] = {
		{ png, sizeof(png) }, { idx, sizeof(idx) }, { "", 0 },
		{ rnd, sizeof(rnd) }, { "name: x\nseed: 1\n", 16 },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		assert_int_equal(tu_write_file(path, files[i].p, files[i].n), 0);
		assert_read_fails(path, &e);
		if (!strstr(e.msg, "not an akkctl checkpoint"))
			fail_msg("file %zu: %s", i, e.msg);
	}
	/* missing file, a directory */
	snprintf(path, sizeof(path), "%s/missing.bin", dir);
	assert_read_fails(path, &e);
	assert_non_null(strstr(e.msg, "cannot open"));
	assert_read_fails(dir, &e);
}

static void future_version_rejected(void **unused)
{
	char *dir = tmpdir(), path[600];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
	struct akk_err e;

	(void)unused;
	assert_int_equal(le32(data + 8), AKK_CKPT_VERSION);
	put_le32(data + 8, AKK_CKPT_VERSION + 1);
	fix_crc(data, len);
	assert_int_equal(tu_write_file(path, data, len), 0);
	assert_read_fails(path, &e);
	if (!strstr(e.msg, "version 3 is not supported"))
		fail_msg("%s", e.msg);
	put_le32(data + 8, 0xffffffffu);
	fix_crc(data, len);
	assert_int_equal(tu_write_file(path, data, len), 0);
	assert_read_fails(path, &e);
	if (!strstr(e.msg, "version 4294967295"))
		fail_msg("%s", e.msg);
	free(data);
}

/* "AKKCKPT2" with version field 1: whatever the reader says, it must not
 * say that version 1, the one it reads, is unsupported. */
static void eighth_magic_byte_message(void **unused)
{
	char *dir = tmpdir(), path[600];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
	struct akk_err e;

	(void)unused;
	data[7] = '2';
	fix_crc(data, len);
	assert_int_equal(tu_write_file(path, data, len), 0);
	free(data);
	assert_read_fails(path, &e);
	if (strstr(e.msg, "version 1 is not supported"))
		fail_msg("self-contradicting message: %s", e.msg);
}

/* A file whose stored config no longer parses: the reader cannot check
 * the tensors against the network, so it rejects the file, naming it and
 * the config's own location. */
static void stored_config_that_no_longer_parses(void **unused)
{
	char *dir = tmpdir(), path[600];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
	unsigned char *key;
	struct akk_checkpoint c;
	struct akk_spec s;
	struct akk_err e = { 0 };

	(void)unused;
	key = memmem(data, len, "optimizer:", 10);
	assert_non_null(key);
	memcpy(key, "optimiser:", 10);	/* same length: no field moves */
	fix_crc(data, len);
	assert_int_equal(tu_write_file(path, data, len), 0);
	assert_read_fails(path, &e);
	assert_string_equal(e.file, path);
	if (!strstr(e.msg, "the stored config no longer parses: test.yaml:7:1: unknown key 'optimiser'"))
		fail_msg("%s", e.msg);

	/* an extra override that breaks it is reported too */
	{
		const char *extra[] = { "schedule.batch_size=0" };
		memcpy(key, "optimizer:", 10);
		fix_crc(data, len);
		assert_int_equal(tu_write_file(path, data, len), 0);
		assert_int_equal(akk_checkpoint_read(&c, path, &e), 0);
		assert_int_equal(akk_checkpoint_spec(&c, &s, extra, 1, &e), -1);
		assert_non_null(strstr(e.msg, "batch_size"));
	}
	akk_checkpoint_release(&c);
	free(data);
}

/* Restore into a network of another shape: rejected, "does not match". */
static void restore_mismatch(const char *written, const char *into,
			     const char *want)
{
	struct akk_spec s, s2;
	struct akk_model m, m2;
	struct akk_gate *g, *g2;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];
	int restored;

	parse(&s, &m, written, NULL, 0);
	parse(&s2, &m2, into, NULL, 0);
	g = fresh_gates(&m, 1);
	g2 = fresh_gates(&m2, 2);
	snprintf(path, sizeof(path), "%s/ck.bin", dir);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(akk_checkpoint_read(&c, path, &e), 0);
	restored = !restore(&c, g2, m2.ngates, &e);
	akk_checkpoint_release(&c);
	free_gates(g, m.ngates);
	free_gates(g2, m2.ngates);
	akk_model_release(&m);
	akk_model_release(&m2);
	akk_spec_release(&s);
	akk_spec_release(&s2);
	if (restored)
		fail_msg("restored a checkpoint of another network");
	if (!strstr(e.msg, "does not match") || (want && !strstr(e.msg, want)))
		fail_msg("%s", e.msg);
	assert_string_equal(e.file, "ck.bin");
}

#define NET(input, gates, opt) \
	"data: {train: {images: x, labels: y}}\n" \
	"network: {input: " input ", gates: " gates "}\n" \
	"optimizer: {type: " opt ", lr: 0.01}\n"

static void restore_into_other_network_rejected(void **unused)
{
	(void)unused;
	/* another layer width */
	restore_mismatch(NET("[4]", "[{layers: [{dense: 8}]}, {layers: [{dense: 2}]}]", "adam"),
			 NET("[4]", "[{layers: [{dense: 6}]}, {layers: [{dense: 2}]}]", "adam"),
			 "g1.l1.dense.weight");
	/* another gate count */
	restore_mismatch(NET("[4]", "[{layers: [{dense: 8}]}, {layers: [{dense: 2}]}]", "adam"),
			 NET("[4]", "[{layers: [{dense: 8}, {dense: 2}]}]", "adam"),
			 "2 gates");
	/* another optimizer, with moments and without */
	restore_mismatch(NET("[4]", "[{layers: [{dense: 2}]}]", "adam"),
			 NET("[4]", "[{layers: [{dense: 2}]}]", "momentum"),
			 "g1.optimizer.momentum");
	restore_mismatch(NET("[4]", "[{layers: [{dense: 2}]}]", "adam"),
			 NET("[4]", "[{layers: [{dense: 2}]}]", "sgd"), NULL);
	restore_mismatch(NET("[4]", "[{layers: [{dense: 2}]}]", "sgd"),
			 NET("[4]", "[{layers: [{dense: 2}]}]", "rmsprop"), NULL);
	/* another layer kind, a layer more, a bias less */
	restore_mismatch(NET("[4]", "[{layers: [{dense: 4}, batchnorm]}]", "sgd"),
			 NET("[4]", "[{layers: [{dense: 4}, relu]}]", "sgd"), NULL);
	restore_mismatch(NET("[4]", "[{layers: [{dense: 4}]}]", "sgd"),
			 NET("[4]", "[{layers: [{dense: {units: 4, bias: false}}]}]", "sgd"), NULL);
}

/* The same number of values in another shape: dense 6 -> 4 and 4 -> 6 (no
 * bias) both have 24 weights. The header promises name AND shape. */
static void restore_checks_shape_not_just_count(void **unused)
{
	(void)unused;
	restore_mismatch(NET("[6]", "[{layers: [{dense: {units: 4, bias: false}}]}]", "sgd"),
			 NET("[4]", "[{layers: [{dense: {units: 6, bias: false}}]}]", "sgd"),
			 "g1.l1.dense.weight");
}

/* ---- resume ----------------------------------------------------------- */

static const char *resume_yaml =
	"seed: 5\n"
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - layers: [{dense: 24}, relu, {dropout: 0.2}]\n"
	"    - layers: [{dense: 16}, batchnorm, tanh]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: flip-flop, epochs: 3, batch_size: 16, concurrency: {validation: 2}}\n";

struct reports {
	int n;
	struct akk_epoch_report rep[8];
};

static int collect(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		   struct akk_err *e)
{
	struct reports *c = ctx;

	(void)r;
	(void)e;
	if (c->n < 8)
		c->rep[c->n++] = *rep;
	return 0;
}

struct interrupt_at {
	struct akk_run *run;
	int epoch;
	long batch;
};

static void interrupt_at(void *ctx, const struct akk_progress *p)
{
	struct interrupt_at *ia = ctx;

	if (p->epoch == ia->epoch && p->batch == ia->batch)
		akk_run_interrupt(ia->run);
}

static void run_init(struct akk_run *r, const struct akk_model *m,
		     const struct akk_dataset *train, const struct akk_dataset *val,
		     int epochs, struct akk_position start, struct akk_observer obs)
{
	struct akk_err e = { 0 };
	struct akk_run_config cfg = {
		.mode = AKK_MODE_FLIPFLOP, .epochs = epochs, .start = start,
		.blas_threads = 1, .obs = obs,
	};

	if (akk_run_init(r, m, train, val, &cfg, &e))
		fail_msg("run init: %s", e.msg);
}

/* Run B stops at epoch `stop_epoch` after `stop_batch` batches (0: B is
 * simply a run of stop_epoch - 1 epochs); its checkpoint starts run C; C
 * must end where A, which never stopped, ended. */
static void resume_equals_uninterrupted(int stop_epoch, long stop_batch)
{
	struct akk_spec s, s2;
	struct akk_model m, m2;
	struct akk_dataset train, val;
	struct akk_run a, b, c;
	struct reports ra = { 0 }, rc = { 0 };
	struct interrupt_at ia = { &b, stop_epoch, stop_batch };
	struct akk_checkpoint ck;
	struct akk_gate *gates[16];
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];

	parse(&s, &m, resume_yaml, NULL, 0);
	tu_dataset(&train, 1000, SIDE, CLASSES, 7);	/* 63 batches, the last of 8 */
	tu_dataset(&val, 200, SIDE, CLASSES, 9);

	run_init(&a, &m, &train, &val, 3, (struct akk_position){ 0 },
		 (struct akk_observer){ &ra, NULL, collect });
	if (akk_run_train(&a, &e))
		fail_msg("run A: %s", e.msg);
	assert_int_equal(ra.n, 3);

	if (stop_batch) {
		run_init(&b, &m, &train, &val, 3, (struct akk_position){ 0 },
			 (struct akk_observer){ &ia, interrupt_at, NULL });
	} else {
		run_init(&b, &m, &train, &val, stop_epoch - 1,
			 (struct akk_position){ 0 }, (struct akk_observer){ 0 });
	}
	if (akk_run_train(&b, &e))
		fail_msg("run B: %s", e.msg);
	assert_int_equal(atomic_load(&b.interrupted), stop_batch != 0);
	assert_int_equal(b.pos.epoch, stop_epoch - 1);
	assert_int_equal(b.pos.index, stop_batch);
	assert_int_equal(b.pos.id, (stop_epoch - 1) * 63 + stop_batch);
	for (int g = 0; g < m.ngates; g++)
		gates[g] = &b.gates[g].gate;
	snprintf(path, sizeof(path), "%s/last.bin", dir);
	{
		struct akk_ckpt_source src = {
			.spec = &s, .base_dir = "/base/dir", .mode = AKK_MODE_FLIPFLOP,
			.gates = (const struct akk_gate *const *)gates,
			.ngates = m.ngates, .pos = b.pos,
		};
		if (akk_checkpoint_write(path, &src, &e))
			fail_msg("write: %s", e.msg);
	}
	akk_run_release(&b);

	/* C rebuilds the network from the checkpoint alone */
	if (akk_checkpoint_read(&ck, path, &e))
		fail_msg("read: %s", e.msg);
	if (akk_checkpoint_spec(&ck, &s2, NULL, 0, &e) || akk_model_plan(&m2, &s2, &e))
		fail_msg("stored spec: %s", e.msg);
	run_init(&c, &m2, &train, &val, 3, ck.pos,
		 (struct akk_observer){ &rc, NULL, collect });
	if (akk_run_restore(&c, &ck, path, &e))
		fail_msg("restore: %s", e.msg);
	if (akk_run_train(&c, &e))
		fail_msg("run C: %s", e.msg);

	for (int g = 0; g < m.ngates; g++) {
		assert_int_equal(c.gates[g].gate.step, 3 * 63);
		assert_gate_equal(&c.gates[g].gate, &a.gates[g].gate);
	}
	/* the epochs C reported are A's, to the bit (the interrupted epoch's
	 * running sums travel in the checkpoint) */
	assert_int_equal(rc.n, 3 - (stop_epoch - 1));
	for (int i = 0; i < rc.n; i++) {
		const struct akk_epoch_report *x = &rc.rep[i], *y = &ra.rep[stop_epoch - 1 + i];
		assert_int_equal(x->epoch, y->epoch);
		assert_int_equal(x->samples, y->samples);
		assert_int_equal(x->val_samples, y->val_samples);
		assert_memory_equal(&x->train_loss, &y->train_loss, sizeof(double));
		assert_memory_equal(&x->train_acc, &y->train_acc, sizeof(double));
		assert_memory_equal(&x->val_loss, &y->val_loss, sizeof(double));
		assert_memory_equal(&x->val_acc, &y->val_acc, sizeof(double));
	}
	akk_run_release(&a);
	akk_run_release(&c);
	akk_checkpoint_release(&ck);
	akk_model_release(&m2);
	akk_spec_release(&s2);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
}

static void resume_mid_epoch_bit_for_bit(void **unused)
{
	(void)unused;
	resume_equals_uninterrupted(2, 10);
}

static void resume_at_epoch_boundary_bit_for_bit(void **unused)
{
	(void)unused;
	resume_equals_uninterrupted(2, 0);
}

/* Interrupted after the epoch's last batch, during flip-flop's
 * validation (the interrupt comes from the progress callback of batch
 * 63 of 63, so deterministically before any validation batch): the
 * checkpoint is at batch 63 of 63, and resuming it validates that epoch
 * and goes on, ending as the run that never stopped. This position used
 * to stream a batch past the end of the data ("training data out of
 * order"). */
static void resume_during_validation_bit_for_bit(void **unused)
{
	(void)unused;
	resume_equals_uninterrupted(2, 63);
}

/* ---- forged fields, CRC recomputed ------------------------------------ */

/* Forge one field of the small checkpoint; the read must fail and its
 * message name `want`. */
static void forged(const char *field, int is_float, double fv, uint64_t uv,
		   const char *want)
{
	char *dir = tmpdir(), path[600];
	size_t len;
	unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
	struct forge fg;
	const struct forge_field *f;
	struct akk_err e;

	free(data);
	assert_int_equal(forge_load(&fg, path), 0);
	if (!(f = forge_find(&fg, field)))
		fail_msg("no field %s", field);
	if (is_float)
		forge_set_f(&fg, f, fv);
	else
		forge_set_u(&fg, f, uv);
	assert_int_equal(forge_save(&fg, path), 0);
	forge_release(&fg);
	assert_read_fails(path, &e);
	assert_string_equal(e.file, path);
	if (!strstr(e.msg, want))
		fail_msg("%s: expected '%s' in: %s", field, want, e.msg);
	remove_dirs(NULL);
}

static void forged_fields_rejected(void **unused)
{
	(void)unused;
	/* a negative id wrote past the sentinel's slots on a wheels resume */
	forged("position.id", 0, 0, (uint64_t)-1, "position.id is -1");
	forged("position.id", 0, 0, 1ull << 62, "position.id is 4611686018427387904");
	/* a negative or huge step reached assert(t >= 1) in the optimizer */
	forged("gate1.step", 0, 0, (uint64_t)-1, "gate 1's step is -1, but position.id is 3");
	forged("gate2.step", 0, 0, 0x7fffffffffffffffull, "gate 2's step is 9223372036854775807");
	forged("gate1.step", 0, 0, 4, "gate 1's step is 4");
	/* inspect printed epoch + 1 of INT_MAX */
	forged("position.epoch", 0, 0, 0x7fffffff, "position.epoch is 2147483647");
	forged("position.index", 0, 0, (uint64_t)-1, "position.index is -1");
	forged("position.samples", 0, 0, 1ull << 40, "position.samples is 1099511627776 after 2 batches of at most 64");
	forged("position.correct", 0, 0, 5, "position.correct is 5 of position.samples 0");
	/* hostile running totals went into metrics.csv and best.bin */
	forged("position.loss_sum", 1, NAN, 0, "position.loss_sum is nan");
	forged("position.loss_sum", 1, -1, 0, "position.loss_sum is -1");
	forged("position.seconds", 1, INFINITY, 0, "position.seconds is inf (0 to 1e9)");
	forged("metrics.best_val_acc", 1, INFINITY, 0, "metrics.best_val_acc is inf");
	forged("metrics.val_acc", 1, NAN, 0, "metrics.val_acc is nan");
	forged("metrics.train_loss", 1, -INFINITY, 0, "metrics.train_loss is -inf");
	forged("metrics.epoch", 0, 0, 0x7fffffff, "metrics.epoch is 2147483647");
	/* eval printed "loss nan" and exited 0 */
	forged("g1.l1.dense.weight.value0", 1, NAN, 0,
	       "tensor 'g1.l1.dense.weight' holds a non-finite value (NaN) at index 0");
	forged("g2.optimizer.adam.valueN", 1, INFINITY, 0,
	       "tensor 'g2.optimizer.adam' holds a non-finite value (Inf)");
	/* square roots of these are taken */
	forged("g1.l2.batchnorm.running_var.valueN", 1, -1, 0,
	       "tensor 'g1.l2.batchnorm.running_var' holds -1 at index 2");
	forged("g1.optimizer.adam.valueN", 1, -0.5, 0, "tensor 'g1.optimizer.adam' holds -0.5");
	/* counts bounded by the bytes left, not only by 4096 */
	forged("config.nsets", 0, 0, 4000, "bad data in the config overrides");
	forged("gate1.ntensors", 0, 0, 4000, "bad data in a gate's tensor count");
	forged("ngates", 0, 0, 257, "bad data in the gate count");
}

/* Values that are legitimately valid read back. */
static void forged_valid_values_accepted(void **unused)
{
	static const struct { const char *field; double v; } ok[] = {
		{ "g1.optimizer.adam.value0", -0.5 },	/* a first moment */
		{ "position.loss_sum", 0 }, { "metrics.val_acc", 1 },
		{ "position.seconds", 0 },
	};
	(void)unused;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *dir = tmpdir(), path[600];
		size_t len;
		unsigned char *data = small_ckpt(dir, path, sizeof(path), &len);
		struct forge fg;
		struct akk_checkpoint c;
		struct akk_err e = { 0 };

		free(data);
		assert_int_equal(forge_load(&fg, path), 0);
		assert_non_null(forge_find(&fg, ok[i].field));
		forge_set_f(&fg, forge_find(&fg, ok[i].field), ok[i].v);
		assert_int_equal(forge_save(&fg, path), 0);
		forge_release(&fg);
		if (akk_checkpoint_read(&c, path, &e))
			fail_msg("%s = %g: %s", ok[i].field, ok[i].v, e.msg);
		akk_checkpoint_release(&c);
		remove_dirs(NULL);
	}
}

/* A 1 KB checkpoint whose stored config plans a 3.6 GB network (input
 * 10^8 wide) is rejected by the reader, which compares shapes with a plan
 * before anything is allocated; eval used to allocate the network first. */
static void stored_config_of_a_huge_network_rejected(void **unused)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n"
		"  input: [4]        \n"
		"  gates:\n"
		"    - layers: [{dense: 3}, batchnorm]\n"
		"    - layers: [{dense: 2}]\n"
		"optimizer: {type: adam, lr: 0.01}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];
	unsigned char *data, *at;
	size_t len;

	(void)unused;
	parse(&s, &m, yaml, NULL, 0);
	g = fresh_gates(&m, 3);
	snprintf(path, sizeof(path), "%s/huge.bin", dir);
	if (write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
		       (struct akk_ckpt_metrics){ 0 }, &e))
		fail_msg("write: %s", e.msg);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
	data = (unsigned char *)tu_slurp(path, &len);
	assert_non_null(data);
	at = memmem(data, len, "[4]        ", 11);
	assert_non_null(at);
	memcpy(at, "[100000000]", 11);
	fix_crc(data, len);
	put_file(path, data, len);
	free(data);
	assert_read_fails(path, &e);
	if (!strstr(e.msg, "checkpoint does not match the network: 'g1.l1.dense.weight' has shape 3x4, the network needs 3x100000000"))
		fail_msg("%s", e.msg);
}

/* Through a pipe (no size to check the header against): a 400 KB
 * checkpoint reads whole, the buffer growing with what arrives; the same
 * bytes with a header saying 1 TB are refused before reading on. */
static void read_from_a_pipe(void **unused)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network: {input: [256], gates: [{layers: [{dense: 128}]}, {layers: [{dense: 4}]}]}\n"
		"optimizer: {type: adam, lr: 0.01}\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600], fifo[640];
	unsigned char *data;
	size_t len;

	(void)unused;
	parse(&s, &m, yaml, NULL, 0);
	g = fresh_gates(&m, 3);
	snprintf(path, sizeof(path), "%s/big.bin", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	if (write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
		       (struct akk_ckpt_metrics){ 0 }, &e))
		fail_msg("write: %s", e.msg);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
	data = (unsigned char *)tu_slurp(path, &len);
	assert_non_null(data);
	assert_true(len > 400000);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (int forged = 0; forged < 2; forged++) {
		pid_t pid;
		int status;

		if (forged) {
			for (int i = 0; i < 8; i++)
				data[16 + i] = (unsigned char)((1ull << 40) >> (8 * i));
			fix_crc(data, len);
		}
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			FILE *f = fopen(fifo, "wb");
			if (f) {
				fwrite(data, 1, len, f);
				fclose(f);
			}
			_exit(0);
		}
		if (!forged) {
			if (akk_checkpoint_read(&c, fifo, &e))
				fail_msg("pipe: %s", e.msg);
			assert_int_equal(c.ngates, 2);
			akk_checkpoint_release(&c);
		} else {
			assert_read_fails(fifo, &e);
			if (!strstr(e.msg, "checkpoint stream too long: the header says 1099511627776 bytes"))
				fail_msg("%s", e.msg);
		}
		/* the writer may still be blocked on a pipe nobody reads */
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	free(data);
}

/* The writer keeps the one gate limit, AKK_MAX_GATES. */
static void writer_refuses_too_many_gates(void **unused)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	const struct akk_gate *gp[AKK_MAX_GATES + 1];
	struct akk_err e = { 0 };
	char *dir = tmpdir(), path[600];

	(void)unused;
	parse(&s, &m, small_yaml, NULL, 0);
	g = fresh_gates(&m, 3);
	for (int i = 0; i <= AKK_MAX_GATES; i++)
		gp[i] = &g[i % 2];
	snprintf(path, sizeof(path), "%s/many.bin", dir);
	struct akk_ckpt_source src = { .spec = &s, .base_dir = "/b", .gates = gp,
				       .ngates = AKK_MAX_GATES + 1 };
	assert_int_equal(akk_checkpoint_write(path, &src, &e), -1);
	if (!strstr(e.msg, "cannot checkpoint 257 gates"))
		fail_msg("%s", e.msg);
	assert_int_equal(access(path, F_OK), -1);
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* The position against the run that resumes it: converted to another
 * batch size when the samples done fill its batches, refused when they
 * do not, and never past an epoch's batches (a resume at another batch
 * size used to wait for batches that never came). */
static void position_against_the_run(void **unused)
{
	struct akk_checkpoint c;
	struct akk_err e = { 0 };

	(void)unused;
	memset(&c, 0, sizeof(c));
	c.batch_size = 64;
	c.pos = (struct akk_position){ .epoch = 1, .index = 5, .id = 20 };
	assert_int_equal(akk_checkpoint_position(&c, 64, 1, 1000, "ck.bin", &e), 0);
	assert_int_equal(c.pos.index, 5);
	assert_int_equal(akk_checkpoint_position(&c, 32, 1, 1000, "ck.bin", &e), 0);
	assert_int_equal(c.pos.index, 10);	/* 320 samples */
	c.pos.index = 5;
	assert_int_equal(akk_checkpoint_position(&c, 128, 1, 1000, "ck.bin", &e), -1);
	assert_string_equal(e.file, "ck.bin");
	if (!strstr(e.msg, "cannot resume mid-epoch with schedule.batch_size 128: the checkpoint stopped after 320 samples of epoch 2 at batch size 64"))
		fail_msg("%s", e.msg);
	c.pos.index = 6;
	assert_int_equal(akk_checkpoint_position(&c, 128, 1, 1000, "ck.bin", &e), 0);
	assert_int_equal(c.pos.index, 3);
	/* the end of an epoch's training stays the end */
	c.pos.index = 16;	/* 1000 / 64, rounded up */
	assert_int_equal(akk_checkpoint_position(&c, 100, 1, 1000, "ck.bin", &e), 0);
	assert_int_equal(c.pos.index, 10);
	/* past the epoch of this data */
	c.pos.index = 17;
	assert_int_equal(akk_checkpoint_position(&c, 64, 1, 1000, "ck.bin", &e), -1);
	if (!strstr(e.msg, "position.index 17 is past the 16 batches of an epoch of 1000 samples"))
		fail_msg("%s", e.msg);
	c.pos.index = 0;
	assert_int_equal(akk_checkpoint_position(&c, 7, 1, 10, "ck.bin", &e), 0);
}

/* ---- atomic writes ---------------------------------------------------- */

static int count_tmp_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += strstr(de->d_name, ".tmp.") != NULL;
	closedir(d);
	return n;
}

static void write_is_atomic_and_clean(void **unused)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	struct stat st1, st2;
	char *dir = tmpdir(), path[600], old[640];
	const struct akk_position p1 = { .index = 1, .id = 1 }, p2 = { .index = 2, .id = 2 };

	(void)unused;
	parse(&s, &m, small_yaml, NULL, 0);
	g = fresh_gates(&m, 1);

	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/no/such/dir/ck.bin", dir);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, p1,
				    (struct akk_ckpt_metrics){ 0 }, &e), -1);
	assert_non_null(strstr(e.msg, "cannot create"));
	assert_non_null(strstr(e.msg, "No such file or directory"));

	/* overwriting replaces the file whole: a hard link to the old one
	 * still reads the old contents, and no temporary is left */
	snprintf(path, sizeof(path), "%s/ck.bin", dir);
	snprintf(old, sizeof(old), "%s/old.bin", dir);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, p1,
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(link(path, old), 0);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, p2,
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(stat(path, &st2), 0);
	assert_true(st1.st_ino != st2.st_ino);
	assert_int_equal(count_tmp_files(dir), 0);
	assert_int_equal(akk_checkpoint_read(&c, path, &e), 0);
	assert_int_equal(c.pos.index, 2);
	akk_checkpoint_release(&c);
	assert_int_equal(akk_checkpoint_read(&c, old, &e), 0);
	assert_int_equal(c.pos.index, 1);
	akk_checkpoint_release(&c);

	/* a rename that fails (the target is a non-empty directory) leaves
	 * neither a temporary nor a changed target */
	snprintf(path, sizeof(path), "%s/taken", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(old, sizeof(old), "%s/taken/x", dir);
	assert_int_equal(tu_write_file(old, "x", 1), 0);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, p1,
				    (struct akk_ckpt_metrics){ 0 }, &e), -1);
	assert_non_null(strstr(e.msg, "cannot rename"));
	assert_int_equal(count_tmp_files(dir), 0);

	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* Directories under base whose path reaches length at least `len`, one
 * 200-character component at a time; returns the deepest. */
static void deep_dir(char *out, size_t outsz, const char *base, size_t len)
{
	char comp[201];

	memset(comp, 'd', 200);
	comp[200] = '\0';
	snprintf(out, outsz, "%s", base);
	while (strlen(out) < len) {
		size_t n = strlen(out);
		snprintf(out + n, outsz - n, "/%s", comp);
		if (mkdir(out, 0755) && errno != EEXIST)
			fail_msg("mkdir '%s': %s", out, strerror(errno));
	}
}

/* Paths longer than the writer's internal buffers (PATH_MAX is 4096) must
 * still be written through a temporary and a rename. At 1099 characters
 * the temporary's name, cut to the buffer, is the target itself, so the old
 * file would be truncated in place. */
static void write_1099_char_path_renames(void **unused)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_err e = { 0 };
	struct stat st1, st2;
	char *dir = tmpdir(), deep[2048], path[2200];
	size_t n;
	int in_place;

	(void)unused;
	parse(&s, &m, small_yaml, NULL, 0);
	g = fresh_gates(&m, 1);
	deep_dir(deep, sizeof(deep), dir, 900);
	n = strlen(deep);
	assert_true(n < 1090);
	snprintf(path, sizeof(path), "%s/%0*d", deep, (int)(1099 - n - 1), 0);
	assert_int_equal(strlen(path), 1099);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(stat(path, &st1), 0);
	assert_int_equal(write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
				    (struct akk_ckpt_metrics){ 0 }, &e), 0);
	assert_int_equal(stat(path, &st2), 0);
	in_place = st1.st_ino == st2.st_ino;
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
	if (in_place)
		fail_msg("a 1099-character path was overwritten in place, not renamed");
}

/* A directory of exactly 1099 characters holding ck.bin: the temporary's
 * name, cut to the buffer, is that directory, so it cannot be created. */
static void write_in_1099_char_dir(void **unused)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate *g;
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	char *dir = tmpdir(), deep[2048], path[2200];
	size_t n;
	int rc;

	(void)unused;
	parse(&s, &m, small_yaml, NULL, 0);
	g = fresh_gates(&m, 1);
	deep_dir(deep, sizeof(deep), dir, 900);
	n = strlen(deep);
	assert_true(n < 1090);
	snprintf(deep + n, sizeof(deep) - n, "/%0*d", (int)(1099 - n - 1), 0);
	assert_int_equal(strlen(deep), 1099);
	assert_int_equal(mkdir(deep, 0755), 0);
	snprintf(path, sizeof(path), "%s/ck.bin", deep);
	rc = write_ckpt(path, &s, g, m.ngates, 0, (struct akk_position){ 0 },
			(struct akk_ckpt_metrics){ 0 }, &e);
	if (!rc) {
		rc = akk_checkpoint_read(&c, path, &e);
		akk_checkpoint_release(&c);
	}
	free_gates(g, m.ngates);
	akk_model_release(&m);
	akk_spec_release(&s);
	if (rc)
		fail_msg("a %zu-character path: %s", strlen(path), e.msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(round_trip_every_layer_and_optimizer, remove_dirs),
		cmocka_unit_test_teardown(round_trip_per_gate_optimizers, remove_dirs),
		cmocka_unit_test_teardown(round_trip_residual, remove_dirs),
		cmocka_unit_test_teardown(tensor_names, remove_dirs),
		cmocka_unit_test_teardown(hand_built_file_reads, remove_dirs),
		cmocka_unit_test_teardown(crafted_fields_rejected, remove_dirs),
		cmocka_unit_test_teardown(tensor_shape_overflow_rejected, remove_dirs),
		cmocka_unit_test_teardown(every_truncation_rejected, remove_dirs),
		cmocka_unit_test_teardown(every_bit_flip_rejected, remove_dirs),
		cmocka_unit_test_teardown(random_bit_flips_rejected, remove_dirs),
		cmocka_unit_test_teardown(foreign_files_rejected, remove_dirs),
		cmocka_unit_test_teardown(future_version_rejected, remove_dirs),
		cmocka_unit_test_teardown(eighth_magic_byte_message, remove_dirs),
		cmocka_unit_test_teardown(stored_config_that_no_longer_parses, remove_dirs),
		cmocka_unit_test_teardown(restore_into_other_network_rejected, remove_dirs),
		cmocka_unit_test_teardown(restore_checks_shape_not_just_count, remove_dirs),
		cmocka_unit_test_teardown(resume_mid_epoch_bit_for_bit, remove_dirs),
		cmocka_unit_test_teardown(resume_at_epoch_boundary_bit_for_bit, remove_dirs),
		cmocka_unit_test_teardown(resume_during_validation_bit_for_bit, remove_dirs),
		cmocka_unit_test_teardown(forged_fields_rejected, remove_dirs),
		cmocka_unit_test_teardown(forged_valid_values_accepted, remove_dirs),
		cmocka_unit_test_teardown(stored_config_of_a_huge_network_rejected, remove_dirs),
		cmocka_unit_test_teardown(writer_refuses_too_many_gates, remove_dirs),
		cmocka_unit_test_teardown(read_from_a_pipe, remove_dirs),
		cmocka_unit_test_teardown(position_against_the_run, remove_dirs),
		cmocka_unit_test_teardown(write_is_atomic_and_clean, remove_dirs),
		cmocka_unit_test_teardown(write_1099_char_path_renames, remove_dirs),
		cmocka_unit_test_teardown(write_in_1099_char_dir, remove_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
