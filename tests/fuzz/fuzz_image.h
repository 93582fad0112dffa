/* fuzz_image.h - what fuzz_png and fuzz_jpeg share: one input is a flag
 * byte, then the file's bytes for akk_image_decode (from memory, as
 * akk_image_load hands them over). Flags: bit 0: 3 channels (else 1); bit
 * 1: the size must be 8 x 8 (else the file's own). Besides crashes,
 * hangs, leaks and out-of-memory, a finding is: a decoded image whose
 * channels, size or limits disagree with what was asked and documented
 * (every byte is read back, under ASan), a failure
 * that names no file or leaves pixels behind, and a decoded file whose
 * other channel count fails to decode (the channel rule converts
 * everything it reads). */
#ifndef FUZZ_IMAGE_H
#define FUZZ_IMAGE_H

#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "data/image.h"

static inline void fuzz_image_check(const struct akk_image *im, int c, int sized)
{
	unsigned sum = 0;
	size_t n;

	if (im->c != c || im->h < 1 || im->w < 1 || im->h > AKK_IMAGE_MAX_SIDE ||
	    im->w > AKK_IMAGE_MAX_SIDE || (sized && (im->h != 8 || im->w != 8)) || !im->x)
		fuzz_violation("decoded %d x %d x %d, asked for %d channels%s", im->c, im->h,
			       im->w, c, sized ? " at 8 x 8" : "");
	n = (size_t)im->c * im->h * im->w;
	if (n / im->c > AKK_IMAGE_MAX_PIXELS)
		fuzz_violation("decoded %zu pixels, more than the limit", n / im->c);
	for (size_t i = 0; i < n; i++)
		sum += im->x[i];
	if (sum == 0xdeadbeef)	/* keep the loop */
		fprintf(stderr, "%u\n", sum);
}

static inline int fuzz_image_one(const uint8_t *data, size_t size)
{
	struct akk_err e = { 0 };
	struct akk_image im, other;
	int c, sized;

	if (size < 1)
		return 0;
	c = data[0] & 1 ? 3 : 1;
	sized = (data[0] >> 1) & 1;
	if (akk_image_decode(&im, data + 1, size - 1, c, sized ? 8 : 0, sized ? 8 : 0,
			     "input", &e)) {
		if (im.x || strcmp(e.file, "input"))
			fuzz_violation("refused, but pixels kept or the file not named: %s", e.msg);
		return fuzz_refused("decode", &e);
	}
	fuzz_image_check(&im, c, sized);
	if (akk_image_decode(&other, data + 1, size - 1, 4 - c, im.h, im.w, "input", &e))
		fuzz_violation("decoded with %d channels, refused with %d: %s", c, 4 - c, e.msg);
	fuzz_image_check(&other, 4 - c, 0);
	akk_image_release(&other);
	akk_image_release(&im);
	return 0;
}

#endif
