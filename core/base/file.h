/* file.h - replacing a file atomically and durably. */
#ifndef AKK_FILE_H
#define AKK_FILE_H

#include <stddef.h>

#include "base/err.h"

/* Write len bytes to path through "path.tmp.PID": write, fsync, rename over
 * path, fsync the directory. On failure the temp file is removed and path
 * is untouched. */
int akk_file_replace(const char *path, const void *data, size_t len,
		     struct akk_err *e);

#endif
