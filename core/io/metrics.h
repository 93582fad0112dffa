/* metrics.h - the metrics CSV: a header, then one flushed row per epoch and
 * phase. Opened for appending, so a resumed run continues the same file,
 * after akk_metrics_truncate_for has cut it back to the rows its checkpoint
 * covers. */
#ifndef AKK_METRICS_H
#define AKK_METRICS_H

#include <stdio.h>

#include "base/err.h"

/* The largest metrics file read back (by --resume and plot): 64 MiB,
 * some 600,000 epochs of rows. */
#define AKK_METRICS_MAX_BYTES (64 << 20)

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
	/* data.task regression (1): accuracy holds R^2, and the
	 * columns are loss, r2, rmse instead of loss, accuracy; 2 (data.targets
	 * input or files): loss, r2, rmse, psnr */
	int regression;
	double rmse, psnr;
	/* network.outputs: columns of the heads after the lr columns, their
	 * header text (",class_loss,class_acc,...", model/heads.h; NULL:
	 * none) and values (nheads_values of them) */
	const char *heads_header;
	const double *heads;
	int nheads_values;
};

/* The header line, without its newline, for nlr per-gate lr columns
 * (0: the plain header). Allocated; NULL when out of memory. */
char *akk_metrics_header(int nlr);
/* The same for a run of data.task regression (regression 1):
 * epoch,phase,samples,loss,r2,rmse,lr,...; with PSNR (2):
 * epoch,phase,samples,loss,r2,rmse,psnr,lr,... */
char *akk_metrics_header_for(int nlr, int regression);
/* The same with the heads' columns (NULL or "": none) at its end. */
char *akk_metrics_header_heads(int nlr, int regression, const char *heads);
/* Open path for appending. The header is written with the first row when
 * the file is new or empty. A symbolic link, a file that is not a regular
 * file or one larger than AKK_METRICS_MAX_BYTES is refused (e names it as
 * its file: bad input, not a system error). */
FILE *akk_metrics_open(const char *path, struct akk_err *e);
/* Append one row (and the header first into an empty file), flushed.
 * On a failed write, what the row had put in the file is cut off again,
 * so that neither a torn row nor a header alone stays; path names the
 * file in the error. */
int akk_metrics_write(FILE *f, const char *path, const struct akk_metrics_row *r,
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
 * is set), ending in the heads' columns (NULL: none). best (may be NULL) gets the best validation row kept: the
 * highest accuracy (R^2), or with by_loss the lowest loss.
 * Errors: a file that is not a metrics file of this run (a link, not a
 * regular file, over AKK_METRICS_MAX_BYTES, a NUL byte, other columns, a
 * row that is not a row) has e->file set to path; a system error (a read
 * or a rewrite on a full disk) names the path in e->msg alone. */
int akk_metrics_truncate_for(const char *path, int epochs, int nlr,
			     int regression, const char *heads, int by_loss,
			     struct akk_metrics_best *best, struct akk_err *e);

/* Cut the rows of epochs after `epochs` off path in place (no copy: this
 * works on a full disk), after the checkpoint of an epoch could not be
 * written. A missing file is left missing. */
int akk_metrics_cut(const char *path, int epochs, struct akk_err *e);

#endif
