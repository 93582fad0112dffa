/* run.c - building, starting and stopping the actor system. */
#include "runtime/run_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/open.h"
#include "io/metrics.h"
#include "runtime/gate_actor.h"
#include "runtime/sentinel.h"
#include "runtime/world.h"

static int check_one(const struct akk_model *m, const struct akk_dataset *d,
		     const char *what, const char *path, const char *lpath,
		     struct akk_err *e)
{
	const struct akk_spec *s = m->spec;
	long in = akk_shape_size(s->input);
	char shape[64];

	/* formats without images/labels paths: name the config */
	if (!path)
		path = s->path;
	if (!lpath)
		lpath = path;
	if (akk_model_inputs_fit(m, d->in, what, e))
		return -1;
	if ((long)d->in != in) {
		akk_shape_format(s->input, shape, sizeof(shape));
		return akk_err_at(e, path, 0, 0,
				  "%s images have %zu values each, but network.input %s needs %ld",
				  what, d->in, shape, in);
	}
	/* regression needs float targets, as many as
	 * the network's outputs; classification needs class labels */
	if (s->data.task == AKK_TASK_REGRESSION) {
		if (!d->y || d->targets < 1)
			return akk_err_at(e, lpath, 0, 0,
					  "%s data has no regression targets, but data.task is regression",
					  what);
		int w = akk_heads_width(s, akk_model_outputs(m), AKK_TARGET_TARGETS, d->targets);
		if (d->targets != w)
			return akk_err_at(e, lpath, 0, 0,
					  "%s data has %d target%s per sample, but the network %s %d",
					  what, d->targets, d->targets == 1 ? "" : "s",
					  s->nheads ? "has an output of" : "outputs", w);
	} else if (d->y && !d->labels) {
		return akk_err_at(e, lpath, 0, 0,
				  "%s data has regression targets, not class labels: set data.task: regression",
				  what);
	}
	/* a label per step of a sequence output, or one per sample */
	if (d->labels && akk_dataset_steps(d) != m->steps)
		return akk_err_at(e, lpath, 0, 0,
				  "%s data has %d label%s per sample, but the network outputs %d step%s of %d classes",
				  what, akk_dataset_steps(d), akk_dataset_steps(d) == 1 ? "" : "s",
				  m->steps, m->steps == 1 ? "" : "s", m->classes);
	int wc = akk_heads_width(s, m->classes, AKK_TARGET_LABELS, d->classes);
	if (d->classes > wc)
		return akk_err_at(e, lpath, 0, 0,
				  "%s labels go up to %d, but the network %s %d classes",
				  what, d->classes - 1, s->nheads ? "has an output of" : "outputs", wc);
	if (!d->n)
		return akk_err_at(e, path, 0, 0, "%s set is empty", what);
	return akk_model_check_ids(m, d, path, e);
}

int akk_run_check_data(const struct akk_model *m, const struct akk_dataset *train,
		       const struct akk_dataset *val, struct akk_err *e)
{
	const struct akk_data_spec *ds = &m->spec->data;

	/* a held-out split's validation part comes from the training files */
	enum akk_data_part vp = akk_data_has(ds, AKK_DATA_VAL) ? AKK_DATA_VAL : AKK_DATA_TRAIN;

	/* target files (data.targets: files) hold what labels would */
	int files = ds->targets == AKK_TARGETS_FILES;

	return check_one(m, train, "training", akk_data_file(ds, AKK_DATA_TRAIN),
			 files ? ds->train.target : akk_data_label_file(ds, AKK_DATA_TRAIN), e) ||
	       (val && check_one(m, val, "validation", akk_data_file(ds, vp),
				 files ? (vp == AKK_DATA_VAL ? ds->val.target : ds->train.target) :
				 akk_data_label_file(ds, vp), e)) ? -1 : 0;
}

/* Under MPI, for gates that fork and join: each actor's peers (a join's
 * sources, a fork's readers) and each sender's number among them. */
static void link_peers(const struct akk_model *m, int *fan, int *peer)
{
	int n = m->ngates + 1;

	fan[0] = akk_model_inputs(m);
	for (int i = 0; i < m->ngates; i++) {
		const struct akk_gate_plan *g = &m->gates[i];
		int a = i + 1;
		fan[a] = g->nsrc > g->nread ? g->nsrc : g->nread;
		if (fan[a] < 1)
			fan[a] = 1;
		for (int k = 0; k < g->nsrc; k++)
			peer[a * n + g->src[k] + 1] = k;
		for (int j = 0; j < g->nread; j++)
			peer[a * n + g->readers[j] + 1] = j;
	}
}

