/* optim.c - SGD family, RMSProp, Adam family; LR schedules. */
#include "nn/optim.h"

#include "base/clones.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

const char *const akk_optim_names[] = {
	"sgd", "momentum", "nesterov", "rmsprop", "adam", "adamw", "radam", NULL,
};
const char *const akk_lr_names[] = {
	"constant", "step", "exponential", "cosine", "plateau", NULL,
};

static int find(const char *const *names, const char *name)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

const char *akk_optim_name(enum akk_optim_kind k)
{
	return (unsigned)k <= AKK_OPT_RADAM ? akk_optim_names[k] : NULL;
}

int akk_optim_find(const char *name)
{
	return find(akk_optim_names, name);
}

const char *akk_lr_name(enum akk_lr_kind k)
{
	return (unsigned)k <= AKK_LR_PLATEAU ? akk_lr_names[k] : NULL;
}

int akk_lr_find(const char *name)
{
	return find(akk_lr_names, name);
}

int akk_optim_state_per_param(enum akk_optim_kind k)
{
	switch (k) {
	case AKK_OPT_SGD:
		return 0;
	case AKK_OPT_MOMENTUM:
	case AKK_OPT_NESTEROV:
	case AKK_OPT_RMSPROP:
		return 1;
	case AKK_OPT_ADAM:
	case AKK_OPT_ADAMW:
	case AKK_OPT_RADAM:
		return 2;
	}
	return 0;
}

float akk_lr_at(const struct akk_optim_spec *o, double epoch, int epochs)
{
	const struct akk_lr_spec *s = &o->sched;
	double scale = o->lr_scale > 0 ? o->lr_scale : 1;
	double lr = o->lr * scale, e = epoch > 0 ? epoch : 0, v = lr;
	double W = s->warmup_epochs > 0 ? s->warmup_epochs : 0;
	double from = o->lr_scale > 0 ? o->lr : 0;	/* lr_scaling: Goyal */

	/* Warm-up ramps linearly to the configured lr; the schedule then
	 * starts from it, its own epochs counted after the warm-up. */
	if (e < W)
		return (float)(from + (lr - from) * e / W);
	e -= W;
	switch (s->kind) {
	case AKK_LR_CONSTANT:
	case AKK_LR_PLATEAU:	/* reduced by akk_lr_reduced */
		break;
	case AKK_LR_STEP:
		v = lr * pow(s->gamma, floor(e / (s->step_epochs > 0 ?
						   s->step_epochs : 1)));
		break;
	case AKK_LR_EXPONENTIAL:
		v = lr * pow(s->gamma, e);
		break;
	case AKK_LR_COSINE: {
		double E = epochs - W, x = E > 0 && e < E ? e / E : 1;

		v = s->min_lr + (lr - s->min_lr) * (1 + cos(M_PI * x)) / 2;
		break;
	}
	}
	return (float)v;
}

float akk_lr_reduced(const struct akk_optim_spec *o, float lr, int reductions)
{
	const struct akk_lr_spec *s = &o->sched;
	double v;

	if (s->kind != AKK_LR_PLATEAU || reductions <= 0)
		return lr;
	v = lr * pow(s->factor, reductions);
	return (float)(v > s->min_lr ? v : s->min_lr);
}

double akk_norm2(const float *g, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += (double)g[i] * g[i];
	return sqrt(s);
}

/* Each kernel below is one loop over the block; per-step scalars are
 * computed once, in double, by akk_optim_update. wd is the L2 coefficient
 * (g += wd w), 0 for adamw. State blocks: v or s is state[0, n); the
 * Adam family keeps m in state[0, n) and v in state[n, 2n).
 *
 * Each loop also reads the gradient through the clipping scale c (1.0f
 * when there is none: g * 1 is g, bit for bit) and leaves in g what
 * the caller asked for (struct pass): the clipped gradient, or zeros for
 * the next batch, while it ORs every gradient's exponent bits plus one
 * unit into *bad: bit 31 comes out set exactly when some gradient was
 * inf or NaN (their exponent bits are all ones). One pass over the
 * blocks, which the compiler vectorizes. */
struct pass {
	float c;	/* clipping scale, 1 for none */
	int zero;	/* 1: leave g zero; 0: leave the clipped g */
	uint32_t bad;	/* exponent bits + 1 unit, ORed */
};

