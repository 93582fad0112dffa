/* dataset.h - a data set in memory, whatever file it was read from.
 *
 * Every reader (data/idx.c today; CSV, .npy and CIFAR-10 readers beside
 * it) fills one struct akk_dataset, and everything above data/ (batches,
 * providers, evaluation, the reference trainer) reads only this struct.
 * Sample values stay as the file stored them, bytes or floats, n rows of
 * `in` values in C order (channels first for images); they become the
 * network's float input per batch (data/batch.h). Targets are class labels
 * (classification) or float values (regression), or absent (unlabelled
 * input for prediction). */
#ifndef AKK_DATASET_H
#define AKK_DATASET_H

#include <stddef.h>
#include <stdint.h>

/* How sample values are stored. */
enum akk_xtype { AKK_X_U8, AKK_X_F32 };

struct akk_dataset {
	size_t n;		/* samples */
	size_t in;		/* values per sample: c * h * w */
	int c, h, w;		/* sample shape, channels first; a table row
				 * is 1 x 1 x in */
	enum akk_xtype xtype;
	uint8_t *x8;		/* n * in values when xtype is AKK_X_U8 */
	float *xf;		/* n * in values when xtype is AKK_X_F32 */
	size_t x_mapped;	/* bytes of the huge-page mapping holding x8 or
				 * xf (akk_dataset_huge_pages), 0 when they
				 * came from malloc */
	/* Classification: labels[n * steps] (akk_dataset_steps: one label
	 * per sample, or one per step of a sequence), each in 0..classes-1
	 * (classes = the highest label + 1, or the number of names). Regression: targets > 0
	 * values per sample in y[n * targets], and labels NULL, classes 0.
	 * Unlabelled: all four zero or NULL. */
	int classes;
	int32_t *labels;
	int targets;
	float *y;
	/* The class names, when the file names its classes (strings in a
	 * CSV label column): classes strings; NULL otherwise. */
	char **class_names;
	/* With class_names from a CSV file, 2 ints per name: the line and
	 * column it is first seen at (for errors); NULL otherwise. */
	int *class_at;
	/* Windows of a series (data/series.h): rows a window spans with its
	 * horizon, rows between windows, targets per row; 0 otherwise. */
	int series_span, series_stride, series_targets;
	/* Labels per sample: 0 or 1 for one, T for a label at each of T
	 * steps (text: the next token after each). */
	int label_steps;
	/* Windows of a text (data/text.h): tokens per window, tokens between
	 * windows; 0 otherwise. */
	int text_len, text_stride;
};

/* Labels per sample: 1, or label_steps when it is more. */
static inline int akk_dataset_steps(const struct akk_dataset *d)
{
	return d->label_steps > 1 ? d->label_steps : 1;
}

/* Value i of the n * in, whichever way it is stored. */
static inline float akk_dataset_x(const struct akk_dataset *d, size_t i)
{
	return d->xtype == AKK_X_U8 ? (float)d->x8[i] : d->xf[i];
}

/* Free everything a reader allocated (all owned by d) and zero d. */
void akk_dataset_release(struct akk_dataset *d);

/* Moves d's samples into memory in huge pages when they take
 * AKK_HUGEMEM_MIN bytes or more and the system offers them (see
 * base/hugemem.h), for a training set: training reads it at random
 * places, epoch after epoch. The move costs a copy (about 10 ms for
 * MNIST's 47 MB), which an evaluation's one pass in order would not win
 * back. Otherwise, or when it cannot, d stays as it was. */
void akk_dataset_huge_pages(struct akk_dataset *d);

#endif
