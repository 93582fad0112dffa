/* loss.c - softmax/sigmoid cross-entropy, MSE, MAE and Huber over a batch. */
#include "nn/loss.h"

#include <assert.h>
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>

/* glibc's vector exp (libmvec): two doubles a call on every x86-64 CPU,
 * its ifunc picking the best SSE body. Its results differ from exp's by
 * a few units in the last place of a double (special values go to the
 * scalar exp), far below the float each term is kept in: the loss tests'
 * torch fixtures agree to 2e-16 (AKK_TEST_VERBOSE=1 tests/test_loss). */
__m128d _ZGVbN2v_exp(__m128d x);
#endif

const char *const akk_loss_names[] = {
	"softmax_cross_entropy", "sigmoid_cross_entropy", "mse", "mae", "huber",
	NULL,
};

const char *akk_loss_name(enum akk_loss_kind k)
{
	return (unsigned)k <= AKK_LOSS_HUBER ? akk_loss_names[k] : NULL;
}

int akk_loss_find(const char *name)
{
	for (int i = 0; akk_loss_names[i]; i++)
		if (!strcmp(akk_loss_names[i], name))
			return i;
	return -1;
}

void akk_softmax_row(float *p, const float *logits, int D)
{
	float mx = logits[0];
	double sum = 0;

	for (int j = 1; j < D; j++)
		if (logits[j] > mx)
			mx = logits[j];
	/* exp(z - max) <= 1: no overflow, and the largest term is exactly 1. */
	for (int j = 0; j < D; j++)
		sum += exp((double)logits[j] - mx);
	for (int j = 0; j < D; j++)
		p[j] = (float)(exp((double)logits[j] - mx) / sum);
}

enum akk_output_kind akk_loss_output(enum akk_loss_kind k, int regression)
{
	if (regression)
		return AKK_OUTPUT_VALUES;
	return k == AKK_LOSS_SIGMOID_CE ? AKK_OUTPUT_SIGMOID : AKK_OUTPUT_SOFTMAX;
}

void akk_output_row(enum akk_output_kind kind, float *p, const float *logits,
		    int D)
{
	switch (kind) {
	case AKK_OUTPUT_VALUES:
		memmove(p, logits, (size_t)D * sizeof(*p));
		break;
	case AKK_OUTPUT_SIGMOID:
		/* written so that exp never overflows */
		for (int j = 0; j < D; j++) {
			double x = logits[j];
			p[j] = (float)(x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)));
		}
		break;
	case AKK_OUTPUT_SOFTMAX:
		akk_softmax_row(p, logits, D);
		break;
	}
}

/* Index of the first largest logit of a row. */
static int argmax(const float *z, int D)
{
	int best = 0;

	for (int j = 1; j < D; j++)
		if (z[j] > z[best])
			best = j;
	return best;
}

/* exp(z[j] - mx) of a row, each left in t[j] as a float (if t is not
 * NULL), and their sum in double, added in order. Two at a time through
 * libmvec where it is: a row's scalar exps were most of the loss's time
 * (the seed's net: 0.986x the time, 9 interleaved pairs). */
static double exp_terms(float *t, const float *z, float mx, int D)
{
	double sum = 0;
	int j = 0;

#if defined(__x86_64__)
	for (; j + 2 <= D; j += 2) {
		double e[2];

		_mm_storeu_pd(e, _ZGVbN2v_exp(_mm_set_pd((double)z[j + 1] - mx,
							 (double)z[j] - mx)));
		if (t) {
			t[j] = (float)e[0];
			t[j + 1] = (float)e[1];
		}
		sum += e[0];
		sum += e[1];
	}
#endif
	for (; j < D; j++) {
		double e = exp((double)z[j] - mx);

		if (t)
			t[j] = (float)e;
		sum += e;
	}
	return sum;
}

/* Softmax cross-entropy of one row: lse(z) - z[y], written as
 * log(sum exp(z - max)) + max - z[y]; its gradient is softmax(z) - onehot(y),
 * scaled by s = 1/B into d (if not NULL). One exp per logit: the pass that
 * sums exp(z - max) in double leaves each term in d (as a float), and the
 * second pass only scales them by s / sum. */
static double softmax_ce_row(float *d, const float *z, int y, int D, double s)
{
	float mx = z[argmax(z, D)];
	double sum = exp_terms(d, z, mx, D);

	if (d) {
		double k = s / sum;

		for (int j = 0; j < D; j++)
			d[j] = (float)(k * d[j]);
		d[y] -= (float)s;
	}
	return log(sum) + mx - z[y];
}

/* Element-wise losses of one row against onehot(y), or against the float
 * targets trow when not NULL, with the gradient of each element scaled by
 * s = 1/(B*D). */
