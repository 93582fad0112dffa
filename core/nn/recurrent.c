/* recurrent.c - the planning, initialisation and time loops the recurrent
 * kinds (lstm, gru, rnn) share; each kind's cell does the step's
 * arithmetic (recurrent.h has the layouts). */
#include "nn/recurrent.h"
#include "nn/export.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"

/* ---- the gates' activations, vectorized ------------------------------
 * libm's expf and tanhf are calls the compiler cannot vectorize, and at a
 * few nanoseconds each they would cost more than the products (an LSTM
 * step of 64 x 128 units takes 40,000 of them). These work on GCC's
 * generic 8-float vectors, selects as masks, in two bodies from one
 * inline source as tensor/smallmm.c does: AVX2 where the CPU has it, the
 * x86-64 baseline otherwise; no contraction into FMAs, so both give the
 * same bits. e^x is Cephes' expf (x = k ln2 + r, |r| <= ln2 / 2, a
 * degree-6 polynomial, 2^k put into the exponent bits; x clamped to
 * [-87, 88]), within 2 ulp; tanh is Cephes' tanhf (its odd polynomial
 * below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above), within 3 ulp. */

#pragma GCC diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__((always_inline))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(AKK_BASELINE)
#define HAVE_AVX2 1
#define AVX2 __attribute__((target("avx2")))
static int avx2(void)
{
	return __builtin_cpu_supports("avx2");
}
#else
#define HAVE_AVX2 0
#endif

/* The baseline body: 4-float vectors (SSE2 on x86-64: a 32-byte vector
 * outside an AVX function changes the ABI, which clang refuses). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#define VF v4f
#define VI v4i
#define VN 4
#define TARGET
#define FN(name) name##_base
#include "nn/recurrent_vmath.h"
#undef VF
#undef VI
#undef VN
#undef TARGET
#undef FN

#if HAVE_AVX2	/* the same lane by lane on 8-float vectors */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
#define VF v8f
#define VI v8i
#define VN 8
#define TARGET AVX2
#define FN(name) name##_avx2
#include "nn/recurrent_vmath.h"
#endif

/* 1: the baseline body even where the CPU has AVX2 (the tests'). */
static int g_baseline;

void akk_rec_vmath_baseline(int on)
{
	g_baseline = on;
}

void akk_rec_sigmoid(float *v, size_t n)
{
#if HAVE_AVX2
	if (!g_baseline && avx2()) {
		sigmoid_avx2(v, n);
		return;
	}
#endif
	sigmoid_base(v, n);
}

void akk_rec_tanh(float *v, size_t n)
{
#if HAVE_AVX2
	if (!g_baseline && avx2()) {
		tanh_avx2(v, n);
		return;
	}
#endif
	tanh_base(v, n);
}

const char *const akk_rec_direction_names[] = { "forward", "reverse",
						"bidirectional", NULL };

struct akk_rec akk_rec_of(const struct akk_layer *l, const struct akk_rec_cell *c)
{
	const struct akk_layer_spec *sp = l->spec;
	int dir = sp->AKK_REC_DIR;

	return (struct akk_rec){ .T = l->in.d[0], .F = l->in.d[1],
				 .H = sp->units, .G = c->G, .E = c->E, .C = c->C,
				 .dirs = dir == AKK_REC_BIDIRECTIONAL ? 2 : 1,
				 .seq = sp->AKK_REC_SEQ != 0,
				 .first_reverse = dir == AKK_REC_REVERSE,
				 .hh_apart = c->hh_apart,
				 .relu = sp->AKK_REC_ACT == 1,
				 .stateful = sp->AKK_REC_STATE != 0,
				 .rows = l->max_batch };
}

/* Floats of one pass's parameters: W_ih, W_hh, b_ih, b_hh. */
static size_t pass_params(const struct akk_rec *r)
{
	size_t gh = (size_t)r->G * r->H;

	return gh * r->F + gh * r->H + 2 * gh;
}

/* Floats per step and sample of one pass's aux: gates, h, extra. */
static size_t pass_aux_step(const struct akk_rec *r)
{
	return (size_t)r->H * (r->G + 1 + r->E);
}

/* Floats per sample of a stateful pass's initial state: h0, and the
 * LSTM's c0; 0 without state. */
