/* steps.c - steps.csv: the per-step metrics, written and read (steps.h). */
#include "io/steps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"

/* The whole file at path, at most AKK_STEPS_MAX_BYTES (*len bytes,
 * NUL-terminated); NULL with e set, or, when missing is not NULL and the
 * file does not exist, NULL with *missing 1 and no error. */
static char *slurp(const char *path, size_t *len, int *missing, struct akk_err *e)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	*len = 0;
	if (fd < 0) {
		if (missing && errno == ENOENT) {
			*missing = 1;
			return NULL;
		}
		akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		akk_err_at(e, path, 0, 0, "not a regular file");
		goto out;
	}
	if (st.st_size > AKK_STEPS_MAX_BYTES) {
		akk_err_at(e, path, 0, 0, "larger than %d bytes: not a steps file",
			   AKK_STEPS_MAX_BYTES);
		goto out;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
out:
	close(fd);
	return buf;
}

/* ---- rows: what the reader accepts and the resume's cut keeps ----------- */

/* Field `col` (from 1) of line `line` at p, up to ',' or the line's end
 * (end): a number into *v. */
static int number(const char **p, const char *end, double *v, const char *path,
		  int line, int col, const char *line_start, struct akk_err *e)
{
	char buf[64], *stop;
	const char *q = *p;
	size_t n;

	while (q < end && *q != ',')
		q++;
	n = (size_t)(q - *p);
	if (n == 0 || n >= sizeof(buf))
		return akk_err_at(e, path, line, (int)(*p - line_start) + 1,
				  "field %d is not a number", col);
	memcpy(buf, *p, n);
	buf[n] = '\0';
	*v = strtod(buf, &stop);
	if (stop != buf + n)	/* all of it: a NUL byte ends strtod early */
		return akk_err_at(e, path, line, (int)(*p - line_start) + 1,
				  "field %d is not a number: '%s'", col, buf);
	*p = q < end ? q + 1 : q;
	return 0;
}

/* One row at line (text from p to end, without its newline). */
static int parse_row(struct akk_step_row *r, const char *p, const char *end,
		     const char *path, int line, long prev, struct akk_err *e)
{
	const char *start = p;
	double v[5];

	for (int k = 0; k < 5; k++) {
		if (k > 0 && p[-1] != ',')
			return akk_err_at(e, path, line, (int)(p - start) + 1,
					  "%d fields, expected 5 (%s)", k, AKK_STEPS_HEADER);
		if (number(&p, end, &v[k], path, line, k + 1, start, e))
			return -1;
		if (k != 3 && !isfinite(v[k]))
			return akk_err_at(e, path, line, 1, "field %d is not finite", k + 1);
	}
	if (p < end || (end > start && end[-1] == ','))
		return akk_err_at(e, path, line, (int)(p - start) + 1,
				  "more than 5 fields (%s)", AKK_STEPS_HEADER);
	if (!(v[0] >= 1 && v[0] <= (double)LONG_MAX) || v[0] != floor(v[0]) || v[0] <= prev)
		return akk_err_at(e, path, line, 1, "step %g is not a step after %ld", v[0], prev);
	if (!(v[1] >= 1 && v[1] <= INT_MAX) || v[1] != floor(v[1]))
		return akk_err_at(e, path, line, 1, "epoch %g is not an epoch (1 or more)", v[1]);
	if (!(v[2] >= 0 && v[2] <= (double)LONG_MAX))
		return akk_err_at(e, path, line, 1, "samples %g is not a count", v[2]);
	*r = (struct akk_step_row){ (long)v[0], (int)v[1], (long)v[2], v[3], v[4] };
	return 0;
}

/* Whether text (len bytes) starts with the header line. */
static int has_header(const char *text, size_t len)
{
	size_t hl = strlen(AKK_STEPS_HEADER);

	return len > hl && !memcmp(text, AKK_STEPS_HEADER, hl) && text[hl] == '\n';
}

/* The byte offset in text (len bytes) of the first row whose step is above
 * keep, or that the reader would refuse: where a resumed run cuts the
 * file, so that what is kept reads back as it did. Another header, or one
 * cut short, starts the file over. */
static size_t cut_at(const char *text, size_t len, long keep)
{
	const char *p = text + strlen(AKK_STEPS_HEADER) + 1, *end = text + len;
	long prev = 0;

	if (!has_header(text, len))
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct akk_step_row r;
		struct akk_err e = { 0 };

		if (!nl || parse_row(&r, p, nl, "", 0, prev, &e) || r.step > keep)
			return (size_t)(p - text);
		prev = r.step;
		p = nl + 1;
	}
	return len;
}