/* Under MPI: who runs where, and the link to the other ranks. A gate's
 * slots hold its (joined) input, and the largest gradient a reader sends
 * it: its output's, or a concatenating reader's whole input's. */
static int start_link(struct akk_run *r, struct akk_err *e)
{
	const struct akk_model *m = r->model;
	int G = m->ngates, n = G + 1, rc = -1;
	long *w = calloc(3 * (size_t)n, sizeof(long));
	int *fan = calloc((size_t)n, sizeof(int)), *peer = calloc((size_t)n * n, sizeof(int));

	r->actor_rank = calloc(n, sizeof(int));
	if (!w || !r->actor_rank || !fan || !peer) {
		free(w);
		free(fan);
		free(peer);
		return akk_err_set(e, "out of memory");
	}
	w[0] = akk_model_outputs(m);	/* logits arrive at the sentinel */
	for (int i = 0; i < G; i++) {
		r->actor_rank[i + 1] = r->cfg.gate_rank[i];
		w[i + 1] = akk_shape_size(m->gates[i].in);
		/* a named input's reader takes the whole sample and slices it */
		for (int k = 0; k < m->gates[i].nsrc; k++)
			if (m->gates[i].src[k] < 0 && (long)m->gates[i].src_row[k] > w[i + 1])
				w[i + 1] = (long)m->gates[i].src_row[k];
		w[n + i + 1] = akk_shape_size(m->gates[i].out);
		for (int j = 0; j < m->gates[i].nread; j++)
			if ((long)m->gates[i].rd_in[j] > w[n + i + 1])
				w[n + i + 1] = (long)m->gates[i].rd_in[j];
		w[2 * n + i + 1] = akk_gate_pack_len(&m->gates[i]);
	}
	link_peers(m, fan, peer);
	r->tr.actor_rank = r->actor_rank;
	r->tr.rank = r->cfg.rank;
	struct akk_link_plan plan = { .K = r->sched.K, .V = r->sched.V,
				      .max_batch = m->spec->sched.batch_size,
				      .fwd_width = w, .bwd_width = w + n,
				      .state_len = w + 2 * n, .fan = fan, .peer = peer };
	rc = akk_mpi_link_start(&r->tr, &plan, e);
	free(w);
	free(fan);
	free(peer);
	return rc;
}

/* What the schedule decides, the batches of an epoch, where to start, and
 * whether the data fits: everything before memory is taken. */
/* Whether a layer of m carries state from one batch to the next. */
static int carries_state(const struct akk_model *m)
{
	for (int g = 0; g < m->ngates; g++)
		for (int i = 0; i < m->gates[g].nlayers; i++)
			if (m->gates[g].layers[i].ncarry)
				return 1;
	return 0;
}

static int plan_run(struct akk_run *r, const struct akk_run_config *cfg,
		    struct akk_err *e)
{
	const struct akk_model *m = r->model;
	const struct akk_spec *s = m->spec;
	int G = m->ngates, bs = s->sched.batch_size;

	/* OpenBLAS itself stays on one thread (its threaded driver allocates
	 * per call): the gate's large products are split across the workers
	 * instead. */
	if (akk_schedule_plan(&r->sched, cfg->mode, &s->sched, G,
			      cfg->blas_threads, akk_cores(), e))
		return -1;
	akk_schedule_widen(&r->sched, m);
	if (cfg->shards > 1 && (r->sched.micro > 1 || r->sched.accumulate > 1))
		return akk_err_set(e, "data parallelism does not work with micro-batches or schedule.accumulate yet");
	/* a carried state is per batch row, which micro-batches and shards
	 * split (the config's checks refuse both too) */
	if ((r->sched.micro > 1 || cfg->shards > 1) && carries_state(m))
		return akk_err_set(e, "a stateful recurrent layer carries each batch row's state into the next batch: it does not run with micro-batches or data parallelism");
	r->shards = cfg->shards > 1 ? cfg->shards : 1;
	r->per_epoch = akk_batches_per_epoch(r->train->n, bs * r->shards);
	if (akk_world_check_split(r->train->n, bs, r->shards, e))
		return -1;
	/* A position past the epoch's batches would leave the sentinel
	 * waiting for batches that never come (akk_checkpoint_position
	 * converts and checks a checkpoint's position before). */
	if (cfg->start.index < 0 || cfg->start.index > r->per_epoch ||
	    cfg->start.epoch < 0 || cfg->start.id < 0)
		return akk_err_set(e, "cannot start at epoch %d, batch %ld, step %ld: an epoch has %ld batches",
				   cfg->start.epoch + 1, cfg->start.index, cfg->start.id,
				   r->per_epoch);
	r->val_batches = r->val ? akk_batches_per_epoch(r->val->n, bs) : 0;
	r->root = !cfg->gate_rank || cfg->rank == 0;
	if (r->root && akk_run_check_data(m, r->train, r->val, e))
		return -1;
	akk_blas_threads(1);
	return 0;
}

