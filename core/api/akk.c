/* akk.c - the inference library behind akk.h: a checkpoint's network
 * rebuilt read-only, and forward passes each in a workspace of its own,
 * taken from the model's mutex-guarded free list (or allocated when the
 * list has none big enough) and given back after the call. */
#include "api/akk.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "data/batch.h"
#include "data/preprocess.h"
#include "io/checkpoint.h"
#include "model/flow.h"
#include "model/gate.h"
#include "model/model.h"
#include "nn/loss.h"
#include "tensor/kernels.h"
#include "tensor/tensor.h"

/* Samples per forward pass inside akk_predict: a call of any size gives
 * the same outputs as akkctl eval's batches of 256. */
#define AKK_PREDICT_CHUNK 256

/* One call's scratch: per gate the outputs, kept values and layer scratch
 * of a forward pass over up to cap samples, and the input after
 * preprocessing. */
struct workspace {
	struct workspace *next;	/* in the model's idle list */
	int cap;
	int ngates;
	float *x;
	float *act[AKK_MAX_GATES], *aux[AKK_MAX_GATES], *work[AKK_MAX_GATES];
	/* gates that fork and join: a join's input, each gate's output */
	float *join[AKK_MAX_GATES];
	const float *out[AKK_MAX_GATES];
};

struct akk_lib_model {
	struct akk_spec spec;
	struct akk_model plan;		/* points at spec */
	struct akk_gate *gates;		/* plan.ngates: parameters and running
					 * state, read-only after open */
	struct akk_preprocess pre;
	int regression;
	enum akk_output_kind output;	/* nn/loss.h: what out holds */
	char **class_names;		/* plan.classes, or NULL */
	/* Workspaces of finished calls, for the next ones: reused rather
	 * than allocated and zeroed per call (some MB for 256 samples; for
	 * LeNet one sample per call takes ~15% less CPU time this way, 1000
	 * samples ~4%). At most one per concurrent call, kept until close. */
	pthread_mutex_t lock;
	struct workspace *idle;		/* owned; under lock */
};

static void workspace_free(struct workspace *w);

/* The checkpoint's class names (NULL: it names none) and whether it
 * predicts values (data.task regression). */
static const char *const *checkpoint_class_names(const struct akk_checkpoint *ck)
{
	return ck->nclass_names ? (const char *const *)ck->class_names : NULL;
}

static int checkpoint_regression(const struct akk_checkpoint *ck)
{
	return ck->task == 1;
}

static void put_err(char *err, size_t errlen, const struct akk_err *e)
{
	if (err && errlen) {
		char buf[sizeof(e->file) + sizeof(e->msg) + 32];

		akk_err_format(e, buf, sizeof(buf));
		snprintf(err, errlen, "%s", buf);
	}
}

static void put_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *akk_version(void)
{
	return AKK_VERSION;
}

int akk_blas_kernels(char *running, size_t runlen, char *recommended, size_t reclen)
{
	struct akk_kernels k;
	int weak;

	akk_kernels_report(&k);
	weak = akk_kernels_weak(&k);
	if (running && runlen)
		snprintf(running, runlen, "%s", k.running);
	if (recommended && reclen)
		snprintf(recommended, reclen, "%s", weak ? k.best : k.running);
	return weak;
}

