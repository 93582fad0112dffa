/* load.h - how busy the machine is, and what that does to timings. */
#ifndef AKK_LOAD_H
#define AKK_LOAD_H

/* The load average over the last minute; -1 when it cannot be read. */
double akk_load_now(void);

/* When load (runnable processes, averaged) is above cores, one line into
 * buf saying that other processes share the CPUs and what it does to
 * timings; returns 1, or 0 (buf empty) when the machine is not busy or the
 * load is unknown (negative). */
int akk_load_caveat(double load, int cores, char *buf, int size);

#endif
