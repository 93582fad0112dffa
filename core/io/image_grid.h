/* image_grid.h - rows of images side by side, as a standalone SVG.
 *
 * akkctl eval --pictures draws a denoiser's or autoencoder's work so: a
 * row of the inputs, one of the noisy inputs the network saw, one of its
 * outputs, the same samples in the same columns. Each pixel is a square
 * of AKK_GRID_PIXEL user units (a rect per run of one colour in a row; no
 * embedded raster, no script): a value v of a sample in [0, peak]
 * (clipped) becomes grey round(255 v / peak), or with 3 channels the
 * colour of its three values. Every row is a <g> of
 * class "row-N" (N from 0), every image in it a <g> of class "image". */
#ifndef AKK_IMAGE_GRID_H
#define AKK_IMAGE_GRID_H

#include <stdio.h>

#include "base/err.h"

/* User units per image pixel, and the layout around the images. */
#define AKK_GRID_PIXEL 3
#define AKK_GRID_LEFT 120	/* the row labels' column */
#define AKK_GRID_TOP 36		/* the title's band */
#define AKK_GRID_GAP 8		/* between images and rows */

struct akk_grid_row {
	const char *label;	/* at its left */
	const float *v;		/* (count, c, h, w): count samples */
};

/* The SVG of nrows rows of count images of c x h x w (c 1 or 3) to f,
 * with title on top; what names f in errors. Its size is
 * akk_image_grid_size's. */
int akk_image_grid_svg(FILE *f, const struct akk_grid_row *rows, int nrows,
		       int count, int c, int h, int w, float peak, const char *title,
		       const char *what, struct akk_err *e);
/* The picture's width and height in user units (= pixels at 100%). */
void akk_image_grid_size(int nrows, int count, int h, int w, int *width, int *height);

#endif