akk_model *akk_open(const char *path, char *err, size_t errlen)
{
	struct akk_checkpoint ck = { 0 };
	struct akk_err *e = calloc(1, sizeof(*e));	/* 8 KiB: not on a caller's small stack */
	struct akk_lib_model *m = calloc(1, sizeof(*m));
	const char *const *names;

	if (m && pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		m = NULL;
	}
	if (!e || !m) {
		put_msg(err, errlen, "out of memory");
		free(e);
		free(m);
		return NULL;
	}
	if (!path) {
		akk_err_set(e, "no checkpoint path");
		goto fail;
	}
	if (akk_checkpoint_read(&ck, path, e))
		goto fail;
	if (akk_checkpoint_spec(&ck, &m->spec, NULL, 0, e) ||
	    akk_model_plan(&m->plan, &m->spec, e) ||
	    akk_checkpoint_match(&ck, &m->plan, path, e) ||
	    akk_checkpoint_input_map(&ck, &m->spec, &m->pre, e))
		goto fail;
	m->gates = calloc(m->plan.ngates, sizeof(*m->gates));
	if (!m->gates) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	{
		struct akk_gate *gp[AKK_MAX_GATES];

		for (int i = 0; i < m->plan.ngates; i++) {
			gp[i] = &m->gates[i];
			if (akk_gate_init(&m->gates[i], &m->plan.gates[i],
					  &(struct akk_gate_config){ .max_batch = 1, .steps_per_epoch = 1,
								     .epochs = 1, .seed = m->spec.seed },
					  e))
				goto fail;
		}
		if (akk_checkpoint_restore(&ck, gp, m->plan.ngates, path, e))
			goto fail;
	}
	m->regression = checkpoint_regression(&ck);
	m->output = akk_loss_output(m->spec.loss, m->regression);
	if ((names = checkpoint_class_names(&ck))) {
		m->class_names = calloc(m->plan.classes, sizeof(char *));
		for (int k = 0; m->class_names && k < m->plan.classes && k < ck.nclass_names; k++)
			if (!(m->class_names[k] = strdup(names[k]))) {
				akk_err_set(e, "out of memory");
				goto fail;
			}
		if (!m->class_names) {
			akk_err_set(e, "out of memory");
			goto fail;
		}
	}
	akk_checkpoint_release(&ck);
	free(e);
	return m;
fail:
	put_err(err, errlen, e);
	akk_checkpoint_release(&ck);
	akk_close(m);
	free(e);
	return NULL;
}

void akk_close(akk_model *m)
{
	if (!m)
		return;
	while (m->idle) {
		struct workspace *w = m->idle;

		m->idle = w->next;
		workspace_free(w);
	}
	pthread_mutex_destroy(&m->lock);
	for (int i = 0; m->gates && i < m->plan.ngates; i++)
		akk_gate_release(&m->gates[i]);
	free(m->gates);
	if (m->class_names)
		for (int k = 0; k < m->plan.classes; k++)
			free(m->class_names[k]);
	free(m->class_names);
	akk_preprocess_release(&m->pre);
	akk_model_release(&m->plan);
	akk_spec_release(&m->spec);
	free(m);
}

int akk_input_shape(const akk_model *m, int *dims)
{
	if (!m)
		return -1;
	for (int i = 0; dims && i < m->spec.input.rank; i++)
		dims[i] = m->spec.input.d[i];
	return m->spec.input.rank;
}

size_t akk_input_size(const akk_model *m)
{
	if (!m)
		return 0;
	return (size_t)akk_shape_size(m->spec.input);
}

int akk_outputs(const akk_model *m)
{
	if (!m)
		return -1;
	return m->plan.classes;
}

int akk_steps(const akk_model *m)
{
	if (!m)
		return -1;
	return m->plan.steps;
}

int akk_is_regression(const akk_model *m)
{
	if (!m)
		return -1;
	return m->regression;
}

int akk_heads(const akk_model *m)
{
	return m ? m->spec.nheads : -1;
}

int akk_head(const akk_model *m, int i, const char **name, int *offset, int *size,
	     int *classifier)
{
	if (!m || i < 0 || i >= m->spec.nheads)
		return -1;
	if (name)
		*name = m->spec.heads[i].name;
	if (offset)
		*offset = akk_head_offset(&m->spec, i, m->plan.classes);
	if (size)
		*size = akk_head_size(&m->spec, i, m->plan.classes);
	if (classifier)
		*classifier = m->spec.heads[i].target == AKK_TARGET_LABELS;
	return 0;
}

int akk_inputs(const akk_model *m)
{
	return m ? m->spec.ninputs : -1;
}

