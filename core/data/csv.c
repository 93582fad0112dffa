/* csv.c - reading a CSV table, plain or gzip, one line at a time.
 *
 * The file is read through data/gzip.h's reader, as data/idx.c reads it:
 * plain, or inflated member after member when it starts with the gzip
 * magic (1f 8b). Text is taken a line at a time into a line buffer that
 * grows up to AKK_CSV_MAX_LINE; the line is cut into cells in place
 * (NUL-terminated pointers into it), and each cell is converted at once
 * into the growing arrays of the table, so memory is the data's own size
 * plus one line. A gzip stream that inflates to more than
 * AKK_CSV_GZ_RATIO times the bytes it was inflated from (plus 1 MiB) is
 * stopped as a bomb as soon as it does. Errors are reported at the file's
 * own line number and the 1-based cell. */
#include "data/csv.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "data/gzip.h"


/* A column's part in the table: a feature, ignored, the class label, or
 * (0 and up) which target it is. */
#define ROLE_FEATURE (-1)
#define ROLE_IGNORE (-2)
#define ROLE_LABEL (-3)

struct src {
	struct akk_gz_reader f;		/* the file's bytes, plain or inflated */
	const char *path;
	struct akk_err *e;
	char *line;			/* the current line, NUL-terminated */
	size_t line_len, line_cap;
	int lineno;			/* of the current line, 1-based */
	char **cells;			/* AKK_CSV_MAX_COLS pointers into line */
};

/* What one file gives: its features, and its label or targets. */
struct table {
	size_t n, cap;			/* rows read, rows allocated */
	int ncols;			/* cells a row */
	int first_row;			/* line of the first data row */
	int count_line;			/* line that set ncols (header or
					 * first row) */
	int *role;			/* ncols: ROLE_* or a target index */
	size_t nfeat;
	float *x;			/* (n, nfeat) */
	int want_label;			/* classification, label selected */
	int32_t *labels;		/* (n) */
	int max_label;
	int names_mode;			/* -1 undecided, 0 numbers, 1 names */
	char **names;			/* label names, as first seen */
	int *name_at;			/* 2 per name: the line and column it
					 * was first seen at */
	int nnames, names_cap;
	int *slots;			/* hash of names: index + 1, 0 = free */
	size_t nslots;
	int ntargets;
	float *y;			/* (n, ntargets) */
};

