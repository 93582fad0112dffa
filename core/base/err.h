/* err.h - error reports that travel up to the command line.
 *
 * Core functions never print and never exit: they return 0 or -1 and fill a
 * struct akk_err. When the error has a place in a file (a config key, a data
 * file), file/line/col say where; line 0 means "the whole file", an empty
 * file means "no file". The CLI prints it GNU style: "akkctl: FILE:LINE:COL: msg". */
#ifndef AKK_ERR_H
#define AKK_ERR_H

#include <limits.h>

/* Room for any path the system accepts (PATH_MAX) in file and in msg;
 * what still does not fit is cut visibly, ending in "...". */
struct akk_err {
	char file[PATH_MAX];
	int line, col;		/* 1-based; 0 when unknown */
	char msg[PATH_MAX + 512];	/* lowercase, no trailing newline or period */
};

/* Set a message with no location. Always returns -1. */
int akk_err_set(struct akk_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Set a message at file:line:col. Always returns -1. */
int akk_err_at(struct akk_err *e, const char *file, int line, int col,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Format the report as one line ("FILE:LINE:COL: msg", "FILE: msg" or "msg")
 * into buf, without the program name; cut with "..." when it does not fit. */
void akk_err_format(const struct akk_err *e, char *buf, int size);

#endif