/* The workers: every usable core (or the threads asked for), and the
 * compute pool that splits a gate's large products across them. */
static int start_workers(struct akk_run *r, struct akk_err *e)
{
	int G = r->model->ngates;

	/* Under data parallelism a gate's reduction blocks its worker until
	 * the other ranks reach it, in whatever order their actors ran: one
	 * worker per local gate and one more, so that a blocked reduction
	 * never holds up the actor another rank waits for. */
	int W = r->sched.compute_threads;
	if (!r->cfg.blas_threads && W < akk_cores())
		W = akk_cores();
	if (r->shards > 1 && W < G + 1)
		W = G + 1;
	/* every gate splits its large products across these workers (idle
	 * ones help, busy ones are never waited for), but with automatic
	 * threads only over the cores that the gates computing at once
	 * leave it: a part handed to a worker busy with another gate waits
	 * for that gate's message, and such splits cost more than they save
	 * (wheels on configs/bench-balanced.yaml, 2 cores: 1.3 s an epoch
	 * split, 1.0 s not) */
	int parts = W;
	if (!r->cfg.blas_threads && r->sched.busy_gates > 1)
		parts = W / r->sched.busy_gates > 1 ? W / r->sched.busy_gates : 1;
	/* gates that compute at once each need a worker, even with
	 * schedule.threads 1 (pipelining is what wheels is for); the
	 * workers added for them do not split a gate's products */
	if (W < r->sched.busy_gates && W < akk_cores())
		W = r->sched.busy_gates < akk_cores() ? r->sched.busy_gates : akk_cores();
	if (akk_workers_init(&r->workers, W, e))
		return -1;
	r->workers.on_start = akk_float_mode;
	if (parts > 1 && !(r->pool = akk_pool_on(&r->workers, parts, e)))
		return -1;
	return 0;
}

/* A join's or fork's FIFOs, one per peer (none: the messages are taken
 * as they come). */
static int inbox_init(struct akk_inbox *in, int n, int cap, struct akk_err *e)
{
	memset(in, 0, sizeof(*in));
	if (!n)
		return 0;
	in->n = n;
	in->cap = cap;
	if (!(in->q = calloc((size_t)n * cap, sizeof(*in->q))))
		return akk_err_set(e, "out of memory");
	return 0;
}

/* A gate's joined inputs, summed gradients and the FIFOs of its peers'
 * messages (a fork's, also for one reader that concatenates it). */
static int make_flow(struct akk_run *r, struct akk_gate_actor *a,
		     const struct akk_gate_config *gc, struct akk_err *e)
{
	const struct akk_gate_plan *p = a->gate.plan;
	int cap = r->sched.mailbox_cap;

	if (akk_flow_init(&a->flow, p, gc->ntapes, gc->nevals, gc->max_batch, e) ||
	    inbox_init(&a->srcs, p->nsrc > 1 ? p->nsrc : 0, cap, e) ||
	    inbox_init(&a->rds, a->flow.dy ? p->nread : 0, cap, e))
		return -1;
	return 0;
}

/* A process holds the gates it runs; rank 0 also holds a mirror of every
 * other rank's gates (parameters and all, no threads) for its
 * checkpoints. So a pipeline over ranks spreads memory as well. */
