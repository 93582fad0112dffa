/* series.h - a table read as a time series, cut into windows.
 *
 * With data.series: {window: W, horizon: H, stride: S}, the rows of a CSV
 * table are the steps of one series, in file order. Window i reads rows
 * i S .. i S + W - 1 and predicts the targets of the H rows after them:
 *
 *   input  [W, F + K]: each row's F features, then its K targets (the
 *          series' own past values are inputs too)
 *   target [H K]: the K targets of rows i S + W .. i S + W + H - 1
 *
 * so n rows make (n - W - H) / S + 1 windows. The validation split of a
 * series holds out its end: the last windows, and the training keeps only
 * the windows that end before the first held-out one begins (no target a
 * training window sees is a validation window's). The naive forecast,
 * every horizon step predicted as the last value of the window, is what a
 * forecaster has to beat. */
#ifndef AKK_SERIES_H
#define AKK_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"

struct akk_series {
	int window, horizon, stride;
};

/* Replace the table d (regression: n rows of in features and targets
 * targets) by its windows, float values. Fails, naming path, when d has no
 * targets, or too few rows for one window, or the windows would pass the
 * limits of a data set. */
int akk_series_windows(struct akk_dataset *d, const struct akk_series *s,
		       const char *path, struct akk_err *e);

/* For prediction: every window of the table d (which needs its targets,
 * the series' past values), the last one ending at its last row, the
 * forecast past the data: (n - W) / S + 1 windows without targets. */
int akk_series_inputs(struct akk_dataset *d, const struct akk_series *s,
		      const char *path, struct akk_err *e);

/* Whether d holds windows of a series (akk_series_windows made it). */
static inline int akk_series_is(const struct akk_dataset *d)
{
	return d->series_span > 0;
}

/* The held-out windows of a series of d->n windows for a split of
 * fraction: the last round(fraction n), at least 1; and the training
 * windows before them that share no row with them: into idx (n of them,
 * increasing, owned by the caller). Fails when nothing is left to train
 * on. */
int akk_series_split(uint32_t **held, size_t *nheld, uint32_t **train, size_t *ntrain,
		     const struct akk_dataset *d, double fraction, struct akk_err *e);

/* The same for any n windows that each span `span` steps of one stream,
 * `stride` steps apart (a series' rows, a text's tokens); `of` names the
 * stream in the messages ("series", "text"). */
int akk_windows_split(uint32_t **held, size_t *nheld, uint32_t **train, size_t *ntrain,
		      size_t n, int span, int stride, double fraction, const char *of,
		      struct akk_err *e);

/* The naive forecast of window i of d: the last row's K targets, repeated
 * for each of the H horizon steps, into out (d->targets floats). */
void akk_series_naive(const struct akk_dataset *d, size_t i, float *out);

#endif
