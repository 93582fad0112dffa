/* layer_batchnorm.c - batch normalisation, per feature or per channel.
 *
 * Input [D] normalises each feature over the batch; input [C, H, W]
 * normalises each channel over (batch, H, W), like torch's BatchNorm1d and
 * BatchNorm2d. With N the number of values per channel:
 *   train: mean, var = batch mean and biased variance (sum / N),
 *          xhat = (x - mean) / sqrt(var + eps), y = gamma xhat + beta,
 *          running_mean = (1 - momentum) running_mean + momentum mean,
 *          running_var  = (1 - momentum) running_var
 *                         + momentum var N / (N - 1)   (unbiased, as torch;
 *                         when N = 1 the biased var, 0, is used instead)
 *   eval:  the same with running_mean and running_var, state untouched.
 * Parameters: gamma (C, init 1) then beta (C, init 0). State: running_mean
 * (C, init 0) then running_var (C, init 1).
 *
 * aux is sized (in + C) floats per sample, and a batch of B uses it as one
 * block: xhat [B, in] first, then inv_std [C] = 1 / sqrt(var + eps), then
 * (B - 1) C unused floats. An evaluation forward leaves aux alone. Scratch
 * (work) is 2 C floats: per-channel sums (or eval's scale and shift).
 *
 * Data parallelism (l->sync set by the run, nn/layer.h): the running
 * statistics are those of the combined batch, every step: the replicas sum
 * their counts and per-channel sums (the combined mean), then their
 * squares about it, sq_r + n_r (mean_r - mean)^2 (Chan et al.), so the
 * running mean and var equal one process's at the combined batch; each
 * replica still normalises with its own slice's statistics, as torch's
 * DistributedDataParallel does. With `sync: true` (SyncBN) the batch
 * statistics themselves span every replica: the same two sums, the
 * second over (x - combined mean)^2, and in backward the sums S1 and S2
 * of every replica, each weighted by its slice's size B_r (a replica's dy
 * is its own slice's mean loss gradient), so that training equals one
 * process at the combined batch. Without l->sync (one process) `sync`
 * changes nothing. */
#include "nn/layer.h"
#include "nn/export.h"

#include <math.h>
#include <string.h>

struct bn {
	int C;		/* channels (features for a flat input) */
	int hw;		/* values per channel per sample: H W, or 1 */
	size_t n;	/* values per sample, C hw */
};

static struct bn bn_of(const struct akk_layer *l)
{
	int C = l->in.d[0], hw = l->in.rank == 3 ? l->in.d[1] * l->in.d[2] : 1;

	return (struct bn){ C, hw, (size_t)C * hw };
}

static int bn_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	char buf[64];

	if (l->in.rank != 1 && l->in.rank != 3) {
		akk_shape_format(l->in, buf, sizeof(buf));
		return akk_err_set(e, "expects [features] or [channels, height, "
				   "width], got %s", buf);
	}
	if (!(sp->momentum >= 0 && sp->momentum <= 1))
		return akk_err_set(e, "expects momentum in [0, 1], got %g",
				   sp->momentum);
	if (!(sp->eps > 0))
		return akk_err_set(e, "expects eps > 0, got %g", sp->eps);
	struct bn g = bn_of(l);
	l->out = l->in;
	l->nparams = 2 * (size_t)g.C;
	l->nstate = 2 * (size_t)g.C;
	l->aux = g.n + g.C;
	l->work = 2 * (size_t)g.C;	/* l->sync->buf: 2 C + 1 <= nstate + 1 */
	l->flops = 4.0 * g.n;
	l->nviews = 4;
	l->views[0] = (struct akk_view){ "gamma", 0, 0, 1, { g.C, 0, 0, 0 } };
	l->views[1] = (struct akk_view){ "beta", 0, g.C, 1, { g.C, 0, 0, 0 } };
	l->views[2] = (struct akk_view){ "running_mean", 1, 0, 1,
					 { g.C, 0, 0, 0 } };
	l->views[3] = (struct akk_view){ "running_var", 1, g.C, 1,
					 { g.C, 0, 0, 0 } };
	return 0;
}

static void bn_init(const struct akk_layer *l, float *p, float *s,
		    struct akk_rng *rng)
{
	int C = l->in.d[0];

	(void)rng;
	for (int c = 0; c < C; c++) {
		p[c] = 1;
		p[C + c] = 0;
		s[c] = 0;
		s[C + c] = 1;
	}
}

/* Sums over one (sample, channel) row of H W values. Eight independent
 * double accumulators break the add-latency chain (the compiler may not
 * reorder a float reduction by itself) and keep long rows exact enough. */
