/* test_text.c - a text as next-byte windows (data/text.h), the loss taken
 * at every step of a sequence output (model/model.h: akk_model_loss), and
 * a language model trained by `akkctl train` and sampled by `akkctl
 * generate`. */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "config/spec.h"
#include "io/checkpoint.h"
#include "data/batch.h"
#include "data/series.h"
#include "data/split.h"
#include "data/text.h"
#include "model/model.h"

static char g_out[1 << 16], g_err[1 << 16];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static const struct akk_text T4S3 = { 4, 3 };

/* The token of byte c in d's vocabulary (the test's own search). */
static int tok(const struct akk_dataset *d, char c)
{
	for (int k = 0; k < d->classes; k++)
		if (d->class_names[k][0] == c)
			return k;
	fail_msg("byte '%c' is not in the vocabulary", c);
	return -1;
}

/* "hello, world": its 9 distinct bytes sorted, and windows of 4 at 0, 3
 * and 6, each step labelled with the byte after it. */
static void t_windows(void **state)
{
	static const char text[] = "hello, world";
	static const char *const vocab[] = { " ", ",", "d", "e", "h", "l", "o", "r", "w" };
	struct akk_dataset d;
	struct akk_err e = { 0 };

	(void)state;
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)text, 12, &T4S3, "t.txt", &e), 0);
	assert_int_equal(d.n, 3);	/* (12 - 4 - 1) / 3 + 1 */
	assert_int_equal(d.in, 4);
	assert_int_equal(d.xtype, AKK_X_U8);
	assert_int_equal(akk_dataset_steps(&d), 4);
	assert_true(akk_text_is(&d));
	assert_int_equal(d.classes, 9);
	for (int k = 0; k < 9; k++)
		assert_string_equal(d.class_names[k], vocab[k]);
	/* window 1 reads "lo, " and predicts "o, w" */
	static const char *const in[3] = { "hell", "lo, ", " wor" };
	static const char *const next[3] = { "ello", "o, w", "worl" };
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++) {
			assert_int_equal(d.x8[i * 4 + j], tok(&d, in[i][j]));
			assert_int_equal(d.labels[i * 4 + j], tok(&d, next[i][j]));
		}
	/* each byte's first offset, for the errors of other files */
	assert_int_equal(d.class_at[2 * tok(&d, 'l')], 2);
	assert_int_equal(d.class_at[2 * tok(&d, 'w')], 7);
	akk_dataset_release(&d);
}

/* A NUL byte, a text shorter than one window and its label, a bad file. */
static void t_text_errors(void **state)
{
	struct akk_dataset d;
	struct akk_err e = { 0 };
	const char *dir = tu_tmpdir();

	(void)state;
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)"abc\0def", 7, &T4S3, "t.txt", &e), -1);
	assert_string_equal(e.file, "t.txt");
	assert_string_equal(e.msg, "byte 0x00 at offset 3: a text holds no NUL byte");
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)"abcd", 4, &T4S3, "t.txt", &e), -1);
	assert_string_equal(e.msg, "4 bytes make no window: a window of seq_len 4 and the byte after it need 5");
	assert_null(d.labels);
	/* exactly T + 1 bytes: one window */
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)"abcde", 5, &T4S3, "t.txt", &e), 0);
	assert_int_equal(d.n, 1);
	akk_dataset_release(&d);
	/* files read as one text: a NUL named in its own file */
	{
		const char *paths[3] = { tu_path(dir, "a.txt"), tu_path(dir, "b.txt"),
					 tu_path(dir, "missing.txt") };
		assert_int_equal(tu_write_file(paths[0], "abc", 3), 0);
		assert_int_equal(tu_write_file(paths[1], "dab", 3), 0);
		assert_int_equal(akk_text_dataset(&d, paths, 2, &T4S3, &e), 0);
		assert_int_equal(d.n, 1);	/* "abcdab": one window */
		assert_int_equal(d.classes, 4);
		assert_int_equal(d.labels[3], 0);	/* d -> a */
		akk_dataset_release(&d);
		assert_int_equal(tu_write_file(paths[1], "da\0b", 4), 0);
		assert_int_equal(akk_text_dataset(&d, paths, 2, &T4S3, &e), -1);
		assert_string_equal(e.file, paths[1]);
		assert_string_equal(e.msg, "byte 0x00 at offset 2: a text holds no NUL byte");
		assert_int_equal(akk_text_dataset(&d, paths + 2, 1, &T4S3, &e), -1);
		assert_string_equal(e.file, paths[2]);
	}
	tu_rm_tree(dir);
}

