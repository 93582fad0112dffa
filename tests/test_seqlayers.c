/* test_seqlayers.c - the layers over sequences: embedding, conv1d,
 * maxpool1d, avgpool1d, global_maxpool1d, global_avgpool1d.
 *
 * Four kinds of evidence. Finite differences (gradcheck.h: L = sum(y r),
 * central differences, its tolerance rationale) for every kind on several
 * shapes. References: tests/ref/seqlayers.txt, written by
 * tests/ref/gen_seqlayers.py from a numpy implementation that works
 * channels-first as torch does, holds inputs, parameters and output
 * gradients with the outputs and gradients; ours must match within 1e-5
 * (relative above 1). What defines each kind beyond its numbers: which
 * step a max-pool's tie picks, the NaN row of a value that is not a token
 * id (never an index out of the table), the rows of dW an embedding's
 * backward touches. Plans: shapes, parameters, FLOPs and the errors for
 * what the kinds cannot take, also through `akkctl check`. And small
 * configs trained end to end by `akkctl train` on synthetic data, whose
 * loss falls, and one whose ids overflow the vocabulary, which stops. */
#include "testutil.h"
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "nn/layer.h"
#include "tensor/tensor.h"

#define REF_TOL 1e-5

static char g_dir[4096];
static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static struct akk_shape shape1(int d)
{
	return (struct akk_shape){ 1, { d, 0, 0 } };
}

static struct akk_shape shape2(int t, int f)
{
	return (struct akk_shape){ 2, { t, f, 0 } };
}

static struct akk_layer_spec embedding_of(int vocab, int units)
{
	struct akk_layer_spec sp = { .ops = &akk_layer_embedding, .units = units };

	sp.iopt[0] = vocab;
	return sp;
}

static struct akk_layer_spec conv1d_of(int filters, int k, int s, int p,
				       int bias)
{
	return (struct akk_layer_spec){ .ops = &akk_layer_conv1d,
					.filters = filters, .kernel = k,
					.stride = s, .padding = p, .bias = bias };
}

static struct akk_layer_spec pool_of(const struct akk_layer_ops *ops, int k,
				     int s, int p)
{
	return (struct akk_layer_spec){ .ops = ops, .kernel = k, .stride = s,
					.padding = p };
}

/* ---- gradient checks ---- */

/* Token ids: x[i] = (i * 7 + 3) % vocab, repeating ids when the batch
 * holds more steps than the vocabulary. */
static void fill_ids(float *x, size_t n, int vocab)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (float)((i * 7 + 3) % (size_t)vocab);
}

/* The embedding on B samples of T ids: dW against central differences,
 * dx written as zeros, dW accumulated. */
static void grad_check_embedding(int vocab, int units, int T, int B)
{
	struct akk_layer_spec sp = embedding_of(vocab, units);
	struct rig g = { 0 };

	rig_open(&g, &sp, shape1(T), B, X_PLAIN);
	fill_ids(g.x, g.nin * B, vocab);
	size_t np = g.l.nparams, nx = g.nin * B;
	float *num = alloc_nan(np), *dp1 = alloc_nan(np);

	memset(g.dp, 0, np * sizeof(float));
	rig_loss(&g);
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, B);
	for (size_t i = 0; i < nx; i++)
		assert_true(g.dx[i] == 0);
	memcpy(dp1, g.dp, np * sizeof(float));
	numeric_grad(&g, num, g.p, np, GRAD_EPS);
	check_close("dp", "embedding", num, dp1, np, GRAD_TOL);
	/* accumulated: a second call (dx NULL) doubles dW */
	g.l.ops->backward(&g.l, NULL, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, B);
	for (size_t i = 0; i < np; i++)
		num[i] = 2 * dp1[i];
	assert_true(tu_max_rel_err(g.dp, num, np, 1.0) <= 1e-6);
	akk_free(num);
	akk_free(dp1);
	rig_close(&g);
}

static void t_grad_embedding(void **state)
{
	(void)state;
	grad_check_embedding(7, 4, 5, 3);	/* ids repeat across samples */
	grad_check_embedding(3, 2, 1, 1);	/* one step, one sample */
	grad_check_embedding(16, 3, 4, 2);	/* rows no id reaches */
}