/* g[i] through the clip, and what the pass leaves in its place. */
#define GRAD(gi, g, i, ps)						\
	float gi = g[i] * ps.c;						\
	{								\
		uint32_t b_;						\
		memcpy(&b_, &g[i], sizeof(b_));				\
		bad |= (b_ & 0x7f800000u) + 0x00800000u;		\
		g[i] = ps.zero ? 0.0f : gi;				\
	}

#define INLINE static inline __attribute__((always_inline))

INLINE void sgd(const float *w0, float *w, float *g, size_t n, float lr, float wd,
		struct pass *ps)
{
	uint32_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		GRAD(gi, g, i, (*ps));
		w[i] = w0[i] - lr * (gi + wd * w0[i]);
	}
	ps->bad |= bad;
}

/* v = mu v + g; w -= lr v, or lr (g + mu v) for Nesterov. torch starts
 * the buffer at g, which is mu*0 + g: the same. */
INLINE void momentum(const float *w0, float *w, float *g, float *v, size_t n, float lr,
		     float wd, float mu, int nesterov, struct pass *ps)
{
	uint32_t bad = 0;

	if (nesterov) {
		for (size_t i = 0; i < n; i++) {
			GRAD(g0, g, i, (*ps));
			float gi = g0 + wd * w0[i];
			v[i] = mu * v[i] + gi;
			w[i] = w0[i] - lr * (gi + mu * v[i]);
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			GRAD(g0, g, i, (*ps));
			v[i] = mu * v[i] + (g0 + wd * w0[i]);
			w[i] = w0[i] - lr * v[i];
		}
	}
	ps->bad |= bad;
}

/* s = rho s + (1-rho) g^2; w -= lr g / (sqrt(s) + eps). */
INLINE void rmsprop(const float *w0, float *w, float *g, float *s, size_t n, float lr,
		    float wd, float rho, float eps, struct pass *ps)
{
	float c = (float)(1.0 - (double)rho);
	uint32_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		GRAD(g0, g, i, (*ps));
		float gi = g0 + wd * w0[i];
		s[i] = rho * s[i] + c * gi * gi;
		w[i] = w0[i] - lr * gi / (sqrtf(s[i]) + eps);
	}
	ps->bad |= bad;
}

/* m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * w = keep w - step m / (sqrt(v) + eps2), where torch has
 * w - lr/(1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps): the same with
 * step = lr sqrt(1 - b2^t) / (1 - b1^t) and eps2 = eps sqrt(1 - b2^t)
 * (both in double, once a step), one division and one square root an
 * element instead of two divisions and a root (the divider is what an
 * Adam step waits for). keep = 1 - lr wd is AdamW's decoupled decay,
 * applied to w before the update as torch does (1 for Adam, an exact
 * no-op). */
INLINE void adam(const float *w0, float *w, float *g, float *m, float *v, size_t n,
		 float wd, float keep, float b1, float b2, float eps2,
		 float step, struct pass *ps)
{
	float c1 = (float)(1.0 - (double)b1), c2 = (float)(1.0 - (double)b2);
	uint32_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		GRAD(g0, g, i, (*ps));
		float gi = g0 + wd * w0[i], wi = w0[i] * keep;
		m[i] = b1 * m[i] + c1 * gi;
		v[i] = b2 * v[i] + c2 * gi * gi;
		w[i] = wi - step * m[i] / (sqrtf(v[i]) + eps2);
	}
	ps->bad |= bad;
}

/* RAdam, torch's form: moments as Adam; with r the rectification term,
 * w -= lr r sqrt(1 - b2^t) mhat / (sqrt(v) + eps) once rho_t > 5, else
 * w -= lr mhat (plain momentum, no second moment). mhat = m / bc1. */
INLINE void radam(const float *w0, float *w, float *g, float *m, float *v, size_t n,
		  float lr, float wd, float b1, float b2, float eps,
		  float bc1, int rectify, float rect_bc2s, struct pass *ps)
{
	float c1 = (float)(1.0 - (double)b1), c2 = (float)(1.0 - (double)b2);
	uint32_t bad = 0;

	if (rectify) {
		for (size_t i = 0; i < n; i++) {
			GRAD(g0, g, i, (*ps));
			float gi = g0 + wd * w0[i];
			m[i] = b1 * m[i] + c1 * gi;
			v[i] = b2 * v[i] + c2 * gi * gi;
			w[i] = w0[i] - m[i] / bc1 * lr * (rect_bc2s /
						   (sqrtf(v[i]) + eps));
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			GRAD(g0, g, i, (*ps));
			float gi = g0 + wd * w0[i];
			m[i] = b1 * m[i] + c1 * gi;
			v[i] = b2 * v[i] + c2 * gi * gi;
			w[i] = w0[i] - m[i] / bc1 * lr;
		}
	}
	ps->bad |= bad;
}

