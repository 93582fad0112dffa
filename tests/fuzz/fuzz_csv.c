/* fuzz_csv.c - the CSV reader (data/csv.h), plain and gzip-compressed.
 *
 * The first byte of the input chooses the options: bit 0 header, bits 1-2
 * the delimiter (0 comma, 1 whitespace, 2 semicolon, 3 comma), bit 3
 * regression, bits 4-5 the lines to skip, bit 6 the label: the column named
 * "label" with a header, column 0 without (else the last); bit 7: two
 * files, the features file of n bytes (n from the next two bytes, little
 * endian) and the targets file after it. The rest is the table. Besides
 * crashes, hangs, leaks and out-of-memory, a finding is: a loaded data set
 * whose shape is not one row of floats per sample, a value that is not
 * finite, a class label out of 0..classes-1, class names not in strictly
 * increasing byte order, or a reader that inflates more than
 * AKK_CSV_GZ_RATIO times the input (plus the slack): a gzip bomb must be
 * stopped while inflating (the harness counts what inflate hands over).
 * A regression table is then cut into a series' windows (data/series.h;
 * window, horizon and stride from the input's size): a finding is a count
 * other than (n - W - H) / S + 1, a window whose values are not its rows'
 * features and targets and the next rows' targets, or a split whose
 * training windows share a row with the held-out ones. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz_util.h"
#include "data/csv.h"
#include "data/series.h"

static size_t via_inflate;	/* bytes inflate handed over this load */
static int counting;

int inflate(z_streamp z, int flush)
{
	static int (*real)(z_streamp, int);
	uLong before = z->total_out;
	int rc;

	if (!real)
		real = (int (*)(z_streamp, int))dlsym(RTLD_NEXT, "inflate");
	rc = real(z, flush);
	if (counting && z->total_out > before)
		via_inflate += z->total_out - before;
	return rc;
}

static void check(const struct akk_dataset *d, int regression)
{
	size_t nx = d->n * d->in;

	/* floats, or bytes when every feature is a whole number in 0..255 */
	int bytes = d->xtype == AKK_X_U8;

	if (!d->n || !d->in || d->c != 1 || d->h != 1 || d->w != (int)d->in ||
	    (d->xtype != AKK_X_F32 && !bytes) ||
	    (bytes ? !d->x8 || d->xf : !d->xf || d->x8))
		fuzz_violation("shape: %zu samples of %zu (%d x %d x %d), type %d",
			       d->n, d->in, d->c, d->h, d->w, (int)d->xtype);
	int whole = 1;
	for (size_t i = 0; i < nx; i++) {
		float v = akk_dataset_x(d, i);
		if (!isfinite(v))
			fuzz_violation("feature %zu is %g", i, (double)v);
		whole &= v >= 0 && v <= 255 && v == (float)(int)v;
	}
	if (whole != bytes)
		fuzz_violation("%s features kept as %s", whole ? "byte-valued" : "other",
			       bytes ? "bytes" : "floats");
	if (regression) {
		if (d->targets < 1 || !d->y || d->labels || d->classes)
			fuzz_violation("regression: %d targets, labels %p, %d classes",
				       d->targets, (void *)d->labels, d->classes);
		for (size_t i = 0; i < d->n * (size_t)d->targets; i++)
			if (!isfinite(d->y[i]))
				fuzz_violation("target %zu is %g", i, (double)d->y[i]);
		return;
	}
	if (d->classes < 1 || d->classes > AKK_CSV_MAX_CLASSES || !d->labels ||
	    d->y || d->targets)
		fuzz_violation("classification: %d classes, %d targets",
			       d->classes, d->targets);
	for (size_t i = 0; i < d->n; i++)
		if (d->labels[i] < 0 || d->labels[i] >= d->classes)
			fuzz_violation("label %zu is %d of %d classes", i,
				       (int)d->labels[i], d->classes);
	for (int k = 1; d->class_names && k < d->classes; k++)
		if (strcmp(d->class_names[k - 1], d->class_names[k]) >= 0)
			fuzz_violation("class names %d and %d out of order", k - 1, k);
}

/* The value of row r, column c of the table d (features, then targets). */
static float cell(const struct akk_dataset *d, size_t r, size_t c)
{
	return c < d->in ? akk_dataset_x(d, r * d->in + c) : d->y[r * (size_t)d->targets + c - d->in];
}