static void t_grad_conv1d(void **state)
{
	static const struct {
		int T, C, F, k, s, p, bias, B;
	} cases[] = {
		{ 8, 3, 4, 3, 1, 0, 1, 3 },	/* overlapping windows */
		{ 9, 2, 3, 3, 2, 1, 0, 2 },	/* stride 2, padded, no bias */
		{ 6, 2, 2, 2, 2, 0, 1, 2 },	/* disjoint windows: x in place */
		{ 7, 2, 2, 2, 2, 0, 1, 2 },	/* disjoint, one step left over */
		{ 4, 3, 2, 5, 1, 2, 1, 1 },	/* kernel > T, padded, B = 1 */
		{ 7, 2, 3, 2, 3, 0, 1, 2 },	/* stride > kernel */
		{ 5, 3, 2, 1, 1, 0, 1, 2 },	/* pointwise */
		{ 1, 2, 3, 1, 1, 0, 1, 3 },	/* T = 1 */
		{ 1, 2, 2, 3, 1, 1, 1, 2 },	/* T = 1, padded to the kernel */
		{ 3, 2, 2, 2, 1, 3, 1, 2 },	/* padding > kernel */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct akk_layer_spec sp = conv1d_of(cases[i].F, cases[i].k,
						     cases[i].s, cases[i].p,
						     cases[i].bias);
		grad_check(&sp, shape2(cases[i].T, cases[i].C), cases[i].B,
			   X_PLAIN);
	}
}

/* Inside a residual block, whose scratch is its inner layers' largest
 * (work_sample included): a padded conv1d keeps the shape. */
static void t_grad_conv1d_in_residual(void **state)
{
	struct akk_layer_spec inner[3] = { conv1d_of(3, 3, 1, 1, 1),
					   { .ops = &akk_layer_tanh },
					   conv1d_of(3, 5, 1, 2, 0) };
	struct akk_layer_spec sp = { .ops = &akk_layer_residual, .inner = inner,
				     .ninner = 3 };

	(void)state;
	grad_check(&sp, shape2(6, 3), 2, X_PLAIN);
}

static const struct {
	int T, C, k, s, p, B;
} pool_cases[] = {
	{ 7, 3, 2, 0, 0, 2 },	/* stride = kernel, a step left over */
	{ 8, 2, 3, 2, 1, 2 },	/* overlapping, padded */
	{ 5, 2, 3, 1, 1, 1 },	/* stride 1, B = 1 */
	{ 1, 2, 1, 0, 0, 3 },	/* T = 1 */
	{ 6, 1, 6, 0, 0, 2 },	/* one window: the whole sequence */
	{ 9, 2, 2, 3, 0, 2 },	/* stride > kernel */
};

static void t_grad_pools1d(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pool_cases) / sizeof(pool_cases[0]); i++) {
		struct akk_shape in = shape2(pool_cases[i].T, pool_cases[i].C);
		struct akk_layer_spec mp = pool_of(&akk_layer_maxpool1d,
						   pool_cases[i].k,
						   pool_cases[i].s,
						   pool_cases[i].p);
		struct akk_layer_spec ap = mp;
		ap.ops = &akk_layer_avgpool1d;
		grad_check(&mp, in, pool_cases[i].B, X_DISTINCT);
		grad_check(&ap, in, pool_cases[i].B, X_PLAIN);
	}
}

static void t_grad_global_pools1d(void **state)
{
	struct akk_layer_spec gm = { .ops = &akk_layer_global_maxpool1d };
	struct akk_layer_spec ga = { .ops = &akk_layer_global_avgpool1d };

	(void)state;
	grad_check(&gm, shape2(6, 3), 2, X_DISTINCT);
	grad_check(&gm, shape2(1, 4), 3, X_DISTINCT);
	grad_check(&gm, shape2(5, 1), 1, X_DISTINCT);
	grad_check(&ga, shape2(6, 3), 2, X_PLAIN);
	grad_check(&ga, shape2(1, 4), 3, X_PLAIN);
	grad_check(&ga, shape2(5, 1), 1, X_PLAIN);
}

/* ---- numpy references ---- */

static void expect_close(const char *what, const char *kind, int ncase,
			 const float *got, const float *want, size_t n)
{
	double err = tu_max_rel_err(got, want, n, 1.0);

	if (!(err <= REF_TOL))
		fail_msg("case %d (%s): %s off by %g from the reference", ncase,
			 kind, what, err);
}

