/* progress.h - train's progress line on a terminal: what it shows and how
 * it fits the terminal's width. */
#ifndef AKK_PROGRESS_H
#define AKK_PROGRESS_H

#include <stddef.h>

#include "runtime/run.h"

/* Whether progress lines are drawn on fd: a terminal whose TERM is set and
 * not "dumb" (they redraw in place with "\r" and ESC [K). */
int progress_enabled(int fd);
/* The terminal's width: TIOCGWINSZ on fd, else $COLUMNS, else 80. */
int progress_width(int fd);
/* "12.3s", "4:05" or "1:02:03". */
void progress_duration(char *buf, size_t size, double seconds);
/* The progress line of p into buf (size > width), at most width - 1
 * characters so that it never wraps (nor touches the last column): epoch,
 * bar, batches, loss, samples/s, the epoch's elapsed time and ETA, the
 * run's elapsed time and ETA (run_eta < 0: unknown). What does not fit is
 * left out, least useful first; the bar takes the room left. Returns the
 * length. */
int progress_format(char *buf, size_t size, int width, const struct akk_progress *p,
		    double run_elapsed, double run_eta);

#endif