static int make_gates(struct akk_run *r, struct akk_err *e)
{
	const struct akk_model *m = r->model;
	const struct akk_run_config *cfg = &r->cfg;
	int G = m->ngates, bs = m->spec->sched.batch_size;

	r->gates = calloc(G, sizeof(*r->gates));
	if (!r->gates)
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < G; i++) {
		struct akk_gate_actor *a = &r->gates[i];
		a->run = r;
		a->self = i + 1;
		a->local = !cfg->gate_rank || cfg->gate_rank[i] == cfg->rank;
		a->ready = a->local || r->root;
		if (!a->ready)
			continue;
		struct akk_gate_config gc = akk_schedule_gate_config(&r->sched, &m->gates[i], bs);
		if (!a->local) {	/* rank 0's mirror: state only */
			gc.ntapes = gc.nevals = 1;
			gc.stash = 0;
		}
		gc.steps_per_epoch = (r->per_epoch + r->sched.accumulate - 1) / r->sched.accumulate;
		gc.epochs = cfg->epochs;
		gc.seed = m->spec->seed;
		if (akk_gate_init(&a->gate, &m->gates[i], &gc, e))
			return -1;
		if (a->local && make_flow(r, a, &gc, e))
			return -1;
		if (a->local)
			akk_gate_use_pool(&a->gate, r->pool);
		if (cfg->gate_rank && a->local) {
			a->pack_len = akk_gate_pack_len(&m->gates[i]);
			if (!(a->pack = akk_alloc(a->pack_len)))
				return akk_err_set(e, "out of memory");
		}
	}
	return 0;
}

/* Rank 0's data: the input map and the two providers. */
static int make_providers(struct akk_run *r, struct akk_err *e)
{
	const struct akk_model *m = r->model;
	const struct akk_spec *s = m->spec;
	const struct akk_run_config *cfg = &r->cfg;
	int bs = s->sched.batch_size;
	size_t in = akk_shape_size(s->input);

	if (cfg->pre ? akk_preprocess_set(&r->pre, cfg->pre->in, cfg->pre->a, cfg->pre->b, e)
		     : akk_preprocess_init(&r->pre, &s->data, in, akk_shape_channels(s->input), r->train, e))
		return -1;
	if (r->pre.in != in)
		return akk_err_set(e, "the input map has %zu values, but network.input needs %zu",
				   r->pre.in, in);
	if (akk_provider_init(&r->tprov, r->train, &r->pre, &(struct akk_provider_config){
			.ds = &s->data, .shuffle = 1, .order = s->sched.order, .seed = s->seed,
			.bs = bs, .in = in, .classes = akk_model_outputs(m), .steps = m->steps,
			.npool = r->sched.K + 2, .epoch = cfg->start.epoch,
			.index = cfg->start.index, .shards = r->shards, .shard = cfg->rank,
			.tmap = m->tmap.n ? &m->tmap : NULL }, e))
		return -1;
	if (r->val &&
	    akk_provider_init(&r->vprov, r->val, &r->pre, &(struct akk_provider_config){
			.ds = &s->data, .seed = s->seed, .bs = bs, .in = in,
			.classes = akk_model_outputs(m), .steps = m->steps, .npool = r->sched.V + 2, .shards = 1,
			.tmap = m->tmap.n ? &m->tmap : NULL }, e))
		return -1;
	return 0;
}

/* The mailboxes, the actors on them, and under MPI the link. */
static int make_mail(struct akk_run *r, struct akk_err *e)
{
	int G = r->model->ngates;

	if (akk_transport_init(&r->tr, G + 1, r->sched.mailbox_cap))
		return akk_err_set(e, "out of memory");
	/* before the link starts: it may deliver mail before the run does */
	r->tr.workers = &r->workers;
	for (int i = 0; i < G; i++)
		if (r->gates[i].local)
			akk_gate_actor_attach(&r->gates[i]);
	if (r->root) {
		akk_mailbox_help(&r->tr.boxes[0], &r->workers);
		akk_mailbox_help(&r->tprov.ready, &r->workers);
		if (r->val)
			akk_mailbox_help(&r->vprov.ready, &r->workers);
	}
	if (r->cfg.gate_rank && start_link(r, e))
		return -1;
	if (r->shards > 1) {
		/* a reduction channel per gate, one for the metrics, and one
		 * per gate for batchnorm's forward sums */
		struct akk_link_plan plan = { .K = r->sched.K, .V = r->sched.V,
					      .max_batch = r->model->spec->sched.batch_size,
					      .channels = 2 * G + 1 };
		if (akk_mpi_link_start(&r->tr, &plan, e))
			return -1;
		for (int i = 0; i < G; i++)
			if (akk_gate_actor_sync(&r->gates[i], e))
				return -1;
	}
	return 0;
}

