/* layer_maxpool2d.c - 2-D max pooling.
 *
 * Input [C, H, W], window k x k, stride s (0 means s = k, the default),
 * padding p <= k / 2 (as torch requires); output [C, Ho, Wo] with
 * Ho = (H + 2p - k) / s + 1 (floor, torch's ceil_mode=False). Padding acts
 * as -inf, so it is never the maximum. Ties go to the first element in
 * row-major window order, and a NaN wins (it propagates, as in torch).
 *
 * aux, per sample, is [C, Ho, Wo]: the index of each maximum within the
 * sample's input (c H W + ih W + iw), stored as a float; exact because plan
 * rejects inputs of 2^24 elements or more. An evaluation forward may pass
 * aux NULL, and then no index is stored.
 *
 * With l->relu_in (akk_layers_fuse: a relu came just before, and the gate
 * skips it) x is the relu's input and the layer computes
 * maxpool(relu(x)) exactly as the two layers would, with a quarter of the
 * relu's work: where the window's maximum m is positive or NaN, the
 * output is m at its index; otherwise every relu value was a zero and the
 * first element wins, so the output is relu(first) at the first index.
 * The backward passes dy only where the output is positive (relu's
 * derivative at the chosen element). */
#include "nn/layer.h"
#include "nn/export.h"
#include "base/clones.h"

#include <stdint.h>
#include <string.h>

/* GCC's (and clang's) generic vectors of 8 and 4 lanes: an 8-lane one
 * is one AVX2 register in the AVX2 bodies and two SSE2 ones in the
 * baseline's. The 32-byte vectors never cross a call (the helpers are
 * inlined). */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef float v8fu __attribute__((vector_size(32), aligned(4), may_alias));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v4fu __attribute__((vector_size(16), aligned(4), may_alias));
#define INLINE static inline __attribute__((always_inline))
/* Lane lists: the even and odd lanes of two vectors, and two vectors'
 * lanes interleaved (first halves, second halves). */
#define EVEN8 0, 2, 4, 6, 8, 10, 12, 14
#define ODD8 1, 3, 5, 7, 9, 11, 13, 15
#define LO8 0, 8, 1, 9, 2, 10, 3, 11
#define HI8 4, 12, 5, 13, 6, 14, 7, 15
#define EVEN4 0, 2, 4, 6
#define ODD4 1, 3, 5, 7
#define LO4 0, 4, 1, 5
#define HI4 2, 6, 3, 7
/* t ? x : y lane by lane (t's lanes all ones or all zeros), any type. */
#define PICK(T, t, x, y) ((T)(((t) & (__typeof__(t))(x)) | (~(t) & (__typeof__(t))(y))))

static int maxpool_plan(struct akk_layer *l, struct akk_err *e)
{
	char buf[64];

	if (akk_pool2d_plan(l, e))
		return -1;
	/* argmax indices are stored as floats: exact below 2^24 */
	if (akk_shape_size(l->in) >= 1L << 24) {
		akk_shape_format(l->in, buf, sizeof(buf));
		return akk_err_set(e, "input %s has more than 2^24 elements", buf);
	}
	l->aux = akk_shape_size(l->out);
	return 0;
}

/* The usual 2x2 window at stride 2 without padding: the windows tile the
 * input, which the vector paths of both directions rely on. */
static int is_2x2(const struct akk_layer_spec *sp)
{
	return sp->kernel == 2 && akk_pool2d_stride(sp) == 2 && sp->padding == 0;
}

/* The first NaN of a window (row-major), to propagate it like torch. */
static float first_nan(const float *xc, int W, int h0, int h1, int w0,
		       int w1, int *best)
{
	for (int ih = h0; ih < h1; ih++)
		for (int iw = w0; iw < w1; iw++)
			if (xc[ih * W + iw] != xc[ih * W + iw]) {
				*best = ih * W + iw;
				return xc[*best];
			}
	return 0;	/* not reached: the caller saw a NaN */
}

/* POOL(name, N lanes): N windows of a 2x2/2 pool, the same select as
 * the general loop below unrolled over the four elements of each window
 * in row-major order (a then b above, c then d below), with no branch.
 * The windows' top elements are r0[0..2N), the bottom ones r1[0..2N)
 * (the even columns the left elements, the odd ones the right), j their
 * first indices in the sample. m = b > m ? b : m is the scalar select,
 * NaN included. Returns the lanes whose window held a NaN. */
