/* test_ui.c - what akkctl says to its user outside training: git's "did
 * you mean" for a misspelled command, eval and inspect given a run
 * directory, their --help, names from a forged checkpoint printed without
 * raw terminal escapes, eval's refusal of a non-finite loss, and man pages
 * that groff formats without a warning.
 *
 * Checkpoints are written directly with the checkpoint writer (no
 * training): a 64-16-4 net over 8x8 synthetic images with 4 classes. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/checkpoint.h"
#include "model/gate.h"
#include "model/model.h"
#include "config/spec.h"
#include "testutil.h"

#define CFG(name) \
	"name: " name "\n" \
	"seed: 7\n" \
	"data:\n" \
	"  train: {images: val-images, labels: val-labels}\n" \
	"  validation: {images: val-images, labels: val-labels}\n" \
	"network:\n" \
	"  input: [64]\n" \
	"  gates:\n" \
	"    - layers: [{dense: 16}, relu]\n" \
	"    - layers: [{dense: 4}]\n" \
	"  loss: softmax_cross_entropy\n" \
	"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n" \
	"schedule: {mode: flip-flop, epochs: 2, batch_size: 8}\n"

#define NVAL 40

static char g_dir[512];
static char g_out[1 << 16], g_err[1 << 16];

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s\n", \
			    r_, w_, g_out, g_err); \
		fail(); \
	} \
} while (0)

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* "g_dir/name" (tu_path's rotating buffers). */
static const char *P(const char *name)
{
	return tu_path(g_dir, name);
}

/* A checkpoint at path of the config text (stored under the config path
 * name, relative paths against base_dir), at training step id, its
 * parameters as initialised or, when fill is not 0, all equal to fill. */
static void write_ckpt(const char *path, const char *text, const char *name,
		       const char *base_dir, const char *const *sets, int nsets,
		       float fill, long id)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate gates[2];
	const struct akk_gate *gp[2];
	struct akk_err e = { 0 };
	char msg[1200];

	if (akk_spec_parse(&s, text, strlen(text), name, base_dir, sets, nsets, &e) ||
	    akk_model_plan(&m, &s, &e)) {
		akk_err_format(&e, msg, sizeof(msg));
		print_error("%s\n", msg);
		fail();
	}
	assert_int_equal(m.ngates, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(akk_gate_init(&gates[i], &m.gates[i], &(struct akk_gate_config){ .max_batch = 8,
			.ntapes = 1, .nevals = 1, .steps_per_epoch = 1, .epochs = 1, .seed = s.seed }, &e), 0);
		if (fill != 0)
			for (size_t k = 0; k < m.gates[i].nparams; k++)
				gates[i].params[k] = fill;
		gates[i].step = id;
		gp[i] = &gates[i];
	}
	struct akk_ckpt_source src = {
		.spec = &s, .base_dir = base_dir, .mode = s.sched.mode,
		.gates = gp, .ngates = 2, .pos = { .epoch = 1, .id = id },
	};
	if (akk_checkpoint_write(path, &src, &e)) {
		akk_err_format(&e, msg, sizeof(msg));
		print_error("%s\n", msg);
		fail();
	}
	for (int i = 0; i < 2; i++)
		akk_gate_release(&gates[i]);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* A plain checkpoint of the test net, relative paths against g_dir. */
static void plain_ckpt(const char *path, long id)
{
	write_ckpt(path, CFG("plain"), P("plain.yaml"), g_dir, NULL, 0, 0, id);
}

