/* metrics.h - the metrics CSV: a header, then one flushed row per epoch and
 * phase. Opened for appending, so a resumed run continues the same file,
 * after akk_metrics_truncate_for has cut it back to the rows its checkpoint
 * covers. */
#ifndef AKK_METRICS_H
#define AKK_METRICS_H

#include <stdio.h>

#include "base/err.h"

struct akk_metrics_row {
	int epoch;		/* 1-based */
	const char *phase;	/* "train", "validation", "final" */
	long samples;
	double loss, accuracy;
	double lr;		/* the first gate's */
	double seconds;
	long vmin, vmax;	/* weight versions (gate 1 steps) the rows saw */
	/* Every gate's lr (nlr of them), written as extra columns
	 * lr_g1..lr_gN when nlr > 0; 0 when the gates share one optimizer. */
	const double *lrs;
	int nlr;
	/* data.task regression: accuracy holds R^2, and the
	 * columns are loss, r2, rmse instead of loss, accuracy */
	int regression;
	double rmse;
};

/* The header line, without its newline, for nlr per-gate lr columns
 * (0: the plain header). Allocated; NULL when out of memory. */
char *akk_metrics_header(int nlr);
/* The same for a run of data.task regression (regression != 0):
 * epoch,phase,samples,loss,r2,rmse,lr,... */
char *akk_metrics_header_for(int nlr, int regression);
/* Open path for appending. The header is written with the first row when
 * the file is new or empty. */
FILE *akk_metrics_open(const char *path, struct akk_err *e);
int akk_metrics_write(FILE *f, const struct akk_metrics_row *r,
		      struct akk_err *e);

/* The best validation accuracy among a file's rows. */
struct akk_metrics_best {
	int epoch;		/* 0: no validation row */
	int final;		/* it was the final pass (wheels) */
	double accuracy;	/* R^2 for regression */
	double loss;		/* that row's loss */
};

/* Before a resume: keep the header and the rows of epochs 1..epochs (the
 * epochs the checkpoint completed), drop later rows and a torn last line,
 * crash-safely (a temporary copy, fsync, rename, fsync of the directory).
 * A missing file is left missing. The header must be the one for nlr
 * per-gate lr columns (of a run of data.task regression when regression
 * is set). best (may be NULL) gets the best validation row kept: the
 * highest accuracy (R^2), or with by_loss the lowest loss. */
int akk_metrics_truncate_for(const char *path, int epochs, int nlr,
			     int regression, int by_loss,
			     struct akk_metrics_best *best, struct akk_err *e);

#endif
