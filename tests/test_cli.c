/* test_cli.c - akkctl as a user runs it: arguments, exit codes, messages,
 * training on synthetic data, checkpoints, resume, signals and bad input.
 *
 * The group setup writes small synthetic IDX files (8x8 uint8 images whose
 * bright quadrant is the class, 4 classes) and YAML configs into one temp
 * directory; every run writes its output into a subdirectory of it, and the
 * teardown removes it all (set AKK_KEEP_TMP to keep it). Nothing is
 * downloaded and nothing depends on timing: tests that signal a running
 * trainer poll the files it writes, with generous overall limits. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "testutil.h"

#define NTRAIN 600
#define NVAL 200
#define NTINY 48
#define NTINYVAL 16
#define CLASSES 4
/* The test net, 64-16-4: (64*16 + 16) + (16*4 + 4) parameters. */
#define NPARAMS (64 * 16 + 16 + 16 * 4 + 4)
#define BATCH 32
#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

static const char *const commands[] = { "train", "eval", "bench", "check", "predict", "generate", "inspect",
					 "export", "lr-find", "plot", "partition", "help" };
#define NCOMMANDS (int)(sizeof(commands) / sizeof(commands[0]))

static char g_dir[512];		/* the group's temp directory */
static char g_cfg[600];		/* 4 epochs, keep 2, output.dir out */
static char g_cfg_text[2048];	/* its text, for inspect */
static char g_long[600];	/* 100000 epochs: only a signal ends it */
static char g_tiny[600];	/* tiny epochs, 100000 of them */
static char g_trunc[600];	/* truncated training images */
static char g_mismatch[600];	/* 600 images, 599 labels */
static unsigned char g_val_labels[NVAL];

static char g_out[1 << 17], g_err[1 << 17];

/* ---- small helpers ---------------------------------------------------- */

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s\n", \
			    r_, w_, g_out, g_err); \
		fail(); \
	} \
} while (0)

/* A fresh subdirectory of the group's directory. */
static const char *subdir(const char *name)
{
	const char *p = tu_path(g_dir, name);

	assert_int_equal(mkdir(p, 0777), 0);
	return p;
}

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- synthetic data and configs ----------------------------------------- */

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* NAME-images (n x 8 x 8) and NAME-labels (n) in dir: class c is the
 * image whose quadrant c is bright. The first cut bytes of the image file
 * are written only (0: all); nlabels labels. */
static void write_set(const char *dir, const char *name, int n, int nlabels,
		      size_t cut, uint32_t seed, unsigned char *labels_out)
{
	uint32_t idims[3] = { (uint32_t)n, 8, 8 }, ldims[1] = { (uint32_t)nlabels };
	unsigned char *pix = malloc((size_t)n * 64), *lab = malloc((size_t)nlabels + 1);
	unsigned char *img, *lfile;
	char path[1024];
	size_t isz, lsz;
	uint32_t s = seed;

	assert_non_null(pix);
	assert_non_null(lab);
	for (int i = 0; i < n; i++) {
		int c = (int)(lcg(&s) % CLASSES);
		if (i < nlabels)
			lab[i] = (unsigned char)c;
		if (labels_out && i < nlabels)
			labels_out[i] = (unsigned char)c;
		for (int p = 0; p < 64; p++) {
			int q = (p / 8 / 4) * 2 + (p % 8) / 4;
			pix[(size_t)i * 64 + p] = (unsigned char)
				(q == c ? 150 + lcg(&s) % 100 : lcg(&s) % 70);
		}
	}
	img = tu_idx_bytes(0x08, 3, idims, pix, (size_t)n * 64, &isz);
	lfile = tu_idx_bytes(0x08, 1, ldims, lab, (size_t)nlabels, &lsz);
	snprintf(path, sizeof(path), "%s/%s-images", dir, name);
	assert_int_equal(tu_write_file(path, img, cut ? cut : isz), 0);
	snprintf(path, sizeof(path), "%s/%s-labels", dir, name);
	assert_int_equal(tu_write_file(path, lfile, lsz), 0);
	free(pix);
	free(lab);
	free(img);
	free(lfile);
}

/* A config in g_dir; data paths relative to it, output.dir "out". */
static void write_cfg(char *path, size_t size, const char *file, const char *timages,
		      const char *tlabels, const char *val, int epochs,
		      int every, int keep, char *text_out, size_t text_size)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: synth\n"
		"seed: 7\n"
		"data:\n"
		"  train: {images: %s, labels: %s}\n"
		"  validation: {images: %s-images, labels: %s-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 16}, relu]\n"
		"    - layers: [{dense: 4}]\n"
		"  loss: softmax_cross_entropy\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule:\n"
		"  mode: flip-flop\n"
		"  epochs: %d\n"
		"  batch_size: %d\n"
		"output: {dir: out, checkpoint_every: %d, keep: %d}\n",
		timages, tlabels, val, val, epochs, BATCH, every, keep);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s", g_dir, file);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
	if (text_out)
		snprintf(text_out, text_size, "%s", text);
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	write_set(g_dir, "train", NTRAIN, NTRAIN, 0, 1, NULL);
	write_set(g_dir, "val", NVAL, NVAL, 0, 2, g_val_labels);
	write_set(g_dir, "tiny", NTINY, NTINY, 0, 3, NULL);
	write_set(g_dir, "tinyval", NTINYVAL, NTINYVAL, 0, 4, NULL);
	write_set(g_dir, "trunc", NTRAIN, NTRAIN, 16 + NTRAIN * 64 - 100, 1, NULL);
	write_set(g_dir, "short", NTRAIN, NTRAIN - 1, 0, 1, NULL);
	write_cfg(g_cfg, sizeof(g_cfg), "synth.yaml", "train-images", "train-labels",
		  "val", 4, 1, 2, g_cfg_text, sizeof(g_cfg_text));
	write_cfg(g_long, sizeof(g_long), "long.yaml", "train-images", "train-labels",
		  "val", 100000, 1, 2, NULL, 0);
	write_cfg(g_tiny, sizeof(g_tiny), "tiny.yaml", "tiny-images", "tiny-labels",
		  "tinyval", 100000, 1, 3, NULL, 0);
	write_cfg(g_trunc, sizeof(g_trunc), "trunc.yaml", "trunc-images", "trunc-labels",
		  "val", 2, 1, 2, NULL, 0);
	write_cfg(g_mismatch, sizeof(g_mismatch), "mismatch.yaml", "short-images",
		  "short-labels", "val", 2, 1, 2, NULL, 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- checkpoints and metrics -------------------------------------------- */

/* Load path with the library reader; fails the test on error. */
static void load_ckpt(struct akk_checkpoint *c, const char *path)
{
	struct akk_err e = { 0 };

	if (akk_checkpoint_read(c, path, &e)) {
		char msg[1200];
		akk_err_format(&e, msg, sizeof(msg));
		print_error("cannot read checkpoint: %s\n", msg);
		fail();
	}
}

/* Every tensor of the two checkpoints is bit-for-bit the same. */
static void assert_same_tensors(const char *a, const char *b)
{
	struct akk_checkpoint x, y;

	load_ckpt(&x, a);
	load_ckpt(&y, b);
	assert_int_equal(x.ngates, y.ngates);
	assert_int_equal(x.pos.epoch, y.pos.epoch);
	assert_int_equal(x.pos.id, y.pos.id);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].step, y.gates[g].step);
		assert_int_equal(x.gates[g].ntensors, y.gates[g].ntensors);
		assert_true(x.gates[g].ntensors > 0);
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *p = &x.gates[g].tensors[t];
			const struct akk_ckpt_tensor *q = &y.gates[g].tensors[t];
			assert_string_equal(p->name, q->name);
			assert_int_equal(p->count, q->count);
			if (memcmp(p->data, q->data, p->count * sizeof(float))) {
				print_error("tensor %s differs between %s and %s\n",
					    p->name, a, b);
				fail();
			}
		}
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
}

