/* metrics.h - the metrics CSV: a header, then one flushed row per epoch and
 * phase. Opened for appending, so a resumed run continues the same file. */
#ifndef AKK_METRICS_H
#define AKK_METRICS_H

#include <stdio.h>

#include "err.h"

struct akk_metrics_row {
	int epoch;		/* 1-based */
	const char *phase;	/* "train", "validation", "final" */
	long samples;
	double loss, accuracy;
	double lr;
	double seconds;
	long vmin, vmax;	/* weight versions (gate 1 steps) the rows saw */
};

/* Open path for appending; writes the header when the file is new or empty. */
FILE *akk_metrics_open(const char *path, struct akk_err *e);
int akk_metrics_write(FILE *f, const struct akk_metrics_row *r,
		      struct akk_err *e);

#endif