double akk_optim_clip(const struct akk_optim_spec *o, const float *g, size_t n)
{
	/* torch's clip_grad_norm_: scale by clip / (norm + 1e-6) when that
	 * is below 1. */
	if (o->clip_norm > 0) {
		double c = o->clip_norm / (akk_norm2(g, n) + 1e-6);

		if (c < 1)
			return c;
	}
	return 1;
}

/* akk_optim_update's body, for one kind of pass: zero is a constant at
 * each call, so each kernel's loop is compiled once per pass. */
INLINE uint32_t update(const struct akk_optim_spec *o, const float *w0,
		       float *w, float *g, float *state, size_t n, size_t lo,
		       size_t hi, long t, float lr, double clip, const int zero)
{
	float wd = o->weight_decay;
	double b1 = o->beta1, b2 = o->beta2;
	size_t m = hi - lo;
	float *s2 = state + n + lo;	/* the Adam family's v block */
	struct pass ps = { clip < 1 ? (float)clip : 1.0f, zero, 0 };

	assert(t >= 1 && lo <= hi && hi <= n);
	w0 += lo;
	w += lo;
	g += lo;
	state += lo;
	switch (o->kind) {
	case AKK_OPT_SGD:
		sgd(w0, w, g, m, lr, wd, &ps);
		break;
	case AKK_OPT_MOMENTUM:
	case AKK_OPT_NESTEROV:
		momentum(w0, w, g, state, m, lr, wd, o->momentum,
			 o->kind == AKK_OPT_NESTEROV, &ps);
		break;
	case AKK_OPT_RMSPROP:
		rmsprop(w0, w, g, state, m, lr, wd, o->rho, o->eps, &ps);
		break;
	case AKK_OPT_ADAM:
	case AKK_OPT_ADAMW: {
		int decoupled = o->kind == AKK_OPT_ADAMW;
		double bc2s = sqrt(1 - pow(b2, t));

		adam(w0, w, g, state, s2, m, decoupled ? 0 : wd,
		     decoupled ? (float)(1.0 - (double)lr * wd) : 1,
		     o->beta1, o->beta2, (float)(o->eps * bc2s),
		     (float)(lr * bc2s / (1 - pow(b1, t))), &ps);
		break;
	}
	case AKK_OPT_RADAM: {
		double bc2 = 1 - pow(b2, t);
		double rho_inf = 2 / (1 - b2) - 1;
		double rho_t = rho_inf - 2 * t * pow(b2, t) / bc2;
		double rect = 0;

		if (rho_t > 5)
			rect = sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
				    ((rho_inf - 4) * (rho_inf - 2) * rho_t));
		radam(w0, w, g, state, s2, m, lr, wd, o->beta1, o->beta2,
		      o->eps, (float)(1 - pow(b1, t)), rho_t > 5,
		      (float)(rect * sqrt(bc2)), &ps);
		break;
	}
	}
	return ps.bad;
}

/* Two bodies each (base/clones.h): AVX2 runs 8 lanes of the divisions
 * and square roots at a time, with the same bits. */
AKK_CLONES
void akk_optim_update(const struct akk_optim_spec *o, float *w, float *g,
		      float *state, size_t n, size_t lo, size_t hi, long t,
		      float lr, double clip)
{
	update(o, w, w, g, state, n, lo, hi, t, lr, clip, 0);
}

AKK_CLONES
int akk_optim_update_zero(const struct akk_optim_spec *o, const float *from,
			  float *w, float *g, float *state, size_t n, size_t lo,
			  size_t hi, long t, float lr, double clip)
{
	return !(update(o, from, w, g, state, n, lo, hi, t, lr, clip, 1) & 0x80000000u);
}

void akk_optim_step(const struct akk_optim_spec *o, float *w, float *g,
		    float *state, size_t n, long t, float lr)
{
	akk_optim_update(o, w, g, state, n, 0, n, t, lr, akk_optim_clip(o, g, n));
}
