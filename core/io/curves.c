/* curves.c - metrics.csv parsed back into rows, strictly, with the
 * segments a resume leaves. */
#include "io/curves.h"
#include "io/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The longest line read: far more than a row with an lr column per gate. */
#define MAX_LINE 65536

/* The fields of a line, split at commas in place; their 1-based columns. */
#define MAX_FIELDS 512
struct fields {
	char *f[MAX_FIELDS];
	int col[MAX_FIELDS];
	int n;			/* -1: more than MAX_FIELDS */
};

static void split(char *line, struct fields *fs)
{
	char *p = line;

	fs->n = 0;
	for (;;) {
		if (fs->n == MAX_FIELDS) {
			fs->n = -1;
			return;
		}
		fs->f[fs->n] = p;
		fs->col[fs->n++] = (int)(p - line) + 1;
		if (!(p = strchr(p, ',')))
			return;
		*p++ = '\0';
	}
}

static int number(const char *s, double *v)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return *end || (errno == ERANGE && *v != 0) ? -1 : 0;	/* underflow is fine */
}

static int whole(const char *s, long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtol(s, &end, 10);
	return *end || errno ? -1 : 0;
}

/* Names of the first columns, for messages. */
static const char *const names[] = { "epoch", "phase", "samples", "loss", "accuracy", "lr",
				     "seconds", "samples_per_second", "weight_version_min",
				     "weight_version_max" };
#define NKNOWN (int)(sizeof(names) / sizeof(names[0]))

static int parse_row(struct akk_curves *c, struct fields *fs, int nheader,
		     const char *path, int lineno, struct akk_err *e)
{
	struct akk_curve_row r = { .line = lineno };
	long epoch, n;
	double v = 0, *dst[NKNOWN] = { 0 };

	if (fs->n < 0)
		return akk_err_at(e, path, lineno, 1, "more than %d fields", MAX_FIELDS);
	if (fs->n != nheader)
		return akk_err_at(e, path, lineno, 1, "the row has %d field%s, the header %d",
				  fs->n, fs->n == 1 ? "" : "s", nheader);
	if (whole(fs->f[0], &epoch) || epoch < 1 || epoch > 1000000000L)
		return akk_err_at(e, path, lineno, fs->col[0],
				  "the epoch is not a whole number from 1");
	r.epoch = (int)epoch;
	if (!strcmp(fs->f[1], "train"))
		r.phase = AKK_CURVE_TRAIN;
	else if (!strcmp(fs->f[1], "validation"))
		r.phase = AKK_CURVE_VALIDATION;
	else if (!strcmp(fs->f[1], "final"))
		r.phase = AKK_CURVE_FINAL;
	else
		return akk_err_at(e, path, lineno, fs->col[1],
				  "the phase is not train, validation or final");
	dst[3] = &r.loss;
	dst[4] = &r.accuracy;
	dst[5] = &r.lr;
	for (int i = 2; i < NKNOWN; i++) {
		int bad = i == 2 || i >= 8 ? whole(fs->f[i], &n) : number(fs->f[i], &v);
		if (bad)
			return akk_err_at(e, path, lineno, fs->col[i], "%s is not a %s",
					  names[i], i == 2 || i >= 8 ? "whole number" : "number");
		if (dst[i])
			*dst[i] = v;
	}
	if (c->n == AKK_CURVES_MAX_ROWS)
		return akk_err_at(e, path, lineno, 1, "more than %d rows",
				  AKK_CURVES_MAX_ROWS);
	c->rows[c->n++] = r;
	return 0;
}

/* Number the segments: a training row starts a new one when its epoch
 * does not follow the previous training row's, or a final row (the end of
 * a finished run) came since. */
static void segment(struct akk_curves *c)
{
	int seg = 0, last = 0, ended = 0;

	for (size_t i = 0; i < c->n; i++) {
		struct akk_curve_row *r = &c->rows[i];
		if (r->phase == AKK_CURVE_TRAIN) {
			if (last && (r->epoch != last + 1 || ended))
				seg++;
			last = r->epoch;
			ended = 0;
		} else if (r->phase == AKK_CURVE_FINAL) {
			ended = 1;
		}
		r->segment = seg;
	}
	c->segments = seg + 1;
}

int akk_curves_load(struct akk_curves *c, const char *path, struct akk_err *e)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *header = NULL;
	size_t cap = 0, rcap = 0;
	ssize_t len;
	int lineno = 0, nheader = 0, rc = -1;
	struct fields *fs = NULL;

	struct stat st;
	off_t size = 0;

	*c = (struct akk_curves){ 0 };
	if (!f)
		return akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
	/* bounded before a byte is read: /dev/zero or a FIFO never is */
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return akk_err_at(e, path, 0, 0, "not a regular file");
	}
	if (st.st_size > AKK_METRICS_MAX_BYTES) {
		fclose(f);
		return akk_err_at(e, path, 0, 0, "larger than a metrics file may be "
				  "(%lld bytes; at most %d)", (long long)st.st_size,
				  AKK_METRICS_MAX_BYTES);
	}
	if (!(fs = malloc(sizeof(*fs))) || !(header = akk_metrics_header(0))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	errno = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		if ((size += len) > AKK_METRICS_MAX_BYTES) {
			akk_err_at(e, path, lineno, 1, "the file grew past %d bytes while it was read",
				   AKK_METRICS_MAX_BYTES);
			goto out;
		}
		if (line[len - 1] != '\n') {
			akk_err_at(e, path, lineno, (int)len + 1, "the line is cut short (no newline at its end)");
			goto out;
		}
		line[--len] = '\0';
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > MAX_LINE || memchr(line, '\0', (size_t)len)) {
			akk_err_at(e, path, lineno, 1, "not a line of text (%s)",
				   len > MAX_LINE ? "too long" : "a NUL byte");
			goto out;
		}
		if (lineno == 1) {
			size_t hl = strlen(header);
			if (strncmp(line, header, hl) || (line[hl] && line[hl] != ',')) {
				akk_err_at(e, path, 1, 1, "not a metrics file: the header does not start with "
					   "epoch,phase,samples,loss,accuracy,lr,...");
				goto out;
			}
			split(line, fs);
			if ((nheader = fs->n) < 0) {
				akk_err_at(e, path, 1, 1, "more than %d columns", MAX_FIELDS);
				goto out;
			}
			continue;
		}
		if (c->n == rcap) {
			size_t ncap = rcap ? 2 * rcap : 256;
			void *nr;
			if (ncap > AKK_CURVES_MAX_ROWS + 1)
				ncap = AKK_CURVES_MAX_ROWS + 1;
			if (!(nr = realloc(c->rows, ncap * sizeof(*c->rows)))) {
				akk_err_set(e, "out of memory");
				goto out;
			}
			c->rows = nr;
			rcap = ncap;
		}
		split(line, fs);
		if (parse_row(c, fs, nheader, path, lineno, e))
			goto out;
		errno = 0;
	}
	if (ferror(f)) {
		akk_err_set(e, "cannot read '%s': %s", path, strerror(errno ? errno : EIO));
		goto out;
	}
	if (!c->n) {
		akk_err_at(e, path, 0, 0, "no epoch in it yet: %s",
			   lineno ? "only the header" : "the file is empty");
		goto out;
	}
	segment(c);
	rc = 0;
out:
	if (rc)
		akk_curves_release(c);
	free(fs);
	free(header);
	free(line);
	fclose(f);
	return rc;
}

void akk_curves_release(struct akk_curves *c)
{
	free(c->rows);
	*c = (struct akk_curves){ 0 };
}
