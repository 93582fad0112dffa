/* test_optim.c - optimizers and LR schedules against torch fixtures.
 *
 * tests/ref/optim_<case>.txt hold a torch.optim trajectory (initial w, then
 * per step the lr, the gradient, the clipped gradient for clip cases and w
 * after the step), written by tests/ref/gen_optim.py. akk_optim_step must
 * reproduce every w to REL_TOL relative, where relative means
 * |a - b| / max(|a|, |b|, ABS_FLOOR): values nearer zero than ABS_FLOOR are
 * held to an absolute REL_TOL * ABS_FLOOR = 1e-7, about one float ulp of the
 * O(1) values they were computed from. tests/ref/lr_sched.txt holds torch's
 * StepLR/ExponentialLR/CosineAnnealingLR values at integer epochs and closed
 * forms at fractional ones and with warm-up; akk_lr_at must match to 1e-6.
 * Finally every optimizer must train a small softmax regression. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/loss.h"
#include "nn/optim.h"
#include "testutil.h"

#define REL_TOL 1e-5
#define ABS_FLOOR 1e-2
#define SCHED_TOL 1e-6
#define MAXN 16

static const char *const cases[] = {
	"sgd", "sgd_wd", "momentum", "momentum_wd", "nesterov", "nesterov_wd",
	"rmsprop", "rmsprop_wd", "adam", "adam_wd", "adam_lr", "adamw",
	"adamw_beta", "radam", "radam_wd", "clip_momentum", "clip_adam_wd",
};

/* Read n floats; 0 when all were read. */
static int read_floats(FILE *f, float *x, int n)
{
	for (int i = 0; i < n; i++)
		if (fscanf(f, "%f", &x[i]) != 1)
			return -1;
	return 0;
}

/* Skip '#' comment lines at the start of a fixture. */
static void skip_comments(FILE *f)
{
	int c;

	while ((c = fgetc(f)) == '#')
		while ((c = fgetc(f)) != '\n' && c != EOF)
			;
	if (c != EOF)
		ungetc(c, f);
}

static float read_key_float(FILE *f, const char *key)
{
	float v;

	tu_expect_word(f, key);
	assert_int_equal(fscanf(f, "%f", &v), 1);
	return v;
}

/* Read a fixture's header into o (schedule constant, lr set per step). */
static FILE *open_case(const char *name, struct akk_optim_spec *o, int *n,
		       int *steps)
{
	char path[256], kind[32];
	FILE *f;

	snprintf(path, sizeof path, "tests/ref/optim_%s.txt", name);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open '%s' (run the tests from the top directory)",
			 path);
	skip_comments(f);
	memset(o, 0, sizeof *o);
	tu_expect_word(f, "kind");
	assert_int_equal(fscanf(f, "%31s", kind), 1);
	assert_true(akk_optim_find(kind) >= 0);
	o->kind = akk_optim_find(kind);
	o->momentum = read_key_float(f, "momentum");
	o->beta1 = read_key_float(f, "beta1");
	o->beta2 = read_key_float(f, "beta2");
	o->rho = read_key_float(f, "rho");
	o->eps = read_key_float(f, "eps");
	o->weight_decay = read_key_float(f, "weight_decay");
	o->clip_norm = read_key_float(f, "clip_norm");
	tu_expect_word(f, "n");
	assert_int_equal(fscanf(f, "%d", n), 1);
	tu_expect_word(f, "steps");
	assert_int_equal(fscanf(f, "%d", steps), 1);
	assert_true(*n > 0 && *n <= MAXN);
	return f;
}

