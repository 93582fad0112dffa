/* test_stateful.c - recurrent state carried from one batch to the next
 * (stateful: true) over streams of one sequence (schedule.order: streams).
 *
 * The order: which window lands in which batch row, exactly, through the
 * order function and through the provider. The layer: a stateful window
 * continues the window before it as one long sequence would (the carry is
 * the continuation), its gradient within a window against finite
 * differences with the carried state an input, evaluation starting from
 * zero. Training: a series whose target at a window's end is the input
 * two steps before the window began is learned with stateful and not
 * without; flip-flop equals the reference trainer bit for bit, and wheels
 * with one batch in flight equals flip-flop; a resume from a checkpoint
 * written mid-epoch continues exactly, and one whose state is dropped
 * does not; the state tensors are in the checkpoint and `akkctl inspect`
 * shows them; the configs that cannot carry a state are refused at
 * FILE:LINE:COL. */
#include "testutil.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/workers.h"
#include "config/spec.h"
#include "data/batch.h"
#include "data/open.h"
#include "io/checkpoint.h"
#include "model/model.h"
#include "model/reference.h"
#include "nn/layer.h"
#include "nn/recurrent.h"
#include "runtime/provider.h"
#include "runtime/run_internal.h"
#include "tensor/tensor.h"

static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* ---- the order ---- */

/* 10 windows in batches of 4: 3 batches, the last of 2 rows; streams 0
 * and 1 hold 3 windows, 2 and 3 hold 2. 12 in 4 and 3 in 4 likewise. */
static void t_streams_order_exact(void **state)
{
	static const uint32_t want10[] = { 0, 3, 6, 8, 1, 4, 7, 9, 2, 5 };
	static const uint32_t want12[] = { 0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11 };
	static const uint32_t want3[] = { 0, 1, 2 };
	uint32_t perm[64];

	(void)state;
	akk_streams_order(perm, 10, 4);
	assert_memory_equal(perm, want10, sizeof(want10));
	akk_streams_order(perm, 12, 4);
	assert_memory_equal(perm, want12, sizeof(want12));
	akk_streams_order(perm, 3, 4);
	assert_memory_equal(perm, want3, sizeof(want3));
	/* every size: each window once, and row b of batch k + 1 the window
	 * after row b of batch k */
	for (size_t n = 1; n <= 64; n++)
		for (int bs = 1; bs <= 9; bs++) {
			int seen[64] = { 0 };
			akk_streams_order(perm, n, bs);
			for (size_t i = 0; i < n; i++) {
				assert_true(perm[i] < n);
				assert_int_equal(seen[perm[i]]++, 0);
				if (i >= (size_t)bs)
					assert_int_equal(perm[i], perm[i - bs] + 1);
			}
		}
	/* whatever the epoch and seed */
	{
		uint32_t again[10];
		akk_train_order(again, 10, AKK_ORDER_STREAMS, 4, 99, 5);
		assert_memory_equal(again, want10, sizeof(want10));
	}
}

/* A table of n rows "x,y" for a series: x = row, y = 1000 + row. */
static const char *write_rows(const char *dir, int n)
{
	const char *path = tu_path(dir, "rows.csv");
	char *text = malloc((size_t)n * 32 + 16);
	size_t len = (size_t)sprintf(text, "x,y\n");

	for (int r = 0; r < n; r++)
		len += (size_t)sprintf(text + len, "%d,%d\n", r, 1000 + r);
	assert_int_equal(tu_write_file(path, text, len), 0);
	free(text);
	return path;
}

/* The provider streams them: 21 rows in windows of 2 rows, stride 2,
 * make 10 windows (window i starts at row 2 i); batch k, row b of every
 * epoch is window want10[4 k + b], its first value 2 want10[4 k + b]. */