/* A validation text renumbered to the training vocabulary: its inputs and
 * labels; a byte the training text never had is an error at its offset. */
static void t_match_vocab(void **state)
{
	static char *const names[] = { "a", "b", "c", "d" };
	struct akk_dataset d;
	struct akk_err e = { 0 };

	(void)state;
	/* its own vocabulary is b, c, d: 0, 1, 2 */
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)"dcbdcb", 6, &T4S3, "v.txt", &e), 0);
	assert_int_equal(d.classes, 3);
	assert_int_equal(akk_text_match_vocab(&d, names, 4, "v.txt", &e), 0);
	assert_int_equal(d.classes, 4);
	assert_string_equal(d.class_names[0], "a");
	static const int x[4] = { 3, 2, 1, 3 }, y[4] = { 2, 1, 3, 2 };
	for (int j = 0; j < 4; j++) {
		assert_int_equal(d.x8[j], x[j]);
		assert_int_equal(d.labels[j], y[j]);
	}
	akk_dataset_release(&d);
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)"abcdaz", 6, &T4S3, "v.txt", &e), 0);
	assert_int_equal(akk_text_match_vocab(&d, names, 4, "v.txt", &e), -1);
	assert_string_equal(e.file, "v.txt");
	assert_string_equal(e.msg, "byte 'z' at offset 5 is not in the training text's vocabulary of 4 bytes");
	akk_dataset_release(&d);
	assert_int_equal(akk_text_token(names, 4, 'c'), 2);
	assert_int_equal(akk_text_token(names, 4, 'e'), -1);
}

/* A split holds out the last windows, and no training window reads or
 * predicts a byte of the first held-out one: 100 bytes, windows of 4
 * every 2 (48 of them, each spanning 5 bytes with its last label). */
static void t_split_end(void **state)
{
	uint8_t text[100];
	struct akk_dataset d;
	struct akk_err e = { 0 };
	const struct akk_text t = { 4, 2 };
	uint32_t *held, *keep;
	size_t nheld, nkeep;

	(void)state;
	for (int i = 0; i < 100; i++)
		text[i] = (uint8_t)('a' + i % 7);
	assert_int_equal(akk_text_windows(&d, text, 100, &t, "t.txt", &e), 0);
	assert_int_equal(d.n, 48);
	assert_int_equal(akk_windows_split(&held, &nheld, &keep, &nkeep, d.n, d.text_len + 1,
					   d.text_stride, 0.25, "text", &e), 0);
	assert_int_equal(nheld, 12);
	assert_int_equal(held[0], 36);
	assert_int_equal(held[11], 47);
	/* window j spans bytes 2j .. 2j + 4; the held-out ones start at 72 */
	assert_int_equal(nkeep, 34);
	assert_int_equal(keep[nkeep - 1], 33);
	assert_true(keep[nkeep - 1] * 2 + 4 < held[0] * 2);
	free(held);
	free(keep);
	assert_int_equal(akk_windows_split(&held, &nheld, &keep, &nkeep, 3, 5, 2, 0.5, "text", &e),
			 -1);
	assert_string_equal(e.msg, "a split of 0.5 leaves no training window that ends before the 2 held-out ones begin");
	akk_dataset_release(&d);
}

