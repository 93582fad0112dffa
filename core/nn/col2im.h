/* col2im.h - folding an unrolled image back into the image: conv2d's input
 * gradient and conv_transpose2d's forward are the same fold, with the
 * roles of the image and the unrolled side swapped. */
#ifndef AKK_COL2IM_H
#define AKK_COL2IM_H

/* The image side (C, H, W), the unrolled side (C k k, Ho Wo): kernel k,
 * stride s, padding p. */
struct akk_fold {
	int C, H, W, k, s, p, Ho, Wo;
};

/* The columns ow in [lo, hi) of the unrolled side whose image column
 * ow s - p + kj lies in [0, W): the others fall in the padding. */
void akk_fold_range(int *lo, int *hi, int W, int Wo, int s, int p, int kj);

/* x (C, H, W) += col folded: col's row (c k + ki) k + kj holds, at
 * oh Wo + ow (rows ld floats apart), what adds into
 * x[c][oh s - p + ki][ow s - p + kj]; entries in the padding are dropped.
 * In a fixed order: channel, tap, row, column. */
void akk_col2im_add(float *x, const float *col, const struct akk_fold *g, int ld);

#endif