/* Every DIR/ *.bin loads; returns how many there are. */
static int check_all_bins(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct akk_checkpoint c;
		struct akk_err e = { 0 };

		if (len < 5 || strcmp(de->d_name + len - 4, ".bin"))
			continue;
		if (akk_checkpoint_read(&c, tu_path(dir, de->d_name), &e)) {
			char msg[1200];
			akk_err_format(&e, msg, sizeof(msg));
			print_error("unloadable checkpoint: %s\n", msg);
			closedir(d);
			fail();
		}
		akk_checkpoint_release(&c);
		n++;
	}
	closedir(d);
	return n;
}

/* Any DIR/ *.bin at all (temp files excepted). */
static int any_bin(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		found = len >= 5 && !strcmp(de->d_name + len - 4, ".bin");
	}
	closedir(d);
	return found;
}

/* Number of data rows of a metrics file (0 when missing). */
static int metrics_rows(const char *path)
{
	char *s = tu_slurp(path, NULL);
	int n = 0;

	if (!s)
		return 0;
	for (char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n > 0 ? n - 1 : 0;
}

/* The metrics file has exactly the header, then for each epoch from..to one
 * train row (NTRAIN samples) and one validation row (NVAL), then with
 * final one "final" row (NVAL samples, epoch to). */
static void check_metrics(const char *path, int from, int to, int final)
{
	char *s = tu_slurp(path, NULL), *line, *save = NULL;
	int want_epoch = from, want_val = 0, lines = 0, finals = 0;

	assert_non_null(s);
	line = strtok_r(s, "\n", &save);
	assert_non_null(line);
	assert_string_equal(line, HEADER);
	while ((line = strtok_r(NULL, "\n", &save))) {
		int epoch;
		char phase[32];
		long samples;

		lines++;
		if (sscanf(line, "%d,%31[^,],%ld,", &epoch, phase, &samples) != 3) {
			print_error("bad metrics row '%s'\n", line);
			fail();
		}
		if (!strcmp(phase, "final")) {
			assert_true(final);
			assert_int_equal(epoch, to);
			assert_int_equal(samples, NVAL);
			assert_int_equal(want_epoch, to + 1);
			finals++;
			continue;
		}
		if (epoch != want_epoch || strcmp(phase, want_val ? "validation" : "train")) {
			print_error("metrics row '%s': expected epoch %d %s\n", line,
				    want_epoch, want_val ? "validation" : "train");
			fail();
		}
		assert_int_equal(samples, want_val ? NVAL : NTRAIN);
		if (want_val)
			want_epoch++;
		want_val ^= 1;
	}
	assert_int_equal(want_epoch, to + 1);
	assert_int_equal(want_val, 0);
	assert_int_equal(finals, final ? 1 : 0);
	assert_int_equal(lines, 2 * (to - from + 1) + (final ? 1 : 0));
	free(s);
}

/* ---- child processes ---------------------------------------------------- */

/* Start akkctl with args (NULL-terminated, without argv[0]), stdout and
 * stderr to files. */
static pid_t spawn(const char *const *args, const char *outfile, const char *errfile)
{
	const char *argv[64];
	int n = 0;
	pid_t pid;

	argv[n++] = tu_akkctl();
	while (*args && n < 63)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int o = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		int e = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (in < 0 || o < 0 || e < 0)
			_exit(127);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The exit status; KILLED(sig) when a signal ended it; -2 after timeout
 * seconds (the child is then killed and reaped). */
#define KILLED(sig) (1000 + (sig))
static int wait_child(pid_t pid, double timeout)
{
	double end = now_s() + timeout;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		assert_true(r == 0);
		if (now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -2;
		}
		sleep_ms(20);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return KILLED(WTERMSIG(status));
	return -1;
}

/* "exit status N" or "killed by signal N", for messages. */
static const char *describe(int rc)
{
	static char buf[64];

	if (rc == -2)
		snprintf(buf, sizeof(buf), "still running at the time limit");
	else if (rc >= KILLED(0))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", rc - KILLED(0),
			 strsignal(rc - KILLED(0)));
	else
		snprintf(buf, sizeof(buf), "exit status %d", rc);
	return buf;
}

/* Poll until cond(arg) or timeout seconds; kills the child on timeout. */
static void wait_until(pid_t pid, int (*cond)(const char *), const char *arg,
		       double timeout, const char *what)
{
	double end = now_s() + timeout;

	while (!cond(arg)) {
		int status;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			print_error("akkctl ended (status 0x%x) before %s\n", status, what);
			fail();
		}
		if (now_s() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			print_error("no %s after %.0f s\n", what, timeout);
			fail();
		}
		sleep_ms(20);
	}
}

static int has_metrics_row(const char *path)
{
	return metrics_rows(path) >= 1;
}

/* ---- 1. arguments, help, usage ------------------------------------------ */

static void help_lists_commands(void **state)
{
	const char *flags[] = { "--help", "-h" };
	char first[sizeof(g_out)];

	(void)state;
	for (int f = 0; f < 2; f++) {
		assert_rc(ak(flags[f], NULL), 0);
		assert_string_equal(g_err, "");
		tu_assert_prefix(g_out, "usage: akkctl ");
		for (int i = 0; i < NCOMMANDS; i++) {
			char line[64];
			snprintf(line, sizeof(line), "\n  %s ", commands[i]);
			tu_assert_contains(g_out, line);
		}
		/* and every command the help lists is one of them: a new
		 * command gets the checks below too */
		for (const char *p = strstr(g_out, "\ncommands:\n"); p && (p = strstr(p + 1, "\n  "));) {
			char name[32];
			int known = 0;

			if (sscanf(p + 3, "%31s", name) != 1)
				break;
			for (int i = 0; i < NCOMMANDS; i++)
				known |= !strcmp(name, commands[i]);
			if (!known)
				fail_msg("'akkctl --help' lists '%s', which commands[] lacks", name);
		}
		if (f == 0)
			snprintf(first, sizeof(first), "%s", g_out);
		else
			assert_string_equal(g_out, first);
	}
	/* `help` alone prints the same */
	assert_rc(ak("help", NULL), 0);
	assert_string_equal(g_out, first);
	assert_string_equal(g_err, "");
}