/* A planned model of the YAML network (fails the test on an error). */
static void plan(struct akk_spec *s, struct akk_model *m, const char *yaml)
{
	struct akk_err e = { 0 };

	memset(s, 0, sizeof(*s));
	memset(m, 0, sizeof(*m));
	if (akk_spec_parse(s, yaml, strlen(yaml), "t.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %d:%d: %s", e.line, e.col, e.msg);
	if (akk_model_plan(m, s, &e))
		fail_msg("plan: %s", e.msg);
}

static const char *seq_yaml =
	"data: {format: text, train: {file: t.txt}}\n"
	"network:\n"
	"  input: [3]\n"
	"  gates:\n"
	"    - layers: [{embedding: {vocab: 5, units: 4}}, {dense: 5}]\n"
	"optimizer: {type: sgd, lr: 0.1}\n";

/* The per-step loss: softmax cross-entropy at each of B x T steps, their
 * mean (by hand here), its gradient against central differences, and the
 * steps predicted right. */
static void t_per_step_loss(void **state)
{
	enum { B = 2, T = 3, C = 5 };
	struct akk_spec s;
	struct akk_model m;
	float z[B * T * C], d[B * T * C];
	int32_t y[B * T] = { 0, 4, 2, 1, 1, 3 };
	double want = 0;
	long correct = 0, hits = 0;

	(void)state;
	plan(&s, &m, seq_yaml);
	assert_int_equal(m.steps, T);
	assert_int_equal(m.classes, C);
	assert_int_equal(akk_model_outputs(&m), T * C);
	tu_fill(z, B * T * C, -2, 2, 5);
	for (int r = 0; r < B * T; r++) {
		const float *row = z + r * C;
		double sum = 0;
		int best = 0;
		for (int k = 0; k < C; k++) {
			sum += exp(row[k]);
			best = row[k] > row[best] ? k : best;
		}
		want += log(sum) - row[y[r]];
		hits += best == y[r];
	}
	want /= B * T;
	assert_float_equal(akk_model_loss(&m, d, z, y, NULL, B, &correct, NULL), want, 1e-6);
	assert_int_equal(correct, hits);
	for (int i = 0; i < B * T * C; i++) {
		float keep = z[i], h = 1e-2f;
		double lp, lm;
		z[i] = keep + h;
		lp = akk_model_loss(&m, NULL, z, y, NULL, B, NULL, NULL);
		z[i] = keep - h;
		lm = akk_model_loss(&m, NULL, z, y, NULL, B, NULL, NULL);
		z[i] = keep;
		assert_float_equal(d[i], (lp - lm) / (2 * (double)h), 2e-4);
	}
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* A batch holds T labels per sample of a text, in the sample's order. */
static void t_batch_steps(void **state)
{
	static const char text[] = "abcdefghij";
	struct akk_dataset d;
	struct akk_batch b;
	struct akk_preprocess pre = { 0 };
	struct akk_err e = { 0 };
	const struct akk_text t = { 3, 2 };
	const uint32_t perm[4] = { 3, 0, 2, 1 };
	float a[3] = { 1, 1, 1 }, z[3] = { 0 };

	(void)state;
	assert_int_equal(akk_text_windows(&d, (const uint8_t *)text, 10, &t, "t.txt", &e), 0);
	assert_int_equal(d.n, 4);
	assert_int_equal(akk_batch_alloc(&b, 2, 3, 3 * 10, 3), 0);
	pre.in = 3;
	pre.a = a;
	pre.b = z;
	akk_batch_fill_range(&b, &d, perm, 0, 2, 0, &pre);
	/* window 3 reads "ghi" and predicts "hij"; window 0 "abc", "bcd" */
	static const int x[6] = { 6, 7, 8, 0, 1, 2 }, y[6] = { 7, 8, 9, 1, 2, 3 };
	for (int j = 0; j < 6; j++) {
		assert_float_equal(b.x[j], x[j], 0);
		assert_int_equal(b.labels[j], y[j]);
	}
	akk_batch_release(&b);
	akk_dataset_release(&d);
}

/* Token ids stay as they are: scale, normalize and standardize refused at
 * their keys; seq_len and stride default to the input's length. */
static void t_config(void **state)
{
	static const struct {
		const char *extra;
		int line, col;
		const char *msg;
	} bad[] = {
		{ "  scale: 255\n", 2, 3,
		  "data format 'text' feeds token ids as they are: data.scale must be 1, not 255" },
		{ "  normalize: {mean: 0.5, std: 2}\n", 2, 3,
		  "data format 'text' feeds token ids as they are: remove data.normalize" },
		{ "  standardize: true\n", 2, 3,
		  "data format 'text' feeds token ids as they are: remove data.standardize" },
		{ "  text: {seq_len: 4}\n", 6, 10,
		  "data format 'text' needs network.input [T] with T the window's seq_len" },
		{ "  validation: {files: [v.txt]}\n", 2, 16,
		  "data.validation takes one text 'file'; a list of 'files' is for data.train" },
		{ "  validation: {file: v.txt, files: [w.txt]}\n", 2, 29,
		  "data.validation takes one text 'file'; a list of 'files' is for data.train" },
		{ "  validation: {folds: 3}\n", 2, 3,
		  "'folds' would train on the text after the held-out part: use 'split', which holds out its end" },
	};
	char yaml[1024];
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml),
			 "data:\n%s  format: text\n  train: {file: t.txt}\nnetwork:\n  input: [3]\n"
			 "  gates:\n    - layers: [{embedding: {vocab: 5, units: 4}}, {dense: 5}]\n"
			 "optimizer: {type: sgd, lr: 0.1}\n",
			 bad[i].extra);
		memset(&s, 0, sizeof(s));
		assert_int_equal(akk_spec_parse(&s, yaml, strlen(yaml), "t.yaml", ".", NULL, 0, &e), -1);
		assert_string_equal(e.msg, bad[i].msg);
		assert_int_equal(e.line, bad[i].line);
		assert_int_equal(e.col, bad[i].col);
		akk_spec_release(&s);
	}
	plan(&s, &m, seq_yaml);
	assert_int_equal(s.data.text_len, 3);
	assert_int_equal(s.data.text_stride, 3);
	assert_float_equal(s.data.scale, 1, 0);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* ---- through akkctl ---- */

