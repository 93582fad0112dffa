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
 * are in actors.h, for the runtime's own files. What a run is given is in
 * run_config.h, what it reports in report.h. */
#ifndef AKK_RUN_H
#define AKK_RUN_H

#include "io/checkpoint.h"
#include "base/clock.h"
#include "data/dataset.h"
#include "model/model.h"
#include "config/spec.h"
#include "runtime/run_config.h"
#include "runtime/transport.h"
#include "runtime/world.h"

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
