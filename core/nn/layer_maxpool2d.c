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

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* The usual case, k = s = 2 without padding, one output row: the same
 * select as the general loop below, unrolled over the four elements of
 * each window in row-major order (a then b above, c then d below), with
 * no branch in the loop so that the compiler vectorises it over ow.
 * Returns nonzero if a window held a NaN; the caller then redoes the row
 * with the general loop, which propagates the first NaN. */
static int pool2x2_row(float *y, float *aux, const float *r0, const float *r1,
		       int Wo, long j0, int W, int relu)
{
	int nan = 0, ow = 0;

#ifdef __SSE2__
	/* Four windows at a time: the even and odd columns of two 8-float
	 * loads are the windows' left and right elements; max_ps(v, m) is
	 * v > m ? v : m, the scalar select below, NaN included. */
	const __m128i step = _mm_set_epi32(6, 4, 2, 0);
	const __m128i one = _mm_set1_epi32(1), wv = _mm_set1_epi32(W);
	for (; ow + 4 <= Wo; ow += 4) {
		__m128 u0 = _mm_loadu_ps(r0 + 2 * ow), u1 = _mm_loadu_ps(r0 + 2 * ow + 4);
		__m128 v0 = _mm_loadu_ps(r1 + 2 * ow), v1 = _mm_loadu_ps(r1 + 2 * ow + 4);
		__m128 a = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
		__m128 b = _mm_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
		__m128 c = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
		__m128 d = _mm_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
		__m128i j = _mm_add_epi32(_mm_set1_epi32((int)(j0 + 2 * ow)), step);
		__m128i best = j, t;
		__m128 m = a;

		t = _mm_castps_si128(_mm_cmpgt_ps(b, m));
		best = _mm_or_si128(_mm_and_si128(t, _mm_add_epi32(j, one)),
				    _mm_andnot_si128(t, best));
		m = _mm_max_ps(b, m);
		j = _mm_add_epi32(j, wv);
		t = _mm_castps_si128(_mm_cmpgt_ps(c, m));
		best = _mm_or_si128(_mm_and_si128(t, j), _mm_andnot_si128(t, best));
		m = _mm_max_ps(c, m);
		t = _mm_castps_si128(_mm_cmpgt_ps(d, m));
		best = _mm_or_si128(_mm_and_si128(t, _mm_add_epi32(j, one)),
				    _mm_andnot_si128(t, best));
		m = _mm_max_ps(d, m);
		nan |= _mm_movemask_ps(_mm_or_ps(_mm_cmpunord_ps(a, b),
						 _mm_cmpunord_ps(c, d)));
		if (relu) {
			/* m neither positive nor NaN: relu(a), the first */
			__m128 z = _mm_setzero_ps();
			__m128i f = _mm_castps_si128(_mm_andnot_ps(
				_mm_cmpgt_ps(m, z), _mm_cmpord_ps(m, m)));
			__m128 ra = _mm_andnot_ps(_mm_cmplt_ps(a, z), a);
			m = _mm_castsi128_ps(_mm_or_si128(
				_mm_and_si128(f, _mm_castps_si128(ra)),
				_mm_andnot_si128(f, _mm_castps_si128(m))));
			best = _mm_or_si128(_mm_and_si128(f, _mm_sub_epi32(j, wv)),
					    _mm_andnot_si128(f, best));
		}
		_mm_storeu_ps(y + ow, m);
		if (aux)
			_mm_storeu_ps(aux + ow, _mm_cvtepi32_ps(best));
	}
#endif
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
	return nan;
}

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
		for (int oh = 0; oh < Ho; oh++) {
			if (is_2x2(sp)) {
				const float *r0 = xc + 2 * oh * W;
				if (!pool2x2_row(y, aux, r0, r0 + W, Wo,
						 base + 2L * oh * W, W, relu)) {
					y += Wo;
					aux = aux ? aux + Wo : NULL;
					continue;
				}
			}
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

/* One output row of a 2x2/2 pool backward: each of its windows' four
 * inputs (rows d0 and d1) gets the output's gradient g where aux names it,
 * else 0; g + 0 as the general path's 0 + g gives (a -0 gradient lands as
 * +0). j is the window's first index in the sample, W the input's width.
 * Four windows at a time: the masks of the four places, then each row's
 * two unpacked into the row's order. */
static void unpool2x2_row(float *d0, float *d1, const float *dy,
			  const float *y, const float *aux, int Wo, long j,
			  int W, int relu)
{
	int ow = 0;

#ifdef __SSE2__
	const __m128 z = _mm_setzero_ps(), one = _mm_set1_ps(1), wv = _mm_set1_ps((float)W);
	const __m128i step = _mm_set_epi32(6, 4, 2, 0);
	for (; ow + 4 <= Wo; ow += 4) {
		__m128 g = _mm_loadu_ps(dy + ow), a = _mm_loadu_ps(aux + ow);
		__m128 at = _mm_cvtepi32_ps(_mm_add_epi32(_mm_set1_epi32((int)(j + 2 * ow)), step));
		__m128 at1 = _mm_add_ps(at, one), atw = _mm_add_ps(at, wv);
		__m128 atw1 = _mm_add_ps(atw, one), v00, v01, v10, v11;

		if (relu)
			g = _mm_and_ps(_mm_cmpgt_ps(_mm_loadu_ps(y + ow), z), g);
		g = _mm_add_ps(g, z);
		v00 = _mm_and_ps(_mm_cmpeq_ps(a, at), g);
		v01 = _mm_and_ps(_mm_cmpeq_ps(a, at1), g);
		v10 = _mm_and_ps(_mm_cmpeq_ps(a, atw), g);
		v11 = _mm_and_ps(_mm_cmpeq_ps(a, atw1), g);
		_mm_storeu_ps(d0 + 2 * ow, _mm_unpacklo_ps(v00, v01));
		_mm_storeu_ps(d0 + 2 * ow + 4, _mm_unpackhi_ps(v00, v01));
		_mm_storeu_ps(d1 + 2 * ow, _mm_unpacklo_ps(v10, v11));
		_mm_storeu_ps(d1 + 2 * ow + 4, _mm_unpackhi_ps(v10, v11));
	}
#endif
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
 * in no window, gets 0), with no memset and no scatter. */
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