static size_t pass_aux_init(const struct akk_rec *r)
{
	return r->stateful ? (size_t)r->H * (1 + r->C) : 0;
}

static const char *const view_names[2][4] = {
	{ "weight_ih", "weight_hh", "bias_ih", "bias_hh" },
	{ "weight_ih_reverse", "weight_hh_reverse", "bias_ih_reverse",
	  "bias_hh_reverse" },
};

static void set_views(struct akk_layer *l, const struct akk_rec *r)
{
	int gh = r->G * r->H;
	size_t off = 0;

	l->nviews = 4 * r->dirs;
	for (int k = 0; k < r->dirs; k++) {
		struct akk_view *v = l->views + 4 * k;
		v[0] = (struct akk_view){ view_names[k][0], 0, off, 2, { gh, r->F, 0, 0 } };
		off += (size_t)gh * r->F;
		v[1] = (struct akk_view){ view_names[k][1], 0, off, 2, { gh, r->H, 0, 0 } };
		off += (size_t)gh * r->H;
		v[2] = (struct akk_view){ view_names[k][2], 0, off, 1, { gh, 0, 0, 0 } };
		off += gh;
		v[3] = (struct akk_view){ view_names[k][3], 0, off, 1, { gh, 0, 0, 0 } };
		off += gh;
	}
	if (!r->stateful)
		return;
	/* the carried state, in the state block: h, then the LSTM's c */
	for (int k = 0; k <= r->C; k++)
		l->views[l->nviews++] = (struct akk_view){
			k ? "state_c" : "state_h", 1, (size_t)k * r->rows * r->H, 2,
			{ r->rows, r->H, 0, 0 } };
}

/* A stateful layer carries the forward pass's last state into the next
 * batch; a reverse pass would start from the state after the window's
 * first step, which the next window does not follow. */
static int plan_state(const struct akk_layer *l, const struct akk_rec *r,
		      struct akk_err *e)
{
	if (!r->stateful)
		return 0;
	if (r->dirs != 1 || r->first_reverse)
		return akk_err_set(e, "stateful carries the state after a window's "
				   "last step into the next window: it needs "
				   "direction forward, not %s",
				   akk_rec_direction_names[l->spec->AKK_REC_DIR]);
	if (l->max_batch < 1)
		return akk_err_set(e, "stateful keeps a state per batch row: it "
				   "needs a gate's layer list, not a composite's");
	return 0;
}

int akk_rec_plan(struct akk_layer *l, const struct akk_rec_cell *c,
		 struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 2)
		return akk_err_set(e, "expects a sequence [T, features], got %s "
				   "(network.input: [T, F] is one)", buf);
	if (sp->units <= 0)
		return akk_err_set(e, "expects units > 0, got %d", sp->units);
	if (sp->AKK_REC_DIR < 0 || sp->AKK_REC_DIR > AKK_REC_BIDIRECTIONAL)
		return akk_err_set(e, "expects direction forward, reverse or "
				   "bidirectional");
	struct akk_rec r = akk_rec_of(l, c);
	double T = r.T, F = r.F, H = r.H, gh = (double)r.G * H, dirs = r.dirs;
	double np = dirs * (gh * F + gh * H + 2 * gh);
	double aux = dirs * T * H * (r.G + 1 + r.E) + (double)pass_aux_init(&r);
	double nstate = r.stateful ? (double)r.rows * H * (1 + r.C) : 0;
	double ws = 2 * T * F + T * gh * (1 + r.hh_apart) + 3 * H;
	double out = (r.seq ? T : 1) * dirs * H;

	if (plan_state(l, &r, e))
		return -1;
	if (nstate > (double)AKK_MAX_FLOATS)
		return akk_err_set(e, "stateful: %d rows of %d units would be more "
				   "than %zu floats of state", r.rows, r.H,
				   AKK_MAX_FLOATS);
	if (np > (double)AKK_MAX_FLOATS)
		return akk_err_set(e, "%d units over %d features would be %.0f "
				   "parameters, more than %zu", r.H, r.F, np,
				   AKK_MAX_FLOATS);
	/* also bounds T B rows of F and G H for any batch the gate allows */
	if (aux > (double)AKK_MAX_DIM || ws > (double)AKK_MAX_DIM ||
	    out > (double)AKK_MAX_DIM || gh > (double)AKK_MAX_DIM)
		return akk_err_set(e, "%d units over %d steps would keep more "
				   "than %zu values per sample", r.H, r.T,
				   AKK_MAX_DIM);
	l->out = r.seq ? (struct akk_shape){ 2, { r.T, r.dirs * r.H, 0 } }
		       : (struct akk_shape){ 1, { r.dirs * r.H, 0, 0 } };
	l->nparams = (size_t)np;
	l->nstate = (size_t)nstate;
	l->ncarry = l->nstate;
	l->aux = (size_t)aux;
	l->work = 0;
	l->work_sample = (size_t)ws;
	/* the input products, the recurrent ones (none at a pass's first
	 * step when the state starts at zero), the two biases, the cell's
	 * arithmetic */
	l->flops = dirs * (2 * T * F * gh + 2 * (T - !r.stateful) * H * gh +
			   2 * T * gh + T * H * c->step_flops);
	set_views(l, &r);
	return 0;
}

