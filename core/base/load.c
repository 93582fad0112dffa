/* load.c - the load average, and the caveat a busy machine puts on a
 * benchmark's figures. */
#include "base/load.h"

#include <stdio.h>
#include <stdlib.h>

double akk_load_now(void)
{
	double l;

	return getloadavg(&l, 1) == 1 ? l : -1;
}

int akk_load_caveat(double load, int cores, char *buf, int size)
{
	buf[0] = 0;
	if (load < 0 || cores < 1 || load <= cores)
		return 0;
	snprintf(buf, size, "warning: busy machine: load average %.2f on %d core%s: other "
		 "processes take CPU time from this run, so its times are longer and vary "
		 "more than on an idle machine (compare CPU seconds, or interleaved runs)",
		 load, cores, cores == 1 ? "" : "s");
	return 1;
}
