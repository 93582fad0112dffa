/* weights_note.h - which weights each figure of a training run was
 * measured on, for train's epoch lines and summary.
 *
 * Flip-flop and pipeline validate after the epoch's last step, on the
 * weights a checkpoint then stores. Wheels validates while training
 * batches are in flight, so an epoch's validation figure mixes the weight
 * versions (optimizer steps) vmin..vmax, and best.bin, written after the
 * epoch, holds version `stored`, which no figure measured; its drained
 * final pass measures exactly the weights training ended with. */
#ifndef AKK_WEIGHTS_NOTE_H
#define AKK_WEIGHTS_NOTE_H

#include <stdio.h>

#include "config/spec.h"
#include "io/metrics.h"
#include "runtime/run.h"

/* The weights behind one validation figure. */
struct weights_seen {
	int known;		/* 0: not seen in this process (a resumed run's
				 * earlier epochs) */
	int during;		/* measured during training on versions vmin..vmax */
	int final;		/* wheels' drained final pass */
	long vmin, vmax;
	long stored;		/* the version a checkpoint of that epoch holds */
};

struct weights_seen weights_seen_of(const struct akk_epoch_report *rep);

/* Whether rep becomes the run's best figure, the one best.bin holds: with
 * early stopping, the epoch its monitor calls best (the epoch it
 * restores); otherwise the highest validation accuracy, or with
 * output.best_by loss the lowest loss, than best so far. */
int weights_best_takes(const struct akk_spec *s, const struct akk_run *r,
		       const struct akk_epoch_report *rep,
		       const struct akk_metrics_best *best);

/* A resumed run with early stopping: the best figure is the monitor's
 * best epoch's, read from the metrics file into *best; -1 when that
 * epoch has no validation row there. */
int weights_best_of_epoch(const char *metrics, int epoch,
			  struct akk_metrics_best *best);

/* After an epoch line's validation figures: " (during training, weight
 * versions A-B)" when it ran during training; nothing otherwise. */
void weights_note_epoch(FILE *f, const struct akk_epoch_report *rep);
/* After the summary's best figure: the versions it was measured on, and
 * that best.bin holds another, never measured, when it does. */
void weights_note_best(FILE *f, const struct weights_seen *w);
/* After the summary's final figure: the versions it was measured on. */
void weights_note_final(FILE *f, const struct weights_seen *w);

#endif
