/* steps.h - per-step metrics: steps.csv in the run directory, one row
 * every N optimizer steps (output.log_every_steps: N), beside the
 * per-epoch metrics file, whose format and readers it leaves alone.
 *
 *   step,epoch,samples,loss,seconds
 *
 * step: the optimizer steps taken so far (gate 1's weight version,
 * continuing across a resume); epoch: from 1; samples: the training
 * samples whose loss came in since the previous row (of this epoch);
 * loss: their mean loss; seconds: since the log was opened. The sentinel
 * calls akk_steps_on_step after every step (on its thread); the writer
 * owns nothing the run owns. The reader is bounded and strict, as the
 * metrics readers are: the file is untrusted input. */
#ifndef AKK_STEPS_H
#define AKK_STEPS_H

#include <stddef.h>
#include <stdio.h>

#include "base/err.h"

/* The header line, without its newline. */
#define AKK_STEPS_HEADER "step,epoch,samples,loss,seconds"
/* The largest steps file read back: as the metrics file. */
#define AKK_STEPS_MAX_BYTES (64 << 20)
/* The most rows read: 1,000,000. */
#define AKK_STEPS_MAX_ROWS 1000000

struct akk_steps {
	FILE *f;		/* NULL: not logging */
	char *path;		/* owned, for messages */
	int every;		/* N >= 1 */
	int epoch;		/* of the previous row */
	double sum;		/* the epoch's loss sum at the previous row */
	long samples;		/* and its samples */
	double t0;
	int failed;		/* a write failed: no more rows, err says why */
	struct akk_err err;
};

/* Open path for appending a row every `every` steps, after cutting off
 * the rows past step keep (a resume from a checkpoint at step keep; 0: a
 * fresh run keeps none); the header is written when the file is new or
 * empty. A file that is not a regular file, or is larger than
 * AKK_STEPS_MAX_BYTES, is refused. */
int akk_steps_open(struct akk_steps *s, const char *path, int every, long keep,
		   struct akk_err *e);
/* After optimizer step `step` of epoch (from 1), whose running training
 * loss sum and sample count are loss_sum and samples: a row when step is
 * a multiple of every. A failed write stops the log; akk_steps_close
 * reports it. */
void akk_steps_on_step(struct akk_steps *s, long step, int epoch, long samples,
		       double loss_sum);
/* Close; -1 with e when a row could not be written or the close failed. */
int akk_steps_close(struct akk_steps *s, struct akk_err *e);

/* The rows read back (akkctl plot). */
struct akk_step_row {
	long step;
	int epoch;
	long samples;
	double loss;		/* may be NaN or inf */
	double seconds;
};

struct akk_step_rows {
	struct akk_step_row *rows;	/* n, file order, owned */
	size_t n;
};

/* Read the steps file at path. Fails, with e at path:line:col, on a file
 * that cannot be read, is larger than AKK_STEPS_MAX_BYTES, has another
 * header than AKK_STEPS_HEADER or no row, a row of another number of
 * fields, a field that is not a number (loss may be nan or inf), a step
 * below 1 or not above the previous row's, an epoch below 1, a last line
 * without its newline, or more than AKK_STEPS_MAX_ROWS rows. */
int akk_steps_load(struct akk_step_rows *r, const char *path, struct akk_err *e);
void akk_steps_release(struct akk_step_rows *r);

#endif
