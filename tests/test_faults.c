/* test_faults.c - a run directory under attack and under faults: two
 * writers at once (the lock, driven directly and through whole runs), a
 * killed holder, metrics.csv as /dev/zero, as a huge file or as a
 * symbolic link, a full filesystem at the metrics write and at the
 * checkpoint write (a small tmpfs, when the test runs as root), and
 * SIGINT at random early moments.
 *
 * The run directory's lock is driven directly: cli/run_lock.c and
 * cli/ckpt_files.c are compiled in. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "../cli/ckpt_files.c"
#include "../cli/data_search.c"
#include "../cli/run_lock.c"

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

static char g_dir[512];
static char g_cfg[600];		/* 64-16-4, flip-flop, 1 epoch, 600 samples */
static char g_err[1 << 16];

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

#define ak(...) tu_ak(NULL, 0, g_err, sizeof(g_err), __VA_ARGS__)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static const char *subdir(const char *name)
{
	const char *p = tu_path(g_dir, name);

	assert_int_equal(mkdir(p, 0777), 0);
	return p;
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();
	char text[1024];
	int n;

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "train", 600, 8, 4, 1);
	tu_write_set(g_dir, "val", 200, 8, 4, 2);
	n = snprintf(text, sizeof(text),
		"name: synth\n"
		"seed: 7\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"  validation: {images: val-images, labels: val-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 16}, relu]\n"
		"    - layers: [{dense: 4}]\n"
		"  loss: softmax_cross_entropy\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 32}\n"
		"output: {dir: out-default, checkpoint_every: 1, keep: 5}\n");
	snprintf(g_cfg, sizeof(g_cfg), "%s/synth.yaml", g_dir);
	return tu_write_file(g_cfg, text, (size_t)n);
}

static int group_teardown(void **state)
{
	(void)state;
	/* the small tmpfs, when a failed assertion left it mounted */
	umount2(tu_path(g_dir, "full"), MNT_DETACH);
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- one writer per run directory ------------------------------------------ */

/* The pipes between a test and its lock children: go (a byte starts a
 * child), told (its answer), done (closed: holders let go). */
struct racers {
	int go[2], told[2], done[2];
};

static void racers_open(struct racers *r)
{
	assert_int_equal(pipe(r->go), 0);
	assert_int_equal(pipe(r->told), 0);
	assert_int_equal(pipe(r->done), 0);
}

/* After the children are forked: the parent's ends only. */
static void racers_parent(struct racers *r)
{
	close(r->go[0]);
	close(r->told[1]);
	close(r->done[0]);
}

static void racers_close(struct racers *r)
{
	close(r->go[1]);
	close(r->told[0]);
	close(r->done[1]);
}

/* A child that takes dir's lock when a byte arrives on go, answers on
 * told whether it did ('1') or was refused naming a holder ('0'), and
 * holds it until done closes. */
static pid_t lock_child(const char *dir, struct racers *r)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct run_lock l;
		struct akk_err e = { 0 };
		char c, ans;
		int got;

		close(r->go[1]);
		close(r->told[0]);
		close(r->done[1]);
		if (read(r->go[0], &c, 1) != 1)
			_exit(3);
		got = !run_lock_take(&l, dir, "metrics.csv", &e);
		ans = got ? '1' : strstr(e.msg, "is in use by another run (process ") ? '0' : 'x';
		if (write(r->told[1], &ans, 1) != 1)
			_exit(3);
		while (read(r->done[0], &c, 1) > 0)
			;
		if (got)
			run_lock_release(&l);
		_exit(0);
	}
	return pid;
}

/* Four processes race for one lock, 60 times over: exactly one takes it,
 * each other one is refused with the holder named. */
static void lock_one_writer_of_many(void **state)
{
	enum { TRIALS = 60, RACERS = 4 };

	(void)state;
	for (int t = 0; t < TRIALS; t++) {
		char name[32];
		struct racers r;
		int winners = 0;
		pid_t pids[RACERS];

		snprintf(name, sizeof(name), "race-%d", t);
		racers_open(&r);
		for (int i = 0; i < RACERS; i++)
			pids[i] = lock_child(tu_path(g_dir, name), &r);
		racers_parent(&r);
		assert_int_equal(write(r.go[1], "gggg", RACERS), RACERS);
		for (int i = 0; i < RACERS; i++) {
			char ans;
			assert_int_equal(read(r.told[0], &ans, 1), 1);
			if (ans == 'x') {
				print_error("trial %d: a racer failed for another reason\n", t);
				fail();
			}
			winners += ans == '1';
		}
		if (winners != 1) {
			print_error("trial %d: %d of %d racers took the lock\n", t, winners, RACERS);
			fail();
		}
		assert_true(run_lock_holder(tu_path(g_dir, name)) > 0);
		racers_close(&r);
		for (int i = 0; i < RACERS; i++)
			waitpid(pids[i], NULL, 0);
		/* released: no lock file stays behind */
		assert_false(tu_exists(tu_path(tu_path(g_dir, name), RUN_LOCK_NAME)));
	}
}

