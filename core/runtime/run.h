/* run.h - a training run: the actor system of one sentinel, one actor per
 * gate and two data providers, on pthreads.
 *
 * akk_run_create plans all memory (gates, tapes, batch pools, mailboxes)
 * and sets the BLAS thread count; akk_run_train starts the threads, lets the
 * sentinel drive the epochs and joins everything. The first actor to fail
 * records its error and closes every mailbox, so all threads leave at once
 * and akk_run_train returns that error. akk_run_interrupt asks the sentinel
 * to stop at a clean point (in-flight batches drained). A run is opaque:
 * callers read it through akk_run_stats and friends; the actors' structs
 * are in run_internal.h, for the runtime's own files. */
#ifndef AKK_RUN_H
#define AKK_RUN_H

#include "io/checkpoint.h"
#include "base/clock.h"
#include "data/dataset.h"
#include "model/model.h"
#include "config/spec.h"
#include "runtime/transport.h"
#include "runtime/world.h"

struct akk_progress {
	int epoch, epochs;	/* 1-based */
	long batch, batches;	/* batches done in this epoch, of */
	double loss;		/* running mean training loss this epoch */
	double samples_per_s;
	double elapsed;		/* seconds in this epoch */
};

struct akk_epoch_report {
	int epoch, epochs;	/* 1-based */
	const char *phase;	/* "epoch" or "final" (wheels' drained pass) */
	long samples;
	double train_loss, train_acc;
	long val_samples;	/* 0: no validation */
	double val_loss, val_acc;
	/* data.task regression: train_acc and val_acc hold R^2
	 * (at most 1, may be negative), these the RMSE */
	int regression;
	double train_rmse, val_rmse;
	long vmin, vmax;	/* weight versions validation saw */
	int during;		/* the validation ran while training batches
				 * were in flight (wheels), on weights that
				 * changed under it */
	long steps;		/* the weight version the gates hold now: what
				 * a checkpoint written by epoch_end stores */
	double seconds, samples_per_s;
	double lr;
};

struct akk_run;

/* Called on the sentinel thread. epoch_end runs after the schedule has
 * drained (every gate idle, no batch in flight), so it may read the gates;
 * returning -1 with e filled stops the run with that error. */
struct akk_observer {
	void *ctx;
	void (*progress)(void *ctx, const struct akk_progress *p);
	int (*epoch_end)(void *ctx, struct akk_run *r,
			 const struct akk_epoch_report *rep, struct akk_err *e);
};

/* Tracing (akkctl bench --trace): each actor records what it did into its
 * own preallocated buffer, read after join. */
enum akk_trace_kind {
	AKK_TRACE_FORWARD, AKK_TRACE_BACKWARD, AKK_TRACE_OPTIMIZER,
	AKK_TRACE_VALIDATE, AKK_TRACE_LOSS,
};

struct akk_trace_event {
	double t0, t1;		/* akk_now() seconds */
	int kind;
	long id;		/* training batch, or -1 */
	long version;		/* the weight version (optimizer steps) the
				 * gate computed with: a forward's, a
				 * backward's (its stash's with weight
				 * stashing), the one a step made; -1 for
				 * the sentinel's loss */
};

struct akk_trace {
	struct akk_trace_event *ev;	/* cap events, owned */
	long n, cap;		/* recording stops when full */
};