/* One fixture: replay its gradients and compare w after every step. */
static double run_case(const char *name)
{
	struct akk_optim_spec o;
	int n, steps;
	FILE *f = open_case(name, &o, &n, &steps);
	float w[MAXN], g[MAXN], ref[MAXN], *state;
	double worst = 0;
	int per = akk_optim_state_per_param(o.kind);

	/* Exactly n * per floats (or none), so ASan sees any overrun. */
	state = per ? calloc((size_t)n * per, sizeof *state) : NULL;
	assert_true(per == 0 || state);
	tu_expect_word(f, "w0");
	assert_int_equal(read_floats(f, w, n), 0);
	for (int s = 1; s <= steps; s++) {
		int step;
		float lr;

		tu_expect_word(f, "step");
		assert_int_equal(fscanf(f, "%d", &step), 1);
		assert_int_equal(step, s);
		lr = read_key_float(f, "lr");
		tu_expect_word(f, "g");
		assert_int_equal(read_floats(f, g, n), 0);
		akk_optim_step(&o, w, g, state, n, s, lr);
		if (o.clip_norm > 0) {
			tu_expect_word(f, "gc");
			assert_int_equal(read_floats(f, ref, n), 0);
			/* g is only guaranteed to hold the clipped gradient
			 * when there is no decay to fold into it. */
			if (o.weight_decay == 0 &&
			    tu_max_rel_err(g, ref, n, ABS_FLOOR) > REL_TOL)
				fail_msg("%s step %d: clipped gradient differs",
					 name, s);
		}
		tu_expect_word(f, "w");
		assert_int_equal(read_floats(f, ref, n), 0);
		double e = tu_max_rel_err(w, ref, n, ABS_FLOOR);
		if (e > worst)
			worst = e;
		if (e > REL_TOL)
			fail_msg("%s step %d: w differs from torch by %.3g "
				 "relative (tolerance %g)", name, s, e, REL_TOL);
	}
	fclose(f);
	free(state);
	return worst;
}

static void test_trajectories(void **ctx)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		double e = run_case(cases[i]);

		if (getenv("AKK_TEST_VERBOSE"))
			fprintf(stderr, "  optim_%s: max rel err %.3g\n",
				cases[i], e);
	}
}

static void test_schedules(void **ctx)
{
	FILE *f = fopen("tests/ref/lr_sched.txt", "r");
	char kind[32];
	float lr, gamma, step_epochs, min_lr, warmup;
	int epochs, lines = 0;
	double epoch, want, worst = 0;

	(void)ctx;
	assert_non_null(f);
	skip_comments(f);
	while (fscanf(f, "%31s %f %f %f %f %f %d %lf %lf", kind, &lr, &gamma,
		      &step_epochs, &min_lr, &warmup, &epochs, &epoch,
		      &want) == 9) {
		struct akk_optim_spec o;
		float got;

		memset(&o, 0, sizeof o);
		o.kind = AKK_OPT_SGD;
		o.lr = lr;
		assert_true(akk_lr_find(kind) >= 0);
		o.sched.kind = akk_lr_find(kind);
		o.sched.gamma = gamma;
		o.sched.step_epochs = step_epochs;
		o.sched.min_lr = min_lr;
		o.sched.warmup_epochs = warmup;
		got = akk_lr_at(&o, epoch, epochs);
		double e = fabs(got - want) / fmax(fabs(want), 1e-6);
		if (e > worst)
			worst = e;
		if (e > SCHED_TOL)
			fail_msg("%s (gamma %g, step %g, min %g, warmup %g) at "
				 "epoch %g: %.9g, torch %.9g", kind, gamma,
				 step_epochs, min_lr, warmup, epoch, got, want);
		lines++;
	}
	assert_true(feof(f));
	assert_true(lines > 50);
	fclose(f);
	if (getenv("AKK_TEST_VERBOSE"))
		fprintf(stderr, "  lr_sched: %d values, max rel err %.3g\n",
			lines, worst);
}

/* The warm-up at step midpoints: never 0, linear, then the schedule. */
static void test_warmup_midpoint(void **ctx)
{
	struct akk_optim_spec o;
	const int spe = 10;

	(void)ctx;
	memset(&o, 0, sizeof o);
	o.lr = 0.5f;
	o.sched.kind = AKK_LR_CONSTANT;
	o.sched.warmup_epochs = 2;
	for (int s = 0; s < 3 * spe; s++) {
		double e = (s + 0.5) / spe;
		float lr = akk_lr_at(&o, e, 3);

		assert_true(lr > 0);
		if (s < 2 * spe)
			assert_float_equal(lr, 0.5 * (s + 0.5) / (2 * spe), 1e-7);
		else
			assert_float_equal(lr, 0.5f, 0);
	}
}

/* Warm-up ramps to the configured lr, then the schedule starts from it
 * with its own epochs counted after the warm-up: the configured peak is
 * reached (warm-up used to multiply the schedule, so a cosine run peaked
 * at 0.000775 for lr 0.001). */