static void version(void **state)
{
	unsigned a, b, c;
	int n = 0;

	(void)state;
	assert_rc(ak("--version", NULL), 0);
	assert_string_equal(g_err, "");
	assert_int_equal(sscanf(g_out, "akkctl %u.%u.%u\n%n", &a, &b, &c, &n), 3);
	assert_true(n > 0 && g_out[n] == '\0');
	assert_true(g_out[n - 1] == '\n');
}

static void no_arguments(void **state)
{
	(void)state;
	assert_rc(ak(NULL), 2);
	assert_string_equal(g_out, "");
	tu_assert_prefix(g_err, "usage: akkctl ");
	tu_assert_contains(g_err, "\n  train ");
}

static void unknown_command(void **state)
{
	(void)state;
	assert_rc(ak("frobnicate", NULL), 2);
	assert_string_equal(g_out, "");
	assert_string_equal(g_err,
		"akkctl: 'frobnicate' is not an akkctl command. See 'akkctl help'.\n");
	assert_rc(ak("help", "frobnicate", NULL), 2);
	assert_string_equal(g_out, "");
	assert_string_equal(g_err,
		"akkctl: 'frobnicate' is not an akkctl command. See 'akkctl help'.\n");
}

static void unknown_global_option(void **state)
{
	(void)state;
	assert_rc(ak("--frobnicate", NULL), 2);
	assert_string_equal(g_out, "");
	tu_assert_prefix(g_err, "akkctl: unknown option '--frobnicate'\nusage: akkctl ");
}

static void help_command(void **state)
{
	char viahelp[sizeof(g_out)];

	(void)state;
	for (int i = 0; i < NCOMMANDS; i++) {
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "usage: akkctl %s", commands[i]);
		assert_rc(ak("help", commands[i], NULL), 0);
		assert_string_equal(g_err, "");
		tu_assert_prefix(g_out, prefix);
		snprintf(viahelp, sizeof(viahelp), "%s", g_out);
		/* COMMAND --help and -h print the same, on stdout */
		assert_rc(ak(commands[i], "--help", NULL), 0);
		assert_string_equal(g_err, "");
		assert_string_equal(g_out, viahelp);
		assert_rc(ak(commands[i], "-h", NULL), 0);
		assert_string_equal(g_err, "");
		assert_string_equal(g_out, viahelp);
	}
	/* the train usage lists every option */
	assert_rc(ak("help", "train", NULL), 0);
	for (const char *const *o = (const char *const[]){ "--mode", "--epochs", "--out",
		     "--resume", "--set", "--quiet", NULL }; *o; o++)
		tu_assert_contains(g_out, *o);
}

