/* test_ckpt_files.c - a run directory's checkpoint files (cli/ckpt_files.c,
 * compiled in): pruning keeps the newest epoch-NNNN.bin and says on stderr
 * what it cannot remove or list, with the path and the reason. The tests
 * run as root here, where no permission stops unlink: a directory named
 * like a checkpoint is what cannot be removed, a file where the run
 * directory should be what cannot be listed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "../cli/ckpt_files.c"
#include "../cli/data_search.c"

static char g_dir[600];

static int setup(void **unused)
{
	(void)unused;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	return 0;
}

static int teardown(void **unused)
{
	(void)unused;
	tu_rm_tree(g_dir);
	return 0;
}

static void touch(const char *name)
{
	assert_int_equal(tu_write_file(tu_path(g_dir, name), "x", 1), 0);
}

/* prune(dir, keep, epoch) writes exactly the line fmt makes of path and
 * errno's text for err on stderr; fmt NULL: nothing. */
static void prune_says(const char *dir, int keep, int epoch, const char *fmt,
		       const char *path, int err)
{
	char want[1400] = "", *said;

	if (fmt)
		snprintf(want, sizeof(want), fmt, path, strerror(err));
	tu_stderr_begin();
	prune(dir, keep, epoch);
	said = tu_stderr_end();
	assert_string_equal(said, want);
	free(said);
}

/* Epochs sort as numbers, and a prune that removes what it should says
 * nothing. */
static void prune_keeps_the_newest(void **unused)
{
	(void)unused;
	touch("epoch-0009.bin"), touch("epoch-0010.bin");
	touch("epoch-0100.bin"), touch("epoch-1000.bin"), touch("best.bin");
	prune_says(g_dir, 2, 1000, NULL, NULL, 0);
	assert_false(tu_exists(tu_path(g_dir, "epoch-0009.bin")));
	assert_false(tu_exists(tu_path(g_dir, "epoch-0010.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0100.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-1000.bin")));
	assert_true(tu_exists(tu_path(g_dir, "best.bin")));
}

/* An old checkpoint that cannot be removed is named with the reason, once,
 * and the others are removed all the same. */
static void prune_says_what_it_cannot_remove(void **unused)
{
	(void)unused;
	touch("epoch-0001.bin"), touch("epoch-0003.bin"), touch("epoch-0004.bin");
	assert_int_equal(mkdir(tu_path(g_dir, "epoch-0002.bin"), 0777), 0);
	touch("epoch-0002.bin/x");
	prune_says(g_dir, 1, 4, "akkctl: warning: cannot remove old checkpoint '%s': %s\n",
		   tu_path(g_dir, "epoch-0002.bin"), EISDIR);
	assert_false(tu_exists(tu_path(g_dir, "epoch-0001.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0002.bin/x")));
	assert_false(tu_exists(tu_path(g_dir, "epoch-0003.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0004.bin")));
}

/* Only whole checkpoints of the epochs reached count toward keep: a cut
 * epoch-0099.bin (shorter than the checkpoint just written, and no
 * checkpoint when read) leaves two whole ones, not one. */
static void prune_counts_only_whole_checkpoints(void **unused)
{
	(void)unused;
	for (int i = 1; i <= 3; i++) {
		char name[32];
		snprintf(name, sizeof(name), "epoch-%04d.bin", i);
		assert_int_equal(tu_write_file(tu_path(g_dir, name), "whole", 5), 0);
	}
	touch("epoch-0099.bin");
	assert_int_equal(tu_write_file(tu_path(g_dir, "epoch-0002.bin"), "cut", 3), 0);
	prune_says(g_dir, 2, 3, NULL, NULL, 0);
	assert_true(tu_exists(tu_path(g_dir, "epoch-0099.bin")));	/* left alone */
	assert_true(tu_exists(tu_path(g_dir, "epoch-0003.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0002.bin")));	/* not counted */
	assert_true(tu_exists(tu_path(g_dir, "epoch-0001.bin")));	/* the second whole one */
	assert_int_equal(tu_write_file(tu_path(g_dir, "epoch-0004.bin"), "whole", 5), 0);
	prune_says(g_dir, 2, 4, NULL, NULL, 0);
	assert_false(tu_exists(tu_path(g_dir, "epoch-0001.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0003.bin")));
	assert_true(tu_exists(tu_path(g_dir, "epoch-0004.bin")));
}

/* A run directory that cannot be listed is named with the reason. */
static void prune_says_when_it_cannot_list(void **unused)
{
	const char *notdir = tu_path(g_dir, "run");

	(void)unused;
	touch("run");
	prune_says(notdir, 1, 1, "akkctl: warning: cannot list '%s' to remove old checkpoints: %s\n",
		   notdir, ENOTDIR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(prune_keeps_the_newest, setup, teardown),
		cmocka_unit_test_setup_teardown(prune_says_what_it_cannot_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(prune_says_when_it_cannot_list, setup, teardown),
		cmocka_unit_test_setup_teardown(prune_counts_only_whole_checkpoints, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