static double row_sum(const float *v, int n)
{
	double a[8] = { 0 };
	int i = 0;

	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			a[j] += v[i + j];
	for (; i < n; i++)
		a[0] += v[i];
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* d = v - mean, written out; returns sum d^2. */
static double row_center(float *d, const float *v, float mean, int n)
{
	double a[8] = { 0 };
	int i = 0;

	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++) {
			float t = v[i + j] - mean;
			d[i + j] = t;
			a[j] += (double)t * t;
		}
	for (; i < n; i++) {
		float t = v[i] - mean;
		d[i] = t;
		a[0] += (double)t * t;
	}
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static double row_dot(const float *u, const float *v, int n)
{
	double a[8] = { 0 };
	int i = 0;

	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			a[j] += (double)u[i + j] * v[i + j];
	for (; i < n; i++)
		a[0] += (double)u[i] * v[i];
	return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/* acc[c] = sum over the batch of v[b, c, :]. A flat input (hw = 1) runs
 * along the features instead, which vectorises across c. */
static void channel_sums(float *acc, const float *v, const struct bn *g,
			 int B)
{
	memset(acc, 0, g->C * sizeof(*acc));
	if (g->hw == 1) {
		for (int b = 0; b < B; b++, v += g->C)
			for (int c = 0; c < g->C; c++)
				acc[c] += v[c];
		return;
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g->C; c++, v += g->hw)
			acc[c] += (float)row_sum(v, g->hw);
}

/* acc[c] = sum over the batch of u[b, c, :] v[b, c, :]. */
static void channel_dots(float *acc, const float *u, const float *v,
			 const struct bn *g, int B)
{
	memset(acc, 0, g->C * sizeof(*acc));
	if (g->hw == 1) {
		for (int b = 0; b < B; b++, u += g->C, v += g->C)
			for (int c = 0; c < g->C; c++)
				acc[c] += u[c] * v[c];
		return;
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g->C; c++, u += g->hw, v += g->hw)
			acc[c] += (float)row_dot(u, v, g->hw);
}

/* d = v - mean[c] and acc[c] = sum over the batch of d[b, c, :]^2. */
static void channel_center(float *acc, float *d, const float *v,
			   const float *mean, const struct bn *g, int B)
{
	memset(acc, 0, g->C * sizeof(*acc));
	if (g->hw == 1) {
		for (int b = 0; b < B; b++, d += g->C, v += g->C)
			for (int c = 0; c < g->C; c++) {
				d[c] = v[c] - mean[c];
				acc[c] += d[c] * d[c];
			}
		return;
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g->C; c++, d += g->hw, v += g->hw)
			acc[c] += (float)row_center(d, v, mean[c], g->hw);
}

static void bn_forward_eval(const struct akk_layer *l, float *y, float *work,
			    const float *x, const float *p, const float *s,
			    int B)
{
	struct bn g = bn_of(l);
	float *scale = work, *shift = work + g.C;

	for (int c = 0; c < g.C; c++) {
		scale[c] = p[c] / sqrtf(s[g.C + c] + l->spec->eps);
		shift[c] = p[g.C + c] - s[c] * scale[c];
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g.C; c++, x += g.hw, y += g.hw)
			for (int i = 0; i < g.hw; i++)
				y[i] = x[i] * scale[c] + shift[c];
}

static void bn_forward(const struct akk_layer *l, float *y, float *aux,
		       float *s, float *work, const float *x, const float *p,
		       int B, int train, struct akk_rng *rng)
{
	struct bn g = bn_of(l);
	const float *gamma = p, *beta = p + g.C;
	float *mean = work, *sq = work + g.C;
	float *xhat = aux, *inv = aux + (size_t)B * g.n;
	float m = l->spec->momentum;
	double N = (double)B * g.hw, Ng = N;
	struct akk_layer_sync *sy = l->sync;
	int across = sy && l->spec->iopt[0];	/* SyncBN */
	double *d = sy ? sy->buf : NULL, *m2 = d ? d + g.C + 1 : NULL;

	(void)rng;
	if (!train) {
		bn_forward_eval(l, y, work, x, p, s, B);
		return;
	}
	/* Two passes (mean, then squares of x - mean) for a stable variance;
	 * with replicas, each pass's sums over all of them (a failed sum sets
	 * sy->failed: the numbers below are then never used). */
	channel_sums(mean, x, &g, B);
	if (sy) {
		for (int c = 0; c < g.C; c++)
			d[c] = mean[c];
		d[g.C] = N;
		sy->sum(sy, d, g.C + 1, 0);
		Ng = d[g.C];
	}
	for (int c = 0; c < g.C; c++)
		mean[c] = (float)(across ? d[c] / Ng : mean[c] / N);
	channel_center(sq, xhat, x, mean, &g, B);
	if (across) {
		for (int c = 0; c < g.C; c++)
			m2[c] = sq[c];
		sy->sum(sy, m2, g.C, 0);
	} else if (sy) {
		for (int c = 0; c < g.C; c++) {
			double gm = d[c] / Ng, dm = mean[c] - gm;
			m2[c] = sq[c] + N * dm * dm;
			d[c] = gm;
		}
		sy->sum(sy, m2, g.C, 0);
	}
	for (int c = 0; c < g.C; c++) {
		double var = across ? m2[c] / Ng : sq[c] / N;
		double rmean = sy && !across ? d[c] : mean[c];	/* running: */
		double rn = sy ? Ng : N, rsq = sy ? m2[c] : sq[c];	/* combined */
		double unbiased = rn > 1 ? rsq / (rn - 1) : rsq / rn;
		inv[c] = (float)(1.0 / sqrt(var + l->spec->eps));
		s[c] = (1 - m) * s[c] + m * (float)rmean;
		s[g.C + c] = (float)((1 - m) * s[g.C + c] + m * unbiased);
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g.C; c++) {
			size_t o = (size_t)b * g.n + (size_t)c * g.hw;
			for (int i = 0; i < g.hw; i++) {
				float h = xhat[o + i] * inv[c];
				xhat[o + i] = h;
				y[o + i] = gamma[c] * h + beta[c];
			}
		}
}

/* With sums over a channel's N values, S1 = sum dy and S2 = sum dy xhat:
 *   dgamma += S2, dbeta += S1,
 *   dx = gamma inv_std (dy - S1 / N - xhat S2 / N).
 * SyncBN: dy_r = dy B / B_r on a replica of B_r of the B samples, so the
 * combined S1 is T1 / B with T1 = sum_r B_r S1_r, and in this replica's
 * scale S1 / N becomes T1 / (B_r N) with N = B hw (the same for S2);
 * dgamma and dbeta stay this slice's, reduced with the other gradients. */
static void bn_backward(const struct akk_layer *l, float *dx, float *dp,
			float *work, const float *dy, const float *x,
			const float *y, const float *aux, const float *p, int B)
{
	struct bn g = bn_of(l);
	const float *xhat = aux, *inv = aux + (size_t)B * g.n;
	float *s1 = work, *s2 = work + g.C;
	double N = (double)B * g.hw;
	struct akk_layer_sync *sy = l->spec->iopt[0] ? l->sync : NULL;
	double *d = sy ? sy->buf : NULL;

	(void)x, (void)y;
	channel_sums(s1, dy, &g, B);
	channel_dots(s2, dy, xhat, &g, B);
	for (int c = 0; c < g.C; c++) {
		dp[c] += s2[c];
		dp[g.C + c] += s1[c];
	}
	if (!dx)
		return;
	if (sy) {
		for (int c = 0; c < g.C; c++) {
			d[c] = (double)B * s1[c];
			d[g.C + c] = (double)B * s2[c];
		}
		d[2 * g.C] = B;
		sy->sum(sy, d, 2 * g.C + 1, 1);
		double k = (double)B * d[2 * g.C] * g.hw;
		for (int c = 0; c < g.C; c++) {
			s1[c] = (float)(d[c] / k);
			s2[c] = (float)(d[g.C + c] / k);
		}
	} else {
		for (int c = 0; c < g.C; c++) {
			s1[c] = (float)(s1[c] / N);
			s2[c] = (float)(s2[c] / N);
		}
	}
	for (int b = 0; b < B; b++)
		for (int c = 0; c < g.C; c++) {
			size_t o = (size_t)b * g.n + (size_t)c * g.hw;
			float k = p[c] * inv[c];
			for (int i = 0; i < g.hw; i++)
				dx[o + i] = k * (dy[o + i] - s1[c] - xhat[o + i] * s2[c]);
		}
}

/* BatchNormalization in inference mode: gamma, beta, then the running
 * mean and variance; ONNX takes [N, C] as well as [N, C, H, W]. */
static int bn_export(const struct akk_layer *l, struct akk_graph_sink *g,
		     const struct akk_export_io *io, struct akk_err *e)
{
	int C = l->in.d[0];
	char n[4][256];
	static const char *const what[4] = { "gamma", "beta", "running_mean",
					     "running_var" };
	const float *data[4] = { io->p, io->p + C, io->s, io->s + C };
	const char *ins[5] = { io->x };
	int64_t dims[1] = { C };
	struct akk_attr at[] = { AKK_ATTR_F("epsilon", l->spec->eps) };

	for (int i = 0; i < 4; i++) {
		ins[i + 1] = akk_export_name(n[i], sizeof(n[i]), io->prefix,
					     what[i]);
		if (g->tensor(g, n[i], dims, 1, data[i], e))
			return -1;
	}
	return g->node(g, "BatchNormalization", ins, 5, &io->y, 1, at, 1, e);
}

static const struct akk_layer_option bn_options[] = {
	AKK_OPTION("momentum", FLOAT, momentum, AKK_OPTION_LO |
		   AKK_OPTION_LO_OPEN | AKK_OPTION_HI, 0, 1, 0.1),
	AKK_OPTION("eps", FLOAT, eps, AKK_OPTION_LO | AKK_OPTION_LO_OPEN, 0, 0,
		   1e-5),
	/* SyncBN under data parallelism: batch statistics over every replica */
	AKK_OPTION("sync", BOOL, iopt[0], 0, 0, 0, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_batchnorm = {
	.name = "batchnorm",
	.options = bn_options,
	.plan = bn_plan,
	.init = bn_init,
	.forward = bn_forward,
	.backward = bn_backward,
	.export = bn_export,
};