static void unknown_option_per_command(void **state)
{
	int bad = 0;

	(void)state;
	for (int i = 0; i < NCOMMANDS; i++) {
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "usage: akkctl %s", commands[i]);
		int rc = ak(commands[i], "--frobnicate", NULL);
		if (rc != 2 || !strstr(g_err, prefix) || g_out[0]) {
			print_error("akkctl %s --frobnicate: exit %d (want 2, usage on stderr)\n"
				    "--- stdout:\n%s\n--- stderr:\n%s\n", commands[i], rc, g_out, g_err);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* House style: every error line starts "akkctl: " and quotes its subject;
 * this holds for a command's bad options too, not only the global ones. */
static void unknown_option_message(void **state)
{
	int bad = 0;

	(void)state;
	for (int i = 0; i < NCOMMANDS; i++) {
		ak(commands[i], "--frobnicate", NULL);
		if (!tu_check_prefix(g_err, "akkctl: ") ||
		    !tu_check_contains(g_err, "'--frobnicate'") ||
		    !tu_check_not_contains(g_err, "is not an akkctl command")) {
			print_error("(from akkctl %s --frobnicate)\n", commands[i]);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void missing_operand(void **state)
{
	static const struct { const char *cmd, *line; } cases[] = {
		{ "train", "akkctl: train needs a CONFIG\nusage: akkctl train " },
		{ "check", "akkctl: check needs a CONFIG\nusage: akkctl check " },
		{ "eval", "akkctl: eval needs a CHECKPOINT\nusage: akkctl eval " },
		{ "inspect", "akkctl: inspect needs a CHECKPOINT\nusage: akkctl inspect " },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_rc(ak(cases[i].cmd, NULL), 2);
		assert_string_equal(g_out, "");
		tu_assert_prefix(g_err, cases[i].line);
	}
	/* a missing file is bad input too */
	assert_rc(ak("check", tu_path(g_dir, "nonexistent.yaml"), NULL), 2);
	tu_assert_contains(g_err, "nonexistent.yaml");
	assert_rc(ak("eval", tu_path(g_dir, "nonexistent.bin"), NULL), 2);
	tu_assert_contains(g_err, "nonexistent.bin");
	/* extra operands */
	assert_rc(ak("check", g_cfg, "extra", NULL), 2);
	tu_assert_prefix(g_err, "akkctl: unexpected argument 'extra'\n");
	assert_rc(ak("train", g_cfg, "--epochs", "0", NULL), 2);
	/* bench's repeats are epochs or a number of batches, not both */
	assert_rc(ak("bench", "--config", g_cfg, "--epochs", "2", "--steps", "3", NULL), 2);
	tu_assert_prefix(g_err, "akkctl: --epochs and --steps: give one (--steps N times N "
			 "training batches a mode instead of epochs)\n");
	assert_string_equal(g_out, "");
}

/* ---- 2. check ----------------------------------------------------------- */

static void check_prints_table(void **state)
{
	char *line, *save = NULL;
	int total = 0, layers = 0;

	(void)state;
	assert_rc(ak("check", g_cfg, NULL), 0);
	assert_string_equal(g_err, "");
	tu_assert_prefix(g_out, "synth: 2 gates, input [64], loss softmax_cross_entropy, mode flip-flop\n");
	for (line = strtok_r(g_out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int g, l;
		char kind[32], shape[32];
		size_t params;
		if (!strncmp(line, "total ", 6)) {
			assert_int_equal(sscanf(line, "total %zu", &params), 1);
			assert_int_equal(params, NPARAMS);
			total++;
		} else if (sscanf(line, "%d %d %31s %31s %zu", &g, &l, kind, shape, &params) == 5) {
			if (g == 1 && l == 1) {
				assert_string_equal(kind, "dense");
				assert_string_equal(shape, "[16]");
				assert_int_equal(params, 64 * 16 + 16);
			} else if (g == 1 && l == 2) {
				assert_string_equal(kind, "relu");
				assert_int_equal(params, 0);
			} else if (g == 2 && l == 1) {
				assert_string_equal(kind, "dense");
				assert_string_equal(shape, "[4]");
				assert_int_equal(params, 16 * 4 + 4);
			}
			layers++;
		}
	}
	assert_int_equal(total, 1);
	assert_int_equal(layers, 3);
}

/* The check table's columns line up whatever the kinds' names: the
 * output column starts where its header does on every layer row
 * (global_avgpool is longer than the old 12-character kind column). */
static void check_columns_align(void **state)
{
	static const char cfg[] =
		"name: cols\ndata:\n  train: {images: ti, labels: tl}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n"
		"    - layers: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, global_avgpool, {dense: 3}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	const char *path = tu_path(g_dir, "cols.yaml");
	char *line, *save = NULL;
	long col = -1;
	int rows = 0;

	(void)state;
	assert_int_equal(tu_write_file(path, cfg, strlen(cfg)), 0);
	/* check looks for the data files: empty ones do */
	assert_int_equal(tu_write_file(tu_path(g_dir, "ti"), "", 0), 0);
	assert_int_equal(tu_write_file(tu_path(g_dir, "tl"), "", 0), 0);
	assert_rc(ak("check", path, NULL), 0);
	for (line = strtok_r(g_out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *o = strstr(line, "output");
		int g, l;

		if (!strncmp(line, "gate  layer", 11) && o) {
			col = o - line;
		} else if (col > 0 && sscanf(line, "%d %d", &g, &l) == 2 && strchr(line, '[')) {
			if (strchr(line, '[') - line != col)
				fail_msg("output column at %ld, header at %ld: '%s'",
					 (long)(strchr(line, '[') - line), col, line);
			rows++;
		}
	}
	assert_int_equal(rows, 3);
}

static void check_bad_set(void **state)
{
	(void)state;
	assert_rc(ak("check", g_cfg, "--set", "schedule.batch_size=0", NULL), 2);
	assert_string_equal(g_out, "");
	assert_string_equal(g_err,
		"akkctl: --set schedule.batch_size=0: 'batch_size' must be at least 1, got 0\n");
	/* a good --set is taken */
	assert_rc(ak("check", g_cfg, "--set", "network.gates.0.layers.0.dense=8", NULL), 0);
	tu_assert_contains(g_out, "\ntotal ");
	{
		size_t params;
		const char *t = strstr(g_out, "\ntotal ");
		assert_int_equal(sscanf(t, "\ntotal %zu", &params), 1);
		assert_int_equal(params, 64 * 8 + 8 + 8 * 4 + 4);
	}
}

/* ---- 3. train ----------------------------------------------------------- */

static void train_quiet(void **state)
{
	const char *out = tu_path(g_dir, "out");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", NULL), 0);
	assert_string_equal(g_out, "");
	assert_string_equal(g_err, "");
	/* output.dir is relative to the config */
	check_metrics(tu_path(out, "metrics.csv"), 1, 4, 0);
	assert_true(tu_exists(tu_path(out, "last.bin")));
	assert_true(tu_exists(tu_path(out, "best.bin")));
	/* keep: 2 of 4 */
	assert_false(tu_exists(tu_path(out, "epoch-0001.bin")));
	assert_false(tu_exists(tu_path(out, "epoch-0002.bin")));
	assert_true(tu_exists(tu_path(out, "epoch-0003.bin")));
	assert_true(tu_exists(tu_path(out, "epoch-0004.bin")));
	assert_int_equal(check_all_bins(out), 4);
	/* last.bin and epoch-0004.bin hold the same weights */
	assert_same_tensors(tu_path(out, "last.bin"), tu_path(out, "epoch-0004.bin"));
	{
		struct akk_checkpoint c;
		long steps = (NTRAIN + BATCH - 1) / BATCH * 4;
		load_ckpt(&c, tu_path(out, "last.bin"));
		assert_int_equal(c.pos.epoch, 4);
		assert_int_equal(c.pos.index, 0);
		assert_int_equal(c.pos.id, steps);
		assert_int_equal(c.metrics.epoch, 4);
		assert_true(c.metrics.val_acc > 0.9);	/* the classes are easy */
		akk_checkpoint_release(&c);
	}
}

static void train_options(void **state)
{
	const char *o = subdir("opts");
	const char *unused = tu_path(g_dir, "out-unused");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--mode", "wheels", "--epochs", "2",
		     "--out", o, "--set", "output.keep=1", NULL), 0);
	assert_string_equal(g_err, "");
	check_metrics(tu_path(o, "metrics.csv"), 1, 2, 1);
	assert_false(tu_exists(unused));
	assert_false(tu_exists(tu_path(o, "epoch-0001.bin")));
	assert_true(tu_exists(tu_path(o, "epoch-0002.bin")));
	assert_true(tu_exists(tu_path(o, "last.bin")));
	assert_rc(ak("inspect", tu_path(o, "last.bin"), NULL), 0);
	tu_assert_contains(g_out, "\nschedule     wheels\n");
	tu_assert_contains(g_out, "\noverride     --set output.keep=1\n");
	tu_assert_contains(g_out, "\nposition     epoch 2, batch 0 ");
	/* the config as run, options and --set applied, beside the metrics */
	{
		struct akk_spec sp;
		struct akk_err e = { 0 };
		size_t len;
		char *text = tu_slurp(tu_path(o, "config.yaml"), &len);

		assert_non_null(text);
		if (akk_spec_parse(&sp, text, len, "config.yaml", NULL, NULL, 0, &e))
			fail_msg("config.yaml: %s\n%s", e.msg, text);
		assert_int_equal(sp.sched.mode, AKK_MODE_WHEELS);
		assert_int_equal(sp.sched.epochs, 2);
		assert_int_equal(sp.out.keep, 1);
		akk_spec_release(&sp);
		free(text);
		assert_rc(ak("check", tu_path(o, "config.yaml"), NULL), 0);
	}
	/* short options too */
	o = subdir("opts-short");
	assert_rc(ak("train", g_cfg, "-q", "-m", "flip-flop", "-e", "1", "-o", o,
		     "-s", "output.checkpoint_every=0", NULL), 0);
	check_metrics(tu_path(o, "metrics.csv"), 1, 1, 0);
	assert_true(tu_exists(tu_path(o, "last.bin")));
	assert_false(tu_exists(tu_path(o, "epoch-0001.bin")));
	/* bad option values */
	assert_rc(ak("train", g_cfg, "--mode", "sideways", "--out", o, NULL), 2);
	tu_assert_contains(g_err, "sideways");
	assert_rc(ak("train", g_cfg, "--epochs", "zero", "--out", o, NULL), 2);
	assert_rc(ak("train", g_cfg, "--set", "schedule.frobnicate=1", "--out", o, NULL), 2);
	tu_assert_contains(g_err, "frobnicate");
}

/* Which weights each figure of a wheels run measured: its epoch lines say
 * the validation ran during training and on which weight versions; the
 * summary's best figure names its versions and the one best.bin holds
 * (measured only when it is the final pass), the final figure the final
 * weights' version. Flip-flop's lines say nothing of the kind. */
static void wheels_names_weight_versions(void **state)
{
	const char *o = subdir("versions");
	long steps = (NTRAIN + BATCH - 1) / BATCH * 2;
	struct akk_checkpoint c;
	char want[256], *line;

	(void)state;
	assert_rc(ak("train", g_cfg, "--mode", "wheels", "--epochs", "2",
		     "--out", o, NULL), 0);
	tu_assert_contains(g_err, "epoch 1/2: ");
	tu_assert_contains(strstr(g_err, "epoch 1/2: "), "% (during training, weight version");
	line = strstr(g_err, "summary: ");
	assert_non_null(line);
	snprintf(want, sizeof(want), "; final validation accuracy ");
	tu_assert_contains(line, want);
	snprintf(want, sizeof(want), "(final pass on the final weights, version %ld)", steps);
	tu_assert_contains(line, want);
	load_ckpt(&c, tu_path(o, "best.bin"));
	if (strstr(line, "(final pass) on"))
		snprintf(want, sizeof(want), "(final pass) on the final weights, version %ld, which best.bin holds;",
			 c.pos.id);
	else
		snprintf(want, sizeof(want), "; best.bin holds version %ld, not measured: akkctl eval measures it)",
			 c.pos.id);
	tu_assert_contains(line, want);
	akk_checkpoint_release(&c);
	o = subdir("versions-ff");
	assert_rc(ak("train", g_cfg, "--mode", "flip-flop", "--epochs", "1",
		     "--out", o, NULL), 0);
	tu_assert_not_contains(g_err, "during training");
	tu_assert_not_contains(g_err, "weight version");
}

/* ---- 4. plain progress -------------------------------------------------- */

static void train_progress_lines(void **state)
{
	const char *o = subdir("progress");
	char *line, *save = NULL;
	int next = 1;

	(void)state;
	assert_rc(ak("train", g_cfg, "--epochs", "3", "--out", o, NULL), 0);
	assert_string_equal(g_out, "");
	tu_assert_not_contains(g_err, "\r");
	tu_assert_not_contains(g_err, "\033");
	for (line = strtok_r(g_err, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int n, m, k = 0;
		if (strncmp(line, "epoch ", 6))
			continue;
		assert_int_equal(sscanf(line, "epoch %d/%d:%n", &n, &m, &k), 2);
		assert_true(k > 0);
		assert_int_equal(n, next);
		assert_int_equal(m, 3);
		next++;
	}
	assert_int_equal(next, 4);
}

/* ---- 5. eval and inspect ------------------------------------------------ */

/* A trained run shared by the eval/inspect tests. */
static const char *trained(void)
{
	static char dir[1024];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "%s", subdir("trained"));
		assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "3", "--out", dir, NULL), 0);
	}
	return dir;
}

static void eval_checkpoint(void **state)
{
	const char *ck = tu_path(trained(), "last.bin");
	const char *csv = tu_path(g_dir, "pred.csv");
	double acc;

	(void)state;
	assert_rc(ak("eval", ck, NULL), 0);
	assert_string_equal(g_err, "");
	tu_assert_contains(g_out, "accuracy");
	tu_assert_prefix(g_out, "samples 200 ");
	assert_int_equal(sscanf(strstr(g_out, "accuracy"), "accuracy %lf%%", &acc), 1);
	assert_true(acc > 90);
	tu_assert_not_contains(g_out, "confusion");

	assert_rc(ak("eval", ck, "--confusion", "--batch", "7", NULL), 0);
	tu_assert_contains(g_out, "confusion matrix");
	{
		/* the matrix sums to the sample count */
		const char *m = strstr(g_out, "confusion matrix");
		long sum = 0;
		m = strchr(m, '\n') + 1;	/* title */
		m = strchr(m, '\n') + 1;	/* column header */
		for (int r = 0; r < CLASSES; r++) {
			int row, off;
			long v;
			assert_int_equal(sscanf(m, "%d%n", &row, &off), 1);
			assert_int_equal(row, r);
			m += off;
			for (int c = 0; c < CLASSES; c++) {
				assert_int_equal(sscanf(m, "%ld%n", &v, &off), 1);
				sum += v;
				m += off;
			}
		}
		assert_int_equal(sum, NVAL);
	}

	assert_rc(ak("eval", ck, "--predictions", csv, NULL), 0);
	{
		char *s = tu_slurp(csv, NULL), *line, *save = NULL;
		int i = 0;
		assert_non_null(s);
		line = strtok_r(s, "\n", &save);
		assert_string_equal(line, "index,label,predicted,probability");
		while ((line = strtok_r(NULL, "\n", &save))) {
			int idx, label, pred;
			double p;
			assert_int_equal(sscanf(line, "%d,%d,%d,%lf", &idx, &label, &pred, &p), 4);
			assert_int_equal(idx, i);
			assert_int_equal(label, g_val_labels[i]);
			assert_true(pred >= 0 && pred < CLASSES);
			assert_true(p >= 0 && p <= 1);
			i++;
		}
		assert_int_equal(i, NVAL);
		free(s);
	}

	assert_rc(ak("eval", ck, "--images", tu_path(g_dir, "train-images"),
		     "--labels", tu_path(g_dir, "train-labels"), NULL), 0);
	tu_assert_prefix(g_out, "samples 600 ");
	/* --images without --labels, --data with --images */
	assert_rc(ak("eval", ck, "--images", tu_path(g_dir, "train-images"), NULL), 2);
	assert_rc(ak("eval", ck, "--data", g_dir, "--images", tu_path(g_dir, "train-images"),
		     "--labels", tu_path(g_dir, "train-labels"), NULL), 2);
	assert_rc(ak("eval", ck, "--batch", "0", NULL), 2);
}

static void bad_checkpoints(void **state)
{
	const char *ck = tu_path(trained(), "last.bin");
	const char *cut = tu_path(g_dir, "cut.bin"), *flip = tu_path(g_dir, "flip.bin");
	const char *text = tu_path(g_dir, "text.bin");
	static const char *const cmds[] = { "eval", "inspect" };
	size_t len;
	char *data = tu_slurp(ck, &len);

	(void)state;
	assert_non_null(data);
	assert_true(len > 100);
	assert_int_equal(tu_write_file(cut, data, len - 10), 0);
	data[len / 2] ^= 0x10;
	assert_int_equal(tu_write_file(flip, data, len), 0);
	assert_int_equal(tu_write_file(text, "name: synth\nseed: 7\n", 20), 0);
	free(data);
	for (int i = 0; i < 2; i++) {
		assert_rc(ak(cmds[i], cut, NULL), 2);
		assert_string_equal(g_out, "");
		tu_assert_prefix(g_err, "akkctl: ");
		tu_assert_contains(g_err, cut);
		tu_assert_contains(g_err, "truncated");

		assert_rc(ak(cmds[i], flip, NULL), 2);
		assert_string_equal(g_out, "");
		tu_assert_contains(g_err, flip);
		tu_assert_contains(g_err, "corrupt");

		assert_rc(ak(cmds[i], text, NULL), 2);
		assert_string_equal(g_out, "");
		tu_assert_contains(g_err, text);
		tu_assert_contains(g_err, "not an akkctl checkpoint");

		/* an empty file is not a checkpoint either */
		assert_int_equal(tu_write_file(text, "", 0), 0);
		assert_rc(ak(cmds[i], text, NULL), 2);
		tu_assert_contains(g_err, "not an akkctl checkpoint");
		assert_int_equal(tu_write_file(text, "name: synth\nseed: 7\n", 20), 0);
	}
	/* nor does --resume take them */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", flip, "--out",
		     tu_path(g_dir, "resume-bad"), NULL), 2);
	tu_assert_contains(g_err, "corrupt");
}