static int fail(struct src *s, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct src *s, int col, const char *fmt, ...)
{
	char msg[sizeof(s->e->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return akk_err_at(s->e, s->path, s->lineno, col, "%s", msg);
}

/* --- lines and cells ------------------------------------------------------ */

/* The next line into s->line (no newline, no CR before it): 1, or 0 at
 * the end of the file, or -1 (error reported). */
static int read_line(struct src *s)
{
	int any = 0;

	s->line_len = 0;
	for (;;) {
		const char *p, *nl;
		size_t n, k;

		if (akk_gz_peek(&s->f, (const uint8_t **)&p, &n) < 0)
			return -1;
		if (!n)
			break;
		any = 1;
		nl = memchr(p, '\n', n);
		k = nl ? (size_t)(nl - p) : n;
		if (k > AKK_CSV_MAX_LINE - s->line_len) {
			s->lineno++;
			return fail(s, 0, "line longer than %zu bytes",
				    AKK_CSV_MAX_LINE);
		}
		if (s->line_len + k + 1 > s->line_cap) {
			size_t cap = s->line_cap ? s->line_cap : 4096;
			while (cap < s->line_len + k + 1)
				cap *= 2;
			if (cap > AKK_CSV_MAX_LINE + 1)
				cap = AKK_CSV_MAX_LINE + 1;
			char *nb = realloc(s->line, cap);
			if (!nb)
				return akk_err_at(s->e, s->path, s->lineno + 1, 0,
						  "out of memory for a line of %zu bytes",
						  cap);
			s->line = nb;
			s->line_cap = cap;
		}
		memcpy(s->line + s->line_len, p, k);
		s->line_len += k;
		akk_gz_take(&s->f, nl ? k + 1 : k);
		if (nl)
			break;
	}
	if (!any)
		return 0;
	s->lineno++;
	s->line[s->line_len] = '\0';
	if (s->line_len && s->line[s->line_len - 1] == '\r')
		s->line[--s->line_len] = '\0';
	if (strlen(s->line) != s->line_len)
		return fail(s, 0, "NUL byte in the line: not a text file");
	/* A UTF-8 byte order mark is no part of the first cell. */
	if (s->lineno == 1 && !strncmp(s->line, "\xef\xbb\xbf", 3)) {
		memmove(s->line, s->line + 3, s->line_len - 2);
		s->line_len -= 3;
	}
	return 1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int blank_line(const char *p)
{
	while (is_blank(*p))
		p++;
	return !*p;
}

static int add_cell(struct src *s, int *n, char *start, char *end)
{
	if (*n == AKK_CSV_MAX_COLS)
		return fail(s, AKK_CSV_MAX_COLS + 1, "more than %d cells",
			    AKK_CSV_MAX_COLS);
	if (end - start > AKK_CSV_MAX_CELL)
		return fail(s, *n + 1, "cell longer than %d bytes",
			    AKK_CSV_MAX_CELL);
	*end = '\0';
	s->cells[(*n)++] = start;
	return 0;
}

/* Cut the line into s->cells: runs of blanks separate them. */
static int split_blanks(struct src *s, int *ncells)
{
	char *p = s->line;

	*ncells = 0;
	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			return 0;
		char *start = p;
		while (*p && !is_blank(*p))
			p++;
		char c = *p;
		if (add_cell(s, ncells, start, p) < 0)
			return -1;
		if (!c)
			return 0;
		p++;
	}
}

/* Cut the line into s->cells at delim; blanks around a cell are trimmed,
 * and a quoted cell is unquoted in place ("" is a quote). */
static int split_delim(struct src *s, char delim, int *ncells)
{
	char *p = s->line;

	*ncells = 0;
	for (;;) {
		char *start, *end, c;

		while (is_blank(*p))
			p++;
		if (*p == '"') {
			char *w = p;
			start = p++;
			for (;;) {
				if (!*p)
					return fail(s, *ncells + 1,
						    "unterminated quote");
				if (*p == '"') {
					if (p[1] != '"') {
						p++;
						break;
					}
					p++;
				}
				*w++ = *p++;
			}
			end = w;
			while (is_blank(*p))
				p++;
			if (*p && *p != delim)
				return fail(s, *ncells + 1,
					    "text after the closing quote");
		} else {
			start = p;
			while (*p && *p != delim)
				p++;
			end = p;
			while (end > start && is_blank(end[-1]))
				end--;
		}
		c = *p;
		if (add_cell(s, ncells, start, end) < 0)
			return -1;
		if (!c)
			return 0;
		p++;
	}
}

static int split(struct src *s, const struct akk_csv_spec *o, int *ncells)
{
	switch (o->delimiter) {
	case AKK_CSV_WHITESPACE:
		return split_blanks(s, ncells);
	case AKK_CSV_SEMICOLON:
		return split_delim(s, ';', ncells);
	default:
		return split_delim(s, ',', ncells);
	}
}

/* --- cells as values ------------------------------------------------------ */

/* A cell as an error message quotes it: control bytes as \xNN, and cut
 * after 64 bytes with "...". */
#define SHOWN 300
static const char *shown(const char *cell, char *buf)
{
	size_t k = 0;

	for (size_t i = 0; cell[i]; i++) {
		unsigned char c = (unsigned char)cell[i];
		if (i == 64) {
			memcpy(buf + k, "...", 3);
			k += 3;
			break;
		}
		if (c < 0x20 || c == 0x7f)
			k += (size_t)snprintf(buf + k, SHOWN - k, "\\x%02x", c);
		else
			buf[k++] = (char)c;
	}
	buf[k] = '\0';
	return buf;
}

/* Plain decimals ([+-]digits[.digits], at most 15 digits) the fast way:
 * the digits are exact in a double and so is 10^k for k <= 22, and one
 * division rounds correctly, so this is strtod's own result (Clinger's
 * fast path). 1 when it applies. */
static int fast_decimal(const char *p, double *v)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6,
					1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
					1e13, 1e14, 1e15 };
	int neg = *p == '-', digits = 0, frac = -1;
	uint64_t m = 0;

	if (*p == '-' || *p == '+')
		p++;
	for (;; p++) {
		if (*p >= '0' && *p <= '9') {
			m = m * 10 + (uint64_t)(*p - '0');
			digits++;
			if (frac >= 0)
				frac++;
		} else if (*p == '.' && frac < 0) {
			frac = 0;
		} else {
			break;
		}
	}
	if (*p || !digits || digits > 15)
		return 0;
	*v = (double)m / pow10[frac > 0 ? frac : 0];
	if (neg)
		*v = -*v;
	return 1;
}

