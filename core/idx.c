/* idx.c - reading IDX files, plain or gzip, into one uint8 block.
 *
 * Both kinds go through zlib's gz* reader, which passes plain files through
 * untouched and inflates anything that starts with the gzip magic (1f 8b).
 * A gzip stream does not say how much it holds, so the reader streams: it
 * reads the header, then exactly the bytes the header declares into one
 * growing allocation, then checks that nothing follows. Every failure is
 * reported at the file (line 0) with its own message. */
#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_UBYTE 0x08
#define IDX_MAX_RANK 4
/* gzread takes an unsigned length; stay well below it. */
#define READ_CHUNK ((size_t)1 << 30)

struct reader {
	gzFile gz;
	const char *path;
	off_t file_size;	/* bytes on disk, -1 when not a regular file */
	struct akk_err *e;
};

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

/* After gzread returned <= 0: if zlib recorded an error, report it and
 * return 1; a clean end of file returns 0. */
static int stream_error(struct reader *r)
{
	int errnum = Z_OK;
	const char *msg = gzerror(r->gz, &errnum);
	const char *sep;

	if (errnum == Z_OK)
		return 0;
	if (errnum == Z_ERRNO) {
		akk_err_at(r->e, r->path, 0, 0, "read error: %s", strerror(errno));
		return 1;
	}
	if (errnum == Z_MEM_ERROR) {
		akk_err_at(r->e, r->path, 0, 0, "out of memory while inflating");
		return 1;
	}
	/* zlib prefixes its message with the name it was opened under
	 * ("<fd:3>: "); e->file already names the file. */
	sep = strstr(msg, ": ");
	akk_err_at(r->e, r->path, 0, 0, "corrupt gzip stream: %s",
		   sep ? sep + 2 : msg);
	return 1;
}

/* Read up to len bytes; *got is how many arrived before end of file.
 * Returns -1 (error reported) on a read or inflate error. */
static int read_some(struct reader *r, uint8_t *buf, size_t len, size_t *got)
{
	*got = 0;
	while (*got < len) {
		size_t want = len - *got < READ_CHUNK ? len - *got : READ_CHUNK;
		int n = gzread(r->gz, buf + *got, (unsigned)want);

		if (n < 0) {
			if (!stream_error(r))
				akk_err_at(r->e, r->path, 0, 0, "read error");
			return -1;
		}
		if (n == 0) {
			if (stream_error(r))
				return -1;	/* e.g. a gzip stream cut short */
			break;
		}
		*got += (size_t)n;
	}
	return 0;
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
static int read_data(struct reader *r, size_t declared, size_t hint,
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

		if (read_some(r, buf + have, cap - have, &got) < 0)
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

/* Anything after the declared data is an error; count it for the message. */
static int check_eof(struct reader *r, size_t declared)
{
	uint8_t scratch[4096];
	size_t extra = 0, got;

	do {
		if (read_some(r, scratch, sizeof(scratch), &got) < 0)
			return -1;
		extra += got;
	} while (got == sizeof(scratch));
	if (extra)
		return akk_err_at(r->e, r->path, 0, 0,
				  "trailing garbage: header declares %zu bytes of data, file has %zu",
				  declared, declared + extra);
	return 0;
}

static int load(struct akk_idx *x, struct reader *r)
{
	uint8_t hdr[4 + 4 * IDX_MAX_RANK];
	size_t got, hdr_len, declared = 1, hint;
	char dims[128];
	int type;

	if (read_some(r, hdr, 4, &got) < 0)
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
	if (read_some(r, hdr + 4, hdr_len - 4, &got) < 0)
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
	for (int i = 0; i < x->rank; i++) {
		if (declared > SIZE_MAX / x->dims[i])
			return akk_err_at(r->e, r->path, 0, 0,
					  "size overflow: %s bytes does not fit in memory",
					  dims);
		declared *= x->dims[i];
	}
	x->count = x->dims[0];
	x->item = declared / x->count;

	/* A plain file's size on disk is exact; a gzip one inflates to a few
	 * times its size, and the buffer grows from there if need be. */
	if (r->file_size < 0)
		hint = (size_t)1 << 16;
	else if (gzdirect(r->gz))
		hint = (size_t)r->file_size > hdr_len ?
		       (size_t)r->file_size - hdr_len : 1;
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
	struct reader r = { .path = path, .file_size = -1, .e = e };
	struct stat st;
	int fd, rc;

	memset(x, 0, sizeof(*x));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = errno;
		close(fd);
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(rc));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(EISDIR));
	}
	if (S_ISREG(st.st_mode))
		r.file_size = st.st_size;
	r.gz = gzdopen(fd, "rb");
	if (!r.gz) {
		close(fd);
		return akk_err_at(e, path, 0, 0, "out of memory opening the file");
	}
	gzbuffer(r.gz, 1 << 17);
	rc = load(x, &r);
	gzclose_r(r.gz);	/* closes fd; errors were caught while reading */
	if (rc < 0)
		memset(x, 0, sizeof(*x));
	return rc;
}

void akk_idx_release(struct akk_idx *x)
{
	free(x->data);
	memset(x, 0, sizeof(*x));
}

int akk_dataset_load(struct akk_dataset *d, const char *images,
		     const char *labels, struct akk_err *e)
{
	struct akk_idx *im = &d->images, *lb = &d->labels;
	char dims[128];
	int max = 0;

	memset(d, 0, sizeof(*d));
	if (akk_idx_load(im, images, e) < 0)
		goto fail;
	if (im->rank != 3) {
		format_dims(dims, sizeof(dims), im->dims, im->rank);
		akk_err_at(e, images, 0, 0,
			   "not an image file: rank %d (%s), expected rank 3 (count x height x width)",
			   im->rank, dims);
		goto fail;
	}
	if (im->dims[1] > INT_MAX || im->dims[2] > INT_MAX) {
		akk_err_at(e, images, 0, 0, "image size %lu x %lu is too large",
			   (unsigned long)im->dims[1], (unsigned long)im->dims[2]);
		goto fail;
	}
	if (akk_idx_load(lb, labels, e) < 0)
		goto fail;
	if (lb->rank != 1) {
		format_dims(dims, sizeof(dims), lb->dims, lb->rank);
		akk_err_at(e, labels, 0, 0,
			   "not a label file: rank %d (%s), expected rank 1 (count)",
			   lb->rank, dims);
		goto fail;
	}
	if (im->count != lb->count) {
		akk_err_set(e, "'%s' has %zu images but '%s' has %zu labels",
			    images, im->count, labels, lb->count);
		goto fail;
	}
	for (size_t i = 0; i < lb->count; i++)
		if (lb->data[i] > max)
			max = lb->data[i];
	d->n = im->count;
	d->h = (int)im->dims[1];
	d->w = (int)im->dims[2];
	d->classes = max + 1;
	return 0;
fail:
	akk_dataset_release(d);
	return -1;
}

void akk_dataset_release(struct akk_dataset *d)
{
	akk_idx_release(&d->images);
	akk_idx_release(&d->labels);
	memset(d, 0, sizeof(*d));
}
