/* open.h - reading the data a config names, whatever its format.
 *
 * The one place that knows which reader handles which data.format: a
 * table of { name, opener, file, ... } lines in open.c. Adding a format:
 * its reader file in data/ (reading gzip through data/gzip.h if it takes
 * it), its line in that table, its name in config/spec_data.c's
 * format_names and its keys in data_file_keys, its test and the docs
 * (README.md, man/akkctl.5): 7 files. */
#ifndef AKK_OPEN_H
#define AKK_OPEN_H

#include "base/err.h"
#include "config/spec.h"
#include "data/dataset.h"

/* Which part of the config's data. */
enum akk_data_part { AKK_DATA_TRAIN, AKK_DATA_VAL };

/* Whether the config names data for part (validation may be absent). */
int akk_data_has(const struct akk_data_spec *s, enum akk_data_part part);
/* The file that holds part's samples (IDX images, .npy features, the
 * first CIFAR-10 file) and the one that holds its labels (the same file
 * for CIFAR-10), for messages; NULL when absent. */
const char *akk_data_file(const struct akk_data_spec *s, enum akk_data_part part);
const char *akk_data_label_file(const struct akk_data_spec *s,
				enum akk_data_part part);
/* Read part of the config's data into d. Errors name the file and the
 * place. */
int akk_data_open(struct akk_dataset *d, const struct akk_data_spec *s,
		  enum akk_data_part part, struct akk_err *e);

/* Labelled data from files named outside the config (akkctl eval
 * --images, --labels), read as s's data.format reads its validation
 * part, with s's options (csv keys, layout, image shape): samples is the
 * file of the samples (IDX images, .npy features, a CSV table, one
 * CIFAR-10 file, a folder of class folders or an image list), labels the
 * file of the labels (IDX or .npy labels; for CSV a targets table when it
 * is another file; else unused, and may be NULL). Named classes are
 * numbered as akk_data_match_classes numbers them (names, n). */
int akk_data_open_given(struct akk_dataset *d, const struct akk_data_spec *s,
			const char *samples, const char *labels, char *const *names,
			int n, struct akk_err *e);
/* Whether format (NULL: "idx") keeps the labels in the samples' file. */
int akk_data_labels_inside(const char *format);

/* Labels that are names (CSV classes) numbered as the training data
 * numbered them (names, n of them): d's classes renumbered, or an error
 * naming a class training never met. Nothing for formats with numbered
 * labels. */
int akk_data_match_classes(struct akk_dataset *d, const struct akk_data_spec *s,
			   enum akk_data_part part, char *const *names, int n,
			   struct akk_err *e);

/* Unlabelled input for prediction (akkctl predict): the samples of one
 * file, labels absent. format names the reader: "idx" (an image file of
 * rank 3, no label file), "pnm" (one PGM or PPM image); the others as
 * data.format: "csv" (every column a feature, read with ds's csv options),
 * "npy" (a features file alone, ds's layout), "cifar10" (one file of
 * records, their labels ignored), "images" (one PNG or JPEG file or a
 * folder of them, data/image_set.h, in ds's image shape; without one,
 * grey at the files' own size), "text" (a file of bytes cut into ds's
 * windows, data/text.h: then akk_data_match_inputs). ds: the
 * checkpoint's data spec, or NULL for the defaults. akk_data_input_format
 * picks the format for path: "pnm" when the name ends in .pgm, .ppm or
 * .pnm, "images" when it ends in .png, .jpg or .jpeg or path is a folder,
 * else config_format (NULL: "idx"). */
const char *akk_data_input_format(const char *path, const char *config_format);
int akk_data_open_inputs(struct akk_dataset *d, const char *format,
			 const char *path, const struct akk_data_spec *ds,
			 struct akk_err *e);
/* After akk_data_open_inputs: the bytes of a text (path) renumbered to
 * the training vocabulary (names, n of them: the checkpoint's class
 * names), or an error naming a byte it never met and its offset; nothing
 * for other inputs. */
int akk_data_match_inputs(struct akk_dataset *d, char *const *names, int n,
			  const char *path, struct akk_err *e);

#endif