static int group_setup(void **state)
{
	const char *t = tu_tmpdir();

	(void)state;
	if (!t)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", t);
	tu_write_set(g_dir, "val", NVAL, 8, 4, 11);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- 1. did you mean ------------------------------------------------------ */

static void misspelled_command(void **state)
{
	static const struct { const char *typed, *err; } cases[] = {
		{ "trian", "akkctl: 'trian' is not an akkctl command. See 'akkctl help'.\n"
			   "\nThe most similar command is\n\ttrain\n" },
		{ "evla", "akkctl: 'evla' is not an akkctl command. See 'akkctl help'.\n"
			  "\nThe most similar command is\n\teval\n" },
		{ "inspcet", "akkctl: 'inspcet' is not an akkctl command. See 'akkctl help'.\n"
			     "\nThe most similar command is\n\tinspect\n" },
		{ "ins", "akkctl: 'ins' is not an akkctl command. See 'akkctl help'.\n"
			 "\nThe most similar command is\n\tinspect\n" },
		{ "hech", "akkctl: 'hech' is not an akkctl command. See 'akkctl help'.\n"
			  "\nThe most similar commands are\n\tbench\n\tcheck\n\thelp\n" },
		/* nothing close: no suggestion */
		{ "frobnicate", "akkctl: 'frobnicate' is not an akkctl command. See 'akkctl help'.\n" },
		{ "x", "akkctl: 'x' is not an akkctl command. See 'akkctl help'.\n" },
		{ "tx", "akkctl: 'tx' is not an akkctl command. See 'akkctl help'.\n" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_rc(ak(cases[i].typed, "x.yaml", NULL), 2);
		assert_string_equal(g_out, "");
		assert_string_equal(g_err, cases[i].err);
		assert_rc(ak("help", cases[i].typed, NULL), 2);
		assert_string_equal(g_out, "");
		assert_string_equal(g_err, cases[i].err);
	}
}

/* ---- 2. eval and inspect take a run directory ---------------------------- */

static void run_directory(void **state)
{
	char run[1024], want[1200];

	(void)state;
	snprintf(run, sizeof(run), "%s", P("run"));
	assert_int_equal(mkdir(run, 0777), 0);
	plain_ckpt(P("run/epoch-0002.bin"), 10);
	plain_ckpt(P("run/epoch-0010.bin"), 50);
	plain_ckpt(P("run/best.bin"), 10);
	plain_ckpt(P("run/last.bin"), 50);
	/* temp files of the writer, and a directory with a checkpoint's name */
	plain_ckpt(P("run/epoch-0011.bin.tmp.4242"), 55);
	assert_int_equal(tu_write_file(P("run/last.bin.tmp.77"), "junk", 4), 0);
	assert_int_equal(mkdir(P("run/epoch-0012.bin"), 0777), 0);

	/* eval: best.bin first */
	assert_rc(ak("eval", run, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/best.bin'\n", run);
	assert_string_equal(g_err, want);
	tu_assert_prefix(g_out, "samples 40 ");
	/* inspect: last.bin first */
	assert_rc(ak("inspect", run, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/last.bin'\n", run);
	assert_string_equal(g_err, want);
	snprintf(want, sizeof(want), "checkpoint   %s/last.bin\n", run);
	tu_assert_prefix(g_out, want);
	/* a file is taken as it is, silently */
	assert_rc(ak("eval", P("run/epoch-0002.bin"), NULL), 0);
	assert_string_equal(g_err, "");

	/* without best.bin eval takes last.bin */
	assert_int_equal(unlink(P("run/best.bin")), 0);
	assert_rc(ak("eval", run, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/last.bin'\n", run);
	assert_string_equal(g_err, want);
	/* then the highest epoch, by number, never a temp file */
	assert_int_equal(unlink(P("run/last.bin")), 0);
	assert_rc(ak("eval", run, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/epoch-0010.bin'\n", run);
	assert_string_equal(g_err, want);
	assert_rc(ak("inspect", run, NULL), 0);
	assert_string_equal(g_err, want);
	/* inspect with best.bin only */
	assert_int_equal(unlink(P("run/epoch-0002.bin")), 0);
	assert_int_equal(unlink(P("run/epoch-0010.bin")), 0);
	plain_ckpt(P("run/best.bin"), 10);
	assert_rc(ak("inspect", run, NULL), 0);
	snprintf(want, sizeof(want), "using '%s/best.bin'\n", run);
	assert_string_equal(g_err, want);
	/* nothing but temp files: exit 2 */
	assert_int_equal(unlink(P("run/best.bin")), 0);
	for (int i = 0; i < 2; i++) {
		assert_rc(ak(i ? "inspect" : "eval", run, NULL), 2);
		assert_string_equal(g_out, "");
		snprintf(want, sizeof(want),
			 "akkctl: %s: no checkpoint in this directory (no best.bin, last.bin or epoch-NNNN.bin)\n",
			 run);
		assert_string_equal(g_err, want);
	}
}

/* ---- 3. --help explains every option and output --------------------------- */

static void help_explains_outputs(void **state)
{
	char help[sizeof(g_out)];
	char *line, *save = NULL;

	(void)state;
	assert_rc(ak("eval", "--help", NULL), 0);
	assert_string_equal(g_err, "");
	snprintf(help, sizeof(help), "%s", g_out);
	for (const char *const *w = (const char *const[]){
		     "-d, --data DIR", "-i, --images F", "-l, --labels F", "-b, --batch N",
		     "-c, --confusion", "-p, --predictions FILE.csv", "run directory",
		     "best.bin", "samples N  loss L  accuracy A%", "precision", "recall",
		     "support", "confusion matrix (rows: label, columns: predicted)",
		     "index,label,predicted,probability", "Exit status", NULL }; *w; w++)
		tu_assert_contains(help, *w);
	assert_rc(ak("help", "eval", NULL), 0);
	assert_string_equal(g_out, help);

	/* every field inspect prints is explained */
	plain_ckpt(P("inspect.bin"), 3);
	assert_rc(ak("inspect", "--help", NULL), 0);
	snprintf(help, sizeof(help), "%s", g_out);
	assert_rc(ak("help", "inspect", NULL), 0);
	assert_string_equal(g_out, help);
	tu_assert_contains(help, "run directory");
	assert_rc(ak("inspect", P("inspect.bin"), NULL), 0);
	for (line = strtok_r(g_out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char field[64], key[80];
		if (!strcmp(line, "--- config ---"))
			break;
		if (sscanf(line, "%63[a-z ]", field) != 1 || !strncmp(line, "1 ", 2) ||
		    !strncmp(line, "2 ", 2))
			continue;
		field[strcspn(field, " ")] = '\0';
		if (!strcmp(field, "last"))
			snprintf(field, sizeof(field), "last epoch");
		snprintf(key, sizeof(key), "\n  %s ", field);
		tu_assert_contains(help, key);
	}
	for (const char *const *w = (const char *const[]){ "\n  gate ", "\n  step ",
		     "\n  tensor ", "\n  shape ", "\n  values ", "--- config ---", NULL }; *w; w++)
		tu_assert_contains(help, *w);

	/* a usage error shows the usage only */
	assert_rc(ak("eval", "--frobnicate", NULL), 2);
	tu_assert_contains(g_err, "usage: akkctl eval");
	tu_assert_not_contains(g_err, "Output");
}

/* ---- 4. names from a checkpoint are escaped ------------------------------- */

/* Replace the first occurrence of from by to (same length) in the file and
 * recompute its CRC-32 (the last four bytes, little-endian, over the rest). */
static void patch_ckpt(const char *path, const char *from, const char *to)
{
	size_t len = 0, n = strlen(from);
	unsigned char *b = (unsigned char *)tu_slurp(path, &len);
	uint32_t crc;
	size_t i;

	assert_non_null(b);
	assert_int_equal(n, strlen(to));
	for (i = 0; i + n <= len && memcmp(b + i, from, n); i++)
		;
	assert_true(i + n <= len);
	memcpy(b + i, to, n);
	crc = (uint32_t)crc32(0L, b, (uInt)(len - 4));
	for (int k = 0; k < 4; k++)
		b[len - 4 + k] = (unsigned char)(crc >> (8 * k));
	assert_int_equal(tu_write_file(path, b, len), 0);
	free(b);
}

static void forged_names_are_escaped(void **state)
{
	static const char *const sets[] = { "schedule.epochs=3" };
	const char *ck = P("evil.bin");
	char base[600], name[600];

	(void)state;
	/* the config's name key, its path, its base directory and a tensor
	 * name all carry ESC [31m (red) */
	snprintf(name, sizeof(name), "%s/\x1b[31mevil.yaml", g_dir);
	snprintf(base, sizeof(base), "%s/\x1b[31mbase", g_dir);
	write_ckpt(ck, CFG("\"\\e[31mevil\\x07\""), name, base, sets, 1, 0, 5);

	assert_rc(ak("inspect", ck, NULL), 0);
	assert_null(memchr(g_out, 0x1b, strlen(g_out)));
	assert_null(memchr(g_err, 0x1b, strlen(g_err)));
	tu_assert_contains(g_out, "/\\x1b[31mevil.yaml (paths relative to ");
	tu_assert_contains(g_out, "/\\x1b[31mbase)\n");
	tu_assert_contains(g_out, "network      \\x1b[31mevil\\x07: 2 gates, ");
	tu_assert_contains(g_out, "override     --set schedule.epochs=3\n");
	/* the config text keeps its lines, escapes the rest */
	tu_assert_contains(g_out, "\n--- config ---\nname: \"\\e[31mevil\\x07\"\nseed: 7\n");
	/* a forged tensor name: the reader refuses the file, and its report
	 * quotes the name escaped */
	patch_ckpt(ck, "g1.l1.dense.weight", "g1.l1.dense.\x1b[31mt");
	assert_rc(ak("inspect", ck, NULL), 2);
	assert_null(memchr(g_err, 0x1b, strlen(g_err)));
	tu_assert_contains(g_err, "found 'g1.l1.dense.\\x1b[31mt' where 'g1.l1.dense.weight' belongs");

	/* eval quotes the stored paths in its errors: escaped too */
	write_ckpt(ck, CFG("evil"), name, base, NULL, 0, 0, 5);
	assert_rc(ak("eval", ck, NULL), 2);
	assert_string_equal(g_out, "");
	assert_null(memchr(g_err, 0x1b, strlen(g_err)));
	tu_assert_prefix(g_err, "akkctl: ");
	tu_assert_contains(g_err, "/\\x1b[31mbase/val-images");
	/* and a forged tensor name in its mismatch report */
	patch_ckpt(ck, "g1.l1.dense.weight", "g1.l1.dense.\x1b[31mt");
	assert_rc(ak("eval", ck, "--images", P("val-images"), "--labels", P("val-labels"), NULL), 2);
	assert_null(memchr(g_err, 0x1b, strlen(g_err)));
	tu_assert_contains(g_err, "\\x1b[31m");
}

/* A forged position at epoch INT_MAX, mid-epoch: the reader refuses it
 * (every epoch trains a batch, so the epoch cannot pass the step count),
 * and inspect never prints an overflowed epoch. */
static void inspect_huge_epoch(void **state)
{
	static const char tail[] = "batch_size: 8}\n";
	const char *ck = P("epoch.bin");
	size_t len = 0, at;
	unsigned char *b;
	char *hit;
	uint32_t crc;

	(void)state;
	plain_ckpt(ck, 5);
	b = (unsigned char *)tu_slurp(ck, &len);
	assert_non_null(b);
	assert_non_null(hit = memmem(b, len, tail, strlen(tail)));
	/* after the config text: nsets (0), mode, then epoch u32, index u64 */
	at = (size_t)(hit - (char *)b) + strlen(tail) + 8;
	memcpy(b + at, "\xff\xff\xff\x7f\x01\0\0\0\0\0\0\0", 12);
	crc = (uint32_t)crc32(0L, b, (uInt)(len - 4));
	for (int k = 0; k < 4; k++)
		b[len - 4 + k] = (unsigned char)(crc >> (8 * k));
	assert_int_equal(tu_write_file(ck, b, len), 0);
	free(b);
	assert_rc(ak("inspect", ck, NULL), 2);
	assert_string_equal(g_out, "");
	tu_assert_contains(g_err, "corrupt checkpoint: position.epoch is 2147483647 with position.id 5");
}

/* ---- 5. eval never reports a loss that is not finite ---------------------- */

static void eval_refuses_nonfinite_loss(void **state)
{
	const char *ck = P("nan.bin"), *csv = P("nan.csv");
	char want[1200];
	int rc;

	(void)state;
	/* NaN weights: refused, by the reader or by eval itself */
	write_ckpt(ck, CFG("nan"), P("nan.yaml"), g_dir, NULL, 0, NAN, 5);
	rc = ak("eval", ck, NULL);
	if (rc != 1 && rc != 2) {
		print_error("exit %d, want 1 or 2\n--- stdout:\n%s\n--- stderr:\n%s\n", rc, g_out, g_err);
		fail();
	}
	assert_string_equal(g_out, "");
	tu_assert_prefix(g_err, "akkctl: ");
	tu_assert_contains(g_err, ck);

	/* finite weights so large that the logits overflow: the forward
	 * pass stops at the gate, exit 2 naming the checkpoint, and no
	 * predictions file is left */
	write_ckpt(ck, CFG("huge"), P("huge.yaml"), g_dir, NULL, 0, 1e30f, 5);
	assert_rc(ak("eval", ck, "--predictions", csv, NULL), 2);
	assert_string_equal(g_out, "");
	snprintf(want, sizeof(want),
		 "akkctl: %s: non-finite output of gate 2 on sample 1: the weights overflow\n", ck);
	assert_string_equal(g_err, want);
	assert_int_equal(access(csv, F_OK), -1);
}

/* The stored tensors are checked against the network the stored config
 * plans before anything is allocated or loaded for it. */
static void eval_checks_tensors_first(void **state)
{
	const char *ck = P("early.bin");

	(void)state;
	/* its validation data do not exist; a tensor has another name */
	write_ckpt(ck, CFG("early"), P("early.yaml"), P("nowhere"), NULL, 0, 0, 5);
	patch_ckpt(ck, "g2.l1.dense.bias", "g2.l1.dense.bia5");
	assert_rc(ak("eval", ck, NULL), 2);
	assert_string_equal(g_out, "");
	tu_assert_prefix(g_err, "akkctl: ");
	tu_assert_contains(g_err, "does not match the network");
	tu_assert_contains(g_err, "'g2.l1.dense.bia5'");
	tu_assert_not_contains(g_err, "val-images");
}

/* ---- 6. man pages --------------------------------------------------------- */

static void man_pages_format_cleanly(void **state)
{
	DIR *dir = opendir("man");
	struct dirent *de;
	int bad = 0, pages = 0;

	(void)state;
	assert_non_null(dir);
	while ((de = readdir(dir))) {
		const char *dot = strrchr(de->d_name, '.');
		const char *devs[] = { "-Tps", "-Tutf8" };
		char page[512];
		size_t len = 0;
		char *src;

		/* every page: NAME.1 to NAME.9 */
		if (!dot || dot[1] < '1' || dot[1] > '9' || dot[2])
			continue;
		snprintf(page, sizeof(page), "man/%s", de->d_name);
		assert_non_null(src = tu_slurp(page, &len));
		pages++;
		/* no control bytes in the source but newlines (a "\f" written
		 * through a string that understood it becomes a form feed) */
		for (size_t k = 0, line = 1, last = 0; k < len; k++) {
			unsigned char c = (unsigned char)src[k];
			line += c == '\n';
			if (((c < 0x20 && c != '\n') || c == 0x7f) && line != last) {
				print_error("%s:%zu: control byte 0x%02x\n", page, line, c);
				last = line;
				bad++;
			}
		}
		free(src);
		for (int d = 0; d < 2; d++) {
			const char *argv[] = { "groff", "-man", "-ww", "-z", devs[d], page, NULL };
			int rc = tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err));
			if (rc == 127)
				fail_msg("groff is not installed (Debian: groff-base)");
			if (rc || g_err[0]) {
				print_error("groff %s %s: exit %d\n%s", devs[d], page, rc, g_err);
				bad++;
			}
		}
	}
	closedir(dir);
	assert_true(pages >= 3);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(misspelled_command),
		cmocka_unit_test(run_directory),
		cmocka_unit_test(help_explains_outputs),
		cmocka_unit_test(forged_names_are_escaped),
		cmocka_unit_test(inspect_huge_epoch),
		cmocka_unit_test(eval_refuses_nonfinite_loss),
		cmocka_unit_test(eval_checks_tensors_first),
		cmocka_unit_test(man_pages_format_cleanly),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