static void test_warmup_then_schedule(void **ctx)
{
	struct akk_optim_spec o;
	const int spe = 100, E = 10;
	float peak = 0;

	(void)ctx;
	memset(&o, 0, sizeof o);
	o.lr = 0.001f;
	o.sched.kind = AKK_LR_COSINE;
	o.sched.min_lr = 1e-5f;
	o.sched.warmup_epochs = 1;
	for (int s = 0; s < E * spe; s++) {
		float lr = akk_lr_at(&o, (s + 0.5) / spe, E);
		if (lr > peak)
			peak = lr;
	}
	assert_float_equal(peak, 0.001f, 0.001f * 1e-4);
	assert_float_equal(akk_lr_at(&o, 1.0, E), 0.001f, 0);
	assert_float_equal(akk_lr_at(&o, 0.5, E), 0.0005f, 1e-9);
	/* cosine over the 9 epochs after the warm-up */
	assert_float_equal(akk_lr_at(&o, 1 + 4.5, E), 1e-5f + (0.001f - 1e-5f) / 2, 1e-8);
	assert_float_equal(akk_lr_at(&o, 10.0, E), 1e-5f, 1e-9);
	/* step: the first decay comes step_epochs after the warm-up */
	o.sched.kind = AKK_LR_STEP;
	o.sched.gamma = 0.5f;
	o.sched.step_epochs = 2;
	o.sched.warmup_epochs = 1.5f;
	assert_float_equal(akk_lr_at(&o, 0.75, E), 0.0005f, 1e-9);
	assert_float_equal(akk_lr_at(&o, 3.4, E), 0.001f, 0);
	assert_float_equal(akk_lr_at(&o, 3.6, E), 0.0005f, 1e-9);
	/* exponential: gamma^(epoch - warm-up) */
	o.sched.kind = AKK_LR_EXPONENTIAL;
	o.sched.gamma = 0.8f;
	assert_float_equal(akk_lr_at(&o, 2.5, E), 0.001 * 0.8f, 1e-9);
}

static void test_names_and_state(void **ctx)
{
	static const int per[] = { 0, 1, 1, 1, 2, 2, 2 };

	(void)ctx;
	for (int k = 0; akk_optim_names[k]; k++) {
		assert_int_equal(akk_optim_find(akk_optim_name(k)), k);
		assert_int_equal(akk_optim_state_per_param(k), per[k]);
	}
	for (int k = 0; akk_lr_names[k]; k++)
		assert_int_equal(akk_lr_find(akk_lr_name(k)), k);
	assert_int_equal(akk_optim_find("adagrad"), -1);
	assert_int_equal(akk_lr_find("onecycle"), -1);
	assert_null(akk_optim_name(AKK_OPT_RADAM + 1));
}

static void test_norm2_and_clip(void **ctx)
{
	float g[5] = { 3, 0, -4, 0, 0 }, w[5] = { 0 };
	struct akk_optim_spec o;

	(void)ctx;
	assert_float_equal(akk_norm2(g, 5), 5.0, 1e-12);
	assert_float_equal(akk_norm2(g, 0), 0.0, 0);
	memset(&o, 0, sizeof o);
	o.kind = AKK_OPT_SGD;
	o.clip_norm = 10;	/* below the limit: g untouched */
	akk_optim_step(&o, w, g, NULL, 5, 1, 1);
	assert_float_equal(g[0], 3, 0);
	assert_float_equal(w[2], 4, 0);
	o.clip_norm = 1;	/* above: scaled to norm 1 (less 1e-6) */
	akk_optim_step(&o, w, g, NULL, 5, 2, 1);
	assert_float_equal(akk_norm2(g, 5), 1.0, 1e-6);
	assert_float_equal(g[0], 0.6, 1e-6);
}

/* The step in parts (akk_optim_clip once, akk_optim_update on ranges in
 * any order) is akk_optim_step bit for bit, for every optimizer, with and
 * without clipping, weight decay and AdamW's decoupled decay. */
static void test_update_in_parts(void **ctx)
{
	enum { N = 1003 };
	static const size_t cut[] = { 0, 17, 512, 513, 1003 };
	static float w0[N], g0[N], s0[2 * N], w1[N], g1[N], s1[2 * N];

	(void)ctx;
	for (int k = 0; akk_optim_names[k]; k++)
		for (int clip = 0; clip < 2; clip++) {
			struct akk_optim_spec o;
			memset(&o, 0, sizeof o);
			o.kind = k;
			o.momentum = 0.9f;
			o.rho = 0.9f;
			o.beta1 = 0.9f;
			o.beta2 = 0.999f;
			o.eps = 1e-8f;
			o.weight_decay = 0.01f;
			o.clip_norm = clip ? 0.5f : 0;
			tu_fill(w0, N, -1, 1, 7 + k);
			tu_fill(s0, 2 * N, 0, 1, 11 + k);
			memcpy(w1, w0, sizeof w0);
			memcpy(s1, s0, sizeof s0);
			for (long t = 1; t <= 3; t++) {
				tu_fill(g0, N, -1, 1, 100 * t + k);
				memcpy(g1, g0, sizeof g0);
				akk_optim_step(&o, w0, g0, s0, N, t, 0.01f);
				double c = akk_optim_clip(&o, g1, N);
				assert_true(clip ? c < 1 : c == 1);
				for (int p = 3; p >= 0; p--)	/* any order */
					akk_optim_update(&o, w1, g1, s1, N, cut[p],
							 cut[p + 1], t, 0.01f, c);
				assert_memory_equal(w0, w1, sizeof w0);
				assert_memory_equal(g0, g1, sizeof g0);
				assert_memory_equal(s0, s1, sizeof s0);
			}
		}
}