static void t_provider_streams(void **state)
{
	static const uint32_t want10[] = { 0, 3, 6, 8, 1, 4, 7, 9, 2, 5 };
	const char *dir = tu_tmpdir();
	char text[1024];
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_preprocess pre;
	struct akk_provider p;
	struct akk_workers w;
	struct akk_err e = { 0 };

	(void)state;
	snprintf(text, sizeof(text),
		 "data:\n  format: csv\n  train: {file: %s}\n  csv: {header: true, targets: [y]}\n"
		 "  task: regression\n  series: {window: 2, stride: 2}\n"
		 "network:\n  input: [2, 2]\n  gates:\n    - layers: [{lstm: {units: 2, stateful: true}}, {dense: 1}]\n  loss: mse\n"
		 "optimizer: {type: sgd, lr: 0.1}\nschedule: {order: streams, batch_size: 4}\n",
		 write_rows(dir, 21));
	if (akk_spec_parse(&s, text, strlen(text), "p.yaml", NULL, NULL, 0, &e) ||
	    akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(d.n, 10);
	assert_int_equal(s.sched.order, AKK_ORDER_STREAMS);
	assert_int_equal(akk_preprocess_init(&pre, &s.data, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.shuffle = 1, .order = AKK_ORDER_STREAMS, .seed = 42, .bs = 4,
			.in = d.in, .classes = 1, .npool = 2, .epoch = 0, .index = 1,
			.shards = 1 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&p, &w);
	for (int i = 1; i < 9; i++) {	/* from batch 1 (a resume), 3 epochs */
		struct akk_batch *b = akk_provider_next(&p);
		int k = i % 3;

		assert_non_null(b);
		assert_int_equal(b->index, k);
		assert_int_equal(b->B, k == 2 ? 2 : 4);
		for (int r = 0; r < b->B; r++) {
			uint32_t win = want10[4 * k + r];
			assert_true(b->x[(size_t)r * d.in] == 2.0f * win);
			assert_true(b->targets[r] == 1000.0f + 2 * win + 2);
		}
		assert_int_equal(akk_provider_recycle(&p, b), 0);
	}
	akk_workers_stop(&w);
	akk_provider_release(&p);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
	akk_spec_release(&s);
	tu_rm_tree(dir);
}

/* ---- the layer ---- */

static struct akk_layer_spec stateful_of(const struct akk_layer_ops *ops, int H,
					 int seq)
{
	struct akk_layer_spec sp = { .ops = ops, .units = H };

	sp.AKK_REC_SEQ = seq;
	sp.AKK_REC_STATE = 1;
	return sp;
}

static void plan_rows(struct akk_layer *l, const struct akk_layer_spec *sp,
		      int T, int F, int rows)
{
	struct akk_err e = { 0 };

	memset(l, 0, sizeof(*l));
	l->ops = sp->ops;
	l->spec = sp;
	l->in = (struct akk_shape){ 2, { T, F, 0 } };
	l->max_batch = rows;
	if (sp->ops->plan(l, &e))
		fail_msg("%s plan failed: %s", sp->ops->name, e.msg);
}

/* A layer's buffers for B samples. */
struct bufs {
	float *p, *s, *y, *aux, *work;
};

static void bufs_open(struct bufs *b, const struct akk_layer *l, int B)
{
	struct akk_rng rng;

	b->p = alloc_nan(l->nparams);
	b->s = alloc_nan(l->nstate);
	b->y = alloc_nan((size_t)B * akk_shape_size(l->out));
	b->aux = alloc_nan((size_t)B * l->aux);
	b->work = alloc_nan(l->work + (size_t)B * l->work_sample);
	akk_rng_seed(&rng, 5, AKK_STREAM_INIT);
	l->ops->init(l, b->p, b->s, &rng);
}

static void bufs_close(struct bufs *b)
{
	akk_free(b->p);
	akk_free(b->s);
	akk_free(b->y);
	akk_free(b->aux);
	akk_free(b->work);
}

/* Two windows of T steps through a stateful layer, the second carrying
 * the first's state, equal the two halves of one window of 2T steps
 * through the same layer without a state (within rounding: the products
 * see other shapes); the state starts at zero (init) and holds the last
 * step's; an evaluation forward starts from zero and leaves the state be. */
static void carry_is_continuation(const struct akk_layer_ops *ops)
{
	enum { T = 3, F = 2, H = 4, B = 3, ROWS = 5 };
	struct akk_layer_spec sp = stateful_of(ops, H, 1), lsp = sp;
	struct akk_layer l, ll;
	struct bufs a, b;
	float x[2][B * T * F], xl[B * 2 * T * F], keep[2 * ROWS * H], y1[B * T * H];
	int E = ops == &akk_layer_lstm;

	lsp.AKK_REC_STATE = 0;
	plan_rows(&l, &sp, T, F, ROWS);
	plan_rows(&ll, &lsp, 2 * T, F, 0);
	assert_int_equal(l.nstate, (size_t)ROWS * H * (1 + E));
	assert_int_equal(l.ncarry, l.nstate);
	assert_int_equal(ll.nstate, 0);
	bufs_open(&a, &l, B);
	bufs_open(&b, &ll, B);
	for (size_t i = 0; i < l.nstate; i++)
		assert_true(a.s[i] == 0.0f);
	tu_fill(a.p, l.nparams, -0.8f, 0.8f, 3);
	memcpy(b.p, a.p, l.nparams * sizeof(float));
	tu_fill(xl, sizeof(xl) / sizeof(*xl), -1, 1, 8);
	for (int r = 0; r < B; r++)
		for (int h = 0; h < 2; h++)
			memcpy(x[h] + (size_t)r * T * F, xl + ((size_t)r * 2 * T + h * T) * F,
			       T * F * sizeof(float));
	l.ops->forward(&l, a.y, a.aux, a.s, a.work, x[0], a.p, B, 1, NULL);
	memcpy(y1, a.y, sizeof(y1));
	l.ops->forward(&l, a.y, a.aux, a.s, a.work, x[1], a.p, B, 1, NULL);
	ll.ops->forward(&ll, b.y, b.aux, b.s, b.work, xl, b.p, B, 1, NULL);
	for (int r = 0; r < B; r++)
		for (int h = 0; h < 2; h++) {
			const float *got = (h ? a.y : y1) + (size_t)r * T * H;
			const float *want = b.y + ((size_t)r * 2 * T + h * T) * H;
			assert_true(tu_max_rel_err(got, want, T * H, 1.0) <= 1e-6);
		}
	/* the state's row r: the last step's h (and c), rows past B zero */
	for (int r = 0; r < ROWS; r++) {
		const float *want = b.y + ((size_t)r * 2 * T + 2 * T - 1) * H;
		if (r < B)
			assert_true(tu_max_rel_err(a.s + (size_t)r * H, want, H, 1.0) <= 1e-6);
		for (int j = 0; r >= B && j < H; j++)
			assert_true(a.s[(size_t)r * H + j] == 0.0f);
	}
	/* evaluation: from zero, the state untouched */
	memcpy(keep, a.s, l.nstate * sizeof(float));
	l.ops->forward(&l, a.y, a.aux, a.s, a.work, x[0], a.p, B, 0, NULL);
	assert_memory_equal(a.s, keep, l.nstate * sizeof(float));
	assert_true(tu_max_rel_err(a.y, y1, B * T * H, 1.0) <= 1e-6);
	bufs_close(&a);
	bufs_close(&b);
}

static void t_carry_is_continuation(void **state)
{
	(void)state;
	carry_is_continuation(&akk_layer_lstm);
	carry_is_continuation(&akk_layer_gru);
	carry_is_continuation(&akk_layer_rnn);
}

/* L = sum(y r) of a training forward from the carried state s0. */
static double loss_from(const struct akk_layer *l, struct bufs *b, const float *s0,
			const float *x, const float *r, int B)
{
	double L = 0;

	memcpy(b->s, s0, l->nstate * sizeof(float));
	l->ops->forward(l, b->y, b->aux, b->s, b->work, x, b->p, B, 1, NULL);
	for (size_t i = 0; i < (size_t)B * akk_shape_size(l->out); i++)
		L += (double)b->y[i] * r[i];
	return L;
}

/* Finite differences within one window, from a random carried state
 * (an input: nudged nowhere, and the backward sends nothing to it). */
static void grad_stateful(const struct akk_layer_ops *ops, int seq)
{
	enum { T = 4, F = 3, H = 3, B = 2, ROWS = 3 };
	struct akk_layer_spec sp = stateful_of(ops, H, seq);
	struct akk_layer l;
	struct bufs b;
	size_t nx = (size_t)B * T * F, ny, np;
	float x[B * T * F], dx[B * T * F], num[B * T * F > 512 ? B * T * F : 512];
	float s0[2 * ROWS * H], *r, *dp;

	plan_rows(&l, &sp, T, F, ROWS);
	bufs_open(&b, &l, B);
	np = l.nparams;
	ny = (size_t)B * akk_shape_size(l.out);
	assert_true(np <= 512);
	r = alloc_nan(ny);
	dp = alloc_nan(np);
	tu_fill(b.p, np, -1, 1, 11);
	tu_fill(x, nx, -1, 1, 23);
	tu_fill(r, ny, -1, 1, 37);
	tu_fill(s0, l.nstate, -0.9f, 0.9f, 41);
	memset(dp, 0, np * sizeof(float));
	loss_from(&l, &b, s0, x, r, B);
	l.ops->backward(&l, dx, dp, b.work, r, x, b.y, b.aux, b.p, B);
	for (size_t i = 0; i < nx; i++) {
		float k = x[i];
		x[i] = k + GRAD_EPS;
		double lp = loss_from(&l, &b, s0, x, r, B);
		x[i] = k - GRAD_EPS;
		double lm = loss_from(&l, &b, s0, x, r, B);
		x[i] = k;
		num[i] = (float)((lp - lm) / (2.0 * GRAD_EPS));
	}
	check_close("dx", ops->name, num, dx, nx, GRAD_TOL);
	for (size_t i = 0; i < np; i++) {
		float k = b.p[i];
		b.p[i] = k + GRAD_EPS;
		double lp = loss_from(&l, &b, s0, x, r, B);
		b.p[i] = k - GRAD_EPS;
		double lm = loss_from(&l, &b, s0, x, r, B);
		b.p[i] = k;
		num[i] = (float)((lp - lm) / (2.0 * GRAD_EPS));
	}
	check_close("dp", ops->name, num, dp, np, GRAD_TOL);
	akk_free(r);
	akk_free(dp);
	bufs_close(&b);
}

static void t_grad_stateful(void **state)
{
	(void)state;
	for (int seq = 0; seq <= 1; seq++) {
		grad_stateful(&akk_layer_lstm, seq);
		grad_stateful(&akk_layer_gru, seq);
		grad_stateful(&akk_layer_rnn, seq);
	}
}

/* ---- training ---- */

/* A .npy file of float32 or int64 values. */
static void write_npy(const char *path, const char *descr, const char *shape,
		      const void *data, size_t len)
{
	char dict[128];
	unsigned char *buf;
	size_t hl;

	snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
		 descr, shape);
	hl = ((10 + strlen(dict) + 1 + 63) / 64) * 64 - 10;
	buf = malloc(10 + hl + len);
	assert_non_null(buf);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)hl;
	buf[9] = (unsigned char)(hl >> 8);
	memset(buf + 10, ' ', hl);
	memcpy(buf + 10, dict, strlen(dict));
	buf[10 + hl - 1] = '\n';
	memcpy(buf + 10 + hl, data, len);
	assert_int_equal(tu_write_file(path, buf, 10 + hl + len), 0);
	free(buf);
}

