/* idx.c - reading IDX files, plain or gzip, into one uint8 block.
 *
 * The file is read through data/gzip.h's reader: plain, or inflated member
 * after member when it starts with the gzip magic, anything after the last
 * member that is not another one an error. Every size is bounded before
 * memory or time is spent on it: the header's declared size must be at
 * most AKK_IDX_MAX_BYTES; a plain regular file must hold exactly the
 * header and the declared bytes (known from its size, before reading), and
 * a gzip file no more than deflate can pack into its size; the data buffer
 * grows only as data arrives, and at most TRAIL_SLACK bytes past the
 * declared size are inflated or read to report trailing data, so neither a
 * gzip bomb nor an endless FIFO is read through. Every failure is reported
 * at the file (line 0). */
#include "data/idx.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "data/gzip.h"

#define IDX_UBYTE 0x08
#define IDX_MAX_RANK 4
/* How far past the declared data trailing bytes are counted. */
#define TRAIL_SLACK ((size_t)1 << 16)

static const char *type_name(int type)
{
	switch (type) {
	case 0x08: return "unsigned byte";
	case 0x09: return "signed byte";
	case 0x0b: return "short";
	case 0x0c: return "int";
	case 0x0d: return "float";
	case 0x0e: return "double";
	default: return "unknown";
	}
}

/* "60000 x 28 x 28" */
static void format_dims(char *buf, size_t size, const uint32_t *dims, int rank)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < rank && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%lu",
					 i ? " x " : "", (unsigned long)dims[i]);
}

/* Read exactly `declared` bytes into one allocation that grows (by
 * doubling, capped at `declared`) as data arrives, so a header that
 * lies about a huge size cannot make us allocate it up front. */
static int read_data(struct akk_gz_reader *r, size_t declared, size_t hint,
		     uint8_t **out)
{
	size_t cap = hint < declared ? hint : declared;
	size_t have = 0;
	uint8_t *buf;

	if (cap < 1)
		cap = 1;
	buf = malloc(cap);
	if (!buf)
		return akk_err_at(r->e, r->path, 0, 0,
				  "out of memory for %zu bytes", cap);
	for (;;) {
		size_t got;

		if (akk_gz_read(r, buf + have, cap - have, &got) < 0)
			goto fail;
		have += got;
		if (have < cap) {
			akk_err_at(r->e, r->path, 0, 0,
				   "truncated: header declares %zu bytes of data, file has %zu",
				   declared, have);
			goto fail;
		}
		if (have == declared)
			break;
		size_t ncap = cap > declared / 2 ? declared : cap * 2;
		uint8_t *nbuf = realloc(buf, ncap);
		if (!nbuf) {
			akk_err_at(r->e, r->path, 0, 0,
				   "out of memory for %zu bytes", ncap);
			goto fail;
		}
		buf = nbuf;
		cap = ncap;
	}
	*out = buf;
	return 0;
fail:
	free(buf);
	return -1;
}

/* Anything after the declared data is an error: counted up to
 * TRAIL_SLACK bytes for the message, and no further. */
static int check_eof(struct akk_gz_reader *r, size_t declared)
{
	uint8_t scratch[4096];
	size_t extra = 0, got;

	do {
		if (akk_gz_read(r, scratch, sizeof(scratch), &got) < 0)
			return -1;
		extra += got;
	} while (got == sizeof(scratch) && extra <= TRAIL_SLACK);
	if (extra > TRAIL_SLACK)
		return akk_err_at(r->e, r->path, 0, 0,
				  "trailing garbage: header declares %zu bytes of data, file has more than %zu",
				  declared, declared + TRAIL_SLACK);
	if (extra)
		return akk_err_at(r->e, r->path, 0, 0,
				  "trailing garbage: header declares %zu bytes of data, file has %zu",
				  declared, declared + extra);
	return 0;
}

/* The declared size against what the file can hold, before any of it is
 * read. */