static struct akk_layer_spec spec_named(const char *kind, int vocab, int units,
					int filters, int k, int s, int p,
					int bias)
{
	if (!strcmp(kind, "embedding"))
		return embedding_of(vocab, units);
	if (!strcmp(kind, "conv1d"))
		return conv1d_of(filters, k, s, p, bias);
	const struct akk_layer_ops *ops = akk_layer_find(kind);
	if (!ops)
		fail_msg("unknown kind '%s' in the fixture", kind);
	return pool_of(ops, k, s, p);
}

/* One case of the fixture against our kernels; 0 at the end of the file. */
static int reference_case(FILE *f, int ncase)
{
	char kind[32];
	int T, F, B, vocab, units, filters, k, s, p, bias;
	struct akk_layer_spec sp;
	struct rig g = { 0 };
	size_t n, nx, ny;

	if (fscanf(f, " case %31s %d %d %d %d %d %d %d %d %d %d", kind, &T, &F,
		   &B, &vocab, &units, &filters, &k, &s, &p, &bias) != 11)
		return 0;
	sp = spec_named(kind, vocab, units, filters, k, s, p, bias);
	rig_open(&g, &sp, F ? shape2(T, F) : shape1(T), B, X_PLAIN);
	nx = g.nin * B;
	ny = g.nout * B;
	float *x = read_values(f, "x", &n), *pv, *dy, *y, *dx, *dp;
	assert_int_equal(n, nx);
	pv = read_values(f, "p", &n);
	assert_int_equal(n, g.l.nparams);
	dy = read_values(f, "dy", &n);
	assert_int_equal(n, ny);
	y = read_values(f, "y", &n);
	dx = read_values(f, "dx", &n);
	dp = read_values(f, "dp", &n);
	memcpy(g.x, x, nx * sizeof(float));
	memcpy(g.p, pv, g.l.nparams * sizeof(float));
	memcpy(g.r, dy, ny * sizeof(float));
	rig_loss(&g);
	expect_close("y", kind, ncase, g.y, y, ny);
	memset(g.dp, 0, g.l.nparams * sizeof(float));
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, B);
	expect_close("dx", kind, ncase, g.dx, dx, nx);
	expect_close("dp", kind, ncase, g.dp, dp, g.l.nparams);
	akk_free(x);
	akk_free(pv);
	akk_free(dy);
	akk_free(y);
	akk_free(dx);
	akk_free(dp);
	rig_close(&g);
	return 1;
}

static void t_numpy_reference(void **state)
{
	FILE *f = fopen("tests/ref/seqlayers.txt", "r");
	char line[256];
	int ncase = 0;

	(void)state;
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));	/* the header */
	assert_int_equal(line[0], '#');
	while (reference_case(f, ncase + 1))
		ncase++;
	fclose(f);
	assert_int_equal(ncase, 22);	/* every case was read */
}

/* ---- what defines the kinds ---- */

/* Max pools: of equal values the earliest step wins (and gets the whole
 * gradient); a NaN wins over numbers, the first NaN of the window. */
