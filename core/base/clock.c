/* clock.c - the monotonic clock. */
#include "base/clock.h"

#include <time.h>

double akk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