/* A finite number that fits a float; col is 1-based. */
static int parse_num(struct src *s, const char *cell, int col, double *v)
{
	char *end, buf[SHOWN];

	if (!*cell)
		return fail(s, col, "missing value");
	if (fast_decimal(cell, v))
		return 0;
	errno = 0;
	*v = strtod(cell, &end);
	if (strspn(cell, "0123456789+-.eE") != strlen(cell)) {
		if (end != cell && !*end && !isfinite(*v))
			return fail(s, col, "not a finite number: '%s'", shown(cell, buf));
		return fail(s, col, "not a number: '%s'", shown(cell, buf));
	}
	if (end == cell || *end)
		return fail(s, col, "not a number: '%s'", shown(cell, buf));
	if (!isfinite(*v) || fabs(*v) > FLT_MAX)
		return fail(s, col, "too large for a float: '%s'", shown(cell, buf));
	return 0;
}

static uint32_t hash(const char *p)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*p)
		h = (h ^ (uint8_t)*p++) * 16777619u;
	return h;
}

/* The index of label name cell, as first seen; new names are added. */
static int name_index(struct src *s, struct table *t, const char *cell,
		      int col, int32_t *out)
{
	size_t mask, i;

	if (2 * ((size_t)t->nnames + 1) > t->nslots) {
		size_t ns = t->nslots ? 2 * t->nslots : 64;
		int *sl = calloc(ns, sizeof(*sl));
		if (!sl)
			return fail(s, col, "out of memory for class names");
		for (int k = 0; k < t->nnames; k++) {
			i = hash(t->names[k]) & (ns - 1);
			while (sl[i])
				i = (i + 1) & (ns - 1);
			sl[i] = k + 1;
		}
		free(t->slots);
		t->slots = sl;
		t->nslots = ns;
	}
	mask = t->nslots - 1;
	for (i = hash(cell) & mask; t->slots[i]; i = (i + 1) & mask)
		if (!strcmp(t->names[t->slots[i] - 1], cell)) {
			*out = t->slots[i] - 1;
			return 0;
		}
	if (t->nnames == AKK_CSV_MAX_CLASSES)
		return fail(s, col, "more than %d class names",
			    AKK_CSV_MAX_CLASSES);
	if (t->nnames == t->names_cap) {
		int nc = t->names_cap ? 2 * t->names_cap : 16;
		char **nn = realloc(t->names, (size_t)nc * sizeof(*nn));
		int *nl;
		if (!nn)
			return fail(s, col, "out of memory for class names");
		t->names = nn;
		if (!(nl = realloc(t->name_at, 2 * (size_t)nc * sizeof(*nl))))
			return fail(s, col, "out of memory for class names");
		t->name_at = nl;
		t->names_cap = nc;
	}
	if (!(t->names[t->nnames] = strdup(cell)))
		return fail(s, col, "out of memory for class names");
	t->name_at[2 * t->nnames] = s->lineno;
	t->name_at[2 * t->nnames + 1] = col;
	t->slots[i] = ++t->nnames;
	*out = t->nnames - 1;
	return 0;
}

static int parse_label(struct src *s, struct table *t, const char *cell,
		       int col, int32_t *out)
{
	char buf[SHOWN];
	double v;

	if (!*cell)
		return fail(s, col, "missing value");
	if (t->names_mode < 0) {
		char *end;
		strtod(cell, &end);
		t->names_mode = end == cell || *end;
	}
	if (t->names_mode)
		return name_index(s, t, cell, col, out);
	if (parse_num(s, cell, col, &v) < 0) {
		snprintf(s->e->msg + strlen(s->e->msg),
			 sizeof(s->e->msg) - strlen(s->e->msg),
			 " (the labels are numbers, as on line %d)",
			 t->first_row);
		return -1;
	}
	if (v != floor(v))
		return fail(s, col, "class label %s is not an integer", shown(cell, buf));
	if (v < 0 || v >= AKK_CSV_MAX_CLASSES)
		return fail(s, col,
			    "class label %s is out of range: labels are integers from 0 to %d",
			    shown(cell, buf), AKK_CSV_MAX_CLASSES - 1);
	*out = (int32_t)v;
	if (*out > t->max_label)
		t->max_label = *out;
	return 0;
}

