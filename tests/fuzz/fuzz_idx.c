/* fuzz_idx.c - the IDX reader, plain and gzip-compressed.
 *
 * The input is one IDX file for akk_idx_load, or, when it starts with
 * "PAIR" and a 32-bit little-endian length n, an image file of n bytes
 * followed by a label file, for akk_idx_dataset. Besides crashes, hangs,
 * leaks and out-of-memory, a finding is: a loaded file whose buffer is
 * shorter than its dimensions say (every byte is read back, under ASan), a
 * dataset whose counts or labels disagree, a gzip file accepted with junk
 * after its last member, or a reader that inflates far past the size the
 * header declares (a gzip bomb must be stopped while inflating: the
 * harness counts what zlib's gzread or inflate hands over). */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_util.h"
#include "data/idx.h"

/* gzread and inflate, counted: whichever the reader uses to get its
 * bytes comes through here (gzread's own calls to inflate may too, so
 * the two counts are kept apart and the larger one taken). */
static size_t via_gzread, via_inflate;	/* bytes the reader got this load */
static uint8_t head[20];	/* the first bytes it got: the IDX header */
static int counting;		/* off while the harness inflates itself */

static void keep_head(size_t before, const uint8_t *p, size_t n)
{
	if (before < sizeof(head)) {
		size_t k = sizeof(head) - before;
		memcpy(head + before, p, n < k ? n : k);
	}
}

int gzread(gzFile file, voidp buf, unsigned len)
{
	static int (*real)(gzFile, voidp, unsigned);
	int n;

	if (!real)
		real = (int (*)(gzFile, voidp, unsigned))dlsym(RTLD_NEXT, "gzread");
	n = real(file, buf, len);
	if (n > 0 && counting) {
		keep_head(via_gzread, buf, (size_t)n);
		via_gzread += (size_t)n;
	}
	return n;
}

int inflate(z_streamp z, int flush)
{
	static int (*real)(z_streamp, int);
	uLong before = z->total_out;
	Bytef *out = z->next_out;
	int rc;

	if (!real)
		real = (int (*)(z_streamp, int))dlsym(RTLD_NEXT, "inflate");
	rc = real(z, flush);
	if (counting && z->total_out > before) {
		if (!via_gzread)
			keep_head(via_inflate, out, z->total_out - before);
		via_inflate += z->total_out - before;
	}
	return rc;
}

static size_t inflated(void)
{
	return via_gzread > via_inflate ? via_gzread : via_inflate;
}

static void count_reset(void)
{
	via_gzread = via_inflate = 0;
	memset(head, 0, sizeof(head));
	counting = 1;
}

/* The data bytes the header in `head` declares (0 when it is no header). */
static double declared_bytes(void)
{
	double d = 1;
	int rank = head[3];

	if (inflated() < 4 || head[0] || head[1] || rank < 1 || rank > 4)
		return 0;
	for (int i = 0; i < rank; i++)
		d *= (double)((uint32_t)head[4 + 4 * i] << 24 | head[5 + 4 * i] << 16 |
			      head[6 + 4 * i] << 8 | head[7 + 4 * i]);
	return d;
}

/* After one akk_idx_load: it may read the header, the declared data and
 * a little more (1 MB of slack) to see that nothing follows; never the
 * rest of a bomb. */
static void check_inflated(const char *what)
{
	double bound = 20 + declared_bytes() + (1 << 20);

	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "%s: the reader got %zu bytes (gzread %zu, inflate %zu)\n",
			what, inflated(), via_gzread, via_inflate);
	if ((double)inflated() > bound && fuzz_checking("gzip-bomb"))
		fuzz_violation("%s: the reader inflated %zu bytes; the header declares %.0f",
			       what, inflated(), declared_bytes());
	counting = 0;
}

/* Whether p holds one or more complete gzip members and nothing else. */
static int gzip_exact(const uint8_t *p, size_t n)
{
	while (n) {
		z_stream z = { 0 };
		uint8_t out[4096];
		int rc;

		if (n < 2 || p[0] != 0x1f || p[1] != 0x8b ||
		    inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
			return 0;
		z.next_in = (Bytef *)p;
		z.avail_in = (uInt)n;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			rc = inflate(&z, Z_NO_FLUSH);
		} while (rc == Z_OK);
		p += n - z.avail_in;
		n = z.avail_in;
		inflateEnd(&z);
		if (rc != Z_STREAM_END)
			return 0;
	}
	return 1;
}

