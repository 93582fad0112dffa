/* train_folds.c - K-fold cross-validation: one run a fold, then a summary. */
#include "train_folds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "ckpt_files.h"
#include "cli.h"
#include "runtime/world.h"

/* mean, std (of the K values, not an estimate: numpy's std()), min, max */
static void stats(const double *v, int n, double out[4])
{
	double sum = 0, sq = 0;

	out[2] = out[3] = v[0];
	for (int i = 0; i < n; i++) {
		sum += v[i];
		out[2] = v[i] < out[2] ? v[i] : out[2];
		out[3] = v[i] > out[3] ? v[i] : out[3];
	}
	out[0] = sum / n;
	for (int i = 0; i < n; i++)
		sq += (v[i] - out[0]) * (v[i] - out[0]);
	out[1] = sqrt(sq / n);
}

/* folds.csv: a row a fold, then mean, std, min and max. */
static int write_csv(const char *dir, const struct train_fold_result *r, int k,
		     int regression, const double loss[4], const double score[4],
		     int quiet, struct akk_err *e)
{
	static const char *const names[4] = { "mean", "std", "min", "max" };
	char *buf = NULL, *path = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = -1;

	if (!f)
		return akk_err_set(e, "out of memory");
	fprintf(f, "fold,train_samples,validation_samples,validation_loss,validation_%s\n",
		regression ? "r2" : "accuracy");
	for (int i = 0; i < k; i++)
		fprintf(f, "%d,%zu,%zu,%.6f,%.6f\n", i + 1, r[i].ntrain, r[i].nval,
			r[i].val_loss, r[i].val_score);
	for (int j = 0; j < 4; j++)
		fprintf(f, "%s,,,%.6f,%.6f\n", names[j], loss[j], score[j]);
	if (fclose(f) || !buf) {
		free(buf);
		return akk_err_set(e, "out of memory");
	}
	if ((path = ckpt_join(dir, "folds.csv", e)))
		rc = akk_file_replace(path, buf, len, e);
	if (!rc && !quiet)
		fprintf(stderr, "  folds:   %s\n", path);
	free(path);
	free(buf);
	return rc;
}

int train_folds_check(const struct akk_spec *s, const char *resume)
{
	int k = s->data.folds;

	if (resume)
		return cli_errorf(EXIT_USAGE, "--resume: a config with validation: {folds: %d} trains %d runs; resume one of them from a config with its own split, or train the folds again",
				  k, k);
	if (akk_world_launched())
		return cli_errorf(EXIT_USAGE, "validation: {folds: %d} trains one process's runs in turn: start it without mpirun",
				  k);
	return EXIT_OK;
}

int train_folds_summary(const char *dir, const struct train_fold_result *r, int k,
			int regression, int quiet)
{
	double *v = malloc(2 * (size_t)k * sizeof(*v)), loss[4], score[4];
	struct akk_err e = { 0 };
	int rc = EXIT_OK;

	if (!v || k < 1) {
		free(v);
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	}
	for (int i = 0; i < k; i++) {
		v[i] = r[i].val_loss;
		v[k + i] = r[i].val_score;
	}
	stats(v, k, loss);
	stats(v + k, k, score);
	if (quiet)
		goto write;
	fprintf(stderr, "%d-fold cross-validation: validation %s", k,
		regression ? "r2" : "accuracy");
	for (int i = 0; i < k; i++)
		fprintf(stderr, regression ? " %.4f" : " %.2f%%",
			regression ? r[i].val_score : 100 * r[i].val_score);
	if (regression)
		fprintf(stderr, "; mean %.4f std %.4f (min %.4f, max %.4f)\n",
			score[0], score[1], score[2], score[3]);
	else
		fprintf(stderr, "; mean %.2f%% std %.2f%% (min %.2f%%, max %.2f%%)\n",
			100 * score[0], 100 * score[1], 100 * score[2], 100 * score[3]);
write:
	if (write_csv(dir, r, k, regression, loss, score, quiet, &e))
		rc = cli_report(&e, EXIT_RUNTIME);
	free(v);
	return rc;
}
