/* csv.h - CSV tables (data.format: csv), plain or gzip-compressed.
 *
 * A table is read into one struct akk_dataset of float features (c = h = 1,
 * w = in): every column that is not the label (classification) or a target
 * (regression) is a feature. The options (data.csv in the config, struct
 * akk_csv_spec) say how many lines to skip first, whether a header row names
 * the columns, the delimiter, and which columns are the label and the
 * targets (by header name or 0-based index; the label defaults to the last
 * column). Class labels are integers 0..K-1 (classes = the highest + 1) when
 * the first data row's label is a number; otherwise every label is a name,
 * and the names, sorted in byte order (strcmp), are classes 0..K-1 and fill
 * d->class_names. Regression targets are floats in d->y.
 *
 * The rules (man/akkctl.5, CSV): blank lines are skipped (but counted by
 * skip); a UTF-8 byte order mark at the start of the file is dropped; lines
 * may end in CRLF; with comma or semicolon, blanks around a cell are
 * trimmed and a cell may be quoted ("a, b", "" for a quote); with whitespace
 * the cells are separated by runs of blanks and cannot be quoted. Every
 * error names FILE:LINE:COLUMN, LINE being the file's own line number and
 * COLUMN the 1-based cell: a missing value, a cell that is not a number or
 * not finite (nan, inf, beyond a float), a row with the wrong number of
 * cells, a class label out of range, an empty file or one with no data rows.
 * Bounded: at most AKK_CSV_MAX_ROWS rows, AKK_CSV_MAX_COLS columns (spec.h),
 * AKK_CSV_MAX_CELL bytes a cell, AKK_CSV_MAX_LINE bytes a line,
 * AKK_CSV_MAX_CLASSES classes, and a gzip file may inflate to at most
 * AKK_CSV_GZ_RATIO times its compressed size (a gzip bomb is an error). */
#ifndef AKK_CSV_H
#define AKK_CSV_H

#include "base/err.h"
#include "config/spec.h"
#include "data/dataset.h"

#define AKK_CSV_MAX_ROWS ((size_t)1 << 31)
#define AKK_CSV_MAX_CELL 1024
#define AKK_CSV_MAX_LINE ((size_t)64 << 20)
#define AKK_CSV_MAX_CLASSES 65536
#define AKK_CSV_GZ_RATIO 256

/* Read the table at path into d. regression: the targets (o->targets, or
 * the label column when there are none) are float values in d->y;
 * otherwise the label column holds class labels. With targets_path, every
 * column of path is a feature and the label or targets are taken from the
 * table at targets_path (read with the same options; its other columns are
 * ignored), which must have as many rows. */
int akk_csv_dataset(struct akk_dataset *d, const char *path,
		    const char *targets_path, const struct akk_csv_spec *o,
		    int regression, struct akk_err *e);

/* Unlabelled input (akkctl predict): every column of the table at path is
 * a feature (read with o's header, skip and delimiter); d has no labels.
 * With o->header 1, a first row of numbers only is an error (a file
 * without the header the model was trained with would lose its first
 * sample); o->header AKK_CSV_HEADER_ANY takes the first row as the header
 * whatever it holds. */
int akk_csv_inputs(struct akk_dataset *d, const char *path,
		   const struct akk_csv_spec *o, struct akk_err *e);

/* Renumber the classes of d (read from path) by names[0..n), the class
 * names of the training set or of a checkpoint, so that one name is one
 * class in both: a validation table names only the classes it holds, and
 * numbers them by its own sorted names. d's class_names become a copy of
 * names. A name of d that is not among them, or names on one side and
 * numbers on the other, is an error naming path. Nothing to do (0) when
 * neither has names. */
int akk_csv_match_classes(struct akk_dataset *d, char *const *names, int n,
			  const char *path, struct akk_err *e);

#endif