struct akk_run_config {
	enum akk_mode mode;
	int epochs;
	struct akk_position start;	/* where to start (resume); zero: the beginning */
	int blas_threads;	/* compute threads of a busy gate; 0: automatic */
	const char *metrics_path;	/* NULL: no CSV */
	long trace_events;	/* per actor; 0: no tracing */
	/* Under MPI: this process's rank and every gate's (ngates); NULL:
	 * one process. Rank 0 runs the sentinel, the data providers and its
	 * gates; another rank runs only its gates, and its datasets need
	 * only their sample counts (n). */
	int rank;
	const int *gate_rank;
	/* Data parallelism (schedule.parallel: data): shards ranks each run
	 * the whole network on their slice of every batch and sum the gates'
	 * gradients before each step; 0 or 1: off. */
	int shards;
	struct akk_observer obs;
	/* the input map to use (a checkpoint's, on
	 * resume; copied), NULL: built from the spec and train; and the
	 * held-out indices of a validation split (nheldout, lent for the
	 * run), written into checkpoints. */
	const struct akk_preprocess *pre;
	const uint32_t *heldout;
	size_t nheldout;
	char *const *class_names;	/* nclass_names, lent; NULL: none */
	int nclass_names;
};

/* Whether the data fits the network (values per sample, label range, not
 * empty); akk_run_init checks it too, but a caller may want to tell bad
 * input from a runtime failure. */
int akk_run_check_data(const struct akk_model *m, const struct akk_dataset *train,
		       const struct akk_dataset *val, struct akk_err *e);
/* Plan all memory and start nothing yet; NULL with e filled on failure.
 * akk_run_free releases it (NULL: nothing). */
struct akk_run *akk_run_create(const struct akk_model *m,
			       const struct akk_dataset *train,
			       const struct akk_dataset *val,
			       const struct akk_run_config *cfg, struct akk_err *e);
void akk_run_free(struct akk_run *r);
/* Resume: copy checkpoint c (read once by the caller, its position given
 * to akk_run_init as cfg->start) into the gates this process holds. path
 * is for error messages. Fails, as bad input, when c is not of this
 * network (akk_checkpoint_restore). */
int akk_run_restore(struct akk_run *r, const struct akk_checkpoint *c,
		    const char *path, struct akk_err *e);
/* Train; 0 when every epoch ran or the run was interrupted cleanly (see
 * akk_run_stats' interrupted), -1 with e filled on failure. */
int akk_run_train(struct akk_run *r, struct akk_err *e);
/* Thread-safe, not async-signal-safe: call it from a signal-waiting thread. */
void akk_run_interrupt(struct akk_run *r);

/* What a caller may read of a run, by value: after akk_run_train, or from
 * the observer's epoch_end (everything drained). */
struct akk_run_stats {
	struct akk_position pos;	/* where training stands after the last drain */
	int epochs;			/* asked for (cfg.epochs) */
	int interrupted;		/* stopped early on akk_run_interrupt */
	int has_val;			/* it validates */
	int compute_threads;		/* of a busy gate */
	long per_epoch;			/* training batches per epoch */
	int ngates;
	double busy[AKK_MAX_GATES];	/* seconds each gate computed */
	double depth[AKK_MAX_GATES];	/* each gate's mean mailbox depth */
	struct akk_link_stats link;	/* its MPI link's */
};
struct akk_run_stats akk_run_stats(const struct akk_run *r);
/* What actor `actor` traced (0 the sentinel, g gate g); empty without
 * cfg.trace_events. Valid until akk_run_release. */
const struct akk_trace *akk_run_trace(const struct akk_run *r, int actor);
/* Write the run's gates and position as a checkpoint to path (atomically;
 * akk_checkpoint_write), with spec, base_dir and metrics as given. Only
 * when drained: after akk_run_train or from epoch_end. */
int akk_run_write_checkpoint(const struct akk_run *r, const char *path,
			     const struct akk_spec *spec, const char *base_dir,
			     const struct akk_ckpt_metrics *metrics,
			     struct akk_err *e);
/* Early stopping and the lr plateau so far (nn/monitor.h): after
 * akk_run_train or from epoch_end. watch->stopped_epoch is the epoch
 * early stopping ended the run after (0: it did not). */
const struct akk_watch *akk_run_watch(const struct akk_run *r);
/* Under MPI (collective, main thread, after akk_run_train): every rank
 * takes rank 0's position, which only its sentinel knows in a pipeline. */
int akk_run_agree_position(struct akk_run *r, struct akk_world *w);

#endif