/* A loaded file: its sizes agree and every byte is there. */
static void check_loaded(const struct akk_idx *x, const uint8_t *file, size_t n,
			 const char *what)
{
	size_t item = 1;
	unsigned sum = 0;

	if (x->rank < 1 || x->rank > 4 || x->count != x->dims[0])
		fuzz_violation("%s: rank %d, count %zu, dims[0] %u", what, x->rank,
			       x->count, x->dims[0]);
	for (int i = 1; i < x->rank; i++)
		item *= x->dims[i];
	if (item != x->item)
		fuzz_violation("%s: item %zu, dims say %zu", what, x->item, item);
	for (size_t i = 0; i < x->count * x->item; i++)
		sum += x->data[i];
	if (sum == 0xdeadbeef)	/* keep the loop */
		fprintf(stderr, "%u\n", sum);
	if (fuzz_checking("gzip-junk") && n >= 2 && file[0] == 0x1f && file[1] == 0x8b && !gzip_exact(file, n))
		fuzz_violation("%s: accepted a gzip file with junk after its last member", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct akk_err e = { 0 };

	count_reset();
	if (size >= 8 && !memcmp(data, "PAIR", 4)) {
		uint32_t n = data[4] | data[5] << 8 | data[6] << 16 | (uint32_t)data[7] << 24;
		struct akk_dataset d = { 0 };
		const char *im, *lb;
		int rc, max = -1;

		if (n > size - 8)
			n = (uint32_t)(size - 8);
		im = fuzz_write("images-idx3-ubyte", data + 8, n);
		lb = fuzz_write("labels-idx1-ubyte", data + 8 + n, size - 8 - n);
		rc = akk_idx_dataset(&d, im, lb, &e);
		/* two loads: bound them together */
		if ((double)inflated() > 2 * (1 << 20) + (double)(size - 8) * 1100 + 40 &&
		    fuzz_checking("gzip-bomb"))
			fuzz_violation("dataset: the reader inflated %zu bytes from %zu",
				       inflated(), size - 8);
		counting = 0;
		if (rc)
			return 0;
		/* Each file alone loads as it did inside the data set, and the
		 * data set holds exactly what they hold. */
		struct akk_idx xi = { 0 }, xl = { 0 };

		if (akk_idx_load(&xi, im, &e) || akk_idx_load(&xl, lb, &e))
			fuzz_violation("dataset: loaded, but one of its files alone does not");
		check_loaded(&xi, data + 8, n, "images");
		check_loaded(&xl, data + 8 + n, size - 8 - n, "labels");
		if ((xi.rank != 3 && xi.rank != 4) || xl.rank != 1 || d.n != xi.count ||
		    d.n != xl.count || d.h != (int)xi.dims[xi.rank - 2] ||
		    d.w != (int)xi.dims[xi.rank - 1] ||
		    d.c != (xi.rank == 4 ? (int)xi.dims[1] : 1) || d.in != xi.item ||
		    d.xtype != AKK_X_U8 || (d.n && memcmp(d.x8, xi.data, d.n * d.in)))
			fuzz_violation("dataset: %zu samples of %zu, images %zu (rank %d), labels %zu (rank %d)",
				       d.n, d.in, xi.count, xi.rank, xl.count, xl.rank);
		for (size_t i = 0; i < d.n; i++) {
			if (d.labels[i] != xl.data[i])
				fuzz_violation("dataset: label %zu is %d, the file says %d",
					       i, (int)d.labels[i], xl.data[i]);
			if (d.labels[i] > max)
				max = d.labels[i];
		}
		akk_idx_release(&xi);
		akk_idx_release(&xl);
		if (d.classes != max + 1)
			fuzz_violation("dataset: %d classes, labels go up to %d", d.classes, max);
		akk_dataset_release(&d);
		return 0;
	}
	{
		struct akk_idx x = { 0 };
		int rc = akk_idx_load(&x, fuzz_write("data-idx-ubyte", data, size), &e);

		check_inflated("idx");
		if (rc)
			return 0;
		check_loaded(&x, data, size, "idx");
		akk_idx_release(&x);
	}
	return 0;
}
