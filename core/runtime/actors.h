/* actors.h - the runtime's inside: the actor structs of a run, the
 * failure every actor reports through, and tracing. run.c builds and
 * starts them, gate_actor.c and sentinel.c are the actors; all three use
 * this room and none of them calls back into another. Callers use run.h
 * only. */
#ifndef AKK_ACTORS_H
#define AKK_ACTORS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/workers.h"
#include "data/dataset.h"
#include "model/flow.h"
#include "model/gate.h"
#include "model/model.h"
#include "nn/monitor.h"
#include "tensor/pool.h"
#include "runtime/loss_here.h"
#include "runtime/provider.h"
#include "runtime/run_config.h"
#include "runtime/schedule.h"
#include "runtime/transport.h"
#include "runtime/transport_mpi.h"

/* What a handler of an actor's message says to do next (as CAF's
 * resumable states do), rather than an int code. */
enum akk_next {
	AKK_NEXT_MESSAGE,	/* take the next message */
	AKK_NEXT_DONE,		/* finished: it took STOP, or what it waited
				 * for has come */
	AKK_NEXT_FAILED,	/* the run failed: the error is recorded
				 * (akk_run_fail), or its mailboxes closed */
};

/* A join's or a fork's messages waiting for their peers: a FIFO per source
 * (forward, validate and sync messages) or per reader (backward ones),
 * cap each, planned at init. A gate's sources send it the same stream in
 * the same order, so the heads of the FIFOs belong together. */
struct akk_inbox {
	struct akk_msg *q;	/* n * cap */
	int n, cap;
	int head[AKK_MAX_JOIN], count[AKK_MAX_JOIN];
};

struct akk_gate_actor {
	struct akk_gate gate;
	struct akk_flow flow;	/* its joined input and summed gradient */
	struct akk_inbox srcs;	/* a join's: one FIFO per source */
	struct akk_inbox rds;	/* a fork's: one FIFO per reader */
	struct akk_run *run;
	int self;		/* actor number: gate index + 1 */
	struct akk_actor task;	/* runs it on the workers */
	int backward_state;	/* flip-flop: expects a Backward (the task's) */
	atomic_int done;	/* took STOP, or failed: takes no more mail */
	/* Statistics, written by the actor's task, read after the run. */
	double busy;		/* seconds spent computing */
	long forwards, backwards, validations;
	struct akk_trace trace;
	int local;		/* runs in this process */
	int ready;		/* its state is allocated here: a local gate,
				 * or on rank 0 a mirror of a remote one */
	float *pack;		/* under MPI: its state, for the sentinel */
	long pack_len;
	/* Data parallelism: what its layers sum over the replicas with
	 * (batchnorm; nn/layer.h), its buffer owned here. */
	struct akk_layer_sync sync;
};

struct akk_run {
	const struct akk_model *model;	/* not owned */
	const struct akk_dataset *train, *val;	/* val may be NULL */
	struct akk_run_config cfg;
	struct akk_schedule sched;	/* what the schedule decided: the
					 * batches in flight (K, V), the
					 * compute threads of a busy gate */
	int shards;		/* ranks sharing every batch (data parallelism) */
	long per_epoch, val_batches;
	struct akk_gate_actor *gates;	/* ngates */
	struct akk_provider tprov, vprov;
	struct akk_transport tr;
	FILE *metrics;
	pthread_mutex_t mu;	/* guards err and failed */
	struct akk_err err;
	int failed;
	atomic_int stop;	/* akk_run_interrupt was called */
	atomic_int interrupted;	/* the run stopped early on it */
	struct akk_position pos;	/* where training stands after the last
					 * drain (sentinel thread; read after join) */
	int epochs_done;
	struct akk_watch watch;	/* early stopping and lr plateau (sentinel
				 * thread; restored by akk_run_restore) */
	struct akk_workers workers;	/* every actor runs on them */
	struct akk_pool *pool;	/* splits a busy gate's products over
				 * them (sched.compute_threads > 1) */
	struct akk_trace sentinel_trace;
	/* the last gate computes each training chunk's loss (loss_here.h):
	 * set up by the sentinel before it sends anything, NULL chunks when
	 * it computes them itself */
	struct akk_loss_here loss_here;
	int *actor_rank;	/* under MPI: G+1 entries; else NULL */
	struct akk_link_stats link_stats;	/* its MPI link's, after the run */
	int root;		/* this process runs the sentinel */
	struct akk_preprocess pre;	/* the input map (root only), owned */
};

/* Record the first failure and close every mailbox. */
void akk_run_fail(struct akk_run *r, const struct akk_err *e);
/* Whether the run failed (any thread: read under its mutex). */
int akk_run_failed(struct akk_run *r);

static inline void akk_trace_add(struct akk_trace *t, int kind, long id,
				 long version, double t0, double t1)
{
	if (t->n < t->cap)
		t->ev[t->n++] = (struct akk_trace_event){ t0, t1, kind, id, version };
}

#endif