static void write_text(const char *path, const char *unit, int times)
{
	size_t n = strlen(unit);
	char *buf = malloc(n * times);

	assert_non_null(buf);
	for (int i = 0; i < times; i++)
		memcpy(buf + i * n, unit, n);
	assert_int_equal(tu_write_file(path, buf, n * times), 0);
	free(buf);
}

/* The last training loss in a run's metrics.csv. */
static double last_train_loss(const char *path)
{
	char *text = tu_slurp(path, NULL), *line, *save = NULL;
	double last = NAN;

	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		double loss;
		if (sscanf(line, "%*d,train,%*d,%lf,", &loss) == 1)
			last = loss;
	}
	free(text);
	return last;
}

/* name, file, vocab, vocab, epochs, name */
static const char *lm_yaml =
	"name: %s\nseed: 5\n"
	"data:\n  format: text\n  train: {file: %s}\n  validation: {split: 0.2}\n"
	"  text: {seq_len: 12, stride: 1}\n"
	"network:\n  input: [12]\n"
	"  gates:\n    - layers: [{embedding: {vocab: %d, units: 8}}, "
	"{lstm: {units: 24, return_sequences: true}}]\n"
	"    - layers: [{dense: %d}]\n"
	"  loss: softmax_cross_entropy\n"
	"optimizer: {type: adam, lr: 0.02, clip_norm: 1.0}\n"
	"schedule: {mode: flip-flop, epochs: %d, batch_size: 16}\n"
	"output: {dir: %s, checkpoint_every: 0}\n";

/* A text trained through akkctl train into dir/NAME.yaml's run dir/NAME:
 * unit repeated times times, vocab V, epochs; returns the last training
 * loss. */
