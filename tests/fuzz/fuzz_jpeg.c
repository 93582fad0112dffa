/* fuzz_jpeg.c - the JPEG decoder (data/image.h) through akk_image_decode:
 * a flag byte, then a JPEG file (fuzz_image.h says what is checked). */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_image_one(data, size);
}