/* --- columns -------------------------------------------------------------- */

/* The column c names, among ncols (header: the header's cells, or NULL). */
static int resolve(struct src *s, const struct akk_csv_col *c,
		   const char *what, int ncols, int header, int *out)
{
	if (c->name) {
		int found = -1;
		for (int i = 0; i < ncols; i++) {
			if (strcmp(s->cells[i], c->name))
				continue;
			if (found >= 0)
				return fail(s, i + 1,
					    "column name '%s' (data.csv.%s) is in the header twice",
					    c->name, what);
			found = i;
		}
		if (found < 0)
			return fail(s, 0, "no column named '%s' (data.csv.%s) in the header",
				    c->name, what);
		*out = found;
		return 0;
	}
	*out = c->index < 0 ? ncols - 1 : c->index;
	if (*out >= ncols)
		return fail(s, 0, "data.csv.%s is column %d (0-based), but the %s has %d cells",
			    what, *out, header ? "header" : "row", ncols);
	return 0;
}

/* The role of every column, once the count is known from the header or
 * the first row (whose cells are in s->cells). */
static int plan_columns(struct src *s, struct table *t,
			const struct akk_csv_spec *o, int regression,
			int select, int features, int ncols)
{
	int col;

	t->ncols = ncols;
	if (!(t->role = malloc((size_t)ncols * sizeof(*t->role))))
		return fail(s, 0, "out of memory for %d columns", ncols);
	for (int i = 0; i < ncols; i++)
		t->role[i] = features ? ROLE_FEATURE : ROLE_IGNORE;
	if (select && regression && o->ntargets) {
		for (int k = 0; k < o->ntargets; k++) {
			if (resolve(s, &o->targets[k], "targets", ncols,
				    o->header, &col) < 0)
				return -1;
			if (t->role[col] >= 0)
				return fail(s, col + 1,
					    "data.csv.targets names column %d twice",
					    col);
			t->role[col] = k;
		}
		t->ntargets = o->ntargets;
	} else if (select) {
		if (resolve(s, &o->label, "label", ncols, o->header, &col) < 0)
			return -1;
		t->role[col] = regression ? 0 : ROLE_LABEL;
		t->ntargets = regression;
		t->want_label = !regression;
	}
	for (int k = 0; features && k < o->nignore; k++) {
		if (resolve(s, &o->ignore[k], "ignore", ncols, o->header, &col) < 0)
			return -1;
		if (t->role[col] != ROLE_FEATURE)
			return fail(s, col + 1, "data.csv.ignore names column %d, %s",
				    col, t->role[col] == ROLE_IGNORE ? "twice" :
				    t->role[col] == ROLE_LABEL || !o->ntargets ? "the label" : "a target");
		t->role[col] = ROLE_IGNORE;
	}
	t->nfeat = 0;
	for (int i = 0; i < ncols; i++)
		t->nfeat += t->role[i] == ROLE_FEATURE;
	if (features && !t->nfeat && !(o->series && t->ntargets))
		return fail(s, 0, "no feature columns: each of the %d is a label, a target or ignored",
			    ncols);
	return 0;
}

/* Room for one more row. */
static int grow(struct src *s, struct table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 256, vals;

	if (t->n < t->cap)
		return 0;
	if (t->n == AKK_CSV_MAX_ROWS)
		return fail(s, 0, "more than %zu rows", AKK_CSV_MAX_ROWS);
	if (cap > AKK_CSV_MAX_ROWS)
		cap = AKK_CSV_MAX_ROWS;
	if (!akk_mul_ok(cap, t->nfeat + (size_t)t->ntargets, &vals) ||
	    vals > AKK_MAX_FLOATS) {
		cap = AKK_MAX_FLOATS / (t->nfeat + (size_t)t->ntargets);
		if (cap <= t->n)
			return fail(s, 0, "more than %zu values in the table",
				    AKK_MAX_FLOATS);
	}
	if (t->nfeat) {
		float *x = realloc(t->x, cap * t->nfeat * sizeof(*x));
		if (!x)
			goto oom;
		t->x = x;
	}
	if (t->want_label) {
		int32_t *l = realloc(t->labels, cap * sizeof(*l));
		if (!l)
			goto oom;
		t->labels = l;
	}
	if (t->ntargets) {
		float *y = realloc(t->y, cap * (size_t)t->ntargets * sizeof(*y));
		if (!y)
			goto oom;
		t->y = y;
	}
	t->cap = cap;
	return 0;
oom:
	return fail(s, 0, "out of memory for %zu rows", cap);
}