static double train_text(const char *dir, const char *name, const char *unit, int times,
			 int V, int epochs)
{
	char yaml[2048], file[64], run[64];

	snprintf(file, sizeof(file), "%s.txt", name);
	snprintf(run, sizeof(run), "%s/metrics.csv", name);
	write_text(tu_path(dir, file), unit, times);
	snprintf(yaml, sizeof(yaml), lm_yaml, name, file, V, V, epochs, name);
	snprintf(file, sizeof(file), "%s.yaml", name);
	assert_int_equal(tu_write_file(tu_path(dir, file), yaml, strlen(yaml)), 0);
	if (ak("train", tu_path(dir, file), "--quiet", NULL))
		fail_msg("akkctl train failed:\n%s%s", g_out, g_err);
	return last_train_loss(tu_path(dir, run));
}

/* predict on the "abc" model (trained by t_train_generate) and its own
 * text: every window's every step gives the byte after it, each window
 * and step a row; a byte the training text lacks is refused with its
 * offset. */
static void predict_abc(const char *dir)
{
	char want[64], *text;
	size_t len;
	int rows = 0;

	assert_int_equal(ak("predict", tu_path(dir, "abc"), tu_path(dir, "abc.txt"), "--top", "2",
			    "--out", tu_path(dir, "abc.csv"), NULL), 0);
	text = tu_slurp(tu_path(dir, "abc.csv"), &len);
	assert_non_null(text);
	tu_assert_prefix(text, "index,step,predicted,probability,top2,probability2\n");
	/* window 1 reads "bcabcabcabca" and predicts "cabcabcabcab" */
	for (int t = 0; t < 12; t++) {
		snprintf(want, sizeof(want), "\n1,%d,%c,0.9", t, "cab"[t % 3]);
		tu_assert_contains(text, want);
	}
	for (size_t i = 0; i < len; i++)
		rows += text[i] == '\n';
	assert_int_equal(rows, 1 + 588 * 12);	/* 600 bytes: 588 windows */
	free(text);
	assert_int_equal(tu_write_file(tu_path(dir, "abc!.txt"), "abcabcabcabcab!", 15), 0);
	assert_int_equal(ak("predict", tu_path(dir, "abc"), tu_path(dir, "abc!.txt"), NULL), 2);
	tu_assert_contains(g_err, "abc!.txt: byte '!' at offset 14 is not in the training text's vocabulary of 3 bytes");
}

/* "abc" over and over: every step's next byte follows from it, and the
 * loss falls to nearly 0. "hello world\n" over and over: after 'l' comes
 * 'l', 'o' or 'd', so the model must remember (the first steps of a
 * window cannot: its loss stays above 0); generate continues a prime of
 * either exactly at a low temperature, gives one text per seed, and
 * refuses what is not its vocabulary. */