/* Each actor's trace buffer, when tracing. */
static int make_traces(struct akk_run *r, struct akk_err *e)
{
	int G = r->model->ngates;

	for (int i = 0; r->cfg.trace_events > 0 && i <= G; i++) {
		struct akk_trace *t = i < G ? &r->gates[i].trace : &r->sentinel_trace;
		t->ev = calloc(r->cfg.trace_events, sizeof(*t->ev));
		t->cap = r->cfg.trace_events;
		if (!t->ev)
			return akk_err_set(e, "out of memory for the trace");
	}
	return 0;
}

int akk_run_init(struct akk_run *r, const struct akk_model *m,
		 const struct akk_dataset *train, const struct akk_dataset *val,
		 const struct akk_run_config *cfg, struct akk_err *e)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	r->model = m;
	r->train = train;
	r->val = val;
	r->cfg = *cfg;
	r->pos = cfg->start;
	if (plan_run(r, cfg, e) || start_workers(r, e) || make_gates(r, e) ||
	    (r->root && make_providers(r, e)) || make_mail(r, e) ||
	    make_traces(r, e))
		goto fail;
	if (r->root && cfg->metrics_path && !(r->metrics = akk_metrics_open(cfg->metrics_path, e)))
		goto fail;
	return 0;
fail:
	akk_run_release(r);
	return -1;
}

struct akk_run *akk_run_create(const struct akk_model *m,
			       const struct akk_dataset *train,
			       const struct akk_dataset *val,
			       const struct akk_run_config *cfg, struct akk_err *e)
{
	struct akk_run *r = malloc(sizeof(*r));

	if (!r) {
		akk_err_set(e, "out of memory");
		return NULL;
	}
	if (akk_run_init(r, m, train, val, cfg, e)) {
		free(r);
		return NULL;
	}
	return r;
}

void akk_run_free(struct akk_run *r)
{
	if (!r)
		return;
	akk_run_release(r);
	free(r);
}

int akk_run_restore(struct akk_run *r, const struct akk_checkpoint *c,
		    const char *path, struct akk_err *e)
{
	struct akk_gate *gates[AKK_MAX_GATES];
	int G = r->model->ngates;

	/* the watch of early stopping and the lr plateau, before any thread */
	r->watch = c->watch;
	for (int i = 0; i < G; i++) {
		gates[i] = r->gates[i].ready ? &r->gates[i].gate : NULL;
		if (gates[i])
			gates[i]->lr_reductions = c->watch.reductions;
	}
	return akk_checkpoint_restore(c, gates, G, path, e);
}

struct akk_run_stats akk_run_stats(const struct akk_run *r)
{
	struct akk_run_stats st = {
		.pos = r->pos, .epochs = r->cfg.epochs,
		.interrupted = atomic_load(&r->interrupted),
		.has_val = r->val != NULL, .compute_threads = r->sched.compute_threads,
		.per_epoch = r->per_epoch, .ngates = r->model->ngates,
		.link = r->link_stats,
	};

	for (int g = 0; g < st.ngates && g < AKK_MAX_GATES && r->gates; g++) {
		st.busy[g] = r->gates[g].busy;
		st.depth[g] = akk_mailbox_mean_depth(&r->tr.boxes[g + 1]);
	}
	return st;
}

const struct akk_trace *akk_run_trace(const struct akk_run *r, int actor)
{
	return actor ? &r->gates[actor - 1].trace : &r->sentinel_trace;
}

int akk_run_write_checkpoint(const struct akk_run *r, const char *path,
			     const struct akk_spec *spec, const char *base_dir,
			     const struct akk_ckpt_metrics *metrics,
			     struct akk_err *e)
{
	const struct akk_gate *gates[AKK_MAX_GATES];
	int G = r->model->ngates;

	if (G > AKK_MAX_GATES)	/* the spec refuses more */
		return akk_err_set(e, "too many gates to checkpoint (%d)", G);
	for (int i = 0; i < G; i++)
		gates[i] = &r->gates[i].gate;
	struct akk_ckpt_source src = {
		.spec = spec, .base_dir = base_dir, .mode = r->cfg.mode,
		.gates = gates, .ngates = G, .pos = r->pos, .metrics = *metrics,
		.watch = akk_spec_watches(spec) ? &r->watch : NULL,
		.pre = r->pre.in ? &r->pre : NULL,
		.heldout = r->cfg.heldout, .nheldout = r->cfg.nheldout,
		.class_names = r->cfg.class_names, .nclass_names = r->cfg.nclass_names,
	};
	return akk_checkpoint_write(path, &src, e);
}

