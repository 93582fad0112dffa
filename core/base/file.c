/* file.c - files replaced whole: a reader sees the old file or the new one,
 * never a torn one, and a crash leaves at most a "NAME.tmp.PID" beside it
 * (which the run directory code removes by that name). */
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int akk_file_replace(const char *path, const void *data, size_t len,
		     struct akk_err *e)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 32), *dir = malloc(plen + 2);
	int fd = -1, rc = -1;
	char *slash;

	if (!tmp || !dir) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644)) < 0) {
		akk_err_set(e, "cannot create '%s': %s", tmp, strerror(errno));
		goto out;
	}
	for (size_t off = 0; off < len; ) {
		ssize_t w = write(fd, (const char *)data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			akk_err_set(e, "cannot write '%s': %s", tmp, strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fsync(fd) || close(fd)) {
		fd = -1;
		akk_err_set(e, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path)) {
		akk_err_set(e, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
		goto out;
	}
	tmp[0] = '\0';
	memcpy(dir, path, plen + 1);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = '\0';	/* "/x" -> "/" */
	else
		strcpy(dir, ".");
	if ((fd = open(dir, O_RDONLY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
		fd = -1;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc && tmp && tmp[0])
		unlink(tmp);
	free(tmp);
	free(dir);
	return rc;
}
