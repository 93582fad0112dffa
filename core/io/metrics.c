/* metrics.c - CSV rows, flushed one by one; cut back before a resume. */
#include "io/metrics.h"
#include "base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

#define HEADER_REGRESSION "epoch,phase,samples,loss,r2,rmse,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

char *akk_metrics_header(int nlr)
{
	return akk_metrics_header_for(nlr, 0);
}

char *akk_metrics_header_for(int nlr, int regression)
{
	size_t size = sizeof(HEADER) + sizeof(HEADER_REGRESSION) +
		      (size_t)(nlr > 0 ? nlr : 0) * 24;
	char *h = malloc(size);
	size_t n;

	if (!h)
		return NULL;
	n = (size_t)snprintf(h, size, "%s", regression ? HEADER_REGRESSION : HEADER);
	for (int g = 1; g <= nlr; g++)
		n += (size_t)snprintf(h + n, size - n, ",lr_g%d", g);
	return h;
}

FILE *akk_metrics_open(const char *path, struct akk_err *e)
{
	FILE *f = fopen(path, "a");

	if (!f)
		akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
	return f;
}

int akk_metrics_write(FILE *f, const struct akk_metrics_row *r,
		      struct akk_err *e)
{
	double sps = r->seconds > 0 ? r->samples / r->seconds : 0;
	int bad = 0;

	if (ftell(f) == 0) {
		char *h = akk_metrics_header_for(r->nlr, r->regression);
		bad = !h || fprintf(f, "%s\n", h) < 0;
		free(h);
	}
	if (!bad && r->regression &&
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
	if (bad || fputc('\n', f) == EOF || fflush(f))
		return akk_err_set(e, "cannot write the metrics file: %s",
				   strerror(errno));
	return 0;
}

/* The whole file, NUL-terminated, in *buf (*len bytes); 1 when missing. */
static int slurp(const char *path, char **buf, size_t *len, struct akk_err *e)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0, got;
	char *b;

	if (!f) {
		if (errno == ENOENT)
			return 1;
		return akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
	}
	if (!(b = malloc(cap + 1))) {
		fclose(f);
		return akk_err_set(e, "out of memory");
	}
	while ((got = fread(b + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(b, 2 * cap + 1);
			if (!nb) {
				free(b);
				fclose(f);
				return akk_err_set(e, "out of memory");
			}
			b = nb;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		free(b);
		fclose(f);
		return akk_err_set(e, "cannot read '%s': %s", path, strerror(errno));
	}
	fclose(f);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int akk_metrics_truncate_for(const char *path, int epochs, int nlr,
			     int regression, int by_loss,
			     struct akk_metrics_best *best, struct akk_err *e)
{
	char *buf = NULL, *header = NULL, *p, *nl;
	size_t len = 0, keep = 0;
	int rc, lineno = 1;

	if (best)
		*best = (struct akk_metrics_best){ 0 };
	if ((rc = slurp(path, &buf, &len, e)))
		return rc > 0 ? 0 : -1;
	rc = -1;
	if (!len) {	/* created, no row yet */
		rc = 0;
		goto out;
	}
	if (!(header = akk_metrics_header_for(nlr, regression))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	nl = strchr(buf, '\n');
	if (!nl || (size_t)(nl - buf) != strlen(header) || strncmp(buf, header, strlen(header))) {
		akk_err_at(e, path, 1, 1, "its columns are not the ones this run writes (%s): "
			   "resume into another directory with --out",
			   nlr ? "lr_g1.. for every gate" : "no per-gate lr columns");
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