/* ---- writing ------------------------------------------------------------ */

int akk_steps_open(struct akk_steps *s, const char *path, int every, long keep,
		   struct akk_err *e)
{
	size_t len, cut;
	int missing = 0;
	char *text;

	memset(s, 0, sizeof(*s));
	if (every < 1)
		return akk_err_set(e, "log_every_steps must be at least 1");
	text = slurp(path, &len, &missing, e);
	if (!text && !missing)
		return -1;
	cut = text ? cut_at(text, len, keep) : 0;
	free(text);
	if (text && cut < len && truncate(path, (off_t)cut))
		return akk_err_at(e, path, 0, 0, "cannot cut back: %s", strerror(errno));
	if (!(s->path = strdup(path)))
		return akk_err_set(e, "out of memory");
	if (!(s->f = fopen(path, "a"))) {
		akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
		free(s->path);
		s->path = NULL;
		return -1;
	}
	if (!cut && (fprintf(s->f, "%s\n", AKK_STEPS_HEADER) < 0 || fflush(s->f))) {
		akk_err_at(e, path, 0, 0, "cannot write: %s", strerror(errno));
		fclose(s->f);
		free(s->path);
		memset(s, 0, sizeof(*s));
		return -1;
	}
	s->every = every;
	s->t0 = akk_now();
	return 0;
}

void akk_steps_on_step(struct akk_steps *s, long step, int epoch, long samples,
		       double loss_sum)
{
	long n;

	if (!s->f || s->failed || step % s->every)
		return;
	if (epoch != s->epoch) {	/* the running sums start again */
		s->epoch = epoch;
		s->sum = 0;
		s->samples = 0;
	}
	n = samples - s->samples;
	if (fprintf(s->f, "%ld,%d,%ld,%.9g,%.3f\n", step, epoch, n,
		    n > 0 ? (loss_sum - s->sum) / (double)n : NAN, akk_now() - s->t0) < 0 ||
	    fflush(s->f)) {
		s->failed = 1;
		akk_err_at(&s->err, s->path, 0, 0, "cannot write: %s", strerror(errno));
	}
	s->sum = loss_sum;
	s->samples = samples;
}

int akk_steps_close(struct akk_steps *s, struct akk_err *e)
{
	int rc = 0;

	if (s->f && fclose(s->f) && !s->failed) {
		s->failed = 1;
		akk_err_at(&s->err, s->path, 0, 0, "cannot write: %s", strerror(errno));
	}
	if (s->failed) {
		*e = s->err;
		rc = -1;
	}
	free(s->path);
	memset(s, 0, sizeof(*s));
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

int akk_steps_load(struct akk_step_rows *r, const char *path, struct akk_err *e)
{
	size_t len, cap = 0;
	char *text = slurp(path, &len, NULL, e);
	const char *p, *end;
	int line = 1;

	memset(r, 0, sizeof(*r));
	if (!text)
		return -1;
	end = text + len;
	if (!has_header(text, len)) {
		free(text);
		return akk_err_at(e, path, 1, 1, "not a steps file: the header must be '%s'",
				  AKK_STEPS_HEADER);
	}
	for (p = text + strlen(AKK_STEPS_HEADER) + 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			akk_err_at(e, path, line + 1, 1, "the last line has no newline: the file is cut short");
			goto fail;
		}
		if (r->n == AKK_STEPS_MAX_ROWS) {
			akk_err_at(e, path, line + 1, 1, "more than %d rows", AKK_STEPS_MAX_ROWS);
			goto fail;
		}
		if (r->n == cap) {
			size_t nc = cap ? 2 * cap : 256;
			struct akk_step_row *nr = realloc(r->rows, nc * sizeof(*nr));
			if (!nr) {
				akk_err_set(e, "out of memory");
				goto fail;
			}
			r->rows = nr;
			cap = nc;
		}
		if (parse_row(&r->rows[r->n], p, nl, path, line + 1,
			      r->n ? r->rows[r->n - 1].step : 0, e))
			goto fail;
		r->n++;
		p = nl + 1;
	}
	free(text);
	if (!r->n) {
		akk_steps_release(r);
		return akk_err_at(e, path, 2, 1, "no rows");
	}
	return 0;
fail:
	free(text);
	akk_steps_release(r);
	return -1;
}

void akk_steps_release(struct akk_step_rows *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
