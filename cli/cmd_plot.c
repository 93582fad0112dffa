/* cmd_plot.c - akkctl plot: a run's learning curves as an SVG chart.
 *
 * RUNDIR is a run directory (its metrics file, and its name from one of
 * its checkpoints when there is one) or a metrics file itself. The chart
 * is drawn by core/io/plot.c into memory and written whole (temp, fsync,
 * rename), or to stdout with -o -. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_files.h"
#include "cli.h"
#include "config/spec.h"
#include "io/checkpoint.h"
#include "io/curves.h"
#include "io/plot.h"
#include "io/plot_steps.h"
#include "pictures.h"

/* The base name of dir's real path ("runs/mnist/." -> "mnist"), in buf. */
static void dir_name(char *buf, size_t size, const char *dir)
{
	char real[PATH_MAX];

	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	snprintf(buf, size, "%s", basename(real));
}

/* With early stopping the best epoch is its monitor's, whose weights
 * best.bin holds and the run restored: that checkpoint's epoch, or 0. */
static int early_stop_epoch(const char *dir)
{
	struct akk_checkpoint ck = { 0 };
	struct akk_err e = { 0 };
	char *path = ckpt_join(dir, "best.bin", NULL);
	int epoch = 0;

	if (path && !akk_checkpoint_read(&ck, path, &e) && !ck.pos.index)
		epoch = ck.pos.epoch;
	akk_checkpoint_release(&ck);
	free(path);
	return epoch;
}

/* The run's name and metrics file name from a checkpoint in dir, when one
 * can be read; *name and *metrics stay as they are otherwise; *mark: the
 * epoch early stopping restored, or 0. */
static void from_checkpoint(const char *dir, char *name, size_t nsize,
			    char *metrics, size_t msize, int *mark)
{
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_err e = { 0 };
	char *path = NULL;

	if (ckpt_pick(dir, 0, &path, &e) == 1 && !akk_checkpoint_read(&ck, path, &e) &&
	    !akk_checkpoint_spec(&ck, &s, NULL, 0, &e)) {
		if (s.name && *s.name)
			snprintf(name, nsize, "%s", s.name);
		if (s.out.metrics && *s.out.metrics)
			snprintf(metrics, msize, "%s", s.out.metrics);
		if (s.sched.early.on)
			*mark = early_stop_epoch(dir);
	}
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	free(path);
}

/* A run with per-step metrics (steps.csv, output.log_every_steps): its
 * training loss per step as dir/steps.svg. The exit status: 0 also when
 * the run has none. */
static int plot_steps(const char *dir, const char *name, struct akk_err *e)
{
	char path[PATH_MAX + 16], svg[PATH_MAX + 16], title[300], *buf = NULL;
	struct akk_step_rows r = { 0 };
	size_t len = 0;
	FILE *mem;
	int rc = EXIT_USAGE;

	snprintf(path, sizeof(path), "%s/steps.csv", dir);
	snprintf(svg, sizeof(svg), "%s/steps.svg", dir);
	if (access(path, F_OK))
		return EXIT_OK;
	if (akk_steps_load(&r, path, e))
		return EXIT_USAGE;
	snprintf(title, sizeof(title), "%s: training loss per step", name);
	rc = EXIT_RUNTIME;
	if (!(mem = open_memstream(&buf, &len))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_plot_steps(mem, &r, title, svg, e)) {
		fclose(mem);
		goto out;
	}
	if (fclose(mem)) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (cli_write_svg(svg, buf, len, e))
		goto out;
	fprintf(stderr, "wrote '%s'\n", svg);
	rc = EXIT_OK;
out:
	free(buf);
	akk_steps_release(&r);
	return rc;
}

int cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *arg;
	char name[256], metrics[PATH_MAX], mpath[2 * PATH_MAX + 2], opath[PATH_MAX + 16];
	char title[300], dir[PATH_MAX];
	struct akk_curves cv = { 0 };
	struct akk_err e = { 0 };
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int c, rc = EXIT_USAGE, mark = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'h': return cli_help("plot");
		default: return cli_bad_option("plot", c, argv);
		}
	}
	if (cli_operands("plot", argc, argv))
		return EXIT_USAGE;
	if (out && !*out)
		return cli_errorf(EXIT_USAGE, "option '--out' needs a file name");
	arg = argv[optind];
	if (stat(arg, &st))
		return cli_errorf(EXIT_USAGE, "cannot open '%s': %s", arg, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		size_t n = strlen(arg);
		while (n > 1 && arg[n - 1] == '/')	/* "runs/mnist/": no "//" in paths */
			n--;
		snprintf(dir, sizeof(dir), "%.*s", (int)n, arg);
		dir_name(name, sizeof(name), arg);
		snprintf(metrics, sizeof(metrics), "metrics.csv");
		from_checkpoint(arg, name, sizeof(name), metrics, sizeof(metrics), &mark);
		snprintf(mpath, sizeof(mpath), "%s/%s", dir, metrics);
		if (strlen(mpath) >= PATH_MAX)
			return cli_errorf(EXIT_USAGE, "the path of '%s' is too long", dir);
		if (access(mpath, F_OK))
			return cli_errorf(EXIT_USAGE, "'%s' is not a run directory: it has no %s",
					  dir, metrics);
	} else {
		/* A metrics file: the run is the directory that holds it. */
		char tmp[PATH_MAX];
		snprintf(mpath, sizeof(mpath), "%s", arg);
		snprintf(tmp, sizeof(tmp), "%s", arg);
		snprintf(dir, sizeof(dir), "%s", dirname(tmp));
		dir_name(name, sizeof(name), dir);
	}
	if (akk_curves_load(&cv, mpath, &e))
		return cli_report(&e, EXIT_USAGE);
	cv.mark_epoch = mark;
	if (!out) {
		snprintf(opath, sizeof(opath), "%s/curves.svg", dir);
		out = opath;
	}
	snprintf(title, sizeof(title), "%s: learning curves", name);
	rc = EXIT_RUNTIME;
	if (!(mem = open_memstream(&buf, &len))) {
		akk_err_set(&e, "out of memory");
		goto report;
	}
	if (akk_plot_curves(mem, &cv, title, out, &e)) {
		fclose(mem);
		goto report;
	}
	if (fclose(mem)) {
		akk_err_set(&e, "out of memory");
		goto report;
	}
	if (cli_write_svg(out, buf, len, &e))
		goto report;
	if (strcmp(out, "-"))
		fprintf(stderr, "wrote '%s'\n", out);
	if (S_ISDIR(st.st_mode) && strcmp(out, "-") && (rc = plot_steps(dir, name, &e)) != EXIT_OK)
		goto report;
	rc = EXIT_OK;
	goto done;
report:
	cli_report(&e, rc);
done:
	free(buf);
	akk_curves_release(&cv);
	return rc;
}
