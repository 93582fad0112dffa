/* col2im.c - the fold of an unrolled image (see col2im.h). */
#include "nn/col2im.h"

#include <stddef.h>

void akk_fold_range(int *lo, int *hi, int W, int Wo, int s, int p, int kj)
{
	/* long: b + s - 1 may pass INT_MAX for a huge stride */
	long a = (long)p - kj, b = (long)W + p - kj;

	*lo = a <= 0 ? 0 : (int)((a + s - 1) / s);
	*hi = b <= 0 ? 0 : (int)((b + s - 1) / s);
	if (*hi > Wo)
		*hi = Wo;
	if (*lo > *hi)
		*lo = *hi;
}

void akk_col2im_add(float *x, const float *col, const struct akk_fold *g, int ld)
{
	int k = g->k, s = g->s, p = g->p, Wo = g->Wo, hw = g->Ho * Wo;

	for (int c = 0; c < g->C; c++)
		for (int ki = 0; ki < k; ki++)
			for (int kj = 0; kj < k; kj++, col += ld - hw) {
				int lo, hi, off = kj - p;
				akk_fold_range(&lo, &hi, g->W, Wo, s, p, kj);
				for (int oh = 0; oh < g->Ho; oh++, col += Wo) {
					int ih = oh * s - p + ki;
					if (ih < 0 || ih >= g->H)
						continue;
					float *xr = x + ((size_t)c * g->H + ih) * g->W;
					if (s == 1)	/* unit stride: vectorises */
						for (int ow = lo; ow < hi; ow++)
							xr[ow + off] += col[ow];
					else
						for (int ow = lo; ow < hi; ow++)
							xr[ow * s + off] += col[ow];
				}
			}
}
