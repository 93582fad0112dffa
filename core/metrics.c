/* metrics.c - CSV rows, flushed one by one. */
#include "metrics.h"

#include <errno.h>
#include <string.h>

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max\n"

FILE *akk_metrics_open(const char *path, struct akk_err *e)
{
	FILE *f = fopen(path, "a");

	if (!f) {
		akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (ftell(f) == 0 && (fputs(HEADER, f) < 0 || fflush(f))) {
		akk_err_set(e, "cannot write '%s': %s", path, strerror(errno));
		fclose(f);
		return NULL;
	}
	return f;
}

int akk_metrics_write(FILE *f, const struct akk_metrics_row *r,
		      struct akk_err *e)
{
	double sps = r->seconds > 0 ? r->samples / r->seconds : 0;

	if (fprintf(f, "%d,%s,%ld,%.6f,%.6f,%.6g,%.3f,%.1f,%ld,%ld\n", r->epoch,
		    r->phase, r->samples, r->loss, r->accuracy, r->lr,
		    r->seconds, sps, r->vmin, r->vmax) < 0 || fflush(f))
		return akk_err_set(e, "cannot write the metrics file: %s",
				   strerror(errno));
	return 0;
}