static int plausible(struct akk_gz_reader *r, size_t declared, size_t hdr_len,
		     const char *dims)
{
	if (!r->gz && r->file_size >= 0) {
		size_t has = (size_t)r->file_size - hdr_len;
		if (has < declared)
			return akk_err_at(r->e, r->path, 0, 0,
					  "truncated: header declares %zu bytes of data, file has %zu",
					  declared, has);
		if (has > declared)
			return akk_err_at(r->e, r->path, 0, 0,
					  "trailing garbage: header declares %zu bytes of data, file has %zu",
					  declared, has);
	}
	if (declared > AKK_IDX_MAX_BYTES)
		return akk_err_at(r->e, r->path, 0, 0,
				  "too large: header declares %s = %zu bytes of data, more than %zu",
				  dims, declared, (size_t)AKK_IDX_MAX_BYTES);
	if (r->gz && r->file_size >= 0) {
		size_t most;
		if (akk_mul_ok((size_t)r->file_size, AKK_GZ_DEFLATE_MAX_RATIO, &most) &&
		    declared > most)
			return akk_err_at(r->e, r->path, 0, 0,
					  "implausible: header declares %zu bytes of data, more than a gzip file of %lld bytes can hold",
					  declared, (long long)r->file_size);
	}
	return 0;
}

static int load(struct akk_idx *x, struct akk_gz_reader *r)
{
	uint8_t hdr[4 + 4 * IDX_MAX_RANK];
	size_t got, hdr_len, declared = 1, hint;
	char dims[128];
	int type;

	if (akk_gz_read(r, hdr, 4, &got) < 0)
		return -1;
	if (got == 0)
		return akk_err_at(r->e, r->path, 0, 0,
				  "empty file: expected an idx header");
	if (got < 4)
		return akk_err_at(r->e, r->path, 0, 0,
				  "too short for an idx header: %zu bytes, need at least 4",
				  got);
	if (hdr[0] != 0 || hdr[1] != 0)
		return akk_err_at(r->e, r->path, 0, 0,
				  "bad magic 0x%02x%02x%02x%02x: not an idx file (first two bytes must be 0)",
				  hdr[0], hdr[1], hdr[2], hdr[3]);
	type = hdr[2];
	if (type != IDX_UBYTE)
		return akk_err_at(r->e, r->path, 0, 0,
				  "unsupported element type 0x%02x (%s): only 0x08 (unsigned byte) is supported",
				  type, type_name(type));
	x->rank = hdr[3];
	if (x->rank < 1 || x->rank > IDX_MAX_RANK)
		return akk_err_at(r->e, r->path, 0, 0,
				  "unsupported rank %d: expected 1 to %d dimensions",
				  x->rank, IDX_MAX_RANK);
	hdr_len = 4 + 4 * (size_t)x->rank;
	if (akk_gz_read(r, hdr + 4, hdr_len - 4, &got) < 0)
		return -1;
	if (got < hdr_len - 4)
		return akk_err_at(r->e, r->path, 0, 0,
				  "too short for an idx header: %zu bytes, need %zu for rank %d",
				  4 + got, hdr_len, x->rank);
	for (int i = 0; i < x->rank; i++) {
		const uint8_t *p = hdr + 4 + 4 * i;	/* big-endian */
		x->dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			     (uint32_t)p[2] << 8 | p[3];
	}
	format_dims(dims, sizeof(dims), x->dims, x->rank);
	for (int i = 0; i < x->rank; i++)
		if (x->dims[i] == 0)
			return akk_err_at(r->e, r->path, 0, 0,
					  "zero dimension: %s", dims);
	for (int i = 0; i < x->rank; i++)
		if (!akk_mul_ok(declared, x->dims[i], &declared))
			return akk_err_at(r->e, r->path, 0, 0,
					  "size overflow: %s bytes does not fit in memory",
					  dims);
	if (plausible(r, declared, hdr_len, dims) < 0)
		return -1;
	x->count = x->dims[0];
	x->item = declared / x->count;

	/* A plain file's size on disk is exact; a gzip one inflates to a few
	 * times its size, and the buffer grows from there if need be. */
	if (r->file_size < 0)
		hint = (size_t)1 << 16;
	else if (!r->gz)
		hint = declared;
	else
		hint = (size_t)r->file_size < SIZE_MAX / 8 ?
		       (size_t)r->file_size * 8 : SIZE_MAX;
	if (read_data(r, declared, hint, &x->data) < 0)
		return -1;
	if (check_eof(r, declared) < 0) {
		free(x->data);
		x->data = NULL;
		return -1;
	}
	return 0;
}

