/* testutil.h - helpers shared by the cmocka test programs. */
#ifndef AKK_TESTUTIL_H
#define AKK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idx.h"

/* The akkctl binary under test ($AKKCTL, else ./akkctl). */
const char *tu_akkctl(void);
/* Run argv (argv[0] is looked up in PATH unless it has a '/'), stdin from
 * /dev/null; capture stdout and stderr (NUL-terminated, truncated to the
 * buffer; either may be NULL). Returns the exit status, 128+signal when
 * killed, -1 when it could not run. */
int tu_run(const char *const *argv, char *out, size_t outsz, char *err,
	   size_t errsz);
/* A fresh directory under $TMPDIR (or /tmp); the path is static storage
 * valid until the next call. */
const char *tu_tmpdir(void);
/* The whole file, NUL-terminated (caller frees), its length in *len when
 * len is not NULL; NULL if it cannot be read. */
char *tu_slurp(const char *path, size_t *len);
/* Remove dir and everything below it, unless $AKK_KEEP_TMP is set (to look
 * at what a test left). Does nothing for an empty path. */
void tu_rm_tree(const char *dir);
/* Write len bytes to path; 0 on success. */
int tu_write_file(const char *path, const void *data, size_t len);
/* Largest |a-b| / max(|a|, |b|, floor) over n elements. */
double tu_max_rel_err(const float *a, const float *b, size_t n, double floor);
/* Fill with uniform values in [lo, hi) from a fixed LCG seeded by seed. */
void tu_fill(float *x, size_t n, float lo, float hi, uint32_t seed);

/* A learnable in-memory dataset: n images of side x side, label i % classes,
 * class c lighting up the pixels j with j % classes == c over noise; the
 * first two pixels of image i hold i (low byte, high byte), so tests can
 * count which samples went by. Release with akk_dataset_release. */
void tu_dataset(struct akk_dataset *d, size_t n, int side, int classes,
		uint32_t seed);

/* Write d's images (images != 0) or labels as an IDX file at path. */
void tu_write_idx(const char *path, const struct akk_dataset *d, int images);

#endif