void akk_rec_init(const struct akk_layer *l, const struct akk_rec_cell *c,
		  float *p, float *s, struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	struct akk_rec r = akk_rec_of(l, c);
	size_t gh = (size_t)r.G * r.H, n = pass_params(&r);

	for (int k = 0; k < r.dirs; k++) {
		float *q = p + k * n;
		if (sp->init == AKK_INIT_DEFAULT) {	/* U(+-1/sqrt(H)) */
			akk_init_fill(q, n, r.H, r.H, AKK_INIT_LECUN_UNIFORM, 0, rng);
			continue;
		}
		akk_init_fill(q, gh * r.F, r.F, (int)gh, sp->init, sp->init_value, rng);
		akk_init_fill(q + gh * r.F, gh * r.H, r.H, (int)gh, sp->init,
			      sp->init_value, rng);
		memset(q + gh * (r.F + r.H), 0, 2 * gh * sizeof(*q));
	}
	if (l->nstate)
		memset(s, 0, l->nstate * sizeof(*s));
}

/* Pass k's parameters in p and blocks in aux (B samples). */
static struct akk_rec_pass pass_of(const struct akk_rec *r, int k,
				   const float *p, float *aux, int B)
{
	size_t gh = (size_t)r->G * r->H, tb = (size_t)r->T * B;
	const float *q = p + k * pass_params(r);
	float *a = aux ? aux + k * (tb * pass_aux_step(r) + B * pass_aux_init(r)) : NULL;
	struct akk_rec_pass ps = { .reverse = k == 1 || r->first_reverse };

	ps.wih = q;
	ps.whh = q + gh * r->F;
	ps.bih = ps.whh + gh * r->H;
	ps.bhh = ps.bih + gh;
	if (!aux)	/* the parameters alone (the export) */
		return ps;
	/* stateful: h0 (B, H) before h, the LSTM's c0 (B, H) before extra */
	size_t h0 = r->stateful ? (size_t)B * r->H : 0;
	ps.gates = a;
	ps.h = a + tb * gh + h0;
	ps.extra = r->E ? ps.h + tb * r->H + h0 * r->C : NULL;
	return ps;
}

/* The time of a pass's s-th step. */
static int step_time(const struct akk_rec *r, const struct akk_rec_pass *ps,
		     int s)
{
	return ps->reverse ? r->T - 1 - s : s;
}

/* x (B, T, F) into xt (T, B, F), and back. */
static void to_time_major(float *xt, const float *x, int B, int T, int F)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			memcpy(xt + ((size_t)t * B + b) * F,
			       x + ((size_t)b * T + t) * F, F * sizeof(*x));
}

static void from_time_major(float *x, const float *xt, int B, int T, int F)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			memcpy(x + ((size_t)b * T + t) * F,
			       xt + ((size_t)t * B + b) * F, F * sizeof(*x));
}

/* Pass k's hidden states into y: every step's at features k H.. of
 * [T, dirs H], or the last step's (time T-1 forward, 0 reverse). */