/* Windows of 2 steps cut from one sequence: 0, then +-1 at random; a
 * window's class is the sign of the window before's last step: only a
 * layer that carries the state in from the window before can know it
 * (a window alone is one of two, either class: half right). The state
 * after a window holds its last input, which the window after learns to
 * read within its own steps (truncated back-propagation carries no
 * gradient back into the window before). n windows into DIR/sw-x.npy and
 * DIR/sw-y.npy. */
static void write_switch(const char *dir, int n, uint32_t seed)
{
	float *x = malloc((size_t)n * 2 * sizeof(*x));
	int64_t *y = malloc((size_t)n * sizeof(*y));
	struct akk_rng r;
	char shape[64];
	int before = 0;

	assert_true(x && y);
	akk_rng_seed(&r, seed, 0);
	for (int i = 0; i < n; i++) {
		x[(size_t)i * 2] = 0;
		x[(size_t)i * 2 + 1] = akk_rng_uniform(&r) < 0.5f ? 1.0f : -1.0f;
		y[i] = before;
		before = x[(size_t)i * 2 + 1] > 0;
	}
	snprintf(shape, sizeof(shape), "(%d, 2, 1)", n);
	write_npy(tu_path(dir, "sw-x.npy"), "<f4", shape, x, (size_t)n * 2 * sizeof(*x));
	snprintf(shape, sizeof(shape), "(%d,)", n);
	write_npy(tu_path(dir, "sw-y.npy"), "<i8", shape, y, (size_t)n * sizeof(*y));
	free(x);
	free(y);
}

