/* metrics.c - CSV rows, flushed one by one; cut back before a resume. */
#include "io/metrics.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

#define HEADER_REGRESSION "epoch,phase,samples,loss,r2,rmse,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

#define HEADER_PSNR "epoch,phase,samples,loss,r2,rmse,psnr,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

char *akk_metrics_header(int nlr)
{
	return akk_metrics_header_for(nlr, 0);
}

char *akk_metrics_header_for(int nlr, int regression)
{
	return akk_metrics_header_heads(nlr, regression, NULL);
}

char *akk_metrics_header_heads(int nlr, int regression, const char *heads)
{
	size_t size = sizeof(HEADER) + sizeof(HEADER_PSNR) +
		      (size_t)(nlr > 0 ? nlr : 0) * 24 + (heads ? strlen(heads) : 0);
	char *h = malloc(size);
	size_t n;

	if (!h)
		return NULL;
	n = (size_t)snprintf(h, size, "%s", regression == 2 ? HEADER_PSNR :
				       regression ? HEADER_REGRESSION : HEADER);
	for (int g = 1; g <= nlr; g++)
		n += (size_t)snprintf(h + n, size - n, ",lr_g%d", g);
	if (heads)
		snprintf(h + n, size - n, "%s", heads);
	return h;
}

/* Open path as a run's own file: never through a symbolic link, and only
 * a regular file. flags as for open(2). */
static int open_own(const char *path, int flags, struct akk_err *e)
{
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0666);
	struct stat st;

	if (fd < 0 && errno == ELOOP)
		return akk_err_at(e, path, 0, 0, "a symbolic link: a run's metrics file is "
				  "never read or written through one");
	if (fd < 0)
		return errno == ENOENT ? -2 : akk_err_set(e, "cannot open '%s': %s", path,
							  strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return akk_err_at(e, path, 0, 0, "not a regular file");
	}
	if (st.st_size > AKK_METRICS_MAX_BYTES) {
		close(fd);
		return akk_err_at(e, path, 0, 0, "larger than a metrics file may be "
				  "(%lld bytes; at most %d)", (long long)st.st_size,
				  AKK_METRICS_MAX_BYTES);
	}
	return fd;
}