int akk_input(const akk_model *m, int i, const char **name, int *offset, int *size,
	      int *dims)
{
	const struct akk_input_spec *in;

	if (!m || i < 0 || i >= m->spec.ninputs)
		return -1;
	in = &m->spec.inputs[i];
	if (name)
		*name = in->name;
	if (offset)
		*offset = (int)in->off;
	if (size)
		*size = (int)in->n;
	for (int d = 0; dims && d < in->shape.rank; d++)
		dims[d] = in->shape.d[d];
	return in->shape.rank;
}

const char *akk_class_name(const akk_model *m, int k)
{
	return m && m->class_names && k >= 0 && k < m->plan.classes ? m->class_names[k] : NULL;
}

static void workspace_free(struct workspace *w)
{
	if (!w)
		return;
	akk_free(w->x);
	for (int g = 0; g < w->ngates; g++) {
		akk_free(w->act[g]);
		akk_free(w->aux[g]);
		akk_free(w->work[g]);
		akk_free(w->join[g]);
	}
	free(w);
}

static struct workspace *workspace_alloc(const struct akk_lib_model *m, int B)
{
	struct workspace *w = calloc(1, sizeof(*w));

	if (!w || !(w->x = akk_alloc(akk_input_size(m) * B)))
		goto fail;
	w->cap = B;
	for (int g = 0; g < m->plan.ngates; g++) {
		const struct akk_gate_plan *p = &m->plan.gates[g];

		w->ngates = g + 1;
		w->act[g] = akk_alloc(p->act * B);
		w->aux[g] = akk_alloc(p->aux * B + 1);
		w->work[g] = akk_alloc(p->work + p->work_sample * (size_t)B + 1);
		if (!w->act[g] || !w->aux[g] || !w->work[g])
			goto fail;
		if (akk_gate_gathers(p) && !(w->join[g] = akk_alloc((size_t)akk_shape_size(p->in) * B)))
			goto fail;
	}
	return w;
fail:
	workspace_free(w);
	return NULL;
}

/* A workspace for B samples: an idle one when it is big enough (a smaller
 * one is dropped), else a new one. */
static struct workspace *workspace_take(struct akk_lib_model *m, int B)
{
	struct workspace *w;

	pthread_mutex_lock(&m->lock);
	if ((w = m->idle))
		m->idle = w->next;
	pthread_mutex_unlock(&m->lock);
	if (w && w->cap >= B)
		return w;
	workspace_free(w);
	return workspace_alloc(m, B);
}

static void workspace_give(struct akk_lib_model *m, struct workspace *w)
{
	pthread_mutex_lock(&m->lock);
	w->next = m->idle;
	m->idle = w;
	pthread_mutex_unlock(&m->lock);
}

/* Evaluation forward of B samples through gate g with the shared
 * parameters and running state (read, never written when train is 0). */
static const float *gate_forward(const struct akk_lib_model *m, int g,
				 struct workspace *w, const float *x, int B)
{
	const struct akk_gate *gate = &m->gates[g];
	const struct akk_gate_plan *p = gate->plan;
	size_t act = 0, aux = 0;

	for (int i = 0; i < p->nlayers; i++) {
		const struct akk_layer *l = &p->layers[i];
		float *y = w->act[g] + (size_t)B * act;

		l->ops->forward(l, y, w->aux[g] + (size_t)B * aux, gate->state + l->soff,
				w->work[g], x, gate->params + l->poff, B, 0, NULL);
		act += akk_shape_size(l->out);
		aux += l->aux;
		x = y;
	}
	return x;
}

