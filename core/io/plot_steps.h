/* plot_steps.h - the per-step training loss of a run (io/steps.h) as an
 * SVG chart, for akkctl plot: the loss of every steps.csv row against its
 * optimizer step, one polyline ("step-loss") per run of finite losses; the
 * rows without one are counted in a note. */
#ifndef AKK_PLOT_STEPS_H
#define AKK_PLOT_STEPS_H

#include <stdio.h>

#include "base/err.h"
#include "io/steps.h"

/* Draw r (at least one row) on f, titled title; what names the output in
 * errors. */
int akk_plot_steps(FILE *f, const struct akk_step_rows *r, const char *title,
		   const char *what, struct akk_err *e);

#endif