/* The gate's step, akk_optim_update_zero, gives akk_optim_update's w and
 * state bit for bit for every optimizer (with and without clipping and
 * decay), leaves the range's gradients zero and the rest untouched, and
 * says whether the range held an inf or a NaN: one bad gradient, at any
 * lane of a vector, in or out of the range. Out of place (the weights
 * read from one buffer, written to another, as a stashing gate steps),
 * the same bits land in the other buffer and the first stays as it was. */
static void test_update_zero(void **ctx)
{
	enum { N = 203 };
	static float w0[N], g0[N], s0[2 * N], w1[N], g1[N], s1[2 * N];
	static float pp[2][N], was[N], g2[N], s2[2 * N];
	const size_t lo = 5, hi = 197;

	(void)ctx;
	for (int k = 0; akk_optim_names[k]; k++)
		for (int clip = 0; clip < 2; clip++) {
			struct akk_optim_spec o;
			memset(&o, 0, sizeof o);
			o.kind = k;
			o.momentum = 0.9f;
			o.rho = 0.9f;
			o.beta1 = 0.9f;
			o.beta2 = 0.999f;
			o.eps = 1e-8f;
			o.weight_decay = 0.01f;
			o.clip_norm = clip ? 0.5f : 0;
			tu_fill(w0, N, -1, 1, 7 + k);
			tu_fill(s0, 2 * N, 0, 1, 11 + k);
			memcpy(w1, w0, sizeof w0);
			memcpy(s1, s0, sizeof s0);
			memcpy(pp[0], w0, sizeof w0);
			memcpy(pp[1], w0, sizeof w0);
			memcpy(s2, s0, sizeof s0);
			for (long t = 1; t <= 3; t++) {
				float *from = pp[(t - 1) % 2], *to = pp[t % 2];
				tu_fill(g0, N, -1, 1, 100 * t + k);
				memcpy(g1, g0, sizeof g0);
				memcpy(g2, g0, sizeof g0);
				memcpy(was, from, sizeof was);
				double c = akk_optim_clip(&o, g0, N);
				akk_optim_update(&o, w0, g0, s0, N, lo, hi, t,
						 0.01f, c);
				assert_int_equal(akk_optim_update_zero(&o, w1, w1, g1,
						 s1, N, lo, hi, t, 0.01f, c), 1);
				assert_memory_equal(w0, w1, sizeof w0);
				assert_memory_equal(s0, s1, sizeof s0);
				assert_int_equal(akk_optim_update_zero(&o, from, to, g2,
						 s2, N, lo, hi, t, 0.01f, c), 1);
				assert_memory_equal(to + lo, w0 + lo, (hi - lo) * sizeof(float));
				assert_memory_equal(from, was, sizeof was);
				assert_memory_equal(s2, s0, sizeof s0);
				/* the range only: the next step's source is whole */
				memcpy(to, w0, lo * sizeof(float));
				memcpy(to + hi, w0 + hi, (N - hi) * sizeof(float));
				for (size_t i = 0; i < N; i++)
					if (i >= lo && i < hi)
						assert_true(g1[i] == 0 &&
							    !signbit(g1[i]));
					else
						assert_true(g1[i] == g0[i]);
			}
		}
	/* a bad gradient at each position: found only inside the range */
	struct akk_optim_spec o;
	memset(&o, 0, sizeof o);
	o.kind = AKK_OPT_ADAM;
	o.beta1 = 0.9f;
	o.beta2 = 0.999f;
	o.eps = 1e-8f;
	for (size_t at = 0; at < N; at++)
		for (int nan = 0; nan < 2; nan++) {
			tu_fill(g1, N, -1, 1, 5);
			g1[at] = nan ? NAN : -INFINITY;
			memset(s1, 0, sizeof s1);
			int ok = akk_optim_update_zero(&o, w1, w1, g1, s1, N, lo, hi,
						       1, 0.01f, 1);
			assert_int_equal(ok, !(at >= lo && at < hi));
		}
	/* the largest finite gradients are fine */
	for (size_t i = 0; i < N; i++)
		g1[i] = i % 2 ? FLT_MAX : -FLT_MAX;
	memset(s1, 0, sizeof s1);
	assert_int_equal(akk_optim_update_zero(&o, w1, w1, g1, s1, N, 0, N, 1,
					       0.01f, 1), 1);
}

