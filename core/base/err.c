/* err.c - filling and formatting struct akk_err. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* After snprintf returned n into buf[size]: mark a cut with "...". */
static void mark_cut(char *buf, int size, int n)
{
	if (size >= 4 && n >= size)
		memcpy(buf + size - 4, "...", 4);
}

int akk_err_set(struct akk_err *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!e)
		return -1;
	e->file[0] = '\0';
	e->line = e->col = 0;
	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	mark_cut(e->msg, (int)sizeof(e->msg), n);
	return -1;
}

int akk_err_at(struct akk_err *e, const char *file, int line, int col,
	       const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!e)
		return -1;
	n = snprintf(e->file, sizeof(e->file), "%s", file ? file : "");
	mark_cut(e->file, (int)sizeof(e->file), n);
	e->line = line;
	e->col = col;
	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	mark_cut(e->msg, (int)sizeof(e->msg), n);
	return -1;
}

void akk_err_format(const struct akk_err *e, char *buf, int size)
{
	int n;

	if (!e->file[0])
		n = snprintf(buf, size, "%s", e->msg);
	else if (e->line <= 0)
		n = snprintf(buf, size, "%s: %s", e->file, e->msg);
	else
		n = snprintf(buf, size, "%s:%d:%d: %s", e->file, e->line, e->col, e->msg);
	mark_cut(buf, size, n);
}