int akk_idx_load(struct akk_idx *x, const char *path, struct akk_err *e)
{
	struct akk_gz_reader r;
	int rc;

	memset(x, 0, sizeof(*x));
	if (akk_gz_open(&r, path, AKK_GZ_DEFLATE_MAX_RATIO, e) < 0)
		return -1;
	rc = load(x, &r);
	akk_gz_close(&r);
	if (rc < 0)
		memset(x, 0, sizeof(*x));
	return rc;
}

void akk_idx_release(struct akk_idx *x)
{
	free(x->data);
	memset(x, 0, sizeof(*x));
}

/* (H, W, C) -> (C, H, W) for each of n samples of hw * c bytes. */
static int to_channels_first(uint8_t *x, size_t n, size_t hw, size_t c)
{
	uint8_t *tmp = malloc(hw * c);

	if (!tmp)
		return -1;
	for (size_t s = 0; s < n; s++) {
		uint8_t *row = x + s * hw * c;
		memcpy(tmp, row, hw * c);
		for (size_t p = 0; p < hw; p++)
			for (size_t ch = 0; ch < c; ch++)
				row[ch * hw + p] = tmp[p * c + ch];
	}
	free(tmp);
	return 0;
}

int akk_idx_dataset(struct akk_dataset *d, const char *images,
		    const char *labels, struct akk_err *e)
{
	return akk_idx_dataset_layout(d, images, labels, 0, e);
}

int akk_idx_dataset_layout(struct akk_dataset *d, const char *images,
			   const char *labels, int nhwc, struct akk_err *e)
{
	struct akk_idx im = { 0 }, lb = { 0 };
	char dims[128];
	int max = 0;

	memset(d, 0, sizeof(*d));
	if (akk_idx_load(&im, images, e) < 0)
		goto fail;
	if (im.rank != 3 && im.rank != 4) {
		format_dims(dims, sizeof(dims), im.dims, im.rank);
		akk_err_at(e, images, 0, 0,
			   "not an image file: rank %d (%s), expected rank 3 (count x height x width) or 4 (count x channels x height x width)",
			   im.rank, dims);
		goto fail;
	}
	if (im.dims[1] > INT_MAX || im.dims[2] > INT_MAX ||
	    (im.rank == 4 && im.dims[3] > INT_MAX)) {
		format_dims(dims, sizeof(dims), im.dims, im.rank);
		akk_err_at(e, images, 0, 0, "image size %s is too large", dims);
		goto fail;
	}
	if (akk_idx_load(&lb, labels, e) < 0)
		goto fail;
	if (lb.rank != 1) {
		format_dims(dims, sizeof(dims), lb.dims, lb.rank);
		akk_err_at(e, labels, 0, 0,
			   "not a label file: rank %d (%s), expected rank 1 (count)",
			   lb.rank, dims);
		goto fail;
	}
	if (im.count != lb.count) {
		akk_err_set(e, "'%s' has %zu images but '%s' has %zu labels",
			    images, im.count, labels, lb.count);
		goto fail;
	}
	d->labels = malloc((lb.count ? lb.count : 1) * sizeof(*d->labels));
	if (!d->labels) {
		akk_err_at(e, labels, 0, 0, "out of memory for %zu labels", lb.count);
		goto fail;
	}
	for (size_t i = 0; i < lb.count; i++) {
		d->labels[i] = lb.data[i];
		if (lb.data[i] > max)
			max = lb.data[i];
	}
	d->n = im.count;
	d->c = 1;
	d->h = (int)im.dims[1];
	d->w = (int)im.dims[2];
	if (im.rank == 4) {
		/* rank 4: N x C x H x W, or N x H x W x C (nhwc) made
		 * channels first here, once */
		d->c = (int)im.dims[nhwc ? 3 : 1];
		d->h = (int)im.dims[nhwc ? 1 : 2];
		d->w = (int)im.dims[nhwc ? 2 : 3];
		if (nhwc && d->c > 1 &&
		    to_channels_first(im.data, im.count,
				      (size_t)d->h * (size_t)d->w, (size_t)d->c)) {
			akk_err_at(e, images, 0, 0, "out of memory");
			goto fail;
		}
	}
	d->in = im.item;
	d->xtype = AKK_X_U8;
	d->x8 = im.data;
	d->classes = max + 1;
	akk_idx_release(&lb);
	return 0;
fail:
	akk_idx_release(&im);
	akk_idx_release(&lb);
	akk_dataset_release(d);
	return -1;
}
