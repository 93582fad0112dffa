/* gzip.h - a data file read as bytes, plain or gzip, through one bounded
 * reader: what data/idx.c and data/csv.c read their files with.
 *
 * The file is read through one input buffer of AKK_GZ_CHUNK bytes. When it
 * starts with the gzip magic (1f 8b), whatever its name, it is inflated
 * with zlib, member after member; anything after the last member that is
 * not another gzip member is an error ("junk after the gzip stream at byte
 * N", N its offset in the file). Inflating is bounded: a stream that
 * inflates to more than max_ratio times the compressed bytes it came from
 * (plus AKK_GZ_SLACK) is stopped as a gzip bomb as soon as it does. Every
 * failure is reported at the file (line 0), in the reader's struct akk_err.
 *
 * Two ways to take the bytes, not to be mixed on one reader: akk_gz_read
 * copies them into the caller's buffer (gzip inflates straight into it);
 * akk_gz_peek lends the bytes not yet taken, in place, and akk_gz_take
 * consumes some of them (a line reader's way). */
#ifndef AKK_GZIP_H
#define AKK_GZIP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

#include "base/err.h"

#define AKK_GZ_CHUNK ((size_t)1 << 17)
#define AKK_GZ_SLACK ((unsigned long long)1 << 20)
/* Deflate packs at most about 1032 bytes into one: no honest gzip file
 * inflates to more than this many times its size. */
#define AKK_GZ_DEFLATE_MAX_RATIO 1032

struct akk_gz_reader {
	int fd;
	const char *path;		/* lent: for the error messages */
	struct akk_err *e;		/* lent: where failures are reported */
	off_t file_size;		/* bytes on disk; -1: not a regular file */
	int gz;				/* inflating */
	unsigned max_ratio;		/* the bomb bound */
	uint8_t *in;			/* AKK_GZ_CHUNK bytes read from the file */
	size_t in_pos, in_len;		/* unread input: in[in_pos, in_len) */
	int in_eof;			/* read() returned 0 */
	unsigned long long in_off;	/* file offset of in[0] */
	int member_end;			/* a gzip member ended: what follows? */
	z_stream z;
	unsigned long long in_used;	/* compressed bytes inflated */
	unsigned long long out_total;	/* bytes they inflated to */
	uint8_t *out;			/* akk_gz_peek: AKK_GZ_CHUNK inflated bytes */
	size_t out_pos, out_len;
};

/* Open path (not a directory) and look at its first bytes: gzip or
 * plain. max_ratio bounds what gzip inflates to (AKK_GZ_DEFLATE_MAX_RATIO:
 * only what deflate can pack). 0, or -1 with e filled at path; r is then
 * closed. */
int akk_gz_open(struct akk_gz_reader *r, const char *path, unsigned max_ratio,
		struct akk_err *e);
/* Up to len bytes into buf; *got is how many came before the end of the
 * file. 0, or -1 (reported) on a read, inflate or bound error. */
int akk_gz_read(struct akk_gz_reader *r, void *buf, size_t len, size_t *got);
/* The bytes not yet taken: *n of them at *p, lent until the next call on
 * r; *n is 0 at the end of the file. 0, or -1 (reported). */
int akk_gz_peek(struct akk_gz_reader *r, const uint8_t **p, size_t *n);
/* Consume n of the bytes akk_gz_peek lent. */
void akk_gz_take(struct akk_gz_reader *r, size_t n);
void akk_gz_close(struct akk_gz_reader *r);

#endif