/* --- sanity: softmax regression, 3 classes, 8 features, 96 samples ---- */

#define NS 96
#define NF 8
#define NC 3
#define NP (NC * NF + NC)	/* W (NC, NF) then b (NC) */

/* Class k sits at +2 on its own features (k, k+3, k+6 mod 8), with uniform
 * noise in [-1, 1): linearly separable with a margin. */
static void make_data(float *x, int32_t *y)
{
	tu_fill(x, NS * NF, -1, 1, 42);
	for (int i = 0; i < NS; i++) {
		y[i] = (int32_t)(i % NC);
		for (int j = y[i]; j < NF; j += NC)
			x[i * NF + j] += 2;
	}
}

/* Full-batch loss and gradient of the parameter block p. */
static double objective(float *grad, const float *p, const float *x,
			const int32_t *y)
{
	static float z[NS * NC], dz[NS * NC];
	const float *W = p, *b = p + NC * NF;
	double loss;

	for (int i = 0; i < NS; i++)
		for (int c = 0; c < NC; c++) {
			float s = b[c];
			for (int j = 0; j < NF; j++)
				s += W[c * NF + j] * x[i * NF + j];
			z[i * NC + c] = s;
		}
	loss = akk_loss(AKK_LOSS_SOFTMAX_CE, 1, dz, z, y, NS, NC, NULL);
	/* dW = dz^T x, db = column sums of dz */
	memset(grad, 0, NP * sizeof *grad);
	for (int i = 0; i < NS; i++)
		for (int c = 0; c < NC; c++) {
			for (int j = 0; j < NF; j++)
				grad[c * NF + j] += dz[i * NC + c] * x[i * NF + j];
			grad[NC * NF + c] += dz[i * NC + c];
		}
	return loss;
}

static void test_trains_softmax_regression(void **ctx)
{
	static const struct {
		enum akk_optim_kind kind;
		float lr;
	} runs[] = {
		{ AKK_OPT_SGD, 0.5f }, { AKK_OPT_MOMENTUM, 0.1f },
		{ AKK_OPT_NESTEROV, 0.1f }, { AKK_OPT_RMSPROP, 0.01f },
		{ AKK_OPT_ADAM, 0.05f }, { AKK_OPT_ADAMW, 0.05f },
		{ AKK_OPT_RADAM, 0.05f },
	};
	static float x[NS * NF];
	static int32_t y[NS];

	(void)ctx;
	make_data(x, y);
	for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
		struct akk_optim_spec o = {
			.kind = runs[r].kind, .lr = runs[r].lr,
			.momentum = 0.9f, .beta1 = 0.9f, .beta2 = 0.999f,
			.rho = 0.99f, .eps = 1e-8f,
			.weight_decay = runs[r].kind == AKK_OPT_ADAMW ? 0.01f : 0,
		};
		float p[NP] = { 0 }, g[NP], state[2 * NP] = { 0 };
		double first = objective(g, p, x, y), last = first;

		for (long t = 1; t <= 200; t++) {
			akk_optim_step(&o, p, g, state, NP, t,
				       akk_lr_at(&o, (t - 0.5) / 10, 20));
			last = objective(g, p, x, y);
		}
		if (getenv("AKK_TEST_VERBOSE"))
			fprintf(stderr, "  %s: loss %.4f -> %.5f\n",
				akk_optim_name(o.kind), first, last);
		if (!(last < 0.1 * first || last < 0.05))
			fail_msg("%s did not train: loss %.4f -> %.4f",
				 akk_optim_name(o.kind), first, last);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trajectories),
		cmocka_unit_test(test_schedules),
		cmocka_unit_test(test_warmup_midpoint),
		cmocka_unit_test(test_warmup_then_schedule),
		cmocka_unit_test(test_names_and_state),
		cmocka_unit_test(test_norm2_and_clip),
		cmocka_unit_test(test_update_in_parts),
		cmocka_unit_test(test_update_zero),
		cmocka_unit_test(test_trains_softmax_regression),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