int akk_predict(const akk_model *m, const float *x, size_t nx, float *out,
		size_t nout, char *err, size_t errlen)
{
	size_t in;
	long n;
	int C, rc = AKK_ERR_USAGE;
	struct workspace *w = NULL;
#if defined(__x86_64__) || defined(__i386__)
	unsigned csr;
#endif

	if (!m) {
		put_msg(err, errlen, "no model (NULL)");
		return AKK_ERR_USAGE;
	}
	if (nx > SIZE_MAX / sizeof(float) || nout > SIZE_MAX / sizeof(float)) {
		put_msg(err, errlen, "%s of %zu floats is larger than memory can hold "
			"(its size in bytes overflows)", nx > SIZE_MAX / sizeof(float) ?
			"an input" : "an output buffer", nx > SIZE_MAX / sizeof(float) ? nx : nout);
		return AKK_ERR_SIZE;
	}
	in = akk_input_size(m);
	n = (long)(nx / in);
	C = m->plan.classes;
#if defined(__x86_64__) || defined(__i386__)
	/* akkctl computes with denormals flushed to zero: the same here, and
	 * the caller's thread gets its own mode back. */
	csr = _mm_getcsr();
	_mm_setcsr(csr | 0x8040);
#endif
	if (nx % in) {
		char shape[64];

		akk_shape_format(m->spec.input, shape, sizeof(shape));
		put_msg(err, errlen, "%zu input values are not a whole number of samples of %zu values (%s)",
			nx, in, shape);
		goto restore;
	}
	/* a sequence output [T, C]: T rows of C per sample */
	if (nout / C / (size_t)m->plan.steps < (size_t)n) {
		put_msg(err, errlen, "an output buffer of %zu floats is too small for %ld samples of %d outputs",
			nout, n, C * m->plan.steps);
		goto restore;
	}
	if (n > 0 && (!x || !out)) {
		put_msg(err, errlen, "no input or output buffer");
		goto restore;
	}
	if (n == 0) {
		rc = 0;
		goto restore;
	}
	/* the model is const to the caller: only its idle list changes,
	 * under its lock */
	if (!(w = workspace_take((struct akk_lib_model *)m,
				 n < AKK_PREDICT_CHUNK ? (int)n : AKK_PREDICT_CHUNK))) {
		put_msg(err, errlen, "out of memory");
		rc = AKK_ERR_MEMORY;
		goto out;
	}
	for (long s = 0; s < n; s += AKK_PREDICT_CHUNK) {
		int B = n - s < AKK_PREDICT_CHUNK ? (int)(n - s) : AKK_PREDICT_CHUNK;
		const float *src = x + (size_t)s * in;
		const float *h = w->x;

		for (size_t i = 0; i < (size_t)B * in; i++)
			if (!isfinite(src[i])) {
				put_msg(err, errlen, "input value %zu of sample %ld is not a finite number (%g)",
					i % in + 1, s + (long)(i / in) + 1, (double)src[i]);
				rc = AKK_ERR_INPUT;
				goto out;
			}
		for (int j = 0; j < B; j++)
			akk_preprocess_f32(w->x + (size_t)j * in, src + (size_t)j * in, &m->pre);
		for (int g = 0; g < m->plan.ngates; g++) {
			const struct akk_gate_plan *p = &m->plan.gates[g];
			const float *src[AKK_MAX_JOIN];
			for (int k = 0; k < p->nsrc; k++)
				src[k] = p->src[k] < 0 ? w->x : w->out[p->src[k]];
			if (akk_gate_gathers(p))
				akk_join_into(p, src, B, w->join[g]);
			h = w->out[g] = gate_forward(m, g, w, akk_gate_gathers(p) ? w->join[g] : src[0], B);
		}
		for (int j = 0; j < B * m->plan.steps; j++) {
			const float *row = h + (size_t)j * C;
			float *o = out + ((size_t)s * m->plan.steps + j) * C;

			for (int k = 0; k < C; k++)
				if (!isfinite(row[k])) {
					put_msg(err, errlen, "non-finite output on sample %ld: the weights overflow",
						s + j / m->plan.steps + 1);
					rc = AKK_ERR_OUTPUT;
					goto out;
				}
			if (m->spec.nheads)
				akk_heads_output_row(&m->spec, o, row, C);
			else
				akk_output_row(m->output, o, row, C);
		}
	}
	rc = 0;
out:
	if (w)
		workspace_give((struct akk_lib_model *)m, w);
restore:
#if defined(__x86_64__) || defined(__i386__)
	_mm_setcsr(csr);
#endif
	return rc;
}
