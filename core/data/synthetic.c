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
	d->x8 = malloc(bytes ? bytes : 1);
	d->labels = malloc((n ? n : 1) * sizeof(*d->labels));
	if (!d->x8 || !d->labels) {
		akk_dataset_release(d);
		return akk_err_set(e, "out of memory for %zu synthetic samples", n);
	}
	akk_rng_seed(&r, seed, 0x5157);
	for (size_t i = 0; i < n; i++) {
		int c = (int)akk_rng_below(&r, (uint32_t)classes);
		uint8_t *x = d->x8 + i * item;

		d->labels[i] = c;
		for (size_t j = 0; j < item; j++) {
			uint64_t bits = akk_rng_next(&r);
			int stripe = (int)(j * classes / item) == c;
			x[j] = (uint8_t)((bits >> 58) + (stripe ? (bits >> 57 & 1) * 160 : 0));
		}
	}
	d->n = n;
	d->in = item;
	d->c = d->h = 1;
	d->w = (int)item;
	d->xtype = AKK_X_U8;
	d->classes = classes;
	return 0;
}