static void inspect_checkpoint(void **state)
{
	const char *ck = tu_path(trained(), "last.bin");

	(void)state;
	assert_rc(ak("inspect", ck, NULL), 0);
	assert_string_equal(g_err, "");
	tu_assert_contains(g_out, "format       version 2\n");
	tu_assert_contains(g_out, "schedule     flip-flop\n");
	tu_assert_contains(g_out, "override     --set schedule.epochs=3\n");
	tu_assert_contains(g_out, "position     epoch 3, batch 0 ");
	tu_assert_contains(g_out, "network      synth: 2 gates, 1108 parameters, 4 classes\n");
	tu_assert_contains(g_out, "last epoch   3: ");
	/* the tensors, with their shapes */
	{
		struct akk_checkpoint c;
		int ntensors = 0;
		load_ckpt(&c, ck);
		for (int g = 0; g < c.ngates; g++)
			for (int t = 0; t < c.gates[g].ntensors; t++) {
				tu_assert_contains(g_out, c.gates[g].tensors[t].name);
				ntensors++;
			}
		assert_true(ntensors >= 4);
		akk_checkpoint_release(&c);
	}
	tu_assert_contains(g_out, "[16, 64]");
	tu_assert_contains(g_out, "[4, 16]");
	/* the config, as written */
	tu_assert_contains(g_out, "\n--- config ---\n");
	tu_assert_contains(g_out, g_cfg_text);
	/* a run directory: its last.bin (tests/test_ui.c has the rules) */
	{
		char want[1200];
		snprintf(want, sizeof(want), "using '%s/last.bin'\n", trained());
		assert_rc(ak("inspect", trained(), NULL), 0);
		assert_string_equal(g_err, want);
	}
}