/* A holder killed with SIGKILL never blocks the next run; the refusal
 * names the holder's pid while it lives. */
static void killed_holder_never_blocks(void **state)
{
	const char *d = subdir("killed");
	struct run_lock l;
	struct akk_err e = { 0 };
	struct racers r;
	char want[1024], ans;
	pid_t pid;

	(void)state;
	racers_open(&r);
	pid = lock_child(d, &r);
	racers_parent(&r);
	assert_int_equal(write(r.go[1], "g", 1), 1);
	assert_int_equal(read(r.told[0], &ans, 1), 1);
	assert_int_equal(ans, '1');
	assert_int_equal(run_lock_take(&l, d, "metrics.csv", &e), -1);
	snprintf(want, sizeof(want), "'%s' is in use by another run (process %ld): ", d, (long)pid);
	tu_assert_prefix(e.msg, want);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_true(tu_exists(tu_path(d, RUN_LOCK_NAME)));	/* left by the kill */
	assert_int_equal(run_lock_take(&l, d, "metrics.csv", &e), 0);
	run_lock_release(&l);
	assert_false(tu_exists(tu_path(d, RUN_LOCK_NAME)));
	assert_true(tu_exists(d));	/* not made by this lock: stays */
	racers_close(&r);
}

/* Start akkctl with argv (NULL-terminated, after "akkctl"), stderr to
 * errpath. */
