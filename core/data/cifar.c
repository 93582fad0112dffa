/* cifar.c - reading CIFAR-10 binary record files into a dataset.
 *
 * Every file's size is checked first, so the whole data set is allocated
 * once at its exact size; then the records are read in chunks of
 * CHUNK_RECORDS, labels checked and pixels copied as they are. */
#include "data/cifar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/checked.h"
#include "data/idx.h"

#define CHUNK_RECORDS 256
/* The longest line read from batches.meta.txt. */
#define NAME_MAX_LEN 256
/* The largest batches.meta.txt read. */
#define META_MAX 65536

static const char *const default_names[AKK_CIFAR_CLASSES] = {
	"airplane", "automobile", "bird", "cat", "deer",
	"dog", "frog", "horse", "ship", "truck",
};

/* The size of every file, checked, and the total record count. */
static int sizes(const char *const *files, int nfiles, size_t *total,
		 struct akk_err *e)
{
	*total = 0;
	for (int i = 0; i < nfiles; i++) {
		struct stat st;
		size_t bytes;

		if (stat(files[i], &st) < 0)
			return akk_err_at(e, files[i], 0, 0, "cannot open: %s",
					  strerror(errno));
		if (!S_ISREG(st.st_mode))
			return akk_err_at(e, files[i], 0, 0,
					  "not a regular file: a CIFAR-10 file is read by its size");
		if (st.st_size == 0)
			return akk_err_at(e, files[i], 0, 0,
					  "empty file: expected CIFAR-10 records of %d bytes",
					  AKK_CIFAR_RECORD);
		if (st.st_size % AKK_CIFAR_RECORD)
			return akk_err_at(e, files[i], 0, 0,
					  "size %lld is not a multiple of %d (one label byte and %d pixel bytes per record): record %lld is cut after %lld bytes",
					  (long long)st.st_size, AKK_CIFAR_RECORD,
					  AKK_CIFAR_PIXELS,
					  (long long)(st.st_size / AKK_CIFAR_RECORD + 1),
					  (long long)(st.st_size % AKK_CIFAR_RECORD));
		*total += (size_t)(st.st_size / AKK_CIFAR_RECORD);
		if (!akk_mul_ok(*total, AKK_CIFAR_PIXELS, &bytes) ||
		    bytes > AKK_IDX_MAX_BYTES)
			return akk_err_at(e, files[i], 0, 0,
					  "too large: the files so far hold %zu records, more than %zu bytes of pixels",
					  *total, (size_t)AKK_IDX_MAX_BYTES);
	}
	return 0;
}