/* ---- 6. resume ---------------------------------------------------------- */

static void resume_is_bit_exact(void **state)
{
	const char *a = subdir("resume-a"), *b = subdir("resume-b"), *c = subdir("resume-c");

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "4", "--out", a, NULL), 0);
	/* B: 2 epochs, then resume from the file */
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--out", b, NULL), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", tu_path(b, "last.bin"), "--epochs", "4",
		     "--out", b, NULL), 0);
	assert_string_equal(g_err, "");
	/* C: 2 epochs, then resume from the directory */
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "2", "--out", c, NULL), 0);
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", c, "--epochs", "4",
		     "--out", c, NULL), 0);
	assert_same_tensors(tu_path(a, "last.bin"), tu_path(b, "last.bin"));
	assert_same_tensors(tu_path(a, "last.bin"), tu_path(c, "last.bin"));
	assert_same_tensors(tu_path(a, "epoch-0004.bin"), tu_path(b, "epoch-0004.bin"));
	/* appended to, one header */
	check_metrics(tu_path(b, "metrics.csv"), 1, 4, 0);
	check_metrics(tu_path(c, "metrics.csv"), 1, 4, 0);
	/* the best accuracy survives the resume */
	{
		struct akk_checkpoint x, y;
		load_ckpt(&x, tu_path(a, "last.bin"));
		load_ckpt(&y, tu_path(b, "last.bin"));
		assert_true(x.metrics.best_val_acc == y.metrics.best_val_acc);
		akk_checkpoint_release(&x);
		akk_checkpoint_release(&y);
	}
	/* nothing left to do: says so, exits 0, writes nothing */
	assert_rc(ak("train", g_cfg, "--resume", b, "--epochs", "4", "--out", b, NULL), 0);
	tu_assert_contains(g_err, "already trained 4 of 4 epochs");
	check_metrics(tu_path(b, "metrics.csv"), 1, 4, 0);
	/* not quiet: says where it resumes */
	assert_rc(ak("train", g_cfg, "--resume", b, "--epochs", "5", "--out", b, NULL), 0);
	tu_assert_contains(g_err, "resuming from ");
	tu_assert_contains(g_err, "epoch 5/5:");
	check_metrics(tu_path(b, "metrics.csv"), 1, 5, 0);
	/* --resume of nothing */
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", tu_path(g_dir, "nonexistent"),
		     "--out", b, NULL), 2);
	tu_assert_contains(g_err, "nonexistent");
	assert_rc(ak("train", g_cfg, "--quiet", "--resume", subdir("resume-empty"),
		     "--out", b, NULL), 2);
	tu_assert_contains(g_err, "no readable checkpoint");
}

/* ---- 7. SIGINT ---------------------------------------------------------- */

static void sigint_stops_cleanly(void **state)
{
	const char *d = subdir("sigint");
	const char *args[] = { "train", g_long, "--out", d, NULL };
	const char *errf = tu_path(g_dir, "sigint.err");
	char epochs[32], *err;
	struct akk_checkpoint c;
	pid_t pid;
	int rc;

	(void)state;
	pid = spawn(args, tu_path(g_dir, "sigint.out"), errf);
	wait_until(pid, has_metrics_row, tu_path(d, "metrics.csv"), 60, "metrics row");
	assert_int_equal(kill(pid, SIGINT), 0);
	rc = wait_child(pid, 60);
	err = tu_slurp(errf, NULL);
	assert_non_null(err);
	if (rc != 130) {
		print_error("after SIGINT: %s, expected exit status 130\n--- stderr:\n%s\n",
			    describe(rc), err);
		fail();
	}
	tu_assert_contains(err, "interrupted");
	free(err);
	load_ckpt(&c, tu_path(d, "last.bin"));
	assert_true(c.pos.epoch >= 1);
	snprintf(epochs, sizeof(epochs), "%d", c.pos.epoch + 1);
	akk_checkpoint_release(&c);
	check_all_bins(d);
	assert_rc(ak("train", g_long, "--quiet", "--resume", d, "--epochs", epochs,
		     "--out", d, NULL), 0);
	load_ckpt(&c, tu_path(d, "last.bin"));
	assert_int_equal(c.pos.epoch, atoi(epochs));
	assert_int_equal(c.pos.index, 0);
	akk_checkpoint_release(&c);
}