static int add_row(struct src *s, struct table *t, int ncells)
{
	float *x, *y;
	double v;

	if (ncells != t->ncols)
		return fail(s, (ncells < t->ncols ? ncells : t->ncols) + 1,
			    "%d cells, expected %d as on line %d", ncells,
			    t->ncols, t->count_line);
	if (grow(s, t) < 0)
		return -1;
	x = t->x ? t->x + t->n * t->nfeat : NULL;
	y = t->y ? t->y + t->n * (size_t)t->ntargets : NULL;
	for (int i = 0; i < ncells; i++) {
		int r = t->role[i];
		if (r == ROLE_IGNORE)
			continue;
		if (r == ROLE_LABEL) {
			if (parse_label(s, t, s->cells[i], i + 1,
					&t->labels[t->n]) < 0)
				return -1;
			continue;
		}
		if (parse_num(s, s->cells[i], i + 1, &v) < 0)
			return -1;
		if (r == ROLE_FEATURE)
			*x++ = (float)v;
		else
			y[r] = (float)v;
	}
	t->n++;
	return 0;
}

static int by_name(const void *a, const void *b, void *names)
{
	char **n = names;

	return strcmp(n[*(const int *)a], n[*(const int *)b]);
}

/* Label names in byte order: classes 0..K-1. */
static int sort_names(struct src *s, struct table *t)
{
	int k = t->nnames, *order = malloc((size_t)k * sizeof(int));
	int *rank = malloc((size_t)k * sizeof(int));
	int *lines = malloc(2 * (size_t)k * sizeof(int));
	char **sorted = malloc((size_t)k * sizeof(char *));

	if (!order || !rank || !sorted || !lines) {
		free(order);
		free(rank);
		free(lines);
		free(sorted);
		return akk_err_at(s->e, s->path, 0, 0,
				  "out of memory for class names");
	}
	for (int i = 0; i < k; i++)
		order[i] = i;
	qsort_r(order, (size_t)k, sizeof(int), by_name, t->names);
	for (int i = 0; i < k; i++) {
		rank[order[i]] = i;
		sorted[i] = t->names[order[i]];
		lines[2 * i] = t->name_at[2 * order[i]];
		lines[2 * i + 1] = t->name_at[2 * order[i] + 1];
	}
	for (size_t i = 0; i < t->n; i++)
		t->labels[i] = rank[t->labels[i]];
	free(t->names);
	free(t->name_at);
	t->names = sorted;
	t->name_at = lines;
	t->names_cap = k;
	free(order);
	free(rank);
	return 0;
}

static void table_release(struct table *t)
{
	for (int i = 0; i < t->nnames; i++)
		free(t->names[i]);
	free(t->names);
	free(t->name_at);
	free(t->slots);
	free(t->role);
	free(t->x);
	free(t->labels);
	free(t->y);
	memset(t, 0, sizeof(*t));
}

/* --- one file ------------------------------------------------------------- */

/* read_rows' `features` for unlabelled input: every column a feature, and
 * a header row of numbers alone refused, since it is far likelier a data
 * row of a file without a header than a header. */
#define FEATURES_INPUTS 2

static int numbers_only(const struct src *s, int ncells)
{
	for (int i = 0; i < ncells; i++) {
		char *end;

		strtod(s->cells[i], &end);
		if (end == s->cells[i] || *end)
			return 0;
	}
	return 1;
}

