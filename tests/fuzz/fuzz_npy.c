/* fuzz_npy.c - the .npy reader.
 *
 * The input is one .npy file for akk_npy_load, or, when it starts with
 * "PAIR", a flag byte (bit 0: layout nhwc) and a 32-bit little-endian
 * length n, a features file of n bytes followed by a labels file, for
 * akk_npy_dataset. Besides crashes, hangs, leaks and out-of-memory, a
 * finding is: a loaded array whose size disagrees with its shape and
 * element size or with the bytes after the header (every byte is read
 * back, under ASan), an accepted Fortran-order or object array, and a
 * data set whose counts, shape or labels disagree with its files. */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "data/npy.h"

static void check_loaded(const struct akk_npy *a, const uint8_t *file,
			 size_t n, const char *what)
{
	size_t item = 1, bytes;
	unsigned sum = 0;

	if (a->rank < 1 || a->rank > AKK_NPY_MAX_RANK || a->count != a->dims[0])
		fuzz_violation("%s: rank %d, count %zu", what, a->rank, a->count);
	for (int i = 1; i < a->rank; i++)
		item *= a->dims[i];
	if (item != a->item)
		fuzz_violation("%s: item %zu, dims say %zu", what, a->item, item);
	bytes = a->count * a->item * (size_t)a->size;
	if (bytes > n || memcmp(a->data, file + n - bytes, bytes))
		fuzz_violation("%s: %zu data bytes that are not the file's last", what, bytes);
	for (size_t i = 0; i < bytes; i++)
		sum += a->data[i];
	if (sum == 0xdeadbeef)	/* keep the loop */
		fprintf(stderr, "%u\n", sum);
	if (memmem(file, n - bytes, "fortran_order': True", 20))
		fuzz_violation("%s: accepted a Fortran-order array", what);
	if (a->kind != 'u' && a->kind != 'i' && a->kind != 'f')
		fuzz_violation("%s: kind '%c'", what, a->kind);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct akk_err e = { 0 };

	if (size >= 9 && !memcmp(data, "PAIR", 4)) {
		int nhwc = data[4] & 1;
		uint32_t n = data[5] | data[6] << 8 | data[7] << 16 | (uint32_t)data[8] << 24;
		struct akk_dataset d = { 0 };
		struct akk_npy f = { 0 }, l = { 0 };
		const char *fp, *lp;

		if (n > size - 9)
			n = (uint32_t)(size - 9);
		fp = fuzz_write("features.npy", data + 9, n);
		lp = fuzz_write("labels.npy", data + 9 + n, size - 9 - n);
		if (akk_npy_dataset(&d, fp, lp, nhwc, &e))
			return 0;
		if (akk_npy_load(&f, fp, &e) || akk_npy_load(&l, lp, &e))
			fuzz_violation("dataset: loaded, but one of its files alone does not");
		check_loaded(&f, data + 9, n, "features");
		check_loaded(&l, data + 9 + n, size - 9 - n, "labels");
		if (d.n != f.count || d.n != l.count || d.in != f.item ||
		    (size_t)d.c * d.h * d.w != d.in || f.rank < 2 || f.rank > 4 ||
		    (d.xtype == AKK_X_U8) != (f.kind == 'u' && f.size == 1))
			fuzz_violation("dataset: %zu samples of %zu (%d x %d x %d), files %zu and %zu",
				       d.n, d.in, d.c, d.h, d.w, f.count, l.count);
		for (size_t i = 0; d.labels && i < d.n; i++)
			if (d.labels[i] < 0 || d.labels[i] >= d.classes ||
			    (double)d.labels[i] != akk_npy_get(&l, i))
				fuzz_violation("dataset: label %zu is %d of %d classes",
					       i, (int)d.labels[i], d.classes);
		if (!d.labels && (!d.y || d.targets < 1))
			fuzz_violation("dataset: neither labels nor targets");
		akk_npy_release(&f);
		akk_npy_release(&l);
		akk_dataset_release(&d);
		return 0;
	}
	{
		struct akk_npy a = { 0 };
		const char *p = fuzz_write("array.npy", data, size);

		if (akk_npy_load(&a, p, &e))
			return 0;
		check_loaded(&a, data, size, "array");
		akk_npy_release(&a);
	}
	return 0;
}