static void t_train_generate(void **state)
{
	const char *dir = tu_tmpdir();
	char first[sizeof(g_out)], *text;
	double loss;

	(void)state;
	loss = train_text(dir, "abc", "abc", 200, 3, 8);
	print_message("abc: last training loss %.5f\n", loss);
	assert_true(loss < 0.01);
	assert_int_equal(ak("generate", tu_path(dir, "abc/last.bin"), "--prime", "ca", "--length", "10",
			    "--temperature", "0.1", NULL), 0);
	assert_string_equal(g_out, "cabcabcabcab\n");
	loss = train_text(dir, "hello", "hello world\n", 60, 9, 20);
	print_message("hello world: last training loss %.5f\n", loss);
	assert_true(loss < 0.1);
	/* the held-out end: 708 windows, 142 of them held out */
	assert_int_equal(ak("eval", tu_path(dir, "hello"), NULL), 0);
	tu_assert_prefix(g_out, "samples 142  loss ");
	tu_assert_contains(g_out, "(per step, 12 a sample)  bits per step ");
	/* the newline's row, its name escaped; 142 windows of 12 steps hold
	 * 142 newlines */
	tu_assert_contains(g_out, "\n\\x0a  ");
	tu_assert_contains(g_out, "   142\n");
	assert_int_equal(ak("generate", tu_path(dir, "hello/last.bin"), "--prime", "hello",
			    "--length", "40", "--temperature", "0.05", NULL), 0);
	assert_string_equal(g_out, "hello world\nhello world\nhello world\nhello wor\n");
	/* the seed decides the text: at a high temperature draws vary */
	assert_int_equal(ak("generate", tu_path(dir, "hello/last.bin"), "--seed", "7",
			    "--temperature", "4", "--length", "60", NULL), 0);
	snprintf(first, sizeof(first), "%s", g_out);
	assert_int_equal(strlen(first), 61);
	assert_int_equal(ak("generate", tu_path(dir, "hello/last.bin"), "--seed", "7",
			    "--temperature", "4", "--length", "60", NULL), 0);
	assert_string_equal(g_out, first);
	assert_int_equal(ak("generate", tu_path(dir, "hello/last.bin"), "--seed", "8",
			    "--temperature", "4", "--length", "60", NULL), 0);
	assert_string_not_equal(g_out, first);
	/* bad input: exit 2 */
	assert_int_equal(ak("generate", tu_path(dir, "hello"), "--prime", "hellx", NULL), 2);
	tu_assert_line(g_err, "akkctl: --prime: byte 'x' at offset 4 is not in the model's vocabulary of 9 bytes");
	assert_int_equal(ak("generate", tu_path(dir, "hello"), "--temperature", "0", NULL), 2);
	tu_assert_line(g_err, "akkctl: option '--temperature' needs a number above 0, got '0'");
	/* predict: a row per window and step, the step's most probable next
	 * byte (a newline escaped as eval shows it) */
	assert_int_equal(ak("predict", tu_path(dir, "hello"), tu_path(dir, "hello.txt"),
			    "--out", tu_path(dir, "hello.csv"), NULL), 0);
	text = tu_slurp(tu_path(dir, "hello.csv"), NULL);
	assert_non_null(text);
	tu_assert_prefix(text, "index,step,predicted,probability\n0,0,");
	tu_assert_contains(text, "\n0,10,\\x0a,");	/* "d" then a newline */
	tu_assert_contains(text, "\n0,11,h,");
	tu_assert_contains(text, "\n707,11,");	/* 720 bytes: 708 windows */
	assert_null(strstr(text, "\n708,"));
	assert_null(strstr(text, "\n0,12,"));
	free(text);
	predict_abc(dir);
	/* export writes the sequence: [N, 12, 9] (test_onnx runs one) */
	assert_int_equal(ak("export", tu_path(dir, "hello"), "--onnx", tu_path(dir, "lm.onnx"), NULL), 0);
	tu_assert_contains(g_out, "output 'probabilities' [N, 12, 9]");
	tu_rm_tree(dir);
}

/* Whether path holds a metrics row (a line after the header). */
static int has_row(const char *path)
{
	char *text = tu_slurp(path, NULL);
	int rows = 0;

	for (char *p = text; p && (p = strchr(p, '\n')); p++)
		rows++;
	free(text);
	return rows >= 2;
}

/* A run stopped by SIGINT in the middle of an epoch writes last.bin at
 * that position, whose running accuracy counts steps: more right steps
 * than samples. The checkpoint reads back (eval, and the resume). */
