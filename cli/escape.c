/* escape.c - text read from files, written where a person or a table
 * reads it: one rule for every byte that could drive a terminal (the
 * error messages, inspect, predict's CSV), and CSV quoting on top of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The length of the valid UTF-8 sequence at s of a character from U+00A0
 * on (printable or at least harmless on a terminal), else 0. */
static int utf8_printable(const unsigned char *s)
{
	unsigned char c = s[0];
	int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		c >= 0xf0 && c <= 0xf4 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xc2 && s[1] < 0xa0) ||	/* C1 controls, U+0080-U+009F */
	    (c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

int cli_put_safe(FILE *f, const char *s, int multiline)
{
	const unsigned char *p = (const unsigned char *)s;
	int written = 0;

	while (*p) {
		int n = *p >= 0x80 ? utf8_printable(p) : (*p >= 0x20 && *p != 0x7f) ||
			(multiline && (*p == '\n' || *p == '\t'));
		if (n) {
			fwrite(p, 1, n, f);
			written += n;
			p += n;
		} else {
			fprintf(f, "\\x%02x", *p++);
			written += 4;
		}
	}
	return written;
}

int cli_put_csv(FILE *f, const char *s)
{
	size_t len = strlen(s);
	char *q;
	int n = 0;

	if (!strpbrk(s, ",\""))
		return cli_put_safe(f, s, 0);
	if (!(q = malloc(2 * len + 3)))
		return -1;
	q[n++] = '"';
	for (; *s; s++) {
		if (*s == '"')
			q[n++] = '"';
		q[n++] = *s;
	}
	q[n++] = '"';
	q[n] = '\0';
	n = cli_put_safe(f, q, 0);
	free(q);
	return n;
}