static void put_output(float *y, const struct akk_rec *r,
		       const struct akk_rec_pass *ps, int k, int B)
{
	int H = r->H, T = r->T, W = r->dirs * H, last = ps->reverse ? 0 : T - 1;

	for (int b = 0; b < B; b++) {
		if (!r->seq) {
			memcpy(y + (size_t)b * W + (size_t)k * H,
			       ps->h + ((size_t)last * B + b) * H, H * sizeof(*y));
			continue;
		}
		for (int t = 0; t < T; t++)
			memcpy(y + ((size_t)b * T + t) * W + (size_t)k * H,
			       ps->h + ((size_t)t * B + b) * H, H * sizeof(*y));
	}
}

/* n rows of m floats: each row = a (+ b when b is not NULL). */
static void fill_rows(float *d, const float *a, const float *b, size_t n, int m)
{
	for (size_t i = 0; i < n; i++, d += m)
		for (int j = 0; j < m; j++)
			d[j] = b ? a[j] + b[j] : a[j];
}

/* One pass forward: the gates of all steps start as the biases plus one
 * product (T B, F) (F, G H); then each step adds hprev W_hh^T (one
 * product of B rows) and the cell does the rest. */
static void pass_forward(const struct akk_layer *l, const struct akk_rec_cell *c,
			 const struct akk_rec *r, const struct akk_rec_pass *ps,
			 const float *xt, float *hh, int B)
{
	int H = r->H, gh = r->G * r->H, T = r->T;
	size_t tb = (size_t)T * B;

	fill_rows(ps->gates, ps->bih, c->hh_apart ? NULL : ps->bhh, tb, gh);
	akk_sgemm(l->pool, 0, 1, (int)tb, gh, r->F, 1, xt, r->F, ps->wih, r->F,
		  1, ps->gates, gh);
	for (int s = 0; s < T; s++) {
		int t = step_time(r, ps, s), prev = ps->reverse ? t + 1 : t - 1;
		/* stateful: h0 at prev = -1 */
		const float *hprev = s || r->stateful ? ps->h + (ptrdiff_t)prev * B * H
						      : NULL;
		float *acc = c->hh_apart ? hh : ps->gates + (size_t)t * B * gh;

		if (c->hh_apart)
			fill_rows(hh, ps->bhh, NULL, B, gh);
		if (hprev)
			akk_sgemm(l->pool, 0, 1, B, gh, H, 1, hprev, H, ps->whh,
				  H, 1, acc, gh);
		c->forward(r, ps, t, hprev, c->hh_apart ? hh : NULL, B);
	}
}

/* A stateful pass's initial state (h0, c0: the blocks before h and
 * extra) from the carried state s (rows (max_batch, H) of h, then of c),
 * or zero (evaluation, and a batch of more rows than the block keeps);
 * and after the pass, its last step's state back into s. */
static void state_in(const struct akk_rec *r, const struct akk_rec_pass *ps,
		     const float *s, int carry, int B)
{
	size_t n = (size_t)B * r->H, rows = (size_t)r->rows * r->H;

	for (int k = 0; k <= r->C; k++) {
		float *to = (k ? ps->extra : ps->h) - n;
		if (carry)
			memcpy(to, s + k * rows, n * sizeof(*to));
		else
			memset(to, 0, n * sizeof(*to));
	}
}

static void state_out(const struct akk_rec *r, const struct akk_rec_pass *ps,
		      float *s, int B)
{
	size_t n = (size_t)B * r->H, rows = (size_t)r->rows * r->H;
	size_t last = (size_t)(r->T - 1) * n;

	memcpy(s, ps->h + last, n * sizeof(*s));
	if (r->C)
		memcpy(s + rows, ps->extra + last, n * sizeof(*s));
}

void akk_rec_forward(const struct akk_layer *l, const struct akk_rec_cell *c,
		     float *y, float *aux, float *s, float *work, const float *x,
		     const float *p, int B, int train)
{
	struct akk_rec r = akk_rec_of(l, c);
	size_t tb = (size_t)r.T * B;
	/* the scratch as the backward lays it out: xt, then hh where the
	 * backward keeps the input gradient */
	float *xt = work, *hh = work + tb * r.F;
	int carry = r.stateful && train && B <= r.rows;

	to_time_major(xt, x, B, r.T, r.F);
	for (int k = 0; k < r.dirs; k++) {
		struct akk_rec_pass ps = pass_of(&r, k, p, aux, B);
		if (r.stateful)
			state_in(&r, &ps, s, carry, B);
		pass_forward(l, c, &r, &ps, xt, hh, B);
		if (carry)
			state_out(&r, &ps, s, B);
		put_output(y, &r, &ps, k, B);
	}
}