static void double_sigint_stops_now(void **state)
{
	const char *d = subdir("sigint2");
	const char *args[] = { "train", g_long, "--out", d, NULL };
	pid_t pid;
	int rc;

	(void)state;
	pid = spawn(args, tu_path(g_dir, "sigint2.out"), tu_path(g_dir, "sigint2.err"));
	wait_until(pid, any_bin, d, 60, "checkpoint");
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(kill(pid, SIGINT), 0);
	rc = wait_child(pid, 10);
	if (rc != 130) {
		char *err = tu_slurp(tu_path(g_dir, "sigint2.err"), NULL);
		print_error("after two SIGINTs: %s, expected exit status 130\n--- stderr:\n%s\n",
			    describe(rc), err ? err : "");
		free(err);
		fail();
	}
	assert_true(check_all_bins(d) >= 1);
}

static void sigterm_stops_cleanly(void **state)
{
	const char *d = subdir("sigterm");
	const char *args[] = { "train", g_long, "--quiet", "--out", d, NULL };
	pid_t pid;
	int rc;

	(void)state;
	pid = spawn(args, tu_path(g_dir, "sigterm.out"), tu_path(g_dir, "sigterm.err"));
	wait_until(pid, has_metrics_row, tu_path(d, "metrics.csv"), 60, "metrics row");
	assert_int_equal(kill(pid, SIGTERM), 0);
	rc = wait_child(pid, 60);
	if (rc != 130) {
		print_error("after SIGTERM: %s, expected exit status 130\n", describe(rc));
		fail();
	}
	assert_true(tu_exists(tu_path(d, "last.bin")));
	assert_true(check_all_bins(d) >= 2);
}

/* ---- 8. non-finite ------------------------------------------------------ */

static void nonfinite_keeps_checkpoints(void **state)
{
	const char *d = subdir("nonfinite");
	char *last, *ep1, *last2, *ep12;
	size_t nlast, nep1, n2;

	(void)state;
	assert_rc(ak("train", g_cfg, "--quiet", "--epochs", "1", "--out", d, NULL), 0);
	last = tu_slurp(tu_path(d, "last.bin"), &nlast);
	ep1 = tu_slurp(tu_path(d, "epoch-0001.bin"), &nep1);
	assert_non_null(last);
	assert_non_null(ep1);
	assert_rc(ak("train", g_cfg, "--resume", d, "--epochs", "3", "--out", d,
		     "--set", "optimizer.lr=1e30", NULL), 1);
	tu_assert_contains(g_err, "non-finite");
	if (!strstr(g_err, "gate") && !strstr(g_err, "step")) {
		print_error("expected \"gate\" or \"step\" in:\n%s\n", g_err);
		fail();
	}
	last2 = tu_slurp(tu_path(d, "last.bin"), &n2);
	assert_non_null(last2);
	assert_true(n2 == nlast && !memcmp(last, last2, n2));
	ep12 = tu_slurp(tu_path(d, "epoch-0001.bin"), &n2);
	assert_non_null(ep12);
	assert_true(n2 == nep1 && !memcmp(ep1, ep12, n2));
	check_all_bins(d);
	free(last);
	free(ep1);
	free(last2);
	free(ep12);
}

/* ---- 9. kill -9 --------------------------------------------------------- */

static void sigkill_leaves_whole_checkpoints(void **state)
{
	(void)state;
	for (int round = 0; round < 15; round++) {
		char name[32];
		const char *d, *args[6];
		pid_t pid;

		snprintf(name, sizeof(name), "kill9-%02d", round);
		d = subdir(name);
		args[0] = "train";
		args[1] = g_tiny;
		args[2] = "--quiet";
		args[3] = "--out";
		args[4] = d;
		args[5] = NULL;
		pid = spawn(args, tu_path(g_dir, "kill9.out"), tu_path(g_dir, "kill9.err"));
		wait_until(pid, any_bin, d, 60, "checkpoint");
		sleep_ms((round * 7) % 23);
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(wait_child(pid, 30), KILLED(SIGKILL));
		assert_true(check_all_bins(d) >= 1);
	}
}

/* Epoch numbers past 9999 still sort and prune as numbers. */
static void keep_past_epoch_9999(void **state)
{
	const char *d = subdir("e10k");

	(void)state;
	assert_rc(ak("train", g_tiny, "--quiet", "--epochs", "10000", "--out", d,
		     "--set", "output.checkpoint_every=5000", "--set", "output.keep=1", NULL), 0);
	assert_false(tu_exists(tu_path(d, "epoch-5000.bin")));
	assert_true(tu_exists(tu_path(d, "epoch-10000.bin")));
	assert_rc(ak("train", g_tiny, "--quiet", "--epochs", "10001", "--out", d,
		     "--resume", d, "--set", "output.checkpoint_every=5000",
		     "--set", "output.keep=1", NULL), 0);
	assert_true(tu_exists(tu_path(d, "epoch-10000.bin")));
	{
		struct akk_checkpoint c;
		load_ckpt(&c, tu_path(d, "last.bin"));
		assert_int_equal(c.pos.epoch, 10001);
		akk_checkpoint_release(&c);
	}
}

/* ---- 10. bad data ------------------------------------------------------- */

static void bad_data(void **state)
{
	const char *o = tu_path(g_dir, "bad-out");

	(void)state;
	assert_rc(ak("train", g_trunc, "--quiet", "--out", o, NULL), 2);
	tu_assert_prefix(g_err, "akkctl: ");
	tu_assert_contains(g_err, "trunc-images");
	tu_assert_contains(g_err, "truncated");
	assert_int_equal(strchr(g_err, '\n') - g_err + 1, (long)strlen(g_err));
	assert_rc(ak("train", g_mismatch, "--quiet", "--out", o, NULL), 2);
	tu_assert_contains(g_err, "short-images");
	tu_assert_contains(g_err, "short-labels");
	tu_assert_contains(g_err, "600");
	tu_assert_contains(g_err, "599");
	/* check does not read data; eval does */
	assert_rc(ak("eval", tu_path(trained(), "last.bin"), "--images", tu_path(g_dir, "trunc-images"),
		     "--labels", tu_path(g_dir, "trunc-labels"), NULL), 2);
	tu_assert_contains(g_err, "truncated");
	/* nothing was created for the failed runs */
	assert_false(tu_exists(tu_path(o, "last.bin")));
}

