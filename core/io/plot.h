/* plot.h - the two charts akkctl draws, as standalone SVG: the learning
 * curves of a run and the confusion matrix of an evaluation.
 *
 * Pure functions of their data: they write one SVG document into a FILE*
 * (a file, or a buffer through open_memstream) and return 0, or -1 with e
 * filled; they print nothing. The SVG is made for tests to read too: every
 * curve is a <polyline class="NAME"> (one point per epoch shown), and the
 * marks are <g class="..."> groups (see akk_plot_curves). */
#ifndef AKK_PLOT_H
#define AKK_PLOT_H

#include <stdio.h>

#include "base/err.h"
#include "io/curves.h"

/* Axis ticks on a 1-2-5 scale: lo, lo + step, ..., hi (n ticks), with lo
 * at or below min and hi at or above max, about target ticks. With
 * integer != 0 the step is a whole number (epochs). min == max is widened
 * around the value. */
struct akk_ticks {
	double lo, hi, step;
	int n;
};
void akk_plot_ticks(double min, double max, int target, int integer,
		    struct akk_ticks *t);
/* A tick value as text with the decimals its step needs ("0.25", "1e-05"
 * for a tiny step); buf of size bytes. */
void akk_plot_tick_label(char *buf, int size, double v, double step);

/* The learning-curve chart's size. */
#define AKK_PLOT_CURVES_W 900
#define AKK_PLOT_CURVES_H 700
/* The most points a curve gets: beyond, each pixel column keeps the
 * least and the greatest value of its epochs. */
#define AKK_PLOT_MAX_POINTS 1200

/* Draw c as one SVG: on top the loss (training and validation) with the
 * learning rate on a right-hand axis, below the accuracy in percent; epochs
 * along x; the best epoch marked (c->mark_epoch when set, else the highest
 * validation accuracy, final pass included; without validation rows, the
 * highest training accuracy); each
 * resume marked with a dotted line; a legend; the title; and a note of the
 * values not drawn because they are not finite and of the thinning of
 * long runs. Polylines: train-loss, validation-loss, train-accuracy,
 * validation-accuracy, lr (one per run of finite values within a segment).
 * Groups: best-epoch (its first <line> at the best epoch's x), resume (one
 * <line> each), final-pass, legend, note. what names the output in
 * errors. */
int akk_plot_curves(FILE *f, const struct akk_curves *c, const char *title,
		    const char *what, struct akk_err *e);
/* The pixel x of an epoch in the chart of c, for tests. */
double akk_plot_epoch_x(const struct akk_curves *c, double epoch);

/* The most classes a confusion chart draws. */
#define AKK_PLOT_MAX_CLASSES 256

/* Draw a confusion matrix of classes x classes counts ([true][predicted])
 * as a heat map: rows the true class, columns the predicted class, each
 * cell coloured by its share of its row (white 0% to dark blue 100%, the
 * scale at the right) and showing its count when the cell is large enough;
 * names[c] labels class c. The subtitle gives the samples and the
 * accuracy. Groups: cells, row-labels, column-labels, scale. Fails when
 * classes is not 1..AKK_PLOT_MAX_CLASSES. */
int akk_plot_confusion(FILE *f, const long *counts, int classes,
		       const char *const *names, const char *title,
		       const char *what, struct akk_err *e);

#endif