static void t_interrupted_mid_epoch(void **state)
{
	const char *dir = tu_tmpdir();
	char *yaml, run[700];
	const char *argv[8];
	struct akk_checkpoint c;
	struct akk_err e = { 0 };
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	/* after epoch 1's row: long enough for a batch of epoch 2 on a
	 * loaded machine under ASan (20 ms was not), short beside an epoch */
	struct timespec into = { 0, 300 * 1000 * 1000 };
	int status;
	pid_t pid;

	(void)state;
	write_text(tu_path(dir, "long.txt"), "hello world\n", 4000);
	/* 47,988 windows: an epoch takes seconds */
	yaml = malloc(4096);
	assert_non_null(yaml);
	snprintf(yaml, 4096, lm_yaml, "long", "long.txt", 9, 9, 1000, "run");
	assert_int_equal(tu_write_file(tu_path(dir, "long.yaml"), yaml, strlen(yaml)), 0);
	free(yaml);
	snprintf(run, sizeof(run), "%s", tu_path(dir, "run"));
	argv[0] = tu_akkctl();
	argv[1] = "train";
	argv[2] = tu_path(dir, "long.yaml");
	argv[3] = "--quiet";
	argv[4] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 6000 && !has_row(tu_path(run, "metrics.csv")); i++)
		nanosleep(&nap, NULL);
	nanosleep(&into, NULL);	/* into the next epoch */
	assert_int_equal(kill(pid, SIGINT), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 130);
	if (akk_checkpoint_read(&c, tu_path(run, "last.bin"), &e))
		fail_msg("last.bin: %s", e.msg);
	print_message("stopped at epoch %d, batch %ld: %ld right steps of %ld samples\n",
		      c.pos.epoch + 1, c.pos.index, c.pos.correct, c.pos.samples);
	assert_true(c.pos.index > 0);
	assert_true(c.pos.correct > c.pos.samples);
	akk_checkpoint_release(&c);
	assert_int_equal(ak("eval", tu_path(run, "last.bin"), NULL), 0);
	tu_rm_tree(dir);
}

/* A network with one output row per sample cannot learn a label per
 * step; a checkpoint of a network that is not a language model cannot
 * generate. */
static void t_cli_errors(void **state)
{
	const char *dir = tu_tmpdir();
	char yaml[1024];

	(void)state;
	write_text(tu_path(dir, "t.txt"), "abcab", 40);
	snprintf(yaml, sizeof(yaml),
		 "data: {format: text, train: {file: t.txt}}\n"
		 "network:\n  input: [6]\n"
		 "  gates:\n    - layers: [{embedding: {vocab: 3, units: 4}}, {lstm: 8}, {dense: 3}]\n"
		 "optimizer: {type: sgd, lr: 0.1}\nschedule: {epochs: 1}\noutput: {dir: run}\n");
	assert_int_equal(tu_write_file(tu_path(dir, "flat.yaml"), yaml, strlen(yaml)), 0);
	assert_int_equal(ak("train", tu_path(dir, "flat.yaml"), "--quiet", NULL), 2);
	snprintf(yaml, sizeof(yaml), "akkctl: %s: training data has 6 labels per sample, but the network outputs 1 step of 3 classes",
		 tu_path(dir, "t.txt"));
	tu_assert_line(g_err, yaml);
	/* a classifier of CSV rows: not a language model */
	assert_int_equal(tu_write_file(tu_path(dir, "t.csv"), "0,0\n1,1\n0.1,0\n0.9,1\n", 20), 0);
	snprintf(yaml, sizeof(yaml),
		 "data: {format: csv, train: {file: t.csv}}\n"
		 "network:\n  input: [1]\n  gates:\n    - layers: [{dense: 2}]\n"
		 "optimizer: {type: sgd, lr: 0.1}\nschedule: {epochs: 1, batch_size: 2}\noutput: {dir: csvrun}\n");
	assert_int_equal(tu_write_file(tu_path(dir, "csv.yaml"), yaml, strlen(yaml)), 0);
	if (ak("train", tu_path(dir, "csv.yaml"), "--quiet", NULL))
		fail_msg("akkctl train failed:\n%s%s", g_out, g_err);
	assert_int_equal(ak("generate", tu_path(dir, "csvrun/last.bin"), NULL), 2);
	snprintf(yaml, sizeof(yaml), "akkctl: %s: not a language model: generate needs a network trained on data.format text, this one read 'csv'",
		 tu_path(dir, "csvrun/last.bin"));
	tu_assert_line(g_err, yaml);
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_windows),
		cmocka_unit_test(t_text_errors),
		cmocka_unit_test(t_match_vocab),
		cmocka_unit_test(t_split_end),
		cmocka_unit_test(t_per_step_loss),
		cmocka_unit_test(t_batch_steps),
		cmocka_unit_test(t_config),
		cmocka_unit_test(t_train_generate),
		cmocka_unit_test(t_cli_errors),
		cmocka_unit_test(t_interrupted_mid_epoch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
