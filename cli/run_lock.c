/* run_lock.c - the run directory's writer lock (see run_lock.h). */
#include "run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_files.h"

/* mkdir -p dir; *made gets dir (allocated) when its last part was
 * created here. */
static int make_dirs(const char *dir, char **made, struct akk_err *e)
{
	char *buf = strdup(dir);

	*made = NULL;
	if (!buf)
		return akk_err_set(e, "out of memory");
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			int rc;

			*p = '\0';
			rc = mkdir(buf, 0777);
			if (rc && errno != EEXIST) {
				akk_err_set(e, "cannot create directory '%s': %s", buf,
					    strerror(errno));
				free(buf);
				return -1;
			}
			*p = c;
			if (!c) {
				if (!rc)
					*made = buf;
				else
					free(buf);
				return 0;
			}
		}
	}
}

/* The pid of the process that holds fd's file locked, 0 when none. */
static long holder_of(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl))
		return -1;
	return fl.l_type == F_UNLCK ? 0 : (long)fl.l_pid;
}

/* Open the lock file and lock it: 0 held, 1 the file was replaced
 * meanwhile (try again), -1 with e. */
static int try_lock(struct run_lock *l, const char *dir, struct akk_err *e)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat fs, ps;
	int fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);

	if (fd < 0)
		return akk_err_set(e, "cannot open '%s': %s", l->path,
				   errno == ELOOP ? "it is a symbolic link" : strerror(errno));
	if (fstat(fd, &fs) || !S_ISREG(fs.st_mode)) {
		close(fd);
		return akk_err_set(e, "'%s' is not a regular file", l->path);
	}
	if (fcntl(fd, F_SETLK, &fl)) {
		long pid;

		if (errno != EACCES && errno != EAGAIN) {
			akk_err_set(e, "cannot lock '%s': %s", l->path, strerror(errno));
			close(fd);
			return -1;
		}
		pid = holder_of(fd);
		close(fd);
		if (pid == 0)
			return 1;	/* released meanwhile */
		return akk_err_set(e, "'%s' is in use by another run (process %ld): "
				   "wait for it to end, or write elsewhere with --out",
				   dir, pid);
	}
	/* a holder removes the file when it ends: the lock counts only on
	 * the file that is still there */
	if (lstat(l->path, &ps) || ps.st_dev != fs.st_dev || ps.st_ino != fs.st_ino) {
		close(fd);
		return 1;
	}
	l->fd = fd;
	return 0;
}

int run_lock_take(struct run_lock *l, const char *dir, const char *metrics,
		  struct akk_err *e)
{
	int rc = 1;

	*l = (struct run_lock){ .fd = -1 };
	if (make_dirs(dir, &l->made, e) || !(l->path = ckpt_join(dir, RUN_LOCK_NAME, e)))
		goto fail;
	for (int tries = 0; rc == 1 && tries < 100; tries++)
		rc = try_lock(l, dir, e);
	if (rc == 1)
		akk_err_set(e, "cannot lock '%s': it keeps being replaced", l->path);
	if (rc || run_dir_check_links(dir, metrics, e))
		goto fail;
	return 0;
fail:
	run_lock_release(l);
	return -1;
}

void run_lock_release(struct run_lock *l)
{
	if (l->path && l->fd >= 0) {
		unlink(l->path);
		close(l->fd);
	}
	if (l->made)
		rmdir(l->made);	/* fails, as it should, when not empty */
	free(l->path);
	free(l->made);
	*l = (struct run_lock){ .fd = -1 };
}

long run_lock_holder(const char *dir)
{
	char *path = ckpt_join(dir, RUN_LOCK_NAME, NULL);
	int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	long pid;

	free(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	pid = holder_of(fd);
	close(fd);
	return pid;
}
