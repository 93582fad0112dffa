/* run_lock.h - one writer per run directory.
 *
 * train, --resume, --force and every fold take the run directory's lock
 * before they look at what it holds, and keep it until they end: a second
 * writer is refused at once (exit 2, the holder's pid named). The lock is
 * a POSIX record lock on DIR/.akkctl.lock, which the kernel drops with the
 * process that held it, so a killed run never leaves the directory
 * locked. Readers (eval, plot, inspect, predict) never take it: every file
 * a run replaces is renamed into place whole, and metrics rows are
 * appended whole. */
#ifndef AKK_RUN_LOCK_H
#define AKK_RUN_LOCK_H

#include "base/err.h"

#define RUN_LOCK_NAME ".akkctl.lock"

struct run_lock {
	int fd;		/* -1: not held */
	char *path;	/* DIR/.akkctl.lock, allocated */
	char *made;	/* DIR when this lock created it (removed again when
			 * the run leaves it empty), else NULL */
};

/* Create DIR (and its parents) when missing and take its lock; then
 * refuse the run's files (metrics, the name given, and the checkpoints)
 * when one is a symbolic link or not a regular file. 0, or -1 with e:
 * held by another process ("in use by process PID"), a link, or a system
 * error. */
int run_lock_take(struct run_lock *l, const char *dir, const char *metrics,
		  struct akk_err *e);
/* Drop the lock (its file is removed while still held) and remove DIR if
 * run_lock_take created it and nothing else was put in it. l may be a
 * zeroed struct that never held a lock. */
void run_lock_release(struct run_lock *l);
/* For tests: the pid holding DIR's lock, 0 when none, -1 on error. */
long run_lock_holder(const char *dir);

#endif