/* The records of one file into d at sample *at. */
static int read_file(struct akk_dataset *d, const char *path, size_t *at,
		     uint8_t *buf, struct akk_err *e)
{
	size_t rec = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
	for (;;) {
		size_t got = 0, want = (size_t)CHUNK_RECORDS * AKK_CIFAR_RECORD;
		while (got < want) {
			ssize_t n = read(fd, buf + got, want - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				akk_err_at(e, path, 0, 0, "read error: %s",
					   strerror(errno));
				goto out;
			}
			if (n == 0)
				break;
			got += (size_t)n;
		}
		if (got % AKK_CIFAR_RECORD || (got && *at + got / AKK_CIFAR_RECORD > d->n)) {
			akk_err_at(e, path, 0, 0,
				   "the file changed while it was read (record %zu)",
				   rec + got / AKK_CIFAR_RECORD + 1);
			goto out;
		}
		for (size_t k = 0; k < got / AKK_CIFAR_RECORD; k++, rec++) {
			const uint8_t *r = buf + k * AKK_CIFAR_RECORD;
			if (r[0] >= AKK_CIFAR_CLASSES) {
				akk_err_at(e, path, 0, 0,
					   "record %zu (byte %zu): label %d is not a CIFAR-10 class (0 to 9)",
					   rec + 1, rec * AKK_CIFAR_RECORD, r[0]);
				goto out;
			}
			d->labels[*at] = r[0];
			memcpy(d->x8 + *at * AKK_CIFAR_PIXELS, r + 1,
			       AKK_CIFAR_PIXELS);
			(*at)++;
		}
		if (got < want)
			break;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Class names from batches.meta.txt beside the first file, when there is
 * one: 0 and names set, 1 when there is none, -1 on error. */
static int meta_names(char **names, const char *first, struct akk_err *e)
{
	const char *slash = strrchr(first, '/');
	size_t dir = slash ? (size_t)(slash - first + 1) : 0;
	char *path = malloc(dir + sizeof("batches.meta.txt"));
	char line[NAME_MAX_LEN + 2];
	int n = 0, lineno = 0, rc = -1;
	struct stat st = { 0 };
	FILE *f;

	if (!path)
		return akk_err_set(e, "out of memory");
	memcpy(path, first, dir);
	strcpy(path + dir, "batches.meta.txt");
	if (!(f = fopen(path, "r"))) {
		free(path);
		return 1;
	}
	/* bounded before it is read: a FIFO or /dev/zero never is */
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > META_MAX) {
		akk_err_at(e, path, 0, 0, S_ISREG(st.st_mode) ?
			   "larger than a class-name file may be (at most %d bytes)" :
			   "not a regular file", META_MAX);
		goto out;
	}
	for (;;) {
		size_t len = 0;
		int c = EOF;

		while (len < sizeof(line) - 1 && (c = getc(f)) != EOF && c != '\n') {
			if (!c) {
				akk_err_at(e, path, lineno + 1, (int)len + 1,
					   "a NUL byte in a class name");
				goto out;
			}
			line[len++] = (char)c;
		}
		if (c == EOF && !len)
			break;
		line[len] = '\0';
		lineno++;
		if (len == sizeof(line) - 1) {
			akk_err_at(e, path, lineno, 1,
				   "class name longer than %d bytes", NAME_MAX_LEN);
			goto out;
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
			       line[len - 1] == ' ' || line[len - 1] == '\t'))
			line[--len] = '\0';
		if (!len)
			continue;
		if (n == AKK_CIFAR_CLASSES) {
			akk_err_at(e, path, lineno, 1,
				   "more than %d class names", AKK_CIFAR_CLASSES);
			goto out;
		}
		if (!(names[n++] = strdup(line))) {
			akk_err_set(e, "out of memory");
			goto out;
		}
	}
	if (n < AKK_CIFAR_CLASSES) {
		akk_err_at(e, path, 0, 0, "%d class names, expected %d",
			   n, AKK_CIFAR_CLASSES);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	free(path);
	return rc;
}

int akk_cifar_dataset(struct akk_dataset *d, const char *const *files,
		      int nfiles, struct akk_err *e)
{
	uint8_t *buf = NULL;
	size_t total, at = 0;
	int m;

	memset(d, 0, sizeof(*d));
	if (nfiles < 1)
		return akk_err_set(e, "no CIFAR-10 files given");
	if (sizes(files, nfiles, &total, e))
		return -1;
	d->n = total;
	d->c = 3;
	d->h = d->w = AKK_CIFAR_SIDE;
	d->in = AKK_CIFAR_PIXELS;
	d->xtype = AKK_X_U8;
	d->classes = AKK_CIFAR_CLASSES;
	d->x8 = malloc(total * AKK_CIFAR_PIXELS);
	d->labels = malloc(total * sizeof(*d->labels));
	d->class_names = calloc(AKK_CIFAR_CLASSES, sizeof(*d->class_names));
	buf = malloc((size_t)CHUNK_RECORDS * AKK_CIFAR_RECORD);
	if (!d->x8 || !d->labels || !d->class_names || !buf) {
		akk_err_at(e, files[0], 0, 0, "out of memory for %zu records", total);
		goto fail;
	}
	for (int i = 0; i < nfiles; i++)
		if (read_file(d, files[i], &at, buf, e))
			goto fail;
	if (at != total) {
		akk_err_at(e, files[nfiles - 1], 0, 0,
			   "the files changed while they were read: %zu records, expected %zu",
			   at, total);
		goto fail;
	}
	m = meta_names(d->class_names, files[0], e);
	if (m < 0)
		goto fail;
	for (int i = 0; m == 1 && i < AKK_CIFAR_CLASSES; i++)
		if (!(d->class_names[i] = strdup(default_names[i]))) {
			akk_err_set(e, "out of memory");
			goto fail;
		}
	free(buf);
	return 0;
fail:
	free(buf);
	akk_dataset_release(d);
	return -1;
}