static int read_rows(struct src *s, struct table *t,
		     const struct akk_csv_spec *o, int regression, int select,
		     int features)
{
	int ncells, rc, header_line = 0;

	for (int i = 0; i < o->skip; i++) {
		if ((rc = read_line(s)) < 0)
			return -1;
		if (!rc)
			return s->lineno ?
			       akk_err_at(s->e, s->path, 0, 0,
					  "the file ends at line %d, within the %d lines to skip (data.csv.skip)",
					  s->lineno, o->skip) :
			       akk_err_at(s->e, s->path, 0, 0, "empty file");
	}
	while ((rc = read_line(s)) > 0) {
		if (blank_line(s->line))
			continue;
		if (split(s, o, &ncells) < 0)
			return -1;
		if (!t->role) {
			t->count_line = s->lineno;
			if (o->header && features == FEATURES_INPUTS &&
			    numbers_only(s, ncells))
				return fail(s, 1, "a header row is expected (the model was trained with data.csv.header: true), but this row holds numbers only: it is data; add the header row, or give --csv-header no (the file has none) or --csv-header yes (it is the header)");
			if (o->header)
				header_line = s->lineno;
			else
				t->first_row = s->lineno;
			if (plan_columns(s, t, o, regression, select,
					 features, ncells) < 0)
				return -1;
			if (o->header)
				continue;
		}
		if (!t->first_row)
			t->first_row = s->lineno;
		if (add_row(s, t, ncells) < 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	if (t->n)
		return 0;
	if (header_line)
		return akk_err_at(s->e, s->path, 0, 0,
				  "no data rows after the header on line %d",
				  header_line);
	if (!s->lineno)
		return akk_err_at(s->e, s->path, 0, 0, "empty file");
	return akk_err_at(s->e, s->path, 0, 0, "no data rows in %d lines",
			  s->lineno);
}

/* Column names need a header. */
static int check_names(const char *path, const struct akk_csv_spec *o,
		       int regression, struct akk_err *e)
{
	const struct akk_csv_col *c = NULL;
	const char *what = "label";

	if (o->header)
		return 0;
	if (regression && o->ntargets) {
		what = "targets";
		for (int k = 0; k < o->ntargets && !c; k++)
			if (o->targets[k].name)
				c = &o->targets[k];
	} else if (o->label.name) {
		c = &o->label;
	}
	if (!c)
		return 0;
	return akk_err_at(e, path, 0, 0,
			  "data.csv.%s names column '%s', but the file has no header (data.csv.header: false)",
			  what, c->name);
}

static int read_table(struct table *t, const char *path,
		      const struct akk_csv_spec *o, int regression,
		      int select, int features, struct akk_err *e)
{
	struct src s = { .path = path, .e = e };
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->names_mode = -1;
	if (select && check_names(path, o, regression, e) < 0)
		return -1;
	if (akk_gz_open(&s.f, path, AKK_CSV_GZ_RATIO, e) < 0)
		return -1;
	s.cells = malloc(AKK_CSV_MAX_COLS * sizeof(*s.cells));
	if (!s.cells) {
		akk_err_at(e, path, 0, 0, "out of memory opening the file");
		goto out;
	}
	rc = read_rows(&s, t, o, regression, select, features);
	if (!rc && t->names_mode == 1)
		rc = sort_names(&s, t);
out:
	akk_gz_close(&s.f);
	free(s.line);
	free(s.cells);
	if (rc < 0)
		table_release(t);
	return rc;
}

/* --- the data set --------------------------------------------------------- */

/* A table whose every feature is a whole number in 0..255 (pixels written
 * out as text, counts, small codes) is kept as bytes, as IDX keeps it: a
 * quarter of the memory and the same fill loop per sample. Each such float
 * is exactly its byte, so nothing a network sees changes. */
static void keep_as_bytes(struct akk_dataset *d)
{
	size_t n = d->n * d->in;
	uint8_t *x8;

	for (size_t i = 0; i < n; i++) {
		float v = d->xf[i];
		if (!(v >= 0 && v <= 255) || v != (float)(int)v)
			return;
	}
	x8 = (uint8_t *)d->xf;	/* in place: byte i is written after float i is read */
	for (size_t i = 0; i < n; i++)
		x8[i] = (uint8_t)d->xf[i];
	d->xtype = AKK_X_U8;
	d->xf = NULL;
	d->x8 = realloc(x8, n ? n : 1);
	if (!d->x8)		/* shrinking failed: the block is still valid */
		d->x8 = x8;
}

int akk_csv_dataset(struct akk_dataset *d, const char *path,
		    const char *targets_path, const struct akk_csv_spec *o,
		    int regression, struct akk_err *e)
{
	struct table a, b;
	struct table *lt = targets_path ? &b : &a;	/* labels or targets */

	memset(d, 0, sizeof(*d));
	memset(&b, 0, sizeof(b));
	if (read_table(&a, path, o, regression, !targets_path, 1, e) < 0)
		return -1;
	if (targets_path) {
		if (read_table(&b, targets_path, o, regression, 1, 0, e) < 0)
			goto fail;
		if (a.n != b.n) {
			akk_err_set(e, "'%s' has %zu rows but '%s' has %zu",
				    path, a.n, targets_path, b.n);
			goto fail;
		}
	}
	d->n = a.n;
	d->in = a.nfeat;
	d->c = d->h = 1;
	d->w = (int)a.nfeat;
	d->xtype = AKK_X_F32;
	d->xf = a.x;
	a.x = NULL;
	keep_as_bytes(d);
	if (regression) {
		d->targets = lt->ntargets;
		d->y = lt->y;
		lt->y = NULL;
	} else {
		d->labels = lt->labels;
		lt->labels = NULL;
		if (lt->names_mode == 1) {
			d->classes = lt->nnames;
			d->class_names = lt->names;
			d->class_at = lt->name_at;
			lt->names = NULL;
			lt->name_at = NULL;
			lt->nnames = 0;
		} else {
			d->classes = lt->max_label + 1;
		}
	}
	table_release(&a);
	table_release(&b);
	return 0;
fail:
	table_release(&a);
	table_release(&b);
	return -1;
}

int akk_csv_inputs(struct akk_dataset *d, const char *path,
		   const struct akk_csv_spec *o, struct akk_err *e)
{
	struct table a;

	memset(d, 0, sizeof(*d));
	if (read_table(&a, path, o, 0, 0,
		       o->header == AKK_CSV_HEADER_ANY ? 1 : FEATURES_INPUTS, e) < 0)
		return -1;
	d->n = a.n;
	d->in = a.nfeat;
	d->c = d->h = 1;
	d->w = (int)a.nfeat;
	d->xtype = AKK_X_F32;
	d->xf = a.x;
	a.x = NULL;
	keep_as_bytes(d);
	table_release(&a);
	return 0;
}

static int by_name_at(const void *a, const void *b, void *names)
{
	char *const *n = names;

	return strcmp(n[*(const int *)a], n[*(const int *)b]);
}

int akk_csv_match_classes(struct akk_dataset *d, char *const *names, int n,
			  const char *path, struct akk_err *e)
{
	int32_t *to = NULL;
	int *order = NULL, rc = -1;
	char **copy = NULL;

	if (n < 1)
		names = NULL;
	if (!d->class_names && !names)
		return 0;
	if (!d->class_names || !names)
		return akk_err_at(e, path, 0, 0,
				  "its class labels are %s, but the training set's are %s",
				  d->class_names ? "names" : "numbers",
				  d->class_names ? "numbers" : "names");
	to = malloc((size_t)d->classes * sizeof(*to));
	order = malloc((size_t)n * sizeof(*order));
	copy = calloc((size_t)n, sizeof(*copy));
	if (!to || !order || !copy) {
		akk_err_at(e, path, 0, 0, "out of memory for class names");
		goto out;
	}
	/* names in any order (a checkpoint's are as stored): search them
	 * through a sorted index. */
	for (int j = 0; j < n; j++)
		order[j] = j;
	qsort_r(order, (size_t)n, sizeof(*order), by_name_at, (void *)names);
	for (int i = 0; i < d->classes; i++) {
		int lo = 0, hi = n, c = 1;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			c = strcmp(names[order[mid]], d->class_names[i]);
			if (!c) {
				lo = mid;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (c) {
			char buf[SHOWN];
			akk_err_at(e, path, d->class_at ? d->class_at[2 * i] : 0,
				   d->class_at ? d->class_at[2 * i + 1] : 0,
				   "class '%s' is not one of the training set's %d classes",
				   shown(d->class_names[i], buf), n);
			goto out;
		}
		to[i] = order[lo];
	}
	for (int j = 0; j < n; j++)
		if (!(copy[j] = strdup(names[j]))) {
			akk_err_at(e, path, 0, 0, "out of memory for class names");
			goto out;
		}
	for (size_t i = 0; i < d->n; i++)
		d->labels[i] = to[d->labels[i]];
	for (int i = 0; i < d->classes; i++)
		free(d->class_names[i]);
	free(d->class_names);
	d->class_names = copy;
	d->classes = n;
	copy = NULL;
	rc = 0;
out:
	for (int j = 0; copy && j < n; j++)
		free(copy[j]);
	free(copy);
	free(order);
	free(to);
	return rc;
}
