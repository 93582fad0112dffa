/* image.h - one PNG or JPEG image decoded into channels-first bytes.
 *
 * PNG through libpng, JPEG through libjpeg-turbo; which one by the file's
 * first bytes, not its name. The image comes out with the channels asked
 * for, whatever the file holds:
 *   - grey to colour (1 -> 3): the grey value in all three channels;
 *   - colour to grey (3 -> 1): the luminance 0.299 R + 0.587 G + 0.114 B
 *     (ITU-R BT.601: what JPEG's Y already is; libpng's fixed-point
 *     conversion for PNG);
 *   - alpha (PNG grey+alpha, RGBA, a palette's or a tRNS transparency) is
 *     dropped, the colour values kept as stored (not composited);
 *   - 16-bit PNG samples keep their high byte; 1, 2, 4-bit grey and
 *     palettes are expanded to 8 bits.
 * Sizes are never changed: a size asked for (h, w not 0) that the file's
 * header does not have is an error naming both sizes, found before any
 * pixel is decoded. CMYK JPEGs are refused.
 *
 * Bounded: the file at most AKK_IMAGE_MAX_BYTES, each side at most
 * AKK_IMAGE_MAX_SIDE, at most AKK_IMAGE_MAX_PIXELS pixels; a progressive
 * JPEG at most AKK_IMAGE_MAX_SCANS scans; no PNG chunk may declare more
 * bytes than the file holds (libpng would allocate them first). Corrupt
 * and truncated files,
 * including what the libraries only warn about (a premature end of a
 * JPEG, corrupt entropy data), are errors naming the file, through
 * setjmp/longjmp from the libraries' error handlers; nothing is printed. */
#ifndef AKK_IMAGE_H
#define AKK_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define AKK_IMAGE_MAX_BYTES ((size_t)64 << 20)
#define AKK_IMAGE_MAX_SIDE 16384
#define AKK_IMAGE_MAX_PIXELS ((size_t)1 << 26)
#define AKK_IMAGE_MAX_SCANS 256

struct akk_image {
	int c, h, w;
	uint8_t *x;		/* (c, h, w), owned: akk_image_release */
};

/* Whether the first bytes are a PNG signature or a JPEG SOI marker. */
int akk_image_magic(const unsigned char *p, size_t len);
/* Whether path's name ends in .png, .jpg or .jpeg (any case): the files
 * a folder of images is made of. */
int akk_image_name(const char *path);
/* Decode the PNG or JPEG bytes p[0..len) into im with c channels (1 or
 * 3). h, w: the size the image must have, or 0 for the file's own. name
 * is the file named in errors. */
int akk_image_decode(struct akk_image *im, const unsigned char *p, size_t len,
		     int c, int h, int w, const char *name, struct akk_err *e);
/* The same from the file at path (a regular file, AKK_IMAGE_MAX_BYTES at
 * most). */
int akk_image_load(struct akk_image *im, const char *path, int c, int h, int w,
		   struct akk_err *e);
void akk_image_release(struct akk_image *im);

#endif
