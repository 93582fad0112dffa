/* clock.h - the one monotonic clock every timing in akkctl reads. */
#ifndef AKK_CLOCK_H
#define AKK_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double akk_now(void);

#endif