static double elementwise_row(enum akk_loss_kind k, double delta, float *d,
			      const float *z, int y, const float *trow, int D,
			      double s)
{
	double sum = 0;

	for (int j = 0; j < D; j++) {
		double t = trow ? (double)trow[j] : j == y, x = z[j], r = x - t, l, g;

		switch (k) {
		case AKK_LOSS_SIGMOID_CE:
			/* max(x,0) - x t + log(1 + e^-|x|): no overflow for
			 * any x; d/dx = sigmoid(x) - t. */
			l = fmax(x, 0) - x * t + log1p(exp(-fabs(x)));
			g = (x >= 0 ? 1 / (1 + exp(-x))
				    : exp(x) / (1 + exp(x))) - t;
			break;
		case AKK_LOSS_MSE:
			l = r * r;
			g = 2 * r;
			break;
		case AKK_LOSS_MAE:
			l = fabs(r);
			g = (r > 0) - (r < 0);
			break;
		case AKK_LOSS_HUBER:
			/* r^2/2 inside [-delta, delta], linear outside. */
			if (fabs(r) <= delta) {
				l = 0.5 * r * r;
				g = r;
			} else {
				l = delta * (fabs(r) - 0.5 * delta);
				g = r > 0 ? delta : -delta;
			}
			break;
		default:
			assert(!"not an element-wise loss");
			return 0;
		}
		sum += l;
		if (d)
			d[j] = (float)(s * g);
	}
	return sum;
}

/* 10 log10(peak^2 / mse), the mse floored at 1e-10 peak^2. */
static double psnr_of(double mse, double peak)
{
	double p2 = peak * peak;

	return 10 * log10(p2 / (mse > 1e-10 * p2 ? mse : 1e-10 * p2));
}

double akk_loss_slice(enum akk_loss_kind k, float delta, double w, float *dout,
		      const float *out, const int32_t *labels, const float *targets,
		      int ld, int B, int D, long *correct, struct akk_reg_sums *sums)
{
	double sum = 0;
	/* d(mean)/dz: softmax CE averages over rows, the rest over elements;
	 * w scales the gradient (w = 1 leaves it as it is, to the bit) */
	double s = k == AKK_LOSS_SOFTMAX_CE ? 1.0 / B : 1.0 / ((double)B * D);
	long hits = 0;

	assert(B > 0 && D > 0 && ld >= D);
	assert(labels || k == AKK_LOSS_MSE || k == AKK_LOSS_MAE || k == AKK_LOSS_HUBER);
	for (int b = 0; b < B; b++) {
		const float *z = out + (size_t)b * ld;
		const float *t = targets ? targets + (size_t)b * ld : NULL;
		float *d = dout ? dout + (size_t)b * ld : NULL;
		int y = labels ? labels[b] : 0;

		if (labels) {
			assert(y < D);
			hits += argmax(z, D) == y;
			t = NULL;
		}
		if (k == AKK_LOSS_SOFTMAX_CE)
			sum += softmax_ce_row(d, z, y, D, s * w);
		else
			sum += elementwise_row(k, delta, d, z, y, t, D, s * w);
		if (t && sums) {
			double sse = 0;
			for (int j = 0; j < D; j++) {
				double r = (double)z[j] - t[j];
				sse += r * r;
				sums->sy += t[j];
				sums->syy += (double)t[j] * t[j];
			}
			sums->sse += sse;
			sums->psnr += psnr_of(sse / D, 1);
		}
	}
	if (correct)
		*correct += hits;
	if (!labels && sums) {
		sums->n += (long)B * D;
		sums->samples += B;
	}
	return sum * s;
}

double akk_loss(enum akk_loss_kind k, float delta, float *dlogits,
		const float *logits, const int32_t *labels, int B, int D,
		long *correct)
{
	return akk_loss_slice(k, delta, 1.0, dlogits, logits, labels, NULL, D, B, D,
			      correct, NULL);
}

double akk_loss_targets(enum akk_loss_kind k, float delta, float *dout,
			const float *out, const float *targets, int B, int D,
			struct akk_reg_sums *sums)
{
	assert(k == AKK_LOSS_MSE || k == AKK_LOSS_MAE || k == AKK_LOSS_HUBER);
	return akk_loss_slice(k, delta, 1.0, dout, out, NULL, targets, D, B, D,
			      NULL, sums);
}

double akk_psnr(const float *x, const float *t, size_t n, float peak)
{
	double sse = 0;

	for (size_t i = 0; i < n; i++) {
		double r = (double)x[i] - t[i];
		sse += r * r;
	}
	return psnr_of(n ? sse / (double)n : 0, peak);
}

double akk_reg_psnr(const struct akk_reg_sums *s, float peak)
{
	return s->samples ? s->psnr / (double)s->samples + 20 * log10(peak) : 0;
}

double akk_reg_rmse(const struct akk_reg_sums *s)
{
	return s->n ? sqrt(s->sse / (double)s->n) : 0;
}

double akk_reg_r2(const struct akk_reg_sums *s)
{
	double sst = s->n ? s->syy - s->sy * s->sy / (double)s->n : 0;

	/* constant targets: a perfect fit is 1, any other 0 */
	if (!(sst > 1e-12 * (s->syy + 1e-300)))
		return s->sse == 0 ? 1 : 0;
	return 1 - s->sse / sst;
}
