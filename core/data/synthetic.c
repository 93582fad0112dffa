/* synthetic.c - seeded, learnable stand-in data. */
#include "data/synthetic.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "base/rng.h"

int akk_dataset_synthetic(struct akk_dataset *d, size_t n, size_t item,
			  int classes, uint64_t seed, struct akk_err *e)
{
	struct akk_rng r;
	size_t bytes;

	memset(d, 0, sizeof(*d));
	if (!akk_mul_ok(n, item, &bytes) || n > UINT32_MAX || item > INT_MAX ||
	    classes < 1)
		return akk_err_set(e, "cannot make %zu synthetic samples of %zu values in %d classes",
				   n, item, classes);
	d->images.data = malloc(bytes);
	d->labels.data = malloc(n);
	if (!d->images.data || !d->labels.data) {
		akk_dataset_release(d);
		return akk_err_set(e, "out of memory for %zu synthetic samples", n);
	}
	akk_rng_seed(&r, seed, 0x5157);
	for (size_t i = 0; i < n; i++) {
		int c = (int)akk_rng_below(&r, (uint32_t)classes);
		uint8_t *x = d->images.data + i * item;

		d->labels.data[i] = (uint8_t)c;
		for (size_t j = 0; j < item; j++) {
			uint64_t bits = akk_rng_next(&r);
			int stripe = (int)(j * classes / item) == c;
			x[j] = (uint8_t)((bits >> 58) + (stripe ? (bits >> 57 & 1) * 160 : 0));
		}
	}
	d->images.rank = 2;
	d->images.dims[0] = d->labels.dims[0] = (uint32_t)n;
	d->images.dims[1] = (uint32_t)item;
	d->images.count = d->labels.count = n;
	d->images.item = item;
	d->labels.rank = 1;
	d->labels.item = 1;
	d->n = n;
	d->h = 1;
	d->w = (int)item;
	d->classes = classes;
	return 0;
}