#define POOL(NAME, N, VF, VI, VFU, EVEN, ODD)				\
INLINE VI NAME(float *y, float *aux, const float *r0, const float *r1,	\
	       VI j, int W, int relu)					\
{									\
	VF u0 = *(const VFU *)r0, u1 = *(const VFU *)(r0 + N);		\
	VF v0 = *(const VFU *)r1, v1 = *(const VFU *)(r1 + N);		\
	VF a = __builtin_shufflevector(u0, u1, EVEN);			\
	VF b = __builtin_shufflevector(u0, u1, ODD);			\
	VF c = __builtin_shufflevector(v0, v1, EVEN);			\
	VF d = __builtin_shufflevector(v0, v1, ODD);			\
	VF m = a, z = { 0 };						\
	VI best = j, t;							\
									\
	t = b > m;							\
	best = PICK(VI, t, j + 1, best);				\
	m = PICK(VF, t, b, m);						\
	t = c > m;							\
	best = PICK(VI, t, j + W, best);				\
	m = PICK(VF, t, c, m);						\
	t = d > m;							\
	best = PICK(VI, t, j + W + 1, best);				\
	m = PICK(VF, t, d, m);						\
	if (relu) {							\
		/* m neither positive nor NaN: relu(a), the first */	\
		t = ~(m > z) & (m == m);				\
		m = PICK(VF, t, PICK(VF, a < z, z, a), m);		\
		best = PICK(VI, t, j, best);				\
	}								\
	*(VFU *)y = m;							\
	if (aux)							\
		*(VFU *)aux = __builtin_convertvector(best, VF);	\
	return (a != a) | (b != b) | (c != c) | (d != d);		\
}
POOL(pool8, 8, v8f, v8i, v8fu, EVEN8, ODD8)
POOL(pool4, 4, v4f, v4i, v4fu, EVEN4, ODD4)

/* The usual case, k = s = 2 without padding, one output row of Wo
 * windows. A row of 8 or more: 8 at a time, the last block ending at the
 * row's end (it overlaps the block before and writes the same values
 * again). A shorter one: 4 at a time, then one at a time. Returns lanes
 * that are nonzero if a window held a NaN; the caller then redoes the
 * channel with the general loop, which propagates the first NaN. */
INLINE v4i pool2x2_row(float *y, float *aux, const float *r0, const float *r1,
		       int Wo, long j0, int W, int relu)
{
	const v8i lane8 = { EVEN8 };
	const v4i lane4 = { EVEN4 };
	v8i n8 = { 0 };
	v4i n4 = { 0 };
	int ow = 0, nan = 0;

	if (Wo >= 8)
		for (; ow < Wo; ow += 8) {
			int o = ow + 8 <= Wo ? ow : Wo - 8;

			n8 |= pool8(y + o, aux ? aux + o : NULL, r0 + 2 * o, r1 + 2 * o,
				    lane8 + (int)(j0 + 2 * o), W, relu);
		}
	for (; ow + 4 <= Wo; ow += 4)
		n4 |= pool4(y + ow, aux ? aux + ow : NULL, r0 + 2 * ow, r1 + 2 * ow,
			    lane4 + (int)(j0 + 2 * ow), W, relu);
	n4 |= __builtin_shufflevector(n8, n8, 0, 1, 2, 3) | __builtin_shufflevector(n8, n8, 4, 5, 6, 7);
	for (; ow < Wo; ow++) {
		float a = r0[2 * ow], b = r0[2 * ow + 1];
		float c = r1[2 * ow], d = r1[2 * ow + 1];
		long j = j0 + 2 * ow, best = j;
		float m = a;
		best = b > m ? j + 1 : best;
		m = b > m ? b : m;
		best = c > m ? j + W : best;
		m = c > m ? c : m;
		best = d > m ? j + W + 1 : best;
		m = d > m ? d : m;
		nan |= (a != a) | (b != b) | (c != c) | (d != d);
		if (relu && !(m > 0) && m == m) {
			m = a < 0 ? 0.0f : a;
			best = j;
		}
		y[ow] = m;
		if (aux)
			aux[ow] = (float)best;
	}
	n4[0] |= nan;
	return n4;
}

/* Two bodies (base/clones.h): the 2x2 rows' vectors are AVX2's 8 lanes
 * in one, SSE2's 4 in the other. */
