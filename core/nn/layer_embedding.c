/* layer_embedding.c - token ids to vectors: a table lookup.
 *
 * Input [T]: T token ids, floats holding integers 0 .. vocab - 1 (the
 * values the data gives, unscaled); output [T, units], step t the row of
 * the weight for id x[t]. Parameter: weight (vocab, units), stored like
 * torch's nn.Embedding, whose default init it shares: N(0, 1). An
 * explicit init kind uses torch's fans of a (vocab, units) matrix:
 * fan_in units, fan_out vocab.
 *
 * An input that is not a token id (negative, vocab or more, not an
 * integer, NaN, inf) is never read as an index: its step's output row is
 * all NaN, which stops a training run at once ("non-finite output of gate
 * N") and makes evaluation and predict fail, rather than train on a row
 * of another token. akk_embedding_bad_id finds such a value in data
 * before a run.
 *
 * Backward scatter-adds each step's dy into its id's row of dW (rows of
 * ids the batch does not hold get nothing) and writes dx as zeros: ids
 * have no gradient. No aux, no scratch; a lookup does no arithmetic, so
 * the layer counts 0 FLOPs. */
#include "nn/layer.h"
#include "nn/export.h"

#include <math.h>
#include <string.h>

#include "base/checked.h"

/* The id v stands for, or -1 when v is not an integer in [0, vocab);
 * NaN fails every comparison. */
static long token_of(float v, int vocab)
{
	if (!(v >= 0 && v < (float)vocab) || v != floorf(v) || (long)v >= vocab)
		return -1;	/* the last test: (float)vocab may round up */
	return (long)v;
}

long akk_embedding_bad_id(const float *x, size_t n, int vocab)
{
	for (size_t i = 0; i < n; i++)
		if (token_of(x[i], vocab) < 0)
			return (long)i;
	return -1;
}

int akk_embedding_vocab(const struct akk_layer *l)
{
	return l->ops == &akk_layer_embedding ? l->spec->iopt[0] : 0;
}

static int emb_plan(struct akk_layer *l, struct akk_err *e)
{
	const struct akk_layer_spec *sp = l->spec;
	int vocab = sp->iopt[0], units = sp->units;
	size_t np, outn;
	char buf[64];

	akk_shape_format(l->in, buf, sizeof(buf));
	if (l->in.rank != 1)
		return akk_err_set(e, "expects a sequence of token ids [T], got %s",
				   buf);
	if (vocab <= 0)
		return akk_err_set(e, "expects vocab > 0, got %d", vocab);
	if (units <= 0)
		return akk_err_set(e, "expects units > 0, got %d", units);
	if (!akk_mul_ok((size_t)vocab, (size_t)units, &np) || np > AKK_MAX_FLOATS)
		return akk_err_set(e, "vocab %d of %d units would be more than %zu "
				   "parameters", vocab, units, AKK_MAX_FLOATS);
	if (!akk_mul_ok((size_t)l->in.d[0], (size_t)units, &outn) ||
	    outn > AKK_MAX_DIM)
		return akk_err_set(e, "output [%d, %d] would have more than %zu "
				   "values", l->in.d[0], units, AKK_MAX_DIM);
	l->out = (struct akk_shape){ 2, { l->in.d[0], units, 0 } };
	l->nparams = np;
	l->nstate = 0;
	l->aux = l->work = l->work_sample = 0;
	l->flops = 0;
	l->nviews = 1;
	l->views[0] = (struct akk_view){ "weight", 0, 0, 2, { vocab, units, 0, 0 } };
	return 0;
}

static void emb_init(const struct akk_layer *l, float *p, float *s,
		     struct akk_rng *rng)
{
	const struct akk_layer_spec *sp = l->spec;
	size_t n = l->nparams;

	(void)s;
	if (sp->init == AKK_INIT_DEFAULT) {
		for (size_t i = 0; i < n; i++)
			p[i] = akk_rng_normal(rng);
		return;
	}
	akk_init_fill(p, n, sp->units, sp->iopt[0], sp->init, sp->init_value, rng);
}

/* y[b, t] = W[x[b, t]], or NaN where x[b, t] is no id. */
static void emb_forward(const struct akk_layer *l, float *y, float *aux,
			float *s, float *work, const float *x, const float *p,
			int B, int train, struct akk_rng *rng)
{
	int vocab = l->spec->iopt[0], units = l->spec->units;
	size_t n = (size_t)B * l->in.d[0];

	(void)aux, (void)s, (void)work, (void)train, (void)rng;
	for (size_t i = 0; i < n; i++, y += units) {
		long id = token_of(x[i], vocab);
		if (id < 0)
			for (int j = 0; j < units; j++)
				y[j] = NAN;
		else
			memcpy(y, p + (size_t)id * units, units * sizeof(*y));
	}
}

/* dW[x[b, t]] += dy[b, t]; dx = 0. */
static void emb_backward(const struct akk_layer *l, float *dx, float *dp,
			 float *work, const float *dy, const float *x,
			 const float *y, const float *aux, const float *p,
			 int B)
{
	int vocab = l->spec->iopt[0], units = l->spec->units;
	size_t n = (size_t)B * l->in.d[0];

	(void)work, (void)y, (void)aux, (void)p;
	for (size_t i = 0; i < n; i++, dy += units) {
		long id = token_of(x[i], vocab);
		if (id < 0)
			continue;
		float *r = dp + (size_t)id * units;
		for (int j = 0; j < units; j++)
			r[j] += dy[j];
	}
	if (dx)
		memset(dx, 0, n * sizeof(*dx));
}

/* Gather(W, Cast(x, int64)) along axis 0: (N, T) ids to (N, T, units).
 * onnxruntime refuses an id out of range instead of giving NaN. */
static int emb_export(const struct akk_layer *l, struct akk_graph_sink *g,
		      const struct akk_export_io *io, struct akk_err *e)
{
	char w[256], ids[256];
	int64_t wd[2] = { l->spec->iopt[0], l->spec->units };
	const char *cast = akk_export_name(ids, sizeof(ids), io->prefix, "ids");
	const char *ins[2] = { akk_export_name(w, sizeof(w), io->prefix, "weight"),
			       cast };
	struct akk_attr to = AKK_ATTR_I("to", 7);	/* TensorProto INT64 */
	struct akk_attr axis = AKK_ATTR_I("axis", 0);

	if (g->tensor(g, w, wd, 2, io->p, e))
		return -1;
	return g->node(g, "Cast", &io->x, 1, &cast, 1, &to, 1, e) ||
	       g->node(g, "Gather", ins, 2, &io->y, 1, &axis, 1, e) ? -1 : 0;
}

static const struct akk_layer_option emb_options[] = {
	AKK_OPTION("vocab", INT, iopt[0], AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("units", INT, units, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0),
	AKK_OPTION("init", INIT, init, 0, 0, 0, AKK_INIT_DEFAULT),
	AKK_OPTION("init_value", FLOAT, init_value, 0, 0, 0, 0),
	AKK_OPTIONS_END,
};

const struct akk_layer_ops akk_layer_embedding = {
	.name = "embedding",
	.options = emb_options,
	.plan = emb_plan,
	.init = emb_init,
	.forward = emb_forward,
	.backward = emb_backward,
	.export = emb_export,
};