/* validation: {folds: 3} trains three runs in fold-1..3, each
 * validated on its own fold (12 of 36 rows, 4 of each class), then the
 * summary on stderr and in folds.csv; eval of a fold's checkpoint
 * validates on that fold; --resume is refused; a class with fewer rows
 * than folds is an error at the validation key. */
static void train_folds_cross_validates(void **state)
{
	char dir[512], table[64 * 36], *csv, cfg[600], cfg2[600];
	size_t len = 0;
	int lines = 0;
	uint32_t s = 7;
	const char *text =
		"seed: 3\n"
		"data:\n"
		"  format: csv\n"
		"  train: {file: %s}\n"
		"  validation: {folds: 3}\n"
		"network:\n"
		"  input: [2]\n"
		"  gates:\n"
		"    - layers: [{dense: 8}, relu, {dense: 3}]\n"
		"optimizer: {type: adam, lr: 0.05}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: 6}\n"
		"output: {dir: out}\n";

	(void)state;
	snprintf(dir, sizeof(dir), "%s", subdir("folds"));
	/* three well-separated classes, 12 rows each */
	for (int i = 0; i < 36; i++)
		len += (size_t)snprintf(table + len, sizeof(table) - len, "%d.%u,%d.%u,%d\n",
					4 * (i % 3), lcg(&s) % 100, -4 * (i % 3), lcg(&s) % 100, i % 3);
	assert_int_equal(tu_write_file(tu_path(dir, "t.csv"), table, len), 0);
	snprintf(cfg, sizeof(cfg), "%s", tu_path(dir, "folds.yaml"));
	{
		char buf[1024];
		int n = snprintf(buf, sizeof(buf), text, "t.csv");
		assert_int_equal(tu_write_file(cfg, buf, (size_t)n), 0);
		/* class 2 with 2 rows: fewer than the 3 folds */
		snprintf(cfg2, sizeof(cfg2), "%s", tu_path(dir, "few.yaml"));
		n = snprintf(buf, sizeof(buf), text, "few.csv");
		assert_int_equal(tu_write_file(cfg2, buf, (size_t)n), 0);
		assert_int_equal(tu_write_file(tu_path(dir, "few.csv"),
					       "0,0,0\n0,1,0\n0,2,0\n1,0,1\n1,1,1\n1,2,1\n2,0,2\n2,1,2\n",
					       48), 0);
	}
	assert_rc(ak("train", cfg, NULL), 0);
	for (int f = 1; f <= 3; f++) {
		char name[24];
		snprintf(name, sizeof(name), "fold-%d", f);
		assert_true(tu_exists(tu_path(tu_path(tu_path(dir, "out"), name), "last.bin")));
		assert_true(tu_exists(tu_path(tu_path(tu_path(dir, "out"), name), "metrics.csv")));
		snprintf(table, sizeof(table), "fold %d of 3: %s/out/fold-%d", f, dir, f);
		tu_assert_line(g_err, table);
	}
	tu_assert_contains(g_err, "\n3-fold cross-validation: validation accuracy ");
	tu_assert_contains(g_err, "; mean ");
	assert_non_null(csv = tu_slurp(tu_path(tu_path(dir, "out"), "folds.csv"), &len));
	tu_assert_prefix(csv, "fold,train_samples,validation_samples,validation_loss,validation_accuracy\n"
			 "1,24,12,");
	tu_assert_contains(csv, "\n2,24,12,");
	tu_assert_contains(csv, "\n3,24,12,");
	tu_assert_contains(csv, "\nmean,,,");
	tu_assert_contains(csv, "\nstd,,,");
	tu_assert_contains(csv, "\nmin,,,");
	tu_assert_contains(csv, "\nmax,,,");
	for (size_t i = 0; i < len; i++)
		lines += csv[i] == '\n';
	assert_int_equal(lines, 1 + 3 + 4);
	free(csv);
	/* a fold's checkpoint evaluates on its own held-out fold */
	assert_rc(ak("eval", tu_path(tu_path(tu_path(dir, "out"), "fold-2"), "last.bin"), NULL), 0);
	tu_assert_prefix(g_out, "samples 12  loss ");
	/* no resume of a folds run; a run directory already there is refused */
	assert_rc(ak("train", cfg, "--resume", tu_path(tu_path(dir, "out"), "fold-1"), NULL), 2);
	tu_assert_line(g_err, "akkctl: --resume: a config with validation: {folds: 3} trains 3 runs; resume one of them from a config with its own split, or train the folds again");
	assert_rc(ak("train", cfg, "--quiet", NULL), 2);
	tu_assert_contains(g_err, "fold-1");
	assert_rc(ak("train", cfg, "--quiet", "--force", NULL), 0);
	assert_string_equal(g_err, "");	/* --quiet: quiet for folds too */
	/* stratified folds need every class in every fold */
	assert_rc(ak("train", cfg2, "--quiet", "--out", tu_path(dir, "few"), NULL), 2);
	snprintf(table, sizeof(table), "akkctl: %s:5:3: class 2 has 2 samples, fewer than the 3 folds (stratified: every fold holds each class)",
		 cfg2);
	tu_assert_line(g_err, table);
	assert_false(tu_exists(tu_path(tu_path(dir, "few"), "fold-1")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(help_lists_commands),
		cmocka_unit_test(version),
		cmocka_unit_test(no_arguments),
		cmocka_unit_test(unknown_command),
		cmocka_unit_test(unknown_global_option),
		cmocka_unit_test(help_command),
		cmocka_unit_test(unknown_option_per_command),
		cmocka_unit_test(unknown_option_message),
		cmocka_unit_test(missing_operand),
		cmocka_unit_test(check_prints_table),
		cmocka_unit_test(check_columns_align),
		cmocka_unit_test(check_bad_set),
		cmocka_unit_test(train_quiet),
		cmocka_unit_test(train_options),
		cmocka_unit_test(wheels_names_weight_versions),
		cmocka_unit_test(train_progress_lines),
		cmocka_unit_test(eval_checkpoint),
		cmocka_unit_test(bad_checkpoints),
		cmocka_unit_test(inspect_checkpoint),
		cmocka_unit_test(resume_is_bit_exact),
		cmocka_unit_test(sigint_stops_cleanly),
		cmocka_unit_test(double_sigint_stops_now),
		cmocka_unit_test(sigterm_stops_cleanly),
		cmocka_unit_test(nonfinite_keeps_checkpoints),
		cmocka_unit_test(sigkill_leaves_whole_checkpoints),
		cmocka_unit_test(keep_past_epoch_9999),
		cmocka_unit_test(bad_data),
		cmocka_unit_test(train_folds_cross_validates),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
