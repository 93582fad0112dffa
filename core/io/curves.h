/* curves.h - the learning curves read back from a metrics file.
 *
 * The reading side of metrics.h, for `akkctl plot`: every row's epoch,
 * phase, loss, accuracy and lr, in file order, checked strictly (the
 * header must be the metrics header, every row complete and numeric), and
 * the places where the run was resumed or restarted, which the file shows
 * only indirectly: metrics.csv has no resume row, so a segment starts at a
 * training row whose epoch does not follow the previous training row's, or
 * that comes after a final row (a finished run continued with --resume). */
#ifndef AKK_CURVES_H
#define AKK_CURVES_H

#include <stddef.h>

#include "base/err.h"

/* The most rows read: 1,000,000 (about 48 MB in memory). */
#define AKK_CURVES_MAX_ROWS 1000000

enum akk_curve_phase { AKK_CURVE_TRAIN, AKK_CURVE_VALIDATION, AKK_CURVE_FINAL };

struct akk_curve_row {
	int epoch;			/* from 1 */
	enum akk_curve_phase phase;
	double loss, accuracy;		/* accuracy 0 to 1; may be NaN or inf */
	double lr;			/* the first gate's */
	int segment;			/* 0 for the first, +1 at each resume */
	int line;			/* in the file, from 1 */
};

struct akk_curves {
	struct akk_curve_row *rows;	/* n, file order, owned */
	size_t n;
	int segments;			/* 1 + the resumes seen */
	int mark_epoch;			/* the best epoch to mark: 0, the
					 * highest accuracy (akk_plot_curves);
					 * else this one (early stopping's,
					 * whose weights the run restored) */
};

/* Read the metrics file at path. Fails, with e at path:line:col, on a
 * file that cannot be read, is empty or has no row, whose header is not a
 * metrics header (extra columns after the known ones, such as lr_g1..,
 * are allowed), a row with another number of fields than the header, a
 * phase other than train, validation and final, a field that is not a
 * number (nan and inf are numbers), an epoch below 1, a last line without
 * its newline (cut short), or more than AKK_CURVES_MAX_ROWS rows. */
int akk_curves_load(struct akk_curves *c, const char *path, struct akk_err *e);
void akk_curves_release(struct akk_curves *c);

#endif
