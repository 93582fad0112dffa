/* npy.h - NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * A .npy file is the magic "\x93NUMPY", a version (major, minor), the
 * header's length (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), a
 * Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
 * (N, ...)} padded with spaces and ended by a newline, then the array's
 * bytes. Accepted: C order, element types uint8/16/32/64, int8/16/32/64,
 * float32 and float64, little- or big-endian ('<', '>', '|', '=').
 * A Fortran-order or object array, an unknown type, an unterminated or
 * malformed dict, and data shorter or longer than the shape says are
 * errors naming the file and the header key or byte offset. The data is
 * bounded like IDX data (AKK_IDX_MAX_BYTES), and a regular file's size is
 * checked against the header before anything is allocated. */
#ifndef AKK_NPY_H
#define AKK_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"

#define AKK_NPY_MAX_RANK 8
/* The longest header accepted, in bytes (NumPy writes less than 200). */
#define AKK_NPY_MAX_HEADER 65536
/* Class labels are 0 .. AKK_NPY_MAX_CLASS. */
#define AKK_NPY_MAX_CLASS 65535

/* One array as the file stores it. */
struct akk_npy {
	uint8_t *data;		/* count * item * size bytes, as in the file
				 * (byte order not yet converted), owned */
	char kind;		/* 'u' unsigned, 'i' signed, 'f' float */
	int size;		/* bytes per element: 1, 2, 4, 8 */
	int big;		/* 1: big-endian elements */
	int rank;		/* 1..AKK_NPY_MAX_RANK */
	size_t dims[AKK_NPY_MAX_RANK];
	size_t count;		/* dims[0] */
	size_t item;		/* elements per row: product of dims[1..] */
};

/* Read and check path. Errors name the file and the place. */
int akk_npy_load(struct akk_npy *a, const char *path, struct akk_err *e);
void akk_npy_release(struct akk_npy *a);
/* Element i as a double (byte order converted). */
double akk_npy_get(const struct akk_npy *a, size_t i);

/* Features (N x F, N x H x W, N x C x H x W, or N x H x W x C when nhwc;
 * NHWC is made channels-first here) and labels (N, integers: classes;
 * N or N x T floats: regression targets) into d. uint8 features stay
 * bytes (d->x8); every other type becomes float32 (d->xf). */
/* labels NULL: unlabelled input (akkctl predict). */
int akk_npy_dataset(struct akk_dataset *d, const char *features,
		    const char *labels, int nhwc, struct akk_err *e);

#endif