/* The last epoch's training accuracy in a run's metrics.csv. */
static double last_train_accuracy(const char *path)
{
	char *text = tu_slurp(path, NULL), *line, *save = NULL;
	double last = NAN;

	assert_non_null(text);
	line = strtok_r(text, "\n", &save);
	while ((line = strtok_r(NULL, "\n", &save))) {
		char phase[32];
		int epoch;
		long samples;
		double loss, acc;
		if (sscanf(line, "%d,%31[^,],%ld,%lf,%lf", &epoch, phase, &samples, &loss,
			   &acc) == 5 && !strcmp(phase, "train"))
			last = acc;
	}
	free(text);
	return last;
}

static double train_switch(const char *dir, const char *name, const char *layer,
			   const char *sched)
{
	char cfg[4096], run[700];
	double acc;

	snprintf(cfg, sizeof(cfg),
		 "name: switch\nseed: 5\n"
		 "data:\n  format: npy\n  train: {features: %s, labels: %s}\n"
		 "network:\n  input: [2, 1]\n  gates:\n    - layers: [%s, {dense: 2}]\n"
		 "  loss: softmax_cross_entropy\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {order: streams, batch_size: 8, epochs: 40, %s}\n",
		 tu_path(dir, "sw-x.npy"), tu_path(dir, "sw-y.npy"), layer, sched);
	snprintf(run, sizeof(run), "%s/run-%s", dir, name);
	assert_int_equal(tu_write_file(tu_path(dir, "sw.yaml"), cfg, strlen(cfg)), 0);
	if (ak("train", tu_path(dir, "sw.yaml"), "--out", run, "--quiet", NULL))
		fail_msg("akkctl train failed:\n%s%s", g_out, g_err);
	acc = last_train_accuracy(tu_path(run, "metrics.csv"));
	print_message("%s: last training accuracy %.3f\n", name, acc);
	return acc;
}

/* 8 streams of 200 windows, 40 epochs: an lstm with stateful learns the
 * class (each epoch's first batch starts from zero: 1/200 of the windows
 * a guess); without it, it stays at a half; wheels with 4 batches in
 * flight (whose interleaving varies from run to run) carries the state
 * in forward order and learns too. */
static void t_learns_across_batches(void **state)
{
	const char *dir = tu_tmpdir();
	const char *lstm = "{lstm: {units: 16, stateful: true}}";
	double with, without, wheels;

	(void)state;
	write_switch(dir, 8 * 200, 17);
	with = train_switch(dir, "stateful", lstm, "mode: flip-flop");
	without = train_switch(dir, "plain", "{lstm: 16}", "mode: flip-flop");
	wheels = train_switch(dir, "wheels", lstm, "mode: wheels, concurrency: {train: 4}");
	/* how far training gets depends on the kernels' rounding (0.99 with
	 * Zen's, 0.75 with Sandybridge's); chance is 0.5, where a layer that
	 * starts every batch from zero stays */
	assert_true(with > 0.7);
	assert_true(without < 0.6);
	assert_true(wheels > 0.7);
	tu_rm_tree(dir);
}