const struct akk_watch *akk_run_watch(const struct akk_run *r)
{
	return &r->watch;
}

int akk_run_agree_position(struct akk_run *r, struct akk_world *w)
{
	return akk_world_bcast(w, &r->pos.id, 1);
}

void akk_run_interrupt(struct akk_run *r)
{
	struct akk_msg m = { .kind = AKK_MSG_INTERRUPT };

	/* The flag is seen before the sentinel issues anything more; the
	 * message wakes it if it is waiting. */
	atomic_store(&r->stop, 1);
	akk_send(&r->tr, 0, &m);
}

/* The run's end: every local gate took STOP, or the run failed. */
static int all_done(void *arg)
{
	struct akk_run *r = arg;

	if (akk_run_failed(r))
		return 1;
	for (int i = 0; i < r->model->ngates; i++)
		if (r->gates[i].local && !atomic_load(&r->gates[i].done))
			return 0;
	return 1;
}

int akk_run_train(struct akk_run *r, struct akk_err *e)
{
	int G = r->model->ngates, rc;
	struct akk_err se = { 0 };

	akk_float_mode();
	/* this thread is worker 0: the sentinel's code runs here, and every
	 * wait of it runs actors until what it waits for has come */
	if (akk_workers_start(&r->workers, &se)) {
		akk_run_fail(r, &se);
		goto join;
	}
	if (r->root) {	/* the data providers are actors too */
		akk_provider_start(&r->tprov, &r->workers);
		if (r->val)
			akk_provider_start(&r->vprov, &r->workers);
	}
	if (r->root) {
		rc = akk_sentinel_run(r, &se);
		if (!rc) {
			struct akk_msg stop = { .kind = AKK_MSG_STOP };
			for (int i = 0; i < G; i++)
				akk_send(&r->tr, i + 1, &stop);
		} else if (!akk_run_failed(r)) {
			akk_run_fail(r, &se);
		}
	}
	/* the gates run until they take STOP (from rank 0's sentinel) */
	akk_workers_help(&r->workers, all_done, r);
join:
	akk_workers_stop(&r->workers);
	if (r->root) {
		akk_provider_stop(&r->tprov);
		if (r->val)
			akk_provider_stop(&r->vprov);
	}
	/* A failed MPI link is the cause of whatever else failed here (on a
	 * rank without the sentinel, nothing else notices it). */
	if (akk_mpi_link_error(&r->tr, &r->err))
		r->failed = 1;
	/* Under MPI the link ends with the run: one communication thread per
	 * rank at a time, and the next run's link starts clean. */
	if (!r->failed) {
		akk_mpi_link_stats(&r->tr, &r->link_stats);
		if (akk_mpi_link_stop(&r->tr, &r->err))
			r->failed = 1;
	}
	if (r->failed) {
		*e = r->err;
		return -1;
	}
	return 0;
}

void akk_run_release(struct akk_run *r)
{
	/* the link of a run that failed (akk_run_train reported why) or
	 * never trained: there is no one to report to */
	akk_mpi_link_stop(&r->tr, NULL);
	for (int i = 0; r->gates && i < r->model->ngates; i++) {
		akk_gate_release(&r->gates[i].gate);
		akk_flow_release(&r->gates[i].flow);
		free(r->gates[i].srcs.q);
		free(r->gates[i].rds.q);
		free(r->gates[i].trace.ev);
		akk_free(r->gates[i].pack);
		free(r->gates[i].sync.buf);
	}
	free(r->actor_rank);
	r->actor_rank = NULL;
	free(r->sentinel_trace.ev);
	free(r->loss_here.chunks);
	r->loss_here.chunks = NULL;
	free(r->gates);
	r->gates = NULL;
	akk_provider_release(&r->tprov);
	if (r->val && r->root)
		akk_provider_release(&r->vprov);
	akk_preprocess_release(&r->pre);
	akk_transport_release(&r->tr);
	akk_pool_destroy(r->pool);
	r->pool = NULL;
	akk_workers_release(&r->workers);
	if (r->metrics)
		fclose(r->metrics);
	r->metrics = NULL;
	pthread_mutex_destroy(&r->mu);
}
