/* image_grid.c - images drawn pixel by pixel in rows. */
#include "io/image_grid.h"

#include <stdio.h>
#include <string.h>

#include "io/svg.h"

void akk_image_grid_size(int nrows, int count, int h, int w, int *width, int *height)
{
	*width = AKK_GRID_LEFT + count * (w * AKK_GRID_PIXEL + AKK_GRID_GAP);
	*height = AKK_GRID_TOP + nrows * (h * AKK_GRID_PIXEL + AKK_GRID_GAP);
}

/* A value of [0, peak] as a byte. */
static int byte_of(float v, float peak)
{
	float x = peak > 0 ? 255.0f * v / peak : 0;

	return x >= 255 ? 255 : x > 0 ? (int)(x + 0.5f) : 0;
}

/* The colour of pixel i of an image (c, h, w) as #rrggbb. */
static void colour(char fill[8], const float *v, size_t i, size_t plane, int c,
		   float peak)
{
	int r = byte_of(v[i], peak);
	int g = c == 3 ? byte_of(v[plane + i], peak) : r;
	int b = c == 3 ? byte_of(v[2 * plane + i], peak) : r;

	snprintf(fill, 8, "#%02x%02x%02x", r, g, b);
}

/* One image (c, h, w) with its top left corner at (x0, y0): a rect per
 * run of pixels of one colour in a row. */
static void image(struct akk_svg *s, const float *v, int c, int h, int w,
		  float peak, double x0, double y0)
{
	size_t plane = (size_t)h * w;
	char fill[8], next[8];

	akk_svg_group_begin(s, "image");
	for (int y = 0; y < h; y++)
		for (int x = 0, run; x < w; x += run) {
			colour(fill, v, (size_t)y * w + x, plane, c, peak);
			for (run = 1; x + run < w; run++) {
				colour(next, v, (size_t)y * w + x + run, plane, c, peak);
				if (strcmp(next, fill))
					break;
			}
			akk_svg_rect(s, x0 + x * AKK_GRID_PIXEL, y0 + y * AKK_GRID_PIXEL,
				     run * AKK_GRID_PIXEL, AKK_GRID_PIXEL, fill, NULL);
		}
	akk_svg_group_end(s);
}

int akk_image_grid_svg(FILE *f, const struct akk_grid_row *rows, int nrows,
		       int count, int c, int h, int w, float peak, const char *title,
		       const char *what, struct akk_err *e)
{
	struct akk_svg s;
	int width, height;
	size_t per = (size_t)c * h * w;
	char cls[32];

	if ((c != 1 && c != 3) || h < 1 || w < 1 || count < 1 || nrows < 1)
		return akk_err_set(e, "cannot draw images of %d x %d x %d", c, h, w);
	akk_image_grid_size(nrows, count, h, w, &width, &height);
	akk_svg_begin(&s, f, width, height, title);
	akk_svg_text(&s, 8, 22, AKK_SVG_START, 14, "#222222", 0, 1, title);
	for (int r = 0; r < nrows; r++) {
		double y0 = AKK_GRID_TOP + r * (h * AKK_GRID_PIXEL + AKK_GRID_GAP);
		snprintf(cls, sizeof(cls), "row-%d", r);
		akk_svg_group_begin(&s, cls);
		akk_svg_text(&s, AKK_GRID_LEFT - 8, y0 + h * AKK_GRID_PIXEL / 2.0 + 4,
			     AKK_SVG_END, 12, "#222222", 0, 0, rows[r].label);
		for (int j = 0; j < count; j++)
			image(&s, rows[r].v + (size_t)j * per, c, h, w, peak,
			      AKK_GRID_LEFT + j * (w * AKK_GRID_PIXEL + AKK_GRID_GAP), y0);
		akk_svg_group_end(&s);
	}
	return akk_svg_end(&s, what, e);
}