/* A series of n rows "x,y": x = +-1 at random, y = x 6 rows before. */
static const char *write_series(const char *dir, int n, uint32_t seed)
{
	const char *path = tu_path(dir, "mem.csv");
	char *text = malloc((size_t)n * 16 + 16);
	int *x = malloc((size_t)n * sizeof(*x));
	size_t len = (size_t)sprintf(text, "x,y\n");

	for (int t = 0; t < n; t++) {
		seed = seed * 1664525u + 1013904223u;
		x[t] = (seed >> 16) & 1 ? 1 : -1;
		len += (size_t)sprintf(text + len, "%d,%d\n", x[t], t >= 6 ? x[t - 6] : 0);
	}
	assert_int_equal(tu_write_file(path, text, len), 0);
	free(text);
	free(x);
	return path;
}

static void series_config(char *buf, size_t size, const char *csv, const char *layers,
			  const char *sched)
{
	snprintf(buf, size,
		 "name: carry\nseed: 5\n"
		 "data:\n  format: csv\n  train: {file: %s}\n  csv: {header: true, targets: [y]}\n"
		 "  task: regression\n  series: {window: 4, stride: 4}\n"
		 "network:\n  input: [4, 2]\n  gates:\n%s  loss: mse\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {%s}\n",
		 csv, layers, sched);
}

/* A series through two gates, stateful in each: an lstm, then a gru and
 * dense; 7 rows a batch, each epoch's last of 5 (rig_run_open). */
static const char *two_gates =
	"    - layers: [{lstm: {units: 6, return_sequences: true, stateful: true}}]\n"
	"    - layers: [{gru: {units: 5, stateful: true}}, {dense: 1}]\n";

struct rig_run {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train;
};