AKK_CLONES
static void maxpool_forward(const struct akk_layer *l, float *y, float *aux,
			    float *s, float *work, const float *x,
			    const float *p, int B, int train,
			    struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int Ho = l->out.d[1], Wo = l->out.d[2];
	int k = sp->kernel, st = akk_pool2d_stride(sp), pad = sp->padding;
	int relu = l->relu_in;

	(void)s, (void)work, (void)p, (void)train, (void)rng;
	for (long bc = 0; bc < (long)B * C; bc++) {
		const float *xc = x + bc * H * W;
		long base = (bc % C) * H * W;	/* the channel's offset in a sample */
		/* NaN is looked for once a channel, not once a row
		 * (LeNet's pools: 0.87x and 0.93x the forward time) */
		if (is_2x2(sp)) {
			float *y0 = y, *a0 = aux;
			v4i n = { 0 };
			for (int oh = 0; oh < Ho; oh++) {
				const float *r0 = xc + 2 * oh * W;
				n |= pool2x2_row(y, aux, r0, r0 + W, Wo,
						 base + 2L * oh * W, W, relu);
				y += Wo;
				aux = aux ? aux + Wo : NULL;
			}
			if (!(n[0] | n[1] | n[2] | n[3]))
				continue;
			y = y0, aux = a0;
		}
		for (int oh = 0; oh < Ho; oh++) {
			int h0 = oh * st - pad, h1 = h0 + k;
			h0 = h0 < 0 ? 0 : h0;
			h1 = h1 > H ? H : h1;
			for (int ow = 0; ow < Wo; ow++) {
				int w0 = ow * st - pad, w1 = w0 + k;
				w0 = w0 < 0 ? 0 : w0;
				w1 = w1 > W ? W : w1;
				/* p <= k/2 keeps every window at least one
				 * element wide. The select is branch-free
				 * (on real data the comparison is a coin flip
				 * that a branch predictor loses): maxss for
				 * the value, a mask for the index, and NaN is
				 * noted aside and handled after the window. */
				int best = h0 * W + w0, nan = 0;
				float m = xc[best];
				for (int ih = h0; ih < h1; ih++)
					for (int iw = w0; iw < w1; iw++) {
						int j = ih * W + iw;
						float v = xc[j];
						unsigned t = -(unsigned)(v > m);
						best = (int)(((unsigned)best & ~t) |
							     ((unsigned)j & t));
						m = v > m ? v : m;
						nan |= v != v;
					}
				if (nan)
					m = first_nan(xc, W, h0, h1, w0, w1, &best);
				if (relu && !(m > 0) && m == m) {
					best = h0 * W + w0;
					m = xc[best] < 0 ? 0.0f : xc[best];
				}
				*y++ = m;
				if (aux)
					*aux++ = (float)(base + best);
			}
		}
	}
}

/* UNPOOL(name, N lanes): N windows of a 2x2/2 pool backward. Each of
 * their four inputs (rows d0 and d1, 2N floats each) gets the output's
 * gradient g where aux names it, else 0; g + 0 as the general path's
 * 0 + g gives (a -0 gradient lands as +0). j: the windows' first indices
 * in the sample, W the input's width. */
#define UNPOOL(NAME, N, VF, VI, VFU, LO, HI)				\
INLINE void NAME(float *d0, float *d1, const float *dy, const float *y,	\
		 const float *aux, VI j, int W, int relu)		\
{									\
	VF g = *(const VFU *)dy, a = *(const VFU *)aux, z = { 0 };	\
	VF at = __builtin_convertvector(j, VF), atw = at + (float)W;	\
	VF v00, v01, v10, v11;						\
									\
	if (relu)							\
		g = (VF)((*(const VFU *)y > z) & (VI)g);		\
	g = g + z;							\
	v00 = (VF)((a == at) & (VI)g);					\
	v01 = (VF)((a == at + 1) & (VI)g);				\
	v10 = (VF)((a == atw) & (VI)g);					\
	v11 = (VF)((a == atw + 1) & (VI)g);				\
	*(VFU *)d0 = __builtin_shufflevector(v00, v01, LO);		\
	*(VFU *)(d0 + N) = __builtin_shufflevector(v00, v01, HI);	\
	*(VFU *)d1 = __builtin_shufflevector(v10, v11, LO);		\
	*(VFU *)(d1 + N) = __builtin_shufflevector(v10, v11, HI);	\
}
UNPOOL(unpool8, 8, v8f, v8i, v8fu, LO8, HI8)
UNPOOL(unpool4, 4, v4f, v4i, v4fu, LO4, HI4)

/* g where the index a is at, else 0, without a branch (which is where the
 * maximum sits is a coin flip to a branch predictor). */
static float where(float a, float at, float g)
{
	uint32_t m = -(uint32_t)(a == at), b;

	memcpy(&b, &g, sizeof(b));
	b &= m;
	memcpy(&g, &b, sizeof(g));
	return g;
}

/* One output row of a 2x2/2 pool backward, in blocks as the forward's
 * (pool2x2_row). */
