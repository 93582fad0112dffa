/* err.c - filling and formatting struct akk_err. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int akk_err_set(struct akk_err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	e->file[0] = '\0';
	e->line = e->col = 0;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int akk_err_at(struct akk_err *e, const char *file, int line, int col,
	       const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	snprintf(e->file, sizeof(e->file), "%s", file ? file : "");
	e->line = line;
	e->col = col;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void akk_err_format(const struct akk_err *e, char *buf, int size)
{
	if (!e->file[0])
		snprintf(buf, size, "%s", e->msg);
	else if (e->line <= 0)
		snprintf(buf, size, "%s: %s", e->file, e->msg);
	else
		snprintf(buf, size, "%s:%d:%d: %s", e->file, e->line, e->col, e->msg);
}
