/* cifar.h - the CIFAR-10 binary format (data_batch_N.bin, test_batch.bin).
 *
 * A file is a sequence of 3,073-byte records: one label byte (0..9), then
 * 3,072 pixel bytes: the 1,024 red values of the 32 x 32 image in
 * row-major order, then the 1,024 green, then the 1,024 blue, which is
 * already channels first (3 x 32 x 32). Several files are read one after
 * the other into one data set. A file whose size is not a multiple of
 * 3,073 and a label above 9 are errors naming the file (and the record,
 * counted from 1). Files must be regular files; the total is bounded by
 * AKK_IDX_MAX_BYTES. Class names: the ten CIFAR-10 names, or the
 * non-empty lines of batches.meta.txt when that file is in the directory
 * of the first file (it must then name exactly ten classes). */
#ifndef AKK_CIFAR_H
#define AKK_CIFAR_H

#include "base/err.h"
#include "data/dataset.h"

#define AKK_CIFAR_SIDE 32
#define AKK_CIFAR_PIXELS (3 * AKK_CIFAR_SIDE * AKK_CIFAR_SIDE)
#define AKK_CIFAR_RECORD (1 + AKK_CIFAR_PIXELS)
#define AKK_CIFAR_CLASSES 10

/* Read the records of files[0..nfiles) into d (bytes, 3 x 32 x 32). */
int akk_cifar_dataset(struct akk_dataset *d, const char *const *files,
		      int nfiles, struct akk_err *e);

#endif