INLINE void unpool2x2_row(float *d0, float *d1, const float *dy,
			  const float *y, const float *aux, int Wo, long j,
			  int W, int relu)
{
	const v8i lane8 = { EVEN8 };
	const v4i lane4 = { EVEN4 };
	int ow = 0;

	if (Wo >= 8)
		for (; ow < Wo; ow += 8) {
			int o = ow + 8 <= Wo ? ow : Wo - 8;

			unpool8(d0 + 2 * o, d1 + 2 * o, dy + o, relu ? y + o : NULL, aux + o,
				lane8 + (int)(j + 2 * o), W, relu);
		}
	for (; ow + 4 <= Wo; ow += 4)
		unpool4(d0 + 2 * ow, d1 + 2 * ow, dy + ow, relu ? y + ow : NULL, aux + ow,
			lane4 + (int)(j + 2 * ow), W, relu);
	for (; ow < Wo; ow++) {
		float g = (relu ? (y[ow] > 0 ? dy[ow] : 0.0f) : dy[ow]) + 0.0f;
		float a = aux[ow], at = (float)(j + 2 * ow);

		d0[2 * ow] = where(a, at, g);
		d0[2 * ow + 1] = where(a, at + 1, g);
		d1[2 * ow] = where(a, at + (float)W, g);
		d1[2 * ow + 1] = where(a, at + (float)W + 1, g);
	}
}

/* The usual 2x2/2 pool without padding: the windows do not overlap, so
 * each input is written once, its gradient or 0 (a last odd row or column,
 * in no window, gets 0), with no memset and no scatter. Two bodies
 * (base/clones.h), as the forward. */
AKK_CLONES
static void unpool2x2(const struct akk_layer *l, float *dx, const float *dy,
		      const float *y, const float *aux, int B)
{
	int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2];
	int Ho = l->out.d[1], Wo = l->out.d[2], relu = l->relu_in;

	for (long bc = 0; bc < (long)B * C; bc++) {
		float *xc = dx + bc * H * W;
		long base = (bc % C) * H * W;
		for (int oh = 0; oh < Ho; oh++) {
			float *d0 = xc + 2L * oh * W;
			unpool2x2_row(d0, d0 + W, dy, y, aux, Wo,
				      base + 2L * oh * W, W, relu);
			for (int r = 0; 2 * Wo < W && r < 2; r++)
				d0[(long)r * W + W - 1] = 0;
			dy += Wo, aux += Wo;
			y = relu ? y + Wo : y;
		}
		if (2 * Ho < H)
			memset(xc + (long)(H - 1) * W, 0, W * sizeof(*xc));
	}
}

/* dx = 0, then each output's gradient goes to its maximum; with relu_in,
 * only where the output is positive (the relu's own select, so dx is the
 * same to the bit as the two layers'). x is not read: with relu_in it is
 * the skipped relu's output buffer, never written. */
static void maxpool_backward(const struct akk_layer *l, float *dx, float *dp,
			     float *work, const float *dy, const float *x,
			     const float *y, const float *aux, const float *p,
			     int B)
{
	const struct akk_layer_spec *sp = l->spec;
	size_t in = (size_t)akk_shape_size(l->in), out = l->aux;

	(void)dp, (void)work, (void)x, (void)p;
	if (!dx)
		return;
	if (is_2x2(sp)) {
		unpool2x2(l, dx, dy, y, aux, B);
		return;
	}
	memset(dx, 0, (size_t)B * in * sizeof(*dx));
	if (l->relu_in)
		for (int i = 0; i < B; i++, dx += in)
			for (size_t j = 0; j < out; j++, y++, dy++)
				dx[(size_t)*aux++] += *y > 0 ? *dy : 0.0f;
	else
		for (int i = 0; i < B; i++, dx += in)
			for (size_t j = 0; j < out; j++)
				dx[(size_t)*aux++] += *dy++;
}

/* MaxPool: ONNX pads are ignored by the max, as -inf here. */
static int maxpool_export(const struct akk_layer *l, struct akk_graph_sink *g,
			  const struct akk_export_io *io, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int64_t k = sp->kernel, s = akk_pool2d_stride(sp), p = sp->padding;
	int64_t ks[2] = { k, k }, st[2] = { s, s }, pads[4] = { p, p, p, p };
	struct akk_attr at[] = { AKK_ATTR_IS("kernel_shape", ks, 2),
				 AKK_ATTR_IS("strides", st, 2),
				 AKK_ATTR_IS("pads", pads, 4) };

	return akk_export_unary(g, io, "MaxPool", at, 3, e);
}

const struct akk_layer_ops akk_layer_maxpool2d = {
	.name = "maxpool2d",
	.options = akk_pool2d_options,
	.shorthand = "kernel",
	.plan = maxpool_plan,
	.init = akk_layer_init_none,
	.forward = maxpool_forward,
	.backward = maxpool_backward,
	.export = maxpool_export,
};