static void windows(const struct akk_dataset *t, size_t size)
{
	struct akk_series s = { 1 + (int)(size % 5), 1 + (int)(size / 5 % 3), 1 + (int)(size / 15 % 3) };
	struct akk_dataset d = *t;
	struct akk_err e = { 0 };
	size_t row = t->in + (size_t)t->targets, span = (size_t)s.window + (size_t)s.horizon, m;
	uint32_t *held, *train;
	size_t nh, nt;

	/* d owns copies: the windows replace its table */
	d.x8 = NULL;
	d.xf = malloc(t->n * t->in * sizeof(float) + 1);
	d.y = malloc(t->n * (size_t)t->targets * sizeof(float) + 1);
	d.xtype = AKK_X_F32;
	if (!d.xf || !d.y)
		fuzz_violation("out of memory");
	for (size_t i = 0; i < t->n * t->in; i++)
		d.xf[i] = akk_dataset_x(t, i);
	memcpy(d.y, t->y, t->n * (size_t)t->targets * sizeof(float));
	if (akk_series_windows(&d, &s, "x.csv", &e)) {
		if (t->n >= span)
			fuzz_violation("%zu rows refused for windows of %zu: %s", t->n, span, e.msg);
		free(d.xf);
		free(d.y);
		return;
	}
	m = (t->n - span) / (size_t)s.stride + 1;
	if (d.n != m || d.in != (size_t)s.window * row || d.targets != s.horizon * t->targets)
		fuzz_violation("%zu windows of %zu values and %d targets", d.n, d.in, d.targets);
	for (size_t i = 0; i < d.n; i += d.n > 1 ? d.n - 1 : 1) {	/* the first and the last */
		size_t first = i * (size_t)s.stride;
		for (size_t k = 0; k < d.in; k++)
			if (d.xf[i * d.in + k] != cell(t, first + k / row, k % row))
				fuzz_violation("window %zu value %zu", i, k);
		for (int k = 0; k < d.targets; k++)
			if (d.y[i * (size_t)d.targets + k] !=
			    cell(t, first + (size_t)s.window + (size_t)k / (size_t)t->targets,
				 t->in + (size_t)k % (size_t)t->targets))
				fuzz_violation("window %zu target %d", i, k);
	}
	if (!akk_series_split(&held, &nh, &train, &nt, &d, 0.25, &e)) {
		for (size_t j = 0; j < nt; j++)
			if ((size_t)train[j] * (size_t)s.stride + span > (size_t)held[0] * (size_t)s.stride)
				fuzz_violation("training window %u shares a row with held-out %u",
					       train[j], held[0]);
		free(held);
		free(train);
	}
	akk_dataset_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct akk_err e = { 0 };
	struct akk_csv_spec o;
	struct akk_dataset d = { 0 };
	const char *path, *targets = NULL;
	int regression, rc;
	size_t n;

	if (size < 1)
		return 0;
	memset(&o, 0, sizeof(o));
	o.header = data[0] & 1;
	o.delimiter = (data[0] >> 1 & 3) % 3;
	regression = data[0] >> 3 & 1;
	o.skip = data[0] >> 4 & 3;
	o.label.index = -1;
	if (data[0] & 64) {
		if (o.header)
			o.label.name = "label";
		else
			o.label.index = 0;
	}
	data++;
	size--;
	if (data[-1] & 128) {
		if (size < 2)
			return 0;
		n = data[0] | (size_t)data[1] << 8;
		data += 2;
		size -= 2;
		if (n > size)
			n = size;
		path = fuzz_write("x.csv", data, n);
		targets = fuzz_write("y.csv", data + n, size - n);
	} else {
		path = fuzz_write("x.csv", data, size);
	}
	via_inflate = 0;
	counting = 1;
	rc = akk_csv_dataset(&d, path, targets, &o, regression, &e);
	counting = 0;
	if (fuzz_checking("gzip-bomb") &&
	    via_inflate > (size_t)AKK_CSV_GZ_RATIO * size + (3u << 20))
		fuzz_violation("inflated %zu bytes from %zu", via_inflate, size);
	if (rc)
		return fuzz_refused("csv", &e);
	check(&d, regression);
	if (regression)
		windows(&d, size);
	akk_dataset_release(&d);
	return 0;
}
