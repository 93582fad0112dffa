/* run.c - building, starting and stopping the actor system. */
#include "run.h"

#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static int check_data(const struct akk_run *r, const struct akk_dataset *d,
		      const char *what, const char *path, struct akk_err *e)
{
	const struct akk_spec *s = r->spec;
	long in = akk_shape_size(s->input);
	char shape[64];

	if ((long)d->images.item != in) {
		akk_shape_format(s->input, shape, sizeof(shape));
		return akk_err_at(e, path, 0, 0,
				  "%s images have %zu values each, but network.input %s needs %ld",
				  what, d->images.item, shape, in);
	}
	if (d->classes > r->model->classes)
		return akk_err_at(e, path, 0, 0,
				  "%s labels go up to %d, but the network outputs %d classes",
				  what, d->classes - 1, r->model->classes);
	if (!d->n)
		return akk_err_at(e, path, 0, 0, "%s set is empty", what);
	return 0;
}

int akk_run_init(struct akk_run *r, const struct akk_model *m,
		 const struct akk_dataset *train, const struct akk_dataset *val,
		 const struct akk_run_config *cfg, struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	int G = m->ngates, bs = s->sched.batch_size;
	int wheels = cfg->mode == AKK_MODE_WHEELS;
	size_t in = akk_shape_size(s->input);

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	r->model = m;
	r->spec = s;
	r->train = train;
	r->val = val;
	r->cfg = *cfg;
	r->pos = cfg->start;
	r->K = wheels ? s->sched.conc_train : 1;
	r->V = s->sched.conc_val;
	r->per_epoch = akk_batches_per_epoch(train->n, bs);
	r->val_batches = val ? akk_batches_per_epoch(val->n, bs) : 0;
	if (check_data(r, train, "training", s->data.train_images, e) ||
	    (val && check_data(r, val, "validation", s->data.val_images, e)))
		goto fail;
	/* One busy gate in flip-flop may use every core; pipelined gates
	 * compute at once, so each gets one. OpenBLAS itself stays on one
	 * thread (its threaded driver allocates per call): the gate's large
	 * products are split across our own pool instead. */
	r->blas_threads = cfg->blas_threads > 0 ? cfg->blas_threads :
			  wheels ? 1 : akk_cores();
	akk_blas_threads(1);
	if (r->blas_threads > 1 && !(r->pool = akk_pool_create(r->blas_threads, e)))
		goto fail;
	r->gates = calloc(G, sizeof(*r->gates));
	if (!r->gates) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	for (int i = 0; i < G; i++) {
		struct akk_gate_actor *a = &r->gates[i];
		a->run = r;
		a->self = i + 1;
		if (akk_gate_init(&a->gate, &m->gates[i], bs, r->K, r->V,
				  wheels && s->sched.stashing && r->K > 1,
				  r->per_epoch, cfg->epochs, s->seed, e))
			goto fail;
	}
	if (akk_provider_init(&r->tprov, train, &s->data, 1, s->seed, bs, in,
			      m->classes, r->K + 2, cfg->start.epoch,
			      cfg->start.index, e))
		goto fail;
	if (val && akk_provider_init(&r->vprov, val, &s->data, 0, s->seed, bs,
				     in, m->classes, r->V + 2, 0, 0, e))
		goto fail;
	/* Per gate at most K forwards, K backwards, V validations and a
	 * SYNC in flight, plus an INTERRUPT or STOP. */
	if (akk_transport_init(&r->tr, G + 1, 2 * r->K + r->V + 4)) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	if (cfg->trace_events > 0) {
		for (int i = 0; i <= G; i++) {
			struct akk_trace *t = i < G ? &r->gates[i].trace : &r->sentinel_trace;
			t->ev = calloc(cfg->trace_events, sizeof(*t->ev));
			t->cap = cfg->trace_events;
			if (!t->ev) {
				akk_err_set(e, "out of memory for the trace");
				goto fail;
			}
		}
	}
	if (cfg->metrics_path && !(r->metrics = akk_metrics_open(cfg->metrics_path, e)))
		goto fail;
	return 0;
fail:
	akk_run_release(r);
	return -1;
}

void akk_run_fail(struct akk_run *r, const struct akk_err *e)
{
	pthread_mutex_lock(&r->mu);
	if (!r->failed) {
		r->failed = 1;
		r->err = *e;
	}
	pthread_mutex_unlock(&r->mu);
	akk_transport_close(&r->tr);
	akk_mailbox_close(&r->tprov.ready);
	akk_mailbox_close(&r->tprov.free);
	if (r->val) {
		akk_mailbox_close(&r->vprov.ready);
		akk_mailbox_close(&r->vprov.free);
	}
}

void akk_run_interrupt(struct akk_run *r)
{
	struct akk_msg m = { .kind = AKK_MSG_INTERRUPT };

	/* The flag is seen before the sentinel issues anything more; the
	 * message wakes it if it is waiting. */
	atomic_store(&r->stop, 1);
	akk_send(&r->tr, 0, &m);
}

int akk_run_train(struct akk_run *r, struct akk_err *e)
{
	int G = r->model->ngates, rc;
	struct akk_err se = { 0 };

	akk_float_mode();
	if (akk_provider_start(&r->tprov, &se) ||
	    (r->val && akk_provider_start(&r->vprov, &se))) {
		akk_run_fail(r, &se);
		goto join;
	}
	for (int i = 0; i < G; i++) {
		if (pthread_create(&r->gates[i].thread, NULL, akk_gate_actor_main,
				   &r->gates[i])) {
			akk_err_set(&se, "cannot start the thread of gate %d", i + 1);
			akk_run_fail(r, &se);
			goto join;
		}
		r->gates[i].started = 1;
	}
	rc = akk_sentinel_run(r, &se);
	if (!rc) {
		struct akk_msg stop = { .kind = AKK_MSG_STOP };
		for (int i = 0; i < G; i++)
			akk_send(&r->tr, i + 1, &stop);
	} else if (!r->failed) {
		akk_run_fail(r, &se);
	}
join:
	for (int i = 0; i < G; i++)
		if (r->gates[i].started) {
			pthread_join(r->gates[i].thread, NULL);
			r->gates[i].started = 0;
		}
	akk_provider_stop(&r->tprov);
	if (r->val)
		akk_provider_stop(&r->vprov);
	if (r->failed) {
		*e = r->err;
		return -1;
	}
	return 0;
}

void akk_run_release(struct akk_run *r)
{
	for (int i = 0; r->gates && i < r->model->ngates; i++) {
		akk_gate_release(&r->gates[i].gate);
		free(r->gates[i].trace.ev);
	}
	free(r->sentinel_trace.ev);
	free(r->gates);
	r->gates = NULL;
	akk_provider_release(&r->tprov);
	if (r->val)
		akk_provider_release(&r->vprov);
	akk_transport_release(&r->tr);
	akk_pool_destroy(r->pool);
	r->pool = NULL;
	if (r->metrics)
		fclose(r->metrics);
	r->metrics = NULL;
	pthread_mutex_destroy(&r->mu);
}