/* dh (B, H) += pass k's part of dy at time t: every step's with
 * return_sequences, else the last step's only. */
static void add_dy(float *dh, const float *dy, const struct akk_rec *r,
		   const struct akk_rec_pass *ps, int k, int t, int B)
{
	int H = r->H, T = r->T, W = r->dirs * H;

	if (!r->seq && t != (ps->reverse ? 0 : T - 1))
		return;
	for (int b = 0; b < B; b++) {
		const float *d = r->seq ? dy + ((size_t)b * T + t) * W + (size_t)k * H
					: dy + (size_t)b * W + (size_t)k * H;
		for (int j = 0; j < H; j++)
			dh[(size_t)b * H + j] += d[j];
	}
}

/* db (m) += the column sums of g (n rows of m). */
static void add_column_sums(float *db, const float *g, size_t n, int m)
{
	for (size_t i = 0; i < n; i++, g += m)
		for (int j = 0; j < m; j++)
			db[j] += g[j];
}

/* The scratch of a backward call: struct akk_rec's comment. */
struct bwd {
	float *xt, *dxt, *dgi, *dgh, *dh, *dhp, *carry;
};

static struct bwd bwd_of(const struct akk_rec *r, float *work, int B)
{
	size_t tb = (size_t)r->T * B, tg = tb * r->G * r->H;
	struct bwd w = { .xt = work };

	w.dxt = w.xt + tb * r->F;
	w.dgi = w.dxt + tb * r->F;
	w.dgh = r->hh_apart ? w.dgi + tg : w.dgi;
	w.dh = w.dgh + tg;
	w.dhp = w.dh + (size_t)B * r->H;
	w.carry = w.dhp + (size_t)B * r->H;
	return w;
}

/* One pass backward: the steps in reverse order, each giving its gate
 * gradients and (one product of B rows) the gradient at the state before;
 * then the parameter gradients over all steps, one product each, and the
 * input gradient (time-major, into w->dxt; the second pass adds). */
static void pass_backward(const struct akk_layer *l, const struct akk_rec_cell *c,
			  const struct akk_rec *r, const struct akk_rec_pass *ps,
			  int k, struct bwd *w, float *dq, const float *dy,
			  int with_dx, int B)
{
	int H = r->H, gh = r->G * r->H, T = r->T, F = r->F;
	size_t tb = (size_t)T * B;
	float *dwih = dq, *dwhh = dq + (size_t)gh * F, *dbih = dwhh + (size_t)gh * H;
	float *dbhh = dbih + gh;

	memset(w->dh, 0, (size_t)B * H * sizeof(float));
	memset(w->carry, 0, (size_t)B * H * sizeof(float));
	for (int s = T - 1; s >= 0; s--) {
		int t = step_time(r, ps, s), prev = ps->reverse ? t + 1 : t - 1;
		/* stateful: h0 at prev = -1, an input: no gradient goes to it */
		const float *hprev = s || r->stateful ? ps->h + (ptrdiff_t)prev * B * H
						      : NULL;
		float *dgi = w->dgi + (size_t)t * B * gh, *dgh = w->dgh + (size_t)t * B * gh;
		float *swap;

		add_dy(w->dh, dy, r, ps, k, t, B);
		c->backward(r, ps, t, hprev, w->dh, dgi, dgh, w->dhp, w->carry, B);
		if (s)	/* dhprev (+)= dgh W_hh */
			akk_sgemm(l->pool, 0, 0, B, H, gh, 1, dgh, gh, ps->whh, H,
				  c->hh_apart ? 1 : 0, w->dhp, H);
		swap = w->dh;
		w->dh = w->dhp;
		w->dhp = swap;
	}
	add_column_sums(dbih, w->dgi, tb, gh);
	add_column_sums(dbhh, w->dgh, tb, gh);
	/* dW_ih += dG^T X over all steps; dW_hh += dG^T hprev over the steps
	 * that have one: rows from time 1 against h from time 0 forward,
	 * rows from time 0 against h from time 1 in reverse; stateful (forward
	 * only), every row against h from time -1, h0 */
	akk_sgemm(l->pool, 1, 0, gh, F, (int)tb, 1, w->dgi, gh, w->xt, F, 1,
		  dwih, F);
	if (r->stateful)
		akk_sgemm(l->pool, 1, 0, gh, H, (int)tb, 1, w->dgh, gh,
			  ps->h - (size_t)B * H, H, 1, dwhh, H);
	else if (T > 1)
		akk_sgemm(l->pool, 1, 0, gh, H, (T - 1) * B, 1,
			  ps->reverse ? w->dgh : w->dgh + (size_t)B * gh, gh,
			  ps->reverse ? ps->h + (size_t)B * H : ps->h, H, 1,
			  dwhh, H);
	if (with_dx)
		akk_sgemm(l->pool, 0, 0, (int)tb, F, gh, 1, w->dgi, gh, ps->wih,
			  F, k ? 1 : 0, w->dxt, F);
}

