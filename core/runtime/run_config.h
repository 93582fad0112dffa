/* run_config.h - what a run is given: the mode, the epochs, where to
 * start, the ranks, and the observer that receives its reports. */
#ifndef AKK_RUN_CONFIG_H
#define AKK_RUN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "io/checkpoint.h"
#include "config/spec.h"
#include "data/preprocess.h"
#include "runtime/report.h"

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

struct akk_steps;

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
	/* The per-step log (output.log_every_steps; io/steps.h), lent: the
	 * sentinel adds its rows; NULL: none. */
	struct akk_steps *steps;
};

#endif
