/* gzip.c - a data file read as bytes, plain or gzip-inflated, bounded. */
#include "data/gzip.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Refill the input buffer when it is empty (keeping nothing). -1
 * (reported) on a read error; at the end of the file sets in_eof. */
static int fill(struct akk_gz_reader *r)
{
	ssize_t n;

	if (r->in_pos < r->in_len || r->in_eof)
		return 0;
	r->in_off += r->in_len;
	r->in_pos = r->in_len = 0;
	do
		n = read(r->fd, r->in, AKK_GZ_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return akk_err_at(r->e, r->path, 0, 0, "read error: %s",
				  strerror(errno));
	if (n == 0)
		r->in_eof = 1;
	r->in_len = (size_t)n;
	return 0;
}

/* After a gzip member: 1 when another member follows (zlib reset for
 * it), 0 at the end of the file, -1 (reported) for anything else. */
static int next_member(struct akk_gz_reader *r)
{
	if (fill(r) < 0)
		return -1;
	if (r->in_pos == r->in_len)
		return 0;
	if (r->in[r->in_pos] != 0x1f ||
	    (r->in_pos + 1 < r->in_len && r->in[r->in_pos + 1] != 0x8b))
		return akk_err_at(r->e, r->path, 0, 0,
				  "junk after the gzip stream at byte %llu",
				  r->in_off + r->in_pos);
	if (inflateReset(&r->z) != Z_OK)
		return akk_err_at(r->e, r->path, 0, 0,
				  "corrupt gzip stream: cannot restart");
	r->member_end = 0;
	return 1;
}

/* One inflate of the input at hand into out (len bytes of room): *made
 * bytes. At a member's end sets member_end. */
static int inflate_step(struct akk_gz_reader *r, uint8_t *out, size_t len,
			size_t *made)
{
	size_t want = len < UINT_MAX ? len : UINT_MAX, used;
	int rc;

	if (fill(r) < 0)
		return -1;
	r->z.next_in = r->in + r->in_pos;
	r->z.avail_in = (uInt)(r->in_len - r->in_pos);
	r->z.next_out = out;
	r->z.avail_out = (uInt)want;
	rc = inflate(&r->z, Z_NO_FLUSH);
	used = (r->in_len - r->in_pos) - r->z.avail_in;
	*made = want - r->z.avail_out;
	r->in_pos += used;
	r->in_used += used;
	r->out_total += *made;
	if (r->out_total > (unsigned long long)r->max_ratio * r->in_used + AKK_GZ_SLACK)
		return akk_err_at(r->e, r->path, 0, 0,
				  "gzip bomb: inflates to more than %u times its compressed size",
				  r->max_ratio);
	if (rc == Z_STREAM_END) {
		r->member_end = 1;
		return 0;
	}
	if (rc == Z_MEM_ERROR)
		return akk_err_at(r->e, r->path, 0, 0,
				  "out of memory while inflating");
	if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR)
		return akk_err_at(r->e, r->path, 0, 0, "corrupt gzip stream: %s",
				  r->z.msg ? r->z.msg : "invalid data");
	/* Z_OK or Z_BUF_ERROR: no progress only when the input ran out in
	 * the middle of a member. */
	if (!used && !*made && r->in_eof && r->in_pos == r->in_len)
		return akk_err_at(r->e, r->path, 0, 0,
				  "corrupt gzip stream: unexpected end of file");
	return 0;
}

/* Up to len inflated bytes into buf. */
static int read_gz(struct akk_gz_reader *r, uint8_t *buf, size_t len, size_t *got)
{
	size_t made;

	while (*got < len) {
		if (r->member_end) {
			int more = next_member(r);
			if (more <= 0)
				return more;
		}
		if (inflate_step(r, buf + *got, len - *got, &made) < 0)
			return -1;
		*got += made;
	}
	return 0;
}

/* Up to len plain bytes into buf. */
static int read_plain(struct akk_gz_reader *r, uint8_t *buf, size_t len,
		      size_t *got)
{
	while (*got < len) {
		if (fill(r) < 0)
			return -1;
		if (r->in_pos == r->in_len)
			break;
		size_t n = r->in_len - r->in_pos;
		if (n > len - *got)
			n = len - *got;
		memcpy(buf + *got, r->in + r->in_pos, n);
		r->in_pos += n;
		*got += n;
	}
	return 0;
}

int akk_gz_read(struct akk_gz_reader *r, void *buf, size_t len, size_t *got)
{
	*got = 0;
	return r->gz ? read_gz(r, buf, len, got) : read_plain(r, buf, len, got);
}

int akk_gz_peek(struct akk_gz_reader *r, const uint8_t **p, size_t *n)
{
	if (!r->gz) {
		if (fill(r) < 0)
			return -1;
		*p = r->in + r->in_pos;
		*n = r->in_len - r->in_pos;
		return 0;
	}
	if (r->out_pos == r->out_len) {
		r->out_pos = r->out_len = 0;
		while (!r->out_len) {
			if (r->member_end) {
				int more = next_member(r);
				if (more < 0)
					return -1;
				if (!more)
					break;
			}
			if (inflate_step(r, r->out, AKK_GZ_CHUNK, &r->out_len) < 0)
				return -1;
		}
	}
	*p = r->out + r->out_pos;
	*n = r->out_len - r->out_pos;
	return 0;
}

void akk_gz_take(struct akk_gz_reader *r, size_t n)
{
	if (r->gz)
		r->out_pos += n;
	else
		r->in_pos += n;
}

/* Read until the first two bytes are in (or the file ends): the gzip
 * magic decides, whatever the name. */
static int sniff(struct akk_gz_reader *r)
{
	while (r->in_len < 2 && !r->in_eof) {
		ssize_t n = read(r->fd, r->in + r->in_len, AKK_GZ_CHUNK - r->in_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return akk_err_at(r->e, r->path, 0, 0, "read error: %s",
					  strerror(errno));
		if (n == 0)
			r->in_eof = 1;
		r->in_len += (size_t)n;
	}
	if (r->in_len < 2 || r->in[0] != 0x1f || r->in[1] != 0x8b)
		return 0;
	if (!(r->out = malloc(AKK_GZ_CHUNK)) ||
	    inflateInit2(&r->z, 16 + MAX_WBITS) != Z_OK)
		return akk_err_at(r->e, r->path, 0, 0, "out of memory opening the file");
	r->gz = 1;
	return 0;
}

int akk_gz_open(struct akk_gz_reader *r, const char *path, unsigned max_ratio,
		struct akk_err *e)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->path = path;
	r->e = e;
	r->file_size = -1;
	r->max_ratio = max_ratio;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
	if (fstat(r->fd, &st) < 0) {
		akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(EISDIR));
		goto fail;
	}
	if (S_ISREG(st.st_mode))
		r->file_size = st.st_size;
	if (!(r->in = malloc(AKK_GZ_CHUNK))) {
		akk_err_at(e, path, 0, 0, "out of memory opening the file");
		goto fail;
	}
	if (sniff(r) < 0)
		goto fail;
	return 0;
fail:
	akk_gz_close(r);
	return -1;
}

void akk_gz_close(struct akk_gz_reader *r)
{
	if (r->gz)
		inflateEnd(&r->z);
	free(r->in);
	free(r->out);
	if (r->fd >= 0)
		close(r->fd);
	r->gz = 0;
	r->in = r->out = NULL;
	r->fd = -1;
}