void akk_rec_backward(const struct akk_layer *l, const struct akk_rec_cell *c,
		      float *dx, float *dp, float *work, const float *dy,
		      const float *x, const float *aux, const float *p, int B)
{
	struct akk_rec r = akk_rec_of(l, c);
	struct bwd w = bwd_of(&r, work, B);

	to_time_major(w.xt, x, B, r.T, r.F);
	for (int k = 0; k < r.dirs; k++) {
		/* the cells read aux only: the cast serves pass_of's one
		 * layout for both directions of the call */
		struct akk_rec_pass ps = pass_of(&r, k, p, (float *)aux, B);
		pass_backward(l, c, &r, &ps, k, &w, dp + k * pass_params(&r), dy,
			      dx != NULL, B);
	}
	if (dx)
		from_time_major(dx, w.dxt, B, r.T, r.F);
}

/* ---- ONNX ---------------------------------------------------------- */

/* ONNX's W (dirs, G H, F), R (dirs, G H, H) and B (dirs, 2 G H) from p,
 * each pass's gate blocks in ONNX's order: block k is torch's perm[k]. */
static int put_onnx_weights(const struct akk_rec *r, const int *perm,
			    struct akk_graph_sink *g, const struct akk_export_io *io,
			    const char *wn, const char *rn, const char *bn,
			    struct akk_err *e)
{
	size_t gh = (size_t)r->G * r->H, hf = (size_t)r->H * r->F,
	       hh = (size_t)r->H * r->H, np = pass_params(r);
	float *w = malloc(r->dirs * np * sizeof(*w));
	float *rr = w ? w + r->dirs * gh * r->F : NULL;
	float *b = rr ? rr + r->dirs * gh * r->H : NULL;
	int64_t wd[3] = { r->dirs, (int64_t)gh, r->F }, rd[3] = { r->dirs, (int64_t)gh, r->H };
	int64_t bd[2] = { r->dirs, 2 * (int64_t)gh };
	int rc;

	if (!w)
		return akk_err_set(e, "out of memory");
	for (int k = 0; k < r->dirs; k++) {
		struct akk_rec_pass ps = pass_of(r, k, io->p, NULL, 0);
		for (int q = 0; q < r->G; q++) {
			size_t from = (size_t)perm[q] * r->H;
			memcpy(w + k * gh * r->F + q * hf, ps.wih + from * r->F,
			       hf * sizeof(*w));
			memcpy(rr + k * gh * r->H + q * hh, ps.whh + from * r->H,
			       hh * sizeof(*w));
			memcpy(b + k * 2 * gh + q * r->H, ps.bih + from,
			       r->H * sizeof(*w));
			memcpy(b + k * 2 * gh + gh + q * r->H, ps.bhh + from,
			       r->H * sizeof(*w));
		}
	}
	rc = g->tensor(g, wn, wd, 3, w, e) || g->tensor(g, rn, rd, 3, rr, e) ||
	     g->tensor(g, bn, bd, 2, b, e) ? -1 : 0;
	free(w);
	return rc;
}

