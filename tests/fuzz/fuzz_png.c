/* fuzz_png.c - the PNG decoder (data/image.h) through akk_image_decode:
 * a flag byte, then a PNG file (fuzz_image.h says what is checked). */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_image_one(data, size);
}