static void rig_run_open(struct rig_run *q, const char *dir, const char *layers,
			 const char *sched)
{
	char cfg[4096];
	struct akk_err e = { 0 };

	/* 833 rows: 208 windows, 30 batches of 7, the last of 5 */
	series_config(cfg, sizeof(cfg), write_series(dir, 833, 23),
		      layers, sched);
	assert_int_equal(tu_write_file(tu_path(dir, "carry.yaml"), cfg, strlen(cfg)), 0);
	if (akk_spec_parse(&q->spec, cfg, strlen(cfg), "carry.yaml", NULL, NULL, 0, &e) ||
	    akk_model_plan(&q->model, &q->spec, &e) ||
	    akk_data_open(&q->train, &q->spec.data, AKK_DATA_TRAIN, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(q->train.n, 208);
}

static void rig_run_close(struct rig_run *q)
{
	akk_dataset_release(&q->train);
	akk_model_release(&q->model);
	akk_spec_release(&q->spec);
}

static void assert_same_gates(const struct akk_gate *a, const struct akk_gate *b, int n)
{
	for (int g = 0; g < n; g++) {
		assert_int_equal(a[g].step, b[g].step);
		assert_memory_equal(a[g].params, b[g].params, a[g].plan->nparams * sizeof(float));
		assert_memory_equal(a[g].state, b[g].state, a[g].plan->nstate * sizeof(float));
	}
}

/* Whether any gate's parameters differ. */
static int gates_differ(const struct akk_gate *a, const struct akk_gate *b, int n)
{
	for (int g = 0; g < n; g++)
		if (memcmp(a[g].params, b[g].params, a[g].plan->nparams * sizeof(float)))
			return 1;
	return 0;
}

static void run_gates(struct akk_run *r, struct akk_gate *out, int n)
{
	for (int g = 0; g < n; g++)
		out[g] = r->gates[g].gate;
}

/* Flip-flop through the actors equals the sequential reference trainer
 * bit for bit, parameters and carried states, over 3 epochs of 30
 * batches (the last of each 5 rows); wheels with one batch in flight
 * equals flip-flop; a pipeline of micro-batches is refused. */
static void t_schedules_equal_reference(void **state)
{
	const char *dir = tu_tmpdir();
	struct rig_run q;
	struct akk_reference ref;
	struct akk_run ff, wh;
	struct akk_err e = { 0 };
	struct akk_gate a[2], b[2];

	(void)state;
	rig_run_open(&q, dir, two_gates, "mode: flip-flop, order: streams, batch_size: 7, epochs: 3");
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &q.model, &q.train, &e), 0);
	for (long i = 0; i < 3 * 30; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	assert_int_equal(akk_run_init(&ff, &q.model, &q.train, NULL, &(struct akk_run_config){
			.mode = AKK_MODE_FLIPFLOP, .epochs = 3, .blas_threads = 1 }, &e), 0);
	assert_int_equal(akk_run_train(&ff, &e), 0);
	run_gates(&ff, a, 2);
	assert_int_equal(a[0].step, 90);
	assert_same_gates(a, ref.gates, 2);
	/* the state is the last batch's: its 5 rows not zero */
	assert_true(a[0].state[0] != 0.0f);
	q.spec.sched.conc_train = 1;
	assert_int_equal(akk_run_init(&wh, &q.model, &q.train, NULL, &(struct akk_run_config){
			.mode = AKK_MODE_WHEELS, .epochs = 3, .blas_threads = 1 }, &e), 0);
	assert_int_equal(akk_run_train(&wh, &e), 0);
	run_gates(&wh, b, 2);
	assert_same_gates(a, b, 2);
	akk_run_release(&wh);
	/* micro-batches would split the rows: refused */
	assert_int_equal(akk_run_init(&wh, &q.model, &q.train, NULL, &(struct akk_run_config){
			.mode = AKK_MODE_PIPELINE, .epochs = 1, .blas_threads = 1 }, &e), -1);
	assert_string_equal(e.msg, "a stateful recurrent layer carries each batch row's state into the next batch: it does not run with micro-batches or data parallelism");
	akk_run_release(&ff);
	akk_reference_release(&ref);
	rig_run_close(&q);
	tu_rm_tree(dir);
}

/* The observer that interrupts a run after `at` batches. */
struct stopper {
	struct akk_run *run;
	long at;
};

static void stop_at(void *ctx, const struct akk_progress *p)
{
	struct stopper *s = ctx;

	if (p->batch == s->at)
		akk_run_interrupt(s->run);
}

/* A run interrupted after 13 batches of its second epoch writes a
 * checkpoint; a run resumed from it ends as one run straight through,
 * bit for bit, parameters and carried states. Dropping the carried state
 * on resume (zeroing it) gives other weights: the state in the file is
 * what makes the resume exact. */
static void t_resume_mid_epoch(void **state)
{
	const char *dir = tu_tmpdir(), *path = tu_path(dir, "mid.bin");
	struct rig_run q;
	struct akk_run straight, cut, resumed, dropped;
	struct stopper stop = { &cut, 13 };
	struct akk_checkpoint ck;
	struct akk_err e = { 0 };
	struct akk_gate a[2], b[2];
	struct akk_run_config cfg = { .mode = AKK_MODE_FLIPFLOP, .epochs = 2,
				      .blas_threads = 1 };

	(void)state;
	rig_run_open(&q, dir, two_gates, "mode: flip-flop, order: streams, batch_size: 7, epochs: 2");
	akk_blas_threads(1);
	assert_int_equal(akk_run_init(&straight, &q.model, &q.train, NULL, &cfg, &e), 0);
	assert_int_equal(akk_run_train(&straight, &e), 0);
	run_gates(&straight, a, 2);

	/* epoch 1 whole, written at its end */
	{
		struct akk_run first;
		struct akk_run_config c1 = cfg;
		c1.epochs = 1;
		assert_int_equal(akk_run_init(&first, &q.model, &q.train, NULL, &c1, &e), 0);
		assert_int_equal(akk_run_train(&first, &e), 0);
		assert_int_equal(akk_run_write_checkpoint(&first, path, &q.spec, dir, &(struct akk_ckpt_metrics){ 0 }, &e), 0);
		akk_run_release(&first);
	}
	/* resumed, then interrupted after 13 batches of epoch 2 (progress
	 * counts the epoch's batches) */
	cfg.obs = (struct akk_observer){ &stop, stop_at, NULL };
	assert_int_equal(akk_checkpoint_read(&ck, path, &e), 0);
	cfg.start = ck.pos;
	assert_int_equal(akk_run_init(&cut, &q.model, &q.train, NULL, &cfg, &e), 0);
	assert_int_equal(akk_run_restore(&cut, &ck, path, &e), 0);
	akk_checkpoint_release(&ck);
	assert_int_equal(akk_run_train(&cut, &e), 0);
	assert_true(akk_run_stats(&cut).interrupted);
	assert_int_equal(akk_run_stats(&cut).pos.epoch, 1);
	assert_int_equal(akk_run_stats(&cut).pos.index, 13);
	assert_int_equal(akk_run_write_checkpoint(&cut, path, &q.spec, dir, &(struct akk_ckpt_metrics){ 0 }, &e), 0);
	akk_run_release(&cut);
	/* another batch size: other state tensors */
	assert_int_equal(ak("train", tu_path(dir, "carry.yaml"), "--quiet", "--resume", path,
			    "--set", "schedule.batch_size=8", "--out", tu_path(dir, "run8"), NULL), 2);
	{
		char want[1200];
		snprintf(want, sizeof(want), "akkctl: %s: checkpoint does not match the network: 'g1.l1.lstm.state_h' has shape 7x6, the network needs 8x6\n", path);
		assert_string_equal(g_err, want);
	}

	cfg.obs = (struct akk_observer){ 0 };
	assert_int_equal(akk_checkpoint_read(&ck, path, &e), 0);
	cfg.start = ck.pos;
	assert_int_equal(akk_run_init(&resumed, &q.model, &q.train, NULL, &cfg, &e), 0);
	assert_int_equal(akk_run_restore(&resumed, &ck, path, &e), 0);
	assert_int_equal(akk_run_train(&resumed, &e), 0);
	run_gates(&resumed, b, 2);
	assert_same_gates(a, b, 2);
	akk_run_release(&resumed);

	assert_int_equal(akk_run_init(&dropped, &q.model, &q.train, NULL, &cfg, &e), 0);
	assert_int_equal(akk_run_restore(&dropped, &ck, path, &e), 0);
	for (int g = 0; g < 2; g++)
		akk_gate_restart(&dropped.gates[g].gate);
	assert_int_equal(akk_run_train(&dropped, &e), 0);
	run_gates(&dropped, b, 2);
	assert_true(gates_differ(a, b, 2));
	akk_run_release(&dropped);
	akk_checkpoint_release(&ck);
	akk_run_release(&straight);
	rig_run_close(&q);
	tu_rm_tree(dir);
}

/* Streams are cut by the batch size: a mid-epoch checkpoint of a run in
 * order streams (no stateful layer) resumes at its own batch size, and
 * another is refused, exit 2, naming the checkpoint. */
static void t_streams_resume_other_batch_size(void **state)
{
	const char *dir = tu_tmpdir(), *path = tu_path(dir, "mid.bin");
	struct rig_run q;
	struct akk_run cut;
	struct stopper stop = { &cut, 9 };
	struct akk_err e = { 0 };
	char want[1400];

	(void)state;
	rig_run_open(&q, dir, "    - layers: [{lstm: 4}, {dense: 1}]\n",
		     "mode: flip-flop, order: streams, batch_size: 7, epochs: 1");
	assert_int_equal(akk_run_init(&cut, &q.model, &q.train, NULL, &(struct akk_run_config){
			.mode = AKK_MODE_FLIPFLOP, .epochs = 1, .blas_threads = 1,
			.obs = { &stop, stop_at, NULL } }, &e), 0);
	assert_int_equal(akk_run_train(&cut, &e), 0);
	assert_int_equal(akk_run_stats(&cut).pos.index, 9);
	assert_int_equal(akk_run_write_checkpoint(&cut, path, &q.spec, dir, &(struct akk_ckpt_metrics){ 0 }, &e), 0);
	akk_run_release(&cut);
	assert_int_equal(ak("train", tu_path(dir, "carry.yaml"), "--quiet", "--resume", path,
			    "--set", "schedule.batch_size=3", "--out", tu_path(dir, "run3"), NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: cannot resume mid-epoch with schedule.batch_size 3: order: streams cut the epoch into 7 streams; resume with schedule.batch_size 7, or from a checkpoint at an epoch boundary\n", path);
	assert_string_equal(g_err, want);
	assert_int_equal(ak("train", tu_path(dir, "carry.yaml"), "--quiet", "--resume", path,
			    "--out", tu_path(dir, "run7"), NULL), 0);
	rig_run_close(&q);
	tu_rm_tree(dir);
}

/* ---- the checkpoint and the CLI ---- */

/* The state tensors are in the checkpoint, (batch_size, units) each, and
 * `akkctl inspect` lists them; an epoch-boundary resume ends as a run
 * straight through. */
static void t_checkpoint_and_inspect(void **state)
{
	const char *dir = tu_tmpdir();
	const char *csv = write_series(dir, 7 * 10 * 4 + 1, 29);
	char cfg[4096], a[700], b[700];
	struct akk_checkpoint x, y;
	struct akk_err e = { 0 };
	int found = 0;

	(void)state;
	series_config(cfg, sizeof(cfg), csv, two_gates,
		      "mode: flip-flop, order: streams, batch_size: 7, epochs: 3");
	assert_int_equal(tu_write_file(tu_path(dir, "c.yaml"), cfg, strlen(cfg)), 0);
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	assert_int_equal(ak("train", tu_path(dir, "c.yaml"), "--quiet", "--out", a, NULL), 0);
	assert_int_equal(ak("train", tu_path(dir, "c.yaml"), "--quiet", "--epochs", "2",
			    "--out", b, NULL), 0);
	assert_int_equal(ak("train", tu_path(dir, "c.yaml"), "--quiet", "--resume",
			    tu_path(b, "last.bin"), "--epochs", "3", "--out", b, NULL), 0);
	if (akk_checkpoint_read(&x, tu_path(a, "last.bin"), &e) ||
	    akk_checkpoint_read(&y, tu_path(b, "last.bin"), &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	for (int g = 0; g < x.ngates; g++)
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *p = &x.gates[g].tensors[t];
			assert_string_equal(p->name, y.gates[g].tensors[t].name);
			assert_memory_equal(p->data, y.gates[g].tensors[t].data,
					    p->count * sizeof(float));
			if (strstr(p->name, ".state_")) {
				found++;
				assert_int_equal(p->rank, 2);
				assert_int_equal(p->dims[0], 7);
				assert_int_equal(p->dims[1], g ? 5 : 6);
			}
		}
	assert_int_equal(found, 3);	/* lstm h and c, gru h */
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
	assert_int_equal(ak("inspect", tu_path(a, "last.bin"), NULL), 0);
	tu_assert_contains(g_out, "state_h");
	tu_assert_contains(g_out, "state_c");
	tu_rm_tree(dir);
}

/* What cannot carry a state is refused where it is written. */
static void expect_error(const char *input, const char *layers, const char *sched,
			 const char *series, const char *want)
{
	char cfg[4096];
	struct akk_spec s;
	struct akk_err e = { 0 };
	char got[1200];

	snprintf(cfg, sizeof(cfg),
		 "data:\n  format: csv\n  train: {file: x.csv}\n  csv: {header: true, targets: [y]}\n"
		 "  task: regression\n%s"
		 "network:\n  input: %s\n  gates:\n    - layers: %s\n  loss: mse\n"
		 "optimizer: {type: sgd, lr: 0.1}\n"
		 "schedule: {%s}\n", series, input, layers, sched);
	assert_int_equal(akk_spec_parse(&s, cfg, strlen(cfg), "c.yaml", NULL, NULL, 0, &e), -1);
	akk_err_format(&e, got, sizeof(got));
	assert_string_equal(got, want);
}

static void t_config_errors(void **state)
{
	const char *series = "  series: {window: 4, stride: 4}\n";
	const char *lstm = "[{lstm: {units: 4, stateful: true}}, {dense: 1}]";

	(void)state;
	expect_error("[4, 2]", lstm, "batch_size: 8", series,
		     "c.yaml:10:16: lstm: stateful carries each batch row's state into the next batch: it needs schedule.order: streams, where row b of each batch continues row b's stream");
	expect_error("[4, 2]", "[{gru: {units: 4, stateful: true, direction: bidirectional}}, {dense: 1}]",
		     "order: streams", series,
		     "c.yaml:10:16: gru: stateful carries each batch row's state into the next batch: only a forward pass ends where the next window starts: it needs direction forward");
	expect_error("[4, 2]", "[{rnn: {units: 4, stateful: true}}, {dense: 1}]",
		     "mode: pipeline, order: streams", series,
		     "c.yaml:10:16: rnn: stateful carries each batch row's state into the next batch: mode pipeline splits each batch's rows into micro-batches: use flip-flop or wheels");
	expect_error("[8]", "[{dense: 1}]", "order: streams", "",
		     "c.yaml:12:12: order: streams lays out windows of one sequence, but the network reads no sequences (network.input [T, F], or token ids into an embedding)");
	expect_error("[4, 2]", "[flatten, {dense: 1}]", "order: random", series,
		     "c.yaml:13:19: unknown order 'random'");
	expect_error("[4, 2]", "[{lstm: 4}, {dense: 1}]", "order: streams",
		     "  validation: {split: 0.2}\n",
		     "c.yaml:6:3: order: streams needs the training windows in one piece, but a split holds out windows at random: give validation data of its own (a series' or a text's split holds out its end)");
	expect_error("[4, 2]", "[{lstm: 4}, {dense: 1}]", "order: streams",
		     "  validation: {folds: 3}\n",
		     "c.yaml:13:12: order: streams trains on every window in stream order: it does not go with data.validation folds");
	/* the CLI: exit 2, the line on stderr */
	{
		const char *dir = tu_tmpdir(), *cfg = tu_path(dir, "c.yaml");
		char text[2048], want[1400];
		snprintf(text, sizeof(text),
			 "data:\n  format: csv\n  train: {file: %s}\n  csv: {header: true, targets: [y]}\n"
			 "  task: regression\n%s"
			 "network:\n  input: [4, 2]\n  gates:\n    - layers: %s\n  loss: mse\n"
			 "optimizer: {type: sgd, lr: 0.1}\n", write_series(dir, 41, 3), series, lstm);
		assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
		assert_int_equal(ak("train", cfg, "--out", tu_path(dir, "run"), NULL), 2);
		snprintf(want, sizeof(want),
			 "akkctl: %s:10:16: lstm: stateful carries each batch row's state into the next batch: it needs schedule.order: streams, where row b of each batch continues row b's stream\n",
			 cfg);
		assert_string_equal(g_err, want);
		tu_rm_tree(dir);
	}
}

/* A stateful layer keeps a state per row of a gate's batches: inside a
 * composite, which has no batch, the plan refuses it. */
static void t_plan_refuses(void **state)
{
	struct akk_layer_spec sp = stateful_of(&akk_layer_lstm, 4, 0);
	struct akk_layer l = { .ops = sp.ops, .spec = &sp,
			       .in = { 2, { 4, 2, 0 } } };
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(sp.ops->plan(&l, &e), -1);
	assert_string_equal(e.msg, "stateful keeps a state per batch row: it needs a gate's layer list, not a composite's");
	sp.AKK_REC_DIR = AKK_REC_REVERSE;
	l.max_batch = 8;
	assert_int_equal(sp.ops->plan(&l, &e), -1);
	assert_string_equal(e.msg, "stateful carries the state after a window's last step into the next window: it needs direction forward, not reverse");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_streams_order_exact),
		cmocka_unit_test(t_provider_streams),
		cmocka_unit_test(t_carry_is_continuation),
		cmocka_unit_test(t_grad_stateful),
		cmocka_unit_test(t_plan_refuses),
		cmocka_unit_test(t_config_errors),
		cmocka_unit_test(t_schedules_equal_reference),
		cmocka_unit_test(t_resume_mid_epoch),
		cmocka_unit_test(t_streams_resume_other_batch_size),
		cmocka_unit_test(t_checkpoint_and_inspect),
		cmocka_unit_test(t_learns_across_batches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