/* ONNX's Y (T, dirs, N, H) as [N, T, dirs H]: for two passes, Split
 * along the directions and Concat along the features first; then
 * Transpose to [N, T, 1, dirs H] and drop the unit axis with ReduceMax
 * (opset 13 takes its axes as an attribute: no int64 tensor needed; the
 * max of one value is the value). */
static int onnx_sequence_out(const struct akk_rec *r, struct akk_graph_sink *g,
			     const struct akk_export_io *io, const char *y,
			     struct akk_err *e)
{
	char yf[256], yb[256], cat[256], tr[256];
	const char *halves[2] = { akk_export_name(yf, sizeof(yf), io->prefix, "y_forward"),
				  akk_export_name(yb, sizeof(yb), io->prefix, "y_reverse") };
	const char *in = y;
	int64_t perm[4] = { 2, 0, 1, 3 }, axes[1] = { 2 };
	struct akk_attr split[] = { AKK_ATTR_I("axis", 1) };
	struct akk_attr concat[] = { AKK_ATTR_I("axis", 3) };
	struct akk_attr tp[] = { AKK_ATTR_IS("perm", perm, 4) };
	struct akk_attr red[] = { AKK_ATTR_IS("axes", axes, 1), AKK_ATTR_I("keepdims", 0) };

	if (r->dirs == 2) {
		in = akk_export_name(cat, sizeof(cat), io->prefix, "y_concat");
		if (g->node(g, "Split", &y, 1, halves, 2, split, 1, e) ||
		    g->node(g, "Concat", halves, 2, &in, 1, concat, 1, e))
			return -1;
	}
	akk_export_name(tr, sizeof(tr), io->prefix, "y_batch_major");
	const char *trp = tr;
	return g->node(g, "Transpose", &in, 1, &trp, 1, tp, 1, e) ||
	       g->node(g, "ReduceMax", &trp, 1, &io->y, 1, red, 2, e) ? -1 : 0;
}

int akk_rec_export(const struct akk_layer *l, const struct akk_rec_cell *c,
		   const char *op, const int *perm, const struct akk_attr *extra,
		   int nextra, struct akk_graph_sink *g,
		   const struct akk_export_io *io, struct akk_err *e)
{
	struct akk_rec r = akk_rec_of(l, c);
	char xt[256], wn[256], rn[256], bn[256], y[256], tr[256];
	const char *ins[4] = { akk_export_name(xt, sizeof(xt), io->prefix, "x_time_major"),
			       akk_export_name(wn, sizeof(wn), io->prefix, "W"),
			       akk_export_name(rn, sizeof(rn), io->prefix, "R"),
			       akk_export_name(bn, sizeof(bn), io->prefix, "B") };
	const char *yn = akk_export_name(y, sizeof(y), io->prefix, r.seq ? "Y" : "Y_h");
	/* the last step: Y_h, the operator's second output */
	const char *outs[2] = { r.seq ? yn : "", yn };
	const char *trp = akk_export_name(tr, sizeof(tr), io->prefix, "y_batch_major");
	int64_t p102[3] = { 1, 0, 2 };
	struct akk_attr tp[] = { AKK_ATTR_IS("perm", p102, 3) };
	struct akk_attr flat[] = { AKK_ATTR_I("axis", 1) };
	struct akk_attr at[4] = {
		AKK_ATTR_I("hidden_size", r.H),
		AKK_ATTR_S("direction", akk_rec_direction_names[l->spec->AKK_REC_DIR]),
	};
	int nat = 2;

	for (int i = 0; i < nextra && nat < 4; i++)
		at[nat++] = extra[i];
	if (g->node(g, "Transpose", &io->x, 1, &ins[0], 1, tp, 1, e) ||
	    put_onnx_weights(&r, perm, g, io, wn, rn, bn, e) ||
	    g->node(g, op, ins, 4, outs, r.seq ? 1 : 2, at, nat, e))
		return -1;
	if (r.seq)
		return onnx_sequence_out(&r, g, io, yn, e);
	/* Y_h (dirs, N, H) -> [N, dirs, H] -> [N, dirs H] */
	return g->node(g, "Transpose", &yn, 1, &trp, 1, tp, 1, e) ||
	       g->node(g, "Flatten", &trp, 1, &io->y, 1, flat, 1, e) ? -1 : 0;
}
