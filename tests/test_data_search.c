/* test_data_search.c - configs that survive being installed, moved or
 * written elsewhere: the data search (--data-dir, the working directory,
 * AKKCTL_DATA), runs of a config outside the working directory written
 * under it, check naming a missing data file at its FILE:LINE:COL, and
 * checkpoints that find their data after the run and its config moved. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[PATH_MAX], g_home[PATH_MAX];
static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

/* A config at path whose data are DATA/set-images and DATA/set-labels, as
 * written (data: the folder as the config names it), runs in out. */
static void write_cfg(const char *path, const char *data, const char *out)
{
	char text[1024];
	int n = snprintf(text, sizeof(text),
		"name: ds\n"
		"seed: 3\n"
		"data:\n"
		"  train: {images: %s/set-images, labels: %s/set-labels}\n"
		"network:\n"
		"  input: [1, 6, 6]\n"
		"  gates:\n"
		"    - layers: [flatten, {dense: 3}]\n"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 4}\n"
		"output: {dir: %s}\n", data, data, out);

	assert_true(n > 0 && n < (int)sizeof(text));
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

static const char *in(const char *name)
{
	return tu_path(g_dir, name);
}

/* check names a data file that is not there at its place in the config,
 * and exits 2. */
static void check_reports_missing_data(void **state)
{
	char want[2 * PATH_MAX];

	(void)state;
	write_cfg(in("missing.yaml"), "nowhere", "runs/missing");
	assert_rc(ak("check", in("missing.yaml"), NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s:4:19: data file 'nowhere/set-images' does not exist: not as '%s' (against the config's folder), nor under the data search (--data-dir, the working directory, AKKCTL_DATA)",
		 in("missing.yaml"), in("nowhere/set-images"));
	tu_assert_line(g_err, want);
	/* a path from --set: named at the override */
	assert_rc(ak("check", in("missing.yaml"), "--set", "data.train.images=/nonexistent/x", NULL), 2);
	tu_assert_line(g_err, "akkctl: --set data.train.images=/nonexistent/x: data file '/nonexistent/x' does not exist");
	/* train says the same before it opens anything */
	assert_rc(ak("train", in("missing.yaml"), "--quiet", NULL), 2);
	tu_assert_line(g_err, want);
	assert_false(tu_exists(in("runs/missing")));
}

/* An installed config (share/akkctl/configs/ds.yaml, as make install
 * puts it, naming ../datasets/ds/...)
 * finds the data under the working directory, AKKCTL_DATA or --data-dir,
 * and a run from the working directory goes there, not next to the
 * config. */
static void installed_config_finds_data_and_runs_here(void **state)
{
	char cfg[PATH_MAX], work[PATH_MAX], other[PATH_MAX];

	(void)state;
	snprintf(cfg, sizeof(cfg), "%s", in("share/akkctl/configs/ds.yaml"));
	snprintf(work, sizeof(work), "%s", in("work"));
	snprintf(other, sizeof(other), "%s", in("other"));
	assert_int_equal(mkdir(in("share"), 0755), 0);
	assert_int_equal(mkdir(in("share/akkctl"), 0755), 0);
	assert_int_equal(mkdir(in("share/akkctl/configs"), 0755), 0);
	assert_int_equal(mkdir(work, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	assert_int_equal(mkdir(in("work/datasets"), 0755), 0);
	assert_int_equal(mkdir(in("work/datasets/ds"), 0755), 0);
	tu_write_set(in("work/datasets/ds"), "set", 24, 6, 3, 1);
	write_cfg(cfg, "../datasets/ds", "../runs/ds");

	assert_int_equal(chdir(other), 0);	/* not found from elsewhere */
	assert_rc(ak("check", cfg, NULL), 2);
	tu_assert_contains(g_err, ":4:19: data file '../datasets/ds/set-images' does not exist");
	assert_rc(ak("check", cfg, "--data-dir", work, NULL), 0);
	setenv("AKKCTL_DATA", work, 1);
	assert_rc(ak("check", cfg, NULL), 0);
	unsetenv("AKKCTL_DATA");

	assert_int_equal(chdir(work), 0);	/* the working directory */
	assert_rc(ak("check", cfg, NULL), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_true(tu_exists(in("work/runs/ds/last.bin")));
	assert_false(tu_exists(in("share/akkctl/runs")));
	assert_rc(ak("eval", "runs/ds", "--images", "datasets/ds/set-images", "--labels",
		     "datasets/ds/set-labels", NULL), 0);
	tu_assert_contains(g_out, "samples 24 ");
	assert_int_equal(chdir(g_home), 0);
}

/* A run, its config and its data moved together: eval of the moved
 * checkpoint still reads the config's validation data (the checkpoint
 * stores the config's folder relative to the run directory); and the
 * run's config.yaml, read from its own folder, finds the data. */
static void moved_run_finds_its_data(void **state)
{
	char from[PATH_MAX], to[PATH_MAX];

	(void)state;
	snprintf(from, sizeof(from), "%s", in("proj"));
	snprintf(to, sizeof(to), "%s", in("moved"));
	assert_int_equal(mkdir(from, 0755), 0);
	assert_int_equal(mkdir(in("proj/data"), 0755), 0);
	tu_write_set(in("proj/data"), "set", 24, 6, 3, 2);
	{
		char cfg[PATH_MAX], text[1200];
		char *t;
		size_t n;

		snprintf(cfg, sizeof(cfg), "%s", in("proj/ds.yaml"));
		write_cfg(cfg, "data", "runs/ds");
		t = tu_slurp(cfg, &n);	/* validation: the same files */
		assert_non_null(t);
		n = (size_t)snprintf(text, sizeof(text), "%s", t);
		free(t);
		assert_non_null(strstr(text, "network:"));
		{
			char *at = strstr(text, "network:");
			char tail[800];

			snprintf(tail, sizeof(tail), "%s", at);
			snprintf(at, sizeof(text) - (size_t)(at - text),
				 "  validation: {images: data/set-images, labels: data/set-labels}\n%s", tail);
		}
		assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
		assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	}
	/* the run's config.yaml names the data from the run directory */
	assert_rc(ak("lr-find", in("proj/runs/ds/config.yaml"), "--steps", "6", NULL), 0);
	assert_int_equal(rename(from, to), 0);
	assert_rc(ak("eval", in("moved/runs/ds"), NULL), 0);
	tu_assert_contains(g_out, "samples 24 ");
	assert_rc(ak("inspect", in("moved/runs/ds/last.bin"), NULL), 0);
	tu_assert_contains(g_out, "(paths relative to ");
}

/* partition -o writes a config elsewhere whose data paths still name the
 * files, image folders and lists included. */
static void partition_keeps_paths(void **state)
{
	static const char cfg[] =
		"name: pt\n"
		"data:\n  format: images\n  train: {folder: imgs}\n  validation: {list: list.txt}\n"
		"network:\n  input: [1, 6, 6]\n  gates: {auto: 2}\n"
		"  layers: [flatten, {dense: 8}, relu, {dense: 3}]\n"
		"optimizer: {type: adam, lr: 0.01}\n";

	(void)state;
	assert_int_equal(mkdir(in("pt"), 0755), 0);
	assert_int_equal(mkdir(in("pt/imgs"), 0755), 0);
	assert_int_equal(mkdir(in("elsewhere"), 0755), 0);
	assert_int_equal(tu_write_file(in("pt/list.txt"), "", 0), 0);
	assert_int_equal(tu_write_file(in("pt/pt.yaml"), cfg, strlen(cfg)), 0);
	assert_rc(ak("partition", in("pt/pt.yaml"), "--no-profile", "-o", in("elsewhere/pt.yaml"),
		     NULL), 0);
	assert_rc(ak("check", in("elsewhere/pt.yaml"), NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_reports_missing_data),
		cmocka_unit_test(installed_config_finds_data_and_runs_here),
		cmocka_unit_test(moved_run_finds_its_data),
		cmocka_unit_test(partition_keeps_paths),
	};
	const char *d = tu_tmpdir();
	char akkctl[PATH_MAX];
	int failed;

	if (!d || !getcwd(g_home, sizeof(g_home)) || !realpath(d, g_dir) ||
	    !realpath(tu_akkctl(), akkctl)) {
		perror("setup");
		return 1;
	}
	setenv("AKKCTL", akkctl, 1);	/* the tests change directory */
	unsetenv("AKKCTL_DATA");
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (!failed)
		tu_rm_tree(g_dir);
	return failed;
}
