/* progress.c - train's progress line, fitted to the terminal's width. */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int progress_enabled(int fd)
{
	const char *term = getenv("TERM");

	return isatty(fd) && term && *term && strcmp(term, "dumb");
}

int progress_width(int fd)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");
	char *end;
	long c;

	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	if (cols && *cols) {
		c = strtol(cols, &end, 10);
		if (!*end && c > 0 && c < 100000)
			return (int)c;
	}
	return 80;
}

void progress_duration(char *buf, size_t size, double s)
{
	long t;

	if (!(s >= 0))
		s = 0;
	if (s < 60) {
		snprintf(buf, size, "%.1fs", s);
		return;
	}
	t = s > 1e9 ? 1000000000L : (long)(s + 0.5);
	if (t < 3600)
		snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
	else
		snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

enum { NPIECES = 6 };

int progress_format(char *buf, size_t size, int width, const struct akk_progress *p,
		    double run_elapsed, double run_eta)
{
	/* In the order shown; drop[] says which go first when it is too wide
	 * (0: never). The bar goes after the first piece. */
	static const int drop[NPIECES] = { 0, 0, 2, 5, 4, 3 };
	char piece[NPIECES][64], a[24], b[24], line[NPIECES * 66 + 64];
	int len[NPIECES], on[NPIECES], max = width - 1, total, n = 0;
	double eta = p->batch ? p->elapsed * (p->batches - p->batch) / p->batch : -1;

	if (max < 1 || size < 2) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	if ((size_t)max >= size)
		max = (int)size - 1;
	snprintf(piece[0], sizeof(piece[0]), "epoch %d/%d", p->epoch, p->epochs);
	snprintf(piece[1], sizeof(piece[1]), "%ld/%ld", p->batch, p->batches);
	snprintf(piece[2], sizeof(piece[2]), "loss %.4f", p->loss);
	snprintf(piece[3], sizeof(piece[3]), "%.0f samples/s", p->samples_per_s);
	progress_duration(a, sizeof(a), p->elapsed);
	progress_duration(b, sizeof(b), eta);
	snprintf(piece[4], sizeof(piece[4]), "epoch %s ETA %s", a, eta >= 0 ? b : "?");
	progress_duration(a, sizeof(a), run_elapsed);
	progress_duration(b, sizeof(b), run_eta);
	snprintf(piece[5], sizeof(piece[5]), "run %s ETA %s", a, run_eta >= 0 ? b : "?");
	for (int i = 0; i < NPIECES; i++) {
		len[i] = (int)strlen(piece[i]);
		on[i] = 1;
	}
	/* pieces joined by two spaces */
	for (;;) {
		int worst = -1;
		total = 0;
		for (int i = 0; i < NPIECES; i++)
			if (on[i])
				total += len[i] + (total ? 2 : 0);
		if (total <= max)
			break;
		for (int i = 0; i < NPIECES; i++)
			if (on[i] && drop[i] && (worst < 0 || drop[i] > drop[worst]))
				worst = i;
		if (worst < 0)
			break;
		on[worst] = 0;
	}
	for (int i = 0; i < NPIECES; i++) {
		if (!on[i])
			continue;
		n += sprintf(line + n, "%s%s", n ? "  " : "", piece[i]);
		if (i == 0 && p->batches > 0) {
			/* " [###   ]" in the room left, 12 to 42 columns */
			int bar = max - total - 1;
			if (bar > 42)
				bar = 42;
			if (bar >= 12) {
				int inner = bar - 2, fill = (int)(inner * p->batch / p->batches);
				line[n++] = ' ';
				line[n++] = '[';
				for (int k = 0; k < inner; k++)
					line[n++] = k < fill ? '#' : ' ';
				line[n++] = ']';
				line[n] = '\0';
			}
		}
	}
	if (n > max)	/* only the essentials, and still too wide */
		n = max;
	memcpy(buf, line, (size_t)n);
	buf[n] = '\0';
	return n;
}