FILE *akk_metrics_open(const char *path, struct akk_err *e)
{
	int fd = open_own(path, O_WRONLY | O_APPEND | O_CREAT, e);
	FILE *f;

	if (fd == -2)	/* cannot be: O_CREAT */
		akk_err_set(e, "cannot open '%s': %s", path, strerror(ENOENT));
	if (fd < 0)
		return NULL;
	if (lseek(fd, 0, SEEK_END) < 0 || !(f = fdopen(fd, "a"))) {
		akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	return f;
}

int akk_metrics_write(FILE *f, const char *path, const struct akk_metrics_row *r,
		      struct akk_err *e)
{
	double sps = r->seconds > 0 ? r->samples / r->seconds : 0;
	long start = ftell(f);
	int bad = start < 0;

	if (!bad && start == 0) {
		char *h = akk_metrics_header_heads(r->nlr, r->regression, r->heads_header);
		bad = !h || fprintf(f, "%s\n", h) < 0;
		free(h);
	}
	if (!bad && r->regression == 2 &&
	    fprintf(f, "%d,%s,%ld,%.6f,%.6f,%.6g,%.4f,%.6g,%.3f,%.1f,%ld,%ld", r->epoch,
		    r->phase, r->samples, r->loss, r->accuracy, r->rmse, r->psnr, r->lr,
		    r->seconds, sps, r->vmin, r->vmax) < 0)
		bad = 1;
	if (!bad && r->regression == 1 &&
	    fprintf(f, "%d,%s,%ld,%.6f,%.6f,%.6g,%.6g,%.3f,%.1f,%ld,%ld", r->epoch,
		    r->phase, r->samples, r->loss, r->accuracy, r->rmse, r->lr,
		    r->seconds, sps, r->vmin, r->vmax) < 0)
		bad = 1;
	if (!bad && !r->regression &&
	    fprintf(f, "%d,%s,%ld,%.6f,%.6f,%.6g,%.3f,%.1f,%ld,%ld", r->epoch,
		    r->phase, r->samples, r->loss, r->accuracy, r->lr,
		    r->seconds, sps, r->vmin, r->vmax) < 0)
		bad = 1;
	for (int g = 0; !bad && g < r->nlr; g++)
		bad = fprintf(f, ",%.6g", r->lrs[g]) < 0;
	for (int i = 0; !bad && i < r->nheads_values; i++)
		bad = fprintf(f, ",%.6g", r->heads[i]) < 0;
	if (bad || fputc('\n', f) == EOF || fflush(f)) {
		int err = errno;

		/* no torn row, and no header without a row, stays behind:
		 * what stdio still holds is dropped, what reached the file is
		 * cut off */
		__fpurge(f);
		if (start >= 0 && ftruncate(fileno(f), start)) {
			/* the message below says what failed first */
		}
		return akk_err_set(e, "cannot write '%s': %s", path ? path : "the metrics file",
				   strerror(err ? err : EIO));
	}
	return 0;
}

/* The whole file, NUL-terminated, in *buf (*len bytes); 1 when missing.
 * Bounded before it is read: a regular file of at most
 * AKK_METRICS_MAX_BYTES, never a link. fd: where the file is left open
 * (read and write), or NULL to close it. */
static int slurp(const char *path, char **buf, size_t *len, int *fdp, struct akk_err *e)
{
	int fd = open_own(path, fdp ? O_RDWR : O_RDONLY, e);
	size_t cap = AKK_METRICS_MAX_BYTES, n = 0;
	ssize_t got;
	char *b;

	if (fd == -2)
		return 1;
	if (fd < 0)
		return -1;
	if (lseek(fd, 0, SEEK_END) >= 0)
		cap = (size_t)lseek(fd, 0, SEEK_CUR);
	if (lseek(fd, 0, SEEK_SET) < 0 || !(b = malloc(cap + 2))) {
		close(fd);
		return akk_err_set(e, "cannot read '%s': %s", path, strerror(errno));
	}
	/* one byte past the size: the file grew meanwhile */
	while (n < cap + 1 && (got = read(fd, b + n, cap + 1 - n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			akk_err_set(e, "cannot read '%s': %s", path, strerror(errno));
			free(b);
			close(fd);
			return -1;
		}
		n += (size_t)got;
	}
	if (n > cap) {
		free(b);
		close(fd);
		return akk_err_at(e, path, 0, 0, "it grew while it was read: is another "
				  "process writing it?");
	}
	if (memchr(b, '\0', n)) {
		size_t at = (size_t)((char *)memchr(b, '\0', n) - b) + 1;

		free(b);
		close(fd);
		return akk_err_at(e, path, 0, 0, "not a metrics file: a NUL byte at byte %zu", at);
	}
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int akk_metrics_truncate_for(const char *path, int epochs, int nlr,
			     int regression, const char *heads, int by_loss,
			     struct akk_metrics_best *best, struct akk_err *e)
{
	char *buf = NULL, *header = NULL, *p, *nl;
	size_t len = 0, keep = 0;
	int rc, lineno = 1;

	if (best)
		*best = (struct akk_metrics_best){ 0 };
	if ((rc = slurp(path, &buf, &len, NULL, e)))
		return rc > 0 ? 0 : -1;
	rc = -1;
	if (!len) {	/* created, no row yet */
		rc = 0;
		goto out;
	}
	if (!(header = akk_metrics_header_heads(nlr, regression, heads))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	nl = strchr(buf, '\n');
	if (!nl || (size_t)(nl - buf) != strlen(header) || strncmp(buf, header, strlen(header))) {
		akk_err_at(e, path, 1, 1, "its columns are not the ones this run writes (%s%s%s): "
			   "resume into another directory with --out",
			   nlr ? "lr_g1.. for every gate" : "no per-gate lr columns",
			   heads && *heads ? ", then " : "", heads && *heads ? heads + 1 : "");
		goto out;
	}
	keep = (size_t)(nl + 1 - buf);
	/* A row is kept when complete (its newline was written) and of an
	 * epoch the checkpoint covers; rows are in epoch order. */
	for (p = nl + 1; (nl = strchr(p, '\n')); p = nl + 1) {
		int epoch, n = 0;
		char phase[16];
		long samples;
		double loss, acc;

		lineno++;
		if (sscanf(p, "%d,%15[^,],%ld,%lf,%lf,%n", &epoch, phase, &samples,
			   &loss, &acc, &n) != 5 || !n || n > nl - p) {
			akk_err_at(e, path, lineno, 1, "not a metrics row");
			goto out;
		}
		if (epoch > epochs)
			break;
		keep = (size_t)(nl + 1 - buf);
		if (best && strcmp(phase, "train") &&
		    (!best->epoch || (by_loss ? loss < best->loss : acc > best->accuracy)))
			*best = (struct akk_metrics_best){ epoch, !strcmp(phase, "final"),
							   acc, loss };
	}
	rc = keep == len ? 0 : akk_file_replace(path, buf, keep, e);
out:
	free(buf);
	free(header);
	return rc;
}

int akk_metrics_cut(const char *path, int epochs, struct akk_err *e)
{
	char *buf = NULL, *p, *nl;
	size_t len = 0, keep;
	int fd = -1, rc;

	if ((rc = slurp(path, &buf, &len, &fd, e)))
		return rc > 0 ? 0 : -1;
	p = strchr(buf, '\n');
	keep = p ? (size_t)(p + 1 - buf) : 0;
	for (p = p ? p + 1 : buf + len; (nl = strchr(p, '\n')); p = nl + 1) {
		int epoch;

		if (sscanf(p, "%d,", &epoch) != 1 || epoch > epochs)
			break;
		keep = (size_t)(nl + 1 - buf);
	}
	rc = 0;
	if (keep < len && ftruncate(fd, (off_t)keep))
		rc = akk_err_set(e, "cannot cut '%s' back to epoch %d: %s", path, epochs,
				 strerror(errno));
	close(fd);
	free(buf);
	return rc;
}