static pid_t spawn(const char *errpath, const char *const *args)
{
	const char *argv[24] = { tu_akkctl() };
	int n = 1;
	pid_t pid;

	for (; *args && n < 23; args++)
		argv[n++] = *args;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int count_lines_starting(const char *path, const char *prefix)
{
	char *s = tu_slurp(path, NULL);
	int n = 0;

	for (char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		n += !strncmp(p, prefix, strlen(prefix));
	free(s);
	return n;
}

/* Two whole trains started at one instant into one --out, then two
 * --resume of that run: one runs, the other exits 2 (the lock, or the
 * run the first one left); the metrics file has one header. */
static void two_trains_race(void **state)
{
	enum { TRIALS = 10 };

	(void)state;
	for (int t = 0; t < TRIALS; t++) {
		char name[32], e1[600], e2[600];
		const char *d;
		int st[2], ok = 0;
		pid_t a, b;

		snprintf(name, sizeof(name), "trains-%d", t);
		d = tu_path(g_dir, name);
		snprintf(e1, sizeof(e1), "%s.err1", d);
		snprintf(e2, sizeof(e2), "%s.err2", d);
		{
			const char *args[] = { "train", g_cfg, "--quiet", "--out", d, NULL };
			a = spawn(e1, args);
			b = spawn(e2, args);
		}
		waitpid(a, &st[0], 0);
		waitpid(b, &st[1], 0);
		for (int i = 0; i < 2; i++) {
			int rc = exit_code(st[i]);
			char *err = tu_slurp(i ? e2 : e1, NULL);
			ok += rc == 0;
			if (rc != 0 && (rc != 2 || !err ||
					(!strstr(err, "is in use by another run (process ") &&
					 !strstr(err, "already holds a run")))) {
				print_error("trial %d: exit %d: %s\n", t, rc, err ? err : "");
				fail();
			}
			free(err);
		}
		if (ok != 1) {
			print_error("trial %d: %d trains ran\n", t, ok);
			fail();
		}
		assert_int_equal(count_lines_starting(tu_path(d, "metrics.csv"), "epoch,"), 1);
		/* the same for two resumes of the run, which both find a
		 * checkpoint to continue from */
		{
			const char *args[] = { "train", g_cfg, "--quiet", "--resume", d,
					       "--epochs", "2", NULL };
			a = spawn(e1, args);
			b = spawn(e2, args);
		}
		waitpid(a, &st[0], 0);
		waitpid(b, &st[1], 0);
		/* one ran; the other was refused, or came after it and found
		 * the epochs trained (exit 0, nothing written) */
		for (int i = 0; i < 2; i++) {
			int rc = exit_code(st[i]);
			char *err = tu_slurp(i ? e2 : e1, NULL);
			if (rc != 0 && (rc != 2 || !err ||
					!strstr(err, "is in use by another run (process "))) {
				print_error("trial %d: resume exit %d: %s\n", t, rc, err ? err : "");
				fail();
			}
			free(err);
		}
		assert_int_equal(count_lines_starting(tu_path(d, "metrics.csv"), "epoch,"), 1);
		assert_int_equal(count_lines_starting(tu_path(d, "metrics.csv"), "2,train,"), 1);
	}
}

/* ---- bounded readers, no links -------------------------------------------- */

/* metrics.csv that is /dev/zero, a file past the limit or a link: resume
 * and plot refuse it, exit 2 naming it, and nothing is written through
 * the link. */
static void metrics_dev_zero_huge_or_link(void **state)
{
	const char *d = subdir("hostile");
	const char *m = tu_path(d, "metrics.csv");
	const char *target = tu_path(g_dir, "hostile-target.csv");
	char want[1024], *before, *after;
	size_t n1, n2;
	int fd;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--out", d, NULL), 0);
	/* /dev/zero */
	assert_int_equal(unlink(m), 0);
	assert_int_equal(symlink("/dev/zero", m), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: '%s' is a symbolic link: a run never writes "
		 "through one; remove it, or write elsewhere with --out\n", m);
	assert_string_equal(g_err, want);
	assert_rc(ak("plot", d, "--out", tu_path(g_dir, "zero.svg"), NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: not a regular file\n", m);
	assert_string_equal(g_err, want);
	/* a link to a file: resume refuses it, the target stays as it was */
	assert_int_equal(unlink(m), 0);
	assert_int_equal(tu_write_file(target, HEADER "\n", sizeof(HEADER)), 0);
	assert_int_equal(symlink(target, m), 0);
	before = tu_slurp(target, &n1);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 2);
	tu_assert_contains(g_err, "is a symbolic link");
	assert_rc(ak("train", g_cfg, "--quiet", "--out", d, "--force", NULL), 2);
	tu_assert_contains(g_err, "is a symbolic link");
	after = tu_slurp(target, &n2);
	assert_true(n1 == n2 && !memcmp(before, after, n1));
	free(before);
	free(after);
	/* a sparse file past the limit: refused from its size, unread */
	assert_int_equal(unlink(m), 0);
	fd = open(m, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, HEADER "\n", sizeof(HEADER)), (int)sizeof(HEADER));
	assert_int_equal(ftruncate(fd, (off_t)1 << 40), 0);
	close(fd);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, "--epochs", "2", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: larger than a metrics file may be "
		 "(1099511627776 bytes; at most 67108864)\n", m);
	assert_string_equal(g_err, want);
	assert_rc(ak("plot", d, "--out", tu_path(g_dir, "huge.svg"), NULL), 2);
	assert_string_equal(g_err, want);
}

/* ---- full disk ------------------------------------------------------------ */

/* A tmpfs of `kib` KiB at dir (root only): 0, or -1 to skip. */
static int small_fs(const char *dir, int kib)
{
	char opt[64];

	if (geteuid() != 0)
		return -1;
	snprintf(opt, sizeof(opt), "size=%dk", kib);
	return mount("tmpfs", dir, "tmpfs", 0, opt) ? -1 : 0;
}

/* Fill fs at dir until `room` bytes are left (within a page or so). */
static void fill_fs(const char *dir, long room)
{
	const char *path = tu_path(dir, "filler");
	static char block[4096];
	FILE *f = fopen(path, "w");
	struct stat st;

	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	while (fwrite(block, 1, sizeof(block), f) == sizeof(block))
		;
	fclose(f);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - room > 0 ? st.st_size - room : 0), 0);
}

/* A full disk at the first metrics write: exit 1 naming the file, no
 * metrics.csv left that refuses the next run; then a full disk at an
 * epoch's checkpoint: exit 1 and the epoch's rows are gone again; then
 * at a resume's rewrite of the metrics: exit 1. */
