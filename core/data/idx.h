/* idx.h - IDX files (the MNIST format), plain or gzip-compressed.
 *
 * Only unsigned-byte IDX (type 0x08) is accepted: images of rank 3 (N, H, W)
 * or 4 (N, C, H, W or N, H, W, C) and labels of rank 1 (N). The reader checks the magic, the element type,
 * the rank, every declared size against the bytes actually present, and for
 * a dataset that images and labels agree in count. Sizes are bounded before
 * they are spent: see idx.c. Pixels stay uint8 in memory; conversion to
 * float happens per batch in the data provider. */
#ifndef AKK_IDX_H
#define AKK_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"

/* The most data bytes (the product of the dimensions) a header may
 * declare: 8 GiB (man/akkctl.5, LIMITS). */
#define AKK_IDX_MAX_BYTES ((size_t)1 << 33)

struct akk_idx {
	uint8_t *data;		/* count * item bytes, owned */
	int rank;		/* 1..4 */
	uint32_t dims[4];
	size_t count;		/* dims[0] */
	size_t item;		/* product of dims[1..] (1 for labels) */
};

/* Load a file; a name ending in ".gz" (or starting with the gzip magic) is
 * inflated. Errors name the file and the problem. */
int akk_idx_load(struct akk_idx *x, const char *path, struct akk_err *e);
void akk_idx_release(struct akk_idx *x);

/* Load an image file (rank 3: N x H x W, or rank 4: N x C x H x W) and a
 * label file (rank 1: N) into d (bytes) and check they agree (counts). The
 * IDX buffers become d's; labels are class indices. */
int akk_idx_dataset(struct akk_dataset *d, const char *images,
		    const char *labels, struct akk_err *e);
/* The same with data.layout: nhwc = 1 reads rank-4 images as
 * N x H x W x C and transposes them to channels first once, here. */
int akk_idx_dataset_layout(struct akk_dataset *d, const char *images,
			   const char *labels, int nhwc, struct akk_err *e);

#endif
