/* testutil.h - helpers shared by the cmocka test programs. */
#ifndef AKK_TESTUTIL_H
#define AKK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "base/workers.h"
#include "config/spec.h"
#include "data/idx.h"
#include "model/model.h"
#include "tensor/pool.h"

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

/* Whether the kernel gives huge pages to a mapping that asks for them
 * (transparent huge pages "always" or "madvise"). */
int tu_thp_offered(void);

/* "dir/name" in one of 32 rotating static buffers (dir may be one of them:
 * a result stays valid for the next 31 calls). */
const char *tu_path(const char *dir, const char *name);
/* Run the akkctl under test with the NULL-terminated arguments after arg;
 * output as tu_run. Test programs wrap it as
 * #define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__) */
int tu_ak(char *out, size_t outsz, char *err, size_t errsz, const char *arg, ...);
/* path exists (of any type). */
int tu_exists(const char *path);

/* Text assertions that print the expected and the actual text when they
 * fail (strstr or strncmp inside assert_true print neither), reported at
 * the caller's line. A line is text between newlines, without the '\n'. */
#define tu_assert_line(text, line) \
	do { if (!tu_check_line((text), (line))) _fail(__FILE__, __LINE__); } while (0)
#define tu_assert_no_line(text, line) \
	do { if (!tu_check_no_line((text), (line))) _fail(__FILE__, __LINE__); } while (0)
#define tu_assert_prefix(text, prefix) \
	do { if (!tu_check_prefix((text), (prefix))) _fail(__FILE__, __LINE__); } while (0)
#define tu_assert_contains(hay, needle) \
	do { if (!tu_check_contains((hay), (needle))) _fail(__FILE__, __LINE__); } while (0)
#define tu_assert_not_contains(hay, needle) \
	do { if (!tu_check_not_contains((hay), (needle))) _fail(__FILE__, __LINE__); } while (0)
/* The checks behind them: 1 when it holds, else print both and return 0.
 * Usable alone where a test counts failures instead of stopping. */
int tu_check_line(const char *text, const char *line);
int tu_check_no_line(const char *text, const char *line);
int tu_check_prefix(const char *text, const char *prefix);
int tu_check_contains(const char *hay, const char *needle);
int tu_check_not_contains(const char *hay, const char *needle);

/* An IDX file in memory (caller frees): the header for (type, rank, dims),
 * then len payload bytes (payload NULL: byte i is i % 251); its size in
 * *size. */
unsigned char *tu_idx_bytes(int type, int rank, const uint32_t *dims,
			    const void *payload, size_t len, size_t *size);
/* Expect the whitespace-separated word key next in f (fixture files). */
void tu_expect_word(FILE *f, const char *key);

/* Send this process's stderr (fd 2) to a fresh temporary file until
 * tu_stderr_end, which restores it and returns what was written
 * (NUL-terminated; caller frees). Not nested. */
void tu_stderr_begin(void);
char *tu_stderr_end(void);

/* A short run of configs/lenet.yaml in dir/run (one epoch on the first
 * ntrain MNIST training images, copied to dir): for predict and the
 * library. Returns 0; 1 when datasets/mnist is missing (the caller
 * skips); -1 when training failed (printed). */
int tu_lenet_run(const char *dir, int ntrain);

/* tu_dataset's set of n samples (side x side, classes, seed) written as
 * dir/NAME-images and dir/NAME-labels (IDX). */
void tu_write_set(const char *dir, const char *name, size_t n, int side,
		  int classes, uint32_t seed);

/* Workers as a run starts them: n, the calling thread worker 0 (it runs
 * actors while it waits, as the sentinel's thread does), threads 1..n-1
 * started. Stop them (akk_workers_stop, from this thread) before
 * releasing what runs on them, then akk_workers_release. */
void tu_workers_start(struct akk_workers *w, int n);

/* A pool as a run builds one: workers (threads 1..n-1 started; the
 * caller is none of them) and a pool on them splitting products n ways.
 * tu_pool_free stops the workers, then frees both (nothing on a zeroed
 * struct). */
struct tu_pool {
	struct akk_workers w;
	struct akk_pool *p;
};
struct akk_pool *tu_pool_new(struct tu_pool *tp, int n);
void tu_pool_free(struct tu_pool *tp);

/* A decoded PNG: 8-bit RGB or RGBA, not interlaced (what Chromium
 * writes). */
struct tu_png {
	unsigned w, h, ch;
	unsigned char *px;	/* (h, w, ch); free it */
};
void tu_png_read(const char *path, struct tu_png *img);
/* Render svg (w x h) with headless Chromium (tests/render_svg.sh) into
 * svg.png and read it into img: 0; 1 when no Chromium is installed (the
 * caller skips; said once on stderr). Fails the test otherwise. */
int tu_render(const char *svg, int w, int h, struct tu_png *img);
/* Render svg and check the picture: its size, that at least min_ink of
 * its pixels are not white, that it has at least min_colours distinct
 * colours, and that each colour of want (0xRRGGBB, 0-terminated, up to
 * 8) appears on 20 pixels or more (within 24 per channel:
 * anti-aliasing); 0x222222 is the text's colour, so text was drawn. */
void tu_assert_renders(const char *svg, int w, int h, double min_ink, int min_colours,
		       const unsigned *want);

struct akk_spec;
struct akk_err;
/* akk_spec_parse of the config text t, named "t.yaml" (no base folder, no
 * overrides), e cleared first. */
int tu_parse(struct akk_spec *s, const char *t, struct akk_err *e);
/* Parse t, then plan the model: the first error, formatted, into buf and
 * 0; -1 when both succeed (nothing is left allocated either way). */
int tu_plan_error(const char *t, char *buf, size_t n);

/* A planned network on synthetic data, for the tests that run one: the
 * config text t parsed (as test.yaml in .) and planned, a failure failing
 * the test, with tu_dataset's 400 training samples (8x8, 4 classes, seed
 * 7: 25 batches of 16) and 100 validation samples (seed 9). */
struct tu_net {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
};
void tu_net_setup(struct tu_net *f, const char *t);
void tu_net_release(struct tu_net *f);

#endif