static void full_disk_at_metrics_and_checkpoint(void **state)
{
	const char *d = subdir("full");
	const char *run = tu_path(d, "run");
	char want[1024];

	(void)state;
	if (small_fs(d, 512)) {
		fprintf(stderr, "full_disk_at_metrics_and_checkpoint: skipped: not root, "
			"or no tmpfs can be mounted here\n");
		skip();
	}
	/* no room at all: the first file, config.yaml, fails, and nothing is
	 * left that refuses the next run */
	fill_fs(d, 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--out", run, NULL), 1);
	tu_assert_contains(g_err, "config.yaml");
	tu_assert_contains(g_err, "No space left on device");
	assert_int_equal(unlink(tu_path(d, "filler")), 0);
	{
		char *files = NULL;
		struct akk_err e = { 0 };
		assert_int_equal(run_dir_files(run, "metrics.csv", &files, &e), 0);
		assert_null(files);
	}
	/* a page for config.yaml, none for the metrics */
	fill_fs(d, 4096);
	assert_rc(ak("train", g_cfg, "--quiet", "--out", run, NULL), 1);
	snprintf(want, sizeof(want), "akkctl: cannot write '%s/metrics.csv': "
		 "No space left on device\n", run);
	assert_string_equal(g_err, want);
	assert_int_equal(unlink(tu_path(d, "filler")), 0);
	{
		/* what is there does not refuse the next run */
		char *files = NULL;
		struct akk_err e = { 0 };
		assert_int_equal(run_dir_files(run, "metrics.csv", &files, &e), 0);
		assert_null(files);
	}
	/* a page for config.yaml and one for the rows, none for a
	 * checkpoint (some 10 KB) */
	fill_fs(d, 8192);
	assert_rc(ak("train", g_cfg, "--quiet", "--out", run, NULL), 1);
	tu_assert_contains(g_err, "epoch-0001.bin");
	tu_assert_contains(g_err, "No space left on device");
	{
		char *rows = tu_slurp(tu_path(run, "metrics.csv"), NULL);
		assert_true(!rows || !strstr(rows, "1,train,"));
		free(rows);
	}
	assert_int_equal(unlink(tu_path(d, "filler")), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--out", run, "--force", NULL), 0);
	/* a resume that must cut a row off, on a full disk: a system error
	 * (exit 1), not bad input */
	{
		FILE *f = fopen(tu_path(run, "metrics.csv"), "a");
		assert_non_null(f);
		fputs("2,train,600,0.5,0.5,0.05,1,600,0,0\n", f);
		assert_int_equal(fclose(f), 0);
	}
	fill_fs(d, 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", run, "--epochs", "2", NULL), 1);
	tu_assert_contains(g_err, "No space left on device");
	assert_int_equal(unlink(tu_path(d, "filler")), 0);
	umount(d);
}

/* ---- SIGINT early ----------------------------------------------------------- */

/* SIGINT at random moments in a run's first second: either the process
 * ended before it made anything (no run directory), or it stopped
 * cleanly (exit 130 or 0) and leaves a directory that a resume or a new
 * run takes. The run is short: some trials land after its end. */
static void sigint_at_random_early_moments(void **state)
{
	enum { TRIALS = 16 };
	unsigned seed = (unsigned)time(NULL);

	(void)state;
	fprintf(stderr, "sigint_at_random_early_moments: seed %u\n", seed);
	srand(seed);
	for (int t = 0; t < TRIALS; t++) {
		char name[32], errp[600];
		const char *d;
		long ms = rand() % 120;
		int st, rc;
		pid_t pid;

		snprintf(name, sizeof(name), "sigint-%d", t);
		d = tu_path(g_dir, name);
		snprintf(errp, sizeof(errp), "%s.err", d);
		{
			const char *args[] = { "train", g_cfg, "--quiet", "--out", d, NULL };
			pid = spawn(errp, args);
		}
		sleep_ms(ms);
		kill(pid, SIGINT);
		waitpid(pid, &st, 0);
		rc = exit_code(st);
		if (WIFSIGNALED(st)) {
			/* only before the handler is in place, or after the
			 * run ended (its last.bin written: the default
			 * handler is back while the process ends) */
			if (tu_exists(d) && !tu_exists(tu_path(d, "last.bin"))) {
				print_error("trial %d (%ld ms): killed by signal %d after making '%s'\n",
					    t, ms, WTERMSIG(st), d);
				fail();
			}
			continue;
		}
		if (rc != 130 && rc != 0) {
			char *err = tu_slurp(errp, NULL);
			print_error("trial %d (%ld ms): exit %d: %s\n", t, ms, rc, err);
			free(err);
			fail();
		}
		assert_rc(ak("train", g_cfg, "--quiet", "--resume", d, NULL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lock_one_writer_of_many),
		cmocka_unit_test(killed_holder_never_blocks),
		cmocka_unit_test(two_trains_race),
		cmocka_unit_test(metrics_dev_zero_huge_or_link),
		cmocka_unit_test(full_disk_at_metrics_and_checkpoint),
		cmocka_unit_test(sigint_at_random_early_moments),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