static void t_maxpool_ties_and_nan(void **state)
{
	struct akk_layer_spec mp = pool_of(&akk_layer_maxpool1d, 3, 3, 0);
	struct akk_layer_spec gm = { .ops = &akk_layer_global_maxpool1d };
	/* [6, 2]: feature 0 ties 5 at steps 1 and 2 (window 0) and at 3 and
	 * 5 (window 1); feature 1 holds a NaN at step 4 */
	const float x[12] = { 1, 0, 5, 2, 5, 3, 5, -1, 2, NAN, 5, 9 };
	const float dy[4] = { 1, 2, 3, 4 };
	float y[4], aux[4], dx[12], gy[2], gaux[2], gdx[12];
	struct akk_layer l, lg;

	(void)state;
	plan_ok(&l, &mp, shape2(6, 2));
	plan_ok(&lg, &gm, shape2(6, 2));
	mp.ops->forward(&l, y, aux, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(y[0] == 5 && aux[0] == 1);	/* steps 1 and 2: 1 */
	assert_true(y[1] == 3 && aux[1] == 2);
	assert_true(y[2] == 5 && aux[2] == 3);	/* steps 3 and 5: 3 */
	assert_true(isnan(y[3]) && aux[3] == 4);
	mp.ops->backward(&l, dx, NULL, NULL, dy, x, y, aux, NULL, 1);
	const float want[12] = { 0, 0, 1, 0, 0, 2, 3, 0, 0, 4, 0, 0 };
	assert_memory_equal(dx, want, sizeof(want));

	gm.ops->forward(&lg, gy, gaux, NULL, NULL, x, NULL, 1, 1, NULL);
	assert_true(gy[0] == 5 && gaux[0] == 1);	/* the first of four 5s */
	assert_true(isnan(gy[1]) && gaux[1] == 4);
	gm.ops->backward(&lg, gdx, NULL, NULL, dy, x, gy, gaux, NULL, 1);
	const float gwant[12] = { 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0, 0 };
	assert_memory_equal(gdx, gwant, sizeof(gwant));
	/* an evaluation forward may pass no aux */
	mp.ops->forward(&l, y, NULL, NULL, NULL, x, NULL, 1, 0, NULL);
	assert_true(y[0] == 5 && y[2] == 5);
}

/* A value that is no token id gives its step a NaN row, whatever the
 * value, and never reads outside the table (exactly V U floats on the
 * heap: `make check` runs this under AddressSanitizer); the other steps
 * are their rows; backward skips the bad steps. */
static void t_embedding_bad_ids(void **state)
{
	enum { V = 4, U = 3, T = 9 };
	struct akk_layer_spec sp = embedding_of(V, U);
	struct akk_layer l;
	const float x[T] = { 0, -1, 4, 2.5f, NAN, 3, INFINITY, -0.0f, 1e30f };
	const int bad[T] = { 0, 1, 1, 1, 1, 0, 1, 0, 1 };
	/* malloc, not akk_alloc (which rounds up to 64 bytes): AddressSanitizer
	 * then sees the table's exact end */
	float *p = malloc(V * U * sizeof(float)), y[T * U], dy[T * U];
	float dp[V * U], dx[T];

	(void)state;
	assert_non_null(p);
	plan_ok(&l, &sp, shape1(T));
	for (int i = 0; i < V * U; i++)
		p[i] = (float)(i + 1);
	l.ops->forward(&l, y, NULL, NULL, NULL, x, p, 1, 1, NULL);
	for (int t = 0; t < T; t++)
		for (int j = 0; j < U; j++) {
			if (bad[t])
				assert_true(isnan(y[t * U + j]));
			else
				assert_true(y[t * U + j] == p[(int)x[t] * U + j]);
		}
	for (int i = 0; i < T * U; i++)
		dy[i] = 1;
	memset(dp, 0, sizeof(dp));
	l.ops->backward(&l, dx, dp, NULL, dy, x, y, NULL, p, 1);
	/* ids 0 (twice: 0 and -0) and 3 only */
	for (int r = 0; r < V; r++)
		for (int j = 0; j < U; j++)
			assert_true(dp[r * U + j] == (r == 0 ? 2 : r == 3 ? 1 : 0));
	for (int t = 0; t < T; t++)
		assert_true(dx[t] == 0);
	assert_int_equal(akk_embedding_bad_id(x, T, V), 1);
	assert_int_equal(akk_embedding_bad_id(x + 5, 1, V), -1);
	assert_int_equal(akk_embedding_bad_id(x + 3, 1, V), 0);	/* 2.5 */
	assert_int_equal(akk_embedding_bad_id(x + 4, 1, V), 0);	/* NaN */
	assert_int_equal(akk_embedding_bad_id(x + 5, 3, V), 1);	/* inf */
	assert_int_equal(akk_embedding_bad_id(x, 1, 1), -1);
	free(p);
}

/* The default init is torch's nn.Embedding: N(0, 1), not a fan-scaled
 * uniform; an explicit kind uses fan_in units, fan_out vocab. */
static void t_embedding_init(void **state)
{
	enum { V = 500, U = 64 };
	struct akk_layer_spec sp = embedding_of(V, U);
	struct akk_layer l;
	struct akk_rng r;
	float *p = alloc_nan(V * U);
	double sum = 0, sq = 0, amax = 0;

	(void)state;
	plan_ok(&l, &sp, shape1(10));
	akk_rng_seed(&r, 3, AKK_STREAM_INIT);
	l.ops->init(&l, p, NULL, &r);
	for (int i = 0; i < V * U; i++) {
		sum += p[i];
		sq += (double)p[i] * p[i];
		amax = fmax(amax, fabs(p[i]));
	}
	double mean = sum / (V * U), sd = sqrt(sq / (V * U) - mean * mean);
	assert_true(fabs(mean) < 5 / sqrt(V * U));
	assert_true(fabs(sd - 1) < 0.02);
	assert_true(amax > 3);
	sp.init = AKK_INIT_HE_UNIFORM;	/* a = sqrt(6 / units) */
	l.ops->init(&l, p, NULL, &r);
	amax = 0;
	for (int i = 0; i < V * U; i++)
		amax = fmax(amax, fabs(p[i]));
	assert_true(amax <= sqrt(6.0 / U) && amax > 0.99 * sqrt(6.0 / U));
	akk_free(p);
}

/* ---- plans ---- */

static const char *plan_msg(struct akk_layer_spec sp, struct akk_shape in)
{
	const char *m = plan_err(&sp, in);

	return m ? m : "(planned)";
}

static void t_plans(void **state)
{
	struct akk_layer l;
	struct akk_layer_spec sp;

	(void)state;
	sp = embedding_of(65, 32);
	plan_ok(&l, &sp, shape1(40));
	assert_int_equal(l.out.rank, 2);
	assert_int_equal(l.out.d[0], 40);
	assert_int_equal(l.out.d[1], 32);
	assert_int_equal(l.nparams, 65 * 32);
	assert_string_equal(l.views[0].name, "weight");
	assert_int_equal(l.views[0].dims[0], 65);
	assert_int_equal(l.views[0].dims[1], 32);
	assert_true(l.flops == 0);

	/* torch: (T + 2p - k) / s + 1 */
	sp = conv1d_of(16, 5, 2, 2, 1);
	plan_ok(&l, &sp, shape2(50, 8));
	assert_int_equal(l.out.rank, 2);
	assert_int_equal(l.out.d[0], 25);
	assert_int_equal(l.out.d[1], 16);
	assert_int_equal(l.nparams, 16 * 8 * 5 + 16);
	assert_int_equal(l.nviews, 2);
	assert_int_equal(l.views[0].rank, 3);	/* (filters, F, kernel) */
	assert_int_equal(l.views[0].dims[0], 16);
	assert_int_equal(l.views[0].dims[1], 8);
	assert_int_equal(l.views[0].dims[2], 5);
	assert_int_equal(l.views[1].off, 16 * 8 * 5);
	assert_true(l.flops == 2.0 * 16 * 40 * 25 + 16 * 25);
	assert_int_equal(l.work_sample, 25 * 40);	/* the windows */
	sp = conv1d_of(4, 3, 3, 0, 0);		/* windows tile x: none */
	plan_ok(&l, &sp, shape2(12, 2));
	assert_int_equal(l.work_sample, 0);
	assert_int_equal(l.nviews, 1);
	assert_int_equal(l.nparams, 4 * 2 * 3);

	sp = pool_of(&akk_layer_maxpool1d, 3, 0, 1);
	plan_ok(&l, &sp, shape2(10, 4));
	assert_int_equal(l.out.d[0], 4);	/* (10 + 2 - 3) / 3 + 1 */
	assert_int_equal(l.out.d[1], 4);
	assert_int_equal(l.aux, 16);
	sp.ops = &akk_layer_avgpool1d;
	sp.stride = 1;
	plan_ok(&l, &sp, shape2(10, 4));
	assert_int_equal(l.out.d[0], 10);
	sp = (struct akk_layer_spec){ .ops = &akk_layer_global_maxpool1d };
	plan_ok(&l, &sp, shape2(10, 4));
	assert_int_equal(l.out.rank, 1);
	assert_int_equal(l.out.d[0], 4);
	assert_int_equal(l.aux, 4);
	sp.ops = &akk_layer_global_avgpool1d;
	plan_ok(&l, &sp, shape2(10, 4));
	assert_int_equal(l.out.d[0], 4);
	assert_int_equal(l.aux, 0);
}

static void t_plan_errors(void **state)
{
	struct akk_layer_spec gm = { .ops = &akk_layer_global_maxpool1d };
	struct akk_layer_spec ga = { .ops = &akk_layer_global_avgpool1d };
	struct akk_shape img = { 3, { 1, 4, 4 } };

	(void)state;
	assert_string_equal(plan_msg(embedding_of(10, 4), shape2(5, 2)),
			    "expects a sequence of token ids [T], got [5, 2]");
	assert_string_equal(plan_msg(embedding_of(0, 4), shape1(5)),
			    "expects vocab > 0, got 0");
	assert_string_equal(plan_msg(embedding_of(3, 0), shape1(5)),
			    "expects units > 0, got 0");
	assert_string_equal(plan_msg(conv1d_of(2, 3, 1, 0, 1), shape1(8)),
			    "expects a sequence [T, features], got [8]");
	assert_string_equal(plan_msg(conv1d_of(2, 3, 1, 0, 1), img),
			    "expects a sequence [T, features], got [1, 4, 4]");
	assert_string_equal(plan_msg(conv1d_of(2, 5, 1, 0, 1), shape2(4, 3)),
			    "kernel 5 is longer than the padded input of 4 steps "
			    "(input [4, 3], padding 0)");
	assert_string_equal(plan_msg(conv1d_of(2, 5, 1, 1, 1), shape2(4, 3)),
			    "(planned)");	/* 4 + 2 >= 5 */
	assert_string_equal(plan_msg(pool_of(&akk_layer_maxpool1d, 4, 0, 0),
				     shape2(3, 2)),
			    "kernel 4 is longer than the padded input of 3 steps "
			    "(input [3, 2], padding 0)");
	assert_string_equal(plan_msg(pool_of(&akk_layer_avgpool1d, 3, 0, 2),
				     shape2(8, 2)),
			    "expects padding between 0 and kernel/2 = 1, got 2");
	assert_string_equal(plan_msg(pool_of(&akk_layer_avgpool1d, 2, 0, 0), img),
			    "expects a sequence [T, features], got [1, 4, 4]");
	assert_string_equal(plan_msg(gm, shape1(6)),
			    "expects a sequence [T, features], got [6]");
	assert_string_equal(plan_msg(ga, img),
			    "expects a sequence [T, features], got [1, 4, 4]");
	assert_string_equal(plan_msg(gm, (struct akk_shape){ 2, { 1 << 24, 1, 0 } }),
			    "input has 16777216 steps, 2^24 or more");
}

/* ---- through akkctl ---- */

static const char *write_config(const char *name, const char *text)
{
	const char *path = tu_path(g_dir, name);

	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	return path;
}

/* A config's plan error names the file, the layer's place and the kind. */
static void t_check_errors(void **state)
{
	const char *cfg = write_config("bad-rank.yaml",
		"name: bad\n"
		"data:\n  train: {images: train-images, labels: train-labels}\n"
		"network:\n  input: [36]\n"
		"  gates:\n    - layers: [{conv1d: {filters: 2, kernel: 3}}, global_maxpool1d, {dense: 2}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"schedule: {epochs: 1, batch_size: 10}\n");
	char want[1024];

	(void)state;
	assert_int_equal(ak("check", cfg, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s:7:16: layer 'conv1d' (gate 1, "
		 "layer 1) cannot take the output of network.input: expects a "
		 "sequence [T, features], got [36]\n", cfg);
	assert_string_equal(g_err, want);
	cfg = write_config("bad-vocab.yaml",
		"name: bad\n"
		"data:\n  train: {images: train-images, labels: train-labels}\n"
		"network:\n  input: [36]\n"
		"  gates:\n    - layers: [{embedding: {vocab: 0, units: 4}}, global_avgpool1d, {dense: 2}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"schedule: {epochs: 1, batch_size: 10}\n");
	assert_int_equal(ak("check", cfg, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s:7:36: 'vocab' must be at least "
		 "1, got 0\n", cfg);
	assert_string_equal(g_err, want);
}

/* The loss column of metrics.csv's train rows, epoch by epoch. */
static int train_losses(const char *path, double *loss, int max)
{
	char *s = tu_slurp(path, NULL), *line, *save = NULL;
	int n = 0;

	assert_non_null(s);
	line = strtok_r(s, "\n", &save);	/* the header */
	while ((line = strtok_r(NULL, "\n", &save)) && n < max) {
		int epoch;
		char phase[32];
		long samples;
		double l;
		if (sscanf(line, "%d,%31[^,],%ld,%lf", &epoch, phase, &samples, &l) == 4 &&
		    !strcmp(phase, "train"))
			loss[n++] = l;
	}
	free(s);
	return n;
}

#define CONFIG_HEAD                                                           \
	"seed: 5\n"                                                           \
	"data:\n  train: {images: train-images, labels: train-labels}\n"

/* Trained end to end, the loss falls to a fraction of the first epoch's. */
static void train_falls(const char *name, const char *cfg, double factor)
{
	double loss[8];
	const char *out = tu_path(g_dir, name);

	if (ak("train", cfg, "--quiet", "--out", out, NULL) != 0)
		fail_msg("train %s: %s", name, g_err);
	assert_int_equal(train_losses(tu_path(out, "metrics.csv"), loss, 8), 6);
	if (!(loss[5] < factor * loss[0]))
		fail_msg("%s: the loss went from %g to %g", name, loss[0], loss[5]);
}

static void t_train_conv1d(void **state)
{
	const char *cfg = write_config("conv1d.yaml",
		"name: conv1d\n" CONFIG_HEAD
		"network:\n  input: [12, 3]\n"
		"  gates:\n    - layers:\n"
		"        - {conv1d: {filters: 4, kernel: 3}}\n"
		"        - relu\n"
		"        - {maxpool1d: 2}\n"
		"        - {avgpool1d: {kernel: 2, stride: 1, padding: 1}}\n"
		"        - global_maxpool1d\n"
		"        - {dense: 2}\n"
		"optimizer: {type: adam, lr: 0.05}\n"
		"schedule: {mode: flip-flop, epochs: 6, batch_size: 20}\n");

	(void)state;
	assert_int_equal(ak("check", cfg, NULL), 0);
	tu_assert_contains(g_out, "\n1     1      conv1d           [10, 4]                    40            760\n");
	train_falls("out-conv1d", cfg, 0.5);
}

/* Bytes as token ids: a network that starts with an embedding keeps them
 * whole (data.scale is 1 for it, not byte data's 255). */
static void t_train_embedding(void **state)
{
	const char *cfg = write_config("embedding.yaml",
		"name: embedding\n" CONFIG_HEAD
		"network:\n  input: [36]\n"
		"  gates:\n    - layers:\n"
		"        - {embedding: {vocab: 256, units: 4}}\n"
		"        - {conv1d: {filters: 4, kernel: 2, stride: 2}}\n"
		"        - global_avgpool1d\n"
		"        - {dense: 2}\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 6, batch_size: 20}\n");

	(void)state;
	train_falls("out-embedding", cfg, 0.5);
}

/* Ids beyond the vocabulary never train: the data is refused before the
 * run, exit 2, naming the file, the sample and the step; and the input
 * maps that would make fractions of ids are refused at the data key. */
static void t_train_bad_ids_stop(void **state)
{
	const char *cfg = write_config("overflow.yaml",
		"name: overflow\n" CONFIG_HEAD
		"network:\n  input: [36]\n"
		"  gates:\n    - layers: [{embedding: {vocab: 100, units: 4}}, global_avgpool1d, {dense: 2}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 2, batch_size: 20}\n");
	static const struct { const char *key, *msg; } maps[] = {
		{ "  scale: 255\n", "overflow-map.yaml:5:3: data.scale 255 would make fractions of the token ids the first layer, embedding, reads: leave it out or set 1" },
		{ "  normalize: {mean: 0.5, std: 0.2}\n", "overflow-map.yaml:5:3: data.normalize would change the token ids the first layer, embedding, reads" },
	};
	char *p, want[256];
	unsigned long sample;
	long step;

	(void)state;
	assert_int_equal(ak("train", cfg, "--quiet", "--out",
			    tu_path(g_dir, "out-overflow"), NULL), 2);
	assert_non_null(p = strstr(g_err, "train-images: sample "));
	assert_int_equal(sscanf(p, "train-images: sample %lu, step %ld:", &sample, &step), 2);
	snprintf(want, sizeof(want), "is not a token id of the first layer's vocabulary (integers 0 to 99)");
	tu_assert_contains(p, want);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		char text[1024];

		snprintf(text, sizeof(text), "name: overflow\n" CONFIG_HEAD "%s"
			 "network:\n  input: [36]\n"
			 "  gates:\n    - layers: [{embedding: {vocab: 256, units: 4}}, global_avgpool1d, {dense: 2}]\n"
			 "optimizer: {type: adam, lr: 0.01}\n", maps[i].key);
		cfg = write_config("overflow-map.yaml", text);
		assert_int_equal(ak("check", cfg, NULL), 2);
		tu_assert_contains(g_err, maps[i].msg);
	}
}

/* export's probe (two samples through the network, to refuse weights
 * that overflow) feeds an embedding ids, not -1 and +1 (no ids): the
 * export of a sound model goes through. */
static void t_export_embedding(void **state)
{
	const char *cfg = write_config("export.yaml",
		"name: export\n" CONFIG_HEAD
		"  scale: 1\n"
		"network:\n  input: [36]\n"
		"  gates:\n    - layers: [{embedding: {vocab: 256, units: 3}}, "
		"{conv1d: {filters: 2, kernel: 3, padding: 1}}, global_maxpool1d, {dense: 2}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 50}\n");
	const char *out = tu_path(g_dir, "out-export");
	const char *onnx = tu_path(g_dir, "export.onnx");

	(void)state;
	assert_int_equal(ak("train", cfg, "--quiet", "--out", out, NULL), 0);
	if (ak("export", tu_path(out, "last.bin"), "--onnx", onnx, NULL) != 0)
		fail_msg("export: %s", g_err);
	assert_true(tu_exists(onnx));
}

/* gates: {auto: N} times every layer on made-up inputs before it splits
 * the network: an embedding gets token ids there, not noise (whose NaN
 * rows made the timed step fail on a non-finite gradient). */
static void t_auto_gates_time_embedding(void **state)
{
	const char *cfg = write_config("auto.yaml",
		"name: auto\n" CONFIG_HEAD
		"  scale: 1\n"
		"network:\n  input: [36]\n  gates: {auto: 2}\n"
		"  layers: [{embedding: {vocab: 256, units: 5}}, "
		"{conv1d: {filters: 4, kernel: 3}}, relu, global_maxpool1d, {dense: 2}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 20}\n");

	(void)state;
	if (ak("check", cfg, NULL) != 0)
		fail_msg("check: %s", g_err);
	tu_assert_contains(g_out, "\nsplit (gates: {auto: 2}, by measured time): "
			   "network.gates.split=[");
	if (ak("bench", "--layers", "-c", cfg, NULL) != 0)
		fail_msg("bench --layers: %s", g_err);
	tu_assert_contains(g_out, "\n1     1      embedding  [36, 5]  ");
}

/* bench --layers attributes a conv1d's FLOPs to GEMM time, as a conv2d's:
 * here it is the network's only product. */
static void t_bench_attributes_products(void **state)
{
	static const char *const nets[] = {
		"[{conv1d: {filters: 2, kernel: 3}}, global_avgpool1d]",
		"[{lstm: 6}]",
		"[{gru: {units: 5, return_sequences: true}}, {rnn: 4}]",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		char text[1024];
		const char *cfg, *at;
		double gemm = -1;

		snprintf(text, sizeof(text), "name: gemm\n" CONFIG_HEAD
			 "network:\n  input: [12, 3]\n  gates:\n    - layers: %s\n"
			 "optimizer: {type: sgd, lr: 0.1}\n"
			 "schedule: {mode: flip-flop, epochs: 1, batch_size: 20}\n", nets[i]);
		cfg = write_config("gemm.yaml", text);
		if (ak("bench", "--layers", "-c", cfg, NULL) != 0)
			fail_msg("bench --layers: %s", g_err);
		at = strstr(g_out, "; GEMM ");
		assert_non_null(at);
		assert_int_equal(sscanf(at, "; GEMM %lf%%", &gemm), 1);
		if (!(gemm > 0))
			fail_msg("no GEMM time attributed to %s:\n%s", nets[i], g_out);
	}
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	/* 6 x 6 bytes a sample: [12, 3] or 36 ids */
	tu_write_set(g_dir, "train", 200, 6, 2, 1);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_grad_embedding),
		cmocka_unit_test(t_grad_conv1d),
		cmocka_unit_test(t_grad_conv1d_in_residual),
		cmocka_unit_test(t_grad_pools1d),
		cmocka_unit_test(t_grad_global_pools1d),
		cmocka_unit_test(t_numpy_reference),
		cmocka_unit_test(t_maxpool_ties_and_nan),
		cmocka_unit_test(t_embedding_bad_ids),
		cmocka_unit_test(t_embedding_init),
		cmocka_unit_test(t_plans),
		cmocka_unit_test(t_plan_errors),
		cmocka_unit_test(t_check_errors),
		cmocka_unit_test(t_train_conv1d),
		cmocka_unit_test(t_train_embedding),
		cmocka_unit_test(t_train_bad_ids_stop),
		cmocka_unit_test(t_export_embedding),
		cmocka_unit_test(t_auto_gates_time_embedding),
		cmocka_unit_test(t_bench_attributes_products),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
