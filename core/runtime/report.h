/* report.h - what a run reports while it trains: the progress of an epoch
 * and the report at its end, which the sentinel fills in and hands to the
 * observer (run_config.h), and the trace each actor records. */
#ifndef AKK_REPORT_H
#define AKK_REPORT_H

#include "config/heads_spec.h"

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
	/* data.targets input or files: the mean PSNR per sample in dB
	 * (data/targets.h) */
	int psnr_on;
	double train_psnr, val_psnr;
	long vmin, vmax;	/* weight versions validation saw */
	int during;		/* the validation ran while training batches
				 * were in flight (wheels), on weights that
				 * changed under it */
	long steps;		/* the weight version the gates hold now: what
				 * a checkpoint written by epoch_end stores */
	double seconds, samples_per_s;
	double lr;
	/* network.outputs: each head's loss and accuracy or RMSE
	 * (akk_heads_values), 2 * nheads values, training and validation */
	int nheads;
	double train_heads[2 * AKK_MAX_HEADS], val_heads[2 * AKK_MAX_HEADS];
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

#endif
