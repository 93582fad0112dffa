/* test_predict.c - akkctl predict: unlabelled IDX, PGM and PPM input, the
 * CSV it writes, its agreement with akkctl eval, and bad input.
 *
 * One short run of configs/lenet.yaml (one epoch on 3000 MNIST training
 * images) is trained once for the whole program; predict on the 10,000
 * MNIST test images must give every sample the class eval gives it, and
 * so eval's accuracy. Skips when datasets/mnist is missing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "io/checkpoint.h"
#include "forge.h"

static char g_dir[512], g_out[1 << 16], g_err[1 << 14];
static const char *g_run, *g_ckpt;
static const char *const g_test = "datasets/mnist/t10k-images-idx3-ubyte";
static const char *const g_labels = "datasets/mnist/t10k-labels-idx1-ubyte";
static int g_skip;

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)
#define assert_rc(call, want) do { int rc_ = (call); \
	if (rc_ != (want)) fail_msg("exit %d, want %d; stderr:\n%s", rc_, (want), g_err); } while (0)

static int group_setup(void **state)
{
	int rc;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	rc = tu_lenet_run(g_dir, 3000);
	if (rc > 0) {
		printf("skipped: datasets/mnist is missing (make data)\n");
		g_skip = 1;
		return 0;
	}
	g_run = tu_path(g_dir, "run");
	g_ckpt = tu_path(g_run, "best.bin");
	return rc;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

#define SKIP_WITHOUT_MNIST() do { if (g_skip) skip(); } while (0)

/* The n-th line of text (0-based), copied into buf without its newline. */
static const char *line_of(const char *text, long n, char *buf, size_t size)
{
	for (; n > 0 && text; n--)
		if ((text = strchr(text, '\n')))
			text++;
	if (!text || !*text)
		return NULL;
	snprintf(buf, size, "%.*s", (int)strcspn(text, "\n"), text);
	return buf;
}

/* The rows of predict's CSV output, its header left out. */
static long count_rows(const char *text)
{
	long n = -1;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* The 28 x 28 pixels of MNIST test image i. */
static void test_image(long i, unsigned char *px)
{
	size_t len;
	unsigned char *p = (unsigned char *)tu_slurp(g_test, &len);

	assert_non_null(p);
	assert_true(len >= 16 + 784 * (size_t)(i + 1));
	memcpy(px, p + 16 + 784 * i, 784);
	free(p);
}

static void predict_matches_eval(void **state)
{
	const char *pred = tu_path(g_dir, "pred.csv"), *evp = tu_path(g_dir, "eval.csv");
	char *p, *q, *lb, line[256], want[64];
	size_t nlb;
	long correct = 0, n = 0;

	(void)state;
	SKIP_WITHOUT_MNIST();
	assert_rc(ak("predict", g_run, g_test, "--out", pred, NULL), 0);
	tu_assert_prefix(g_err, "using '");
	assert_rc(ak("eval", g_run, "--predictions", evp, NULL), 0);
	p = tu_slurp(pred, NULL);
	q = tu_slurp(evp, NULL);
	lb = tu_slurp(g_labels, &nlb);
	assert_non_null(p);
	assert_non_null(q);
	assert_non_null(lb);
	assert_true(nlb == 8 + 10000);
	tu_assert_prefix(p, "index,predicted,probability\n");
	for (long i = 0; i < 10000; i++) {
		char eline[256];
		long idx, eidx;
		int cls, elabel, ecls;
		float prob, eprob;

		assert_non_null(line_of(p, i + 1, line, sizeof(line)));
		assert_non_null(line_of(q, i + 1, eline, sizeof(eline)));
		assert_int_equal(sscanf(line, "%ld,%d,%f", &idx, &cls, &prob), 3);
		assert_int_equal(sscanf(eline, "%ld,%d,%d,%f", &eidx, &elabel, &ecls, &eprob), 4);
		assert_int_equal(idx, i);
		assert_int_equal(eidx, i);
		/* the same class as eval, the probability eval prints with %.6f */
		if (cls != ecls)
			fail_msg("sample %ld: predict says %d, eval %d", i, cls, ecls);
		assert_true(fabsf(prob - eprob) <= 5e-7f + 1e-6f);
		correct += cls == (unsigned char)lb[8 + i];
		n++;
	}
	assert_null(line_of(p, 10001, line, sizeof(line)));
	/* eval's accuracy line, from predict's classes and the labels */
	snprintf(want, sizeof(want), "accuracy %.2f%%", 100.0 * correct / n);
	tu_assert_contains(g_out, want);
	free(p);
	free(q);
	free(lb);
}

static void predict_top_k(void **state)
{
	const char *out = tu_path(g_dir, "top.csv");
	char line[512], *p;

	(void)state;
	SKIP_WITHOUT_MNIST();
	assert_rc(ak("predict", g_ckpt, g_test, "--top", "3", "--out", out, NULL), 0);
	tu_assert_no_line(g_err, "using '");	/* a file is taken as it is */
	p = tu_slurp(out, NULL);
	assert_non_null(p);
	tu_assert_prefix(p, "index,predicted,probability,top2,probability2,top3,probability3\n");
	for (long i = 1; i <= 10000; i += 997) {
		float p1, p2, p3;
		int c1, c2, c3;
		long idx;

		assert_non_null(line_of(p, i, line, sizeof(line)));
		assert_int_equal(sscanf(line, "%ld,%d,%f,%d,%f,%d,%f", &idx, &c1, &p1, &c2, &p2,
					&c3, &p3), 7);
		assert_true(p1 >= p2 && p2 >= p3 && c1 != c2 && c2 != c3 && c1 != c3);
	}
	free(p);
	/* K beyond the classes: all ten, probabilities summing to 1 */
	assert_rc(ak("predict", g_ckpt, g_test, "--top", "99", "--out", out, NULL), 0);
	p = tu_slurp(out, NULL);
	assert_non_null(line_of(p, 1, line, sizeof(line)));
	{
		double sum = 0;
		char *tok = strtok(line, ",");
		int nf = 0;

		while ((tok = strtok(NULL, ","))) {
			if (nf++ % 2)
				sum += atof(tok);
		}
		assert_int_equal(nf, 20);
		assert_true(fabs(sum - 1) < 1e-5);
	}
	free(p);
	assert_rc(ak("predict", g_ckpt, g_test, "--top", "0", NULL), 2);
}

/* A PGM (P5 or P2) or PPM of MNIST test image i. */
static void write_pnm(const char *path, const char *magic, long i, const char *maxval,
		      size_t cut)
{
	unsigned char px[784];
	char buf[8192];
	int n;

	test_image(i, px);
	n = snprintf(buf, sizeof(buf), "%s\n# MNIST test image %ld\n28 28\n%s\n", magic, i, maxval);
	if (!strcmp(magic, "P2")) {
		for (int k = 0; k < 784; k++)
			n += snprintf(buf + n, sizeof(buf) - n, "%d%c", px[k], k % 28 == 27 ? '\n' : ' ');
	} else {
		for (int k = 0; k < 784; k++)
			for (int c = 0; c < (strcmp(magic, "P6") ? 1 : 3); c++)
				buf[n++] = (char)px[k];
	}
	assert_int_equal(tu_write_file(path, buf, n - cut), 0);
}

/* Two predict rows with --top 10: the same index and predicted class,
 * every class's probability within 1e-6 (one image alone goes through
 * the network in a batch of one, which may round differently from the
 * same image in a batch of 256). */
static void assert_rows_close(const char *a, const char *b)
{
	float pa[10] = { 0 }, pb[10] = { 0 };
	int ca = -1, cb = -1;

	for (int r = 0; r < 2; r++) {
		char buf[512], *tok;
		float *p = r ? pb : pa;
		int *first = r ? &cb : &ca, f = 0, cls = 0;

		snprintf(buf, sizeof(buf), "%s", r ? b : a);
		for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ","), f++) {
			if (f == 0)
				continue;
			if (f % 2) {
				cls = atoi(tok);
				assert_true(cls >= 0 && cls < 10);
				if (*first < 0)
					*first = cls;
			} else
				p[cls] = (float)atof(tok);
		}
		assert_int_equal(f, 21);
	}
	assert_int_equal(atol(a), atol(b));
	assert_int_equal(ca, cb);
	for (int k = 0; k < 10; k++)
		assert_true(fabsf(pa[k] - pb[k]) <= 1e-6f);
}

static void predict_pgm(void **state)
{
	const char *p5 = tu_path(g_dir, "seven.pgm"), *p2 = tu_path(g_dir, "two.pgm");
	const char *all = tu_path(g_dir, "all.csv");
	char line[512], want0[512], want1[512], *p;

	(void)state;
	SKIP_WITHOUT_MNIST();
	write_pnm(p5, "P5", 0, "255", 0);
	write_pnm(p2, "P2", 1, "255", 0);
	/* rows 1 and 2 of the IDX predictions are images 0 and 1 */
	assert_rc(ak("predict", g_ckpt, g_test, "--top", "10", "--out", all, NULL), 0);
	p = tu_slurp(all, NULL);
	assert_non_null(line_of(p, 1, want0, sizeof(want0)));
	assert_non_null(line_of(p, 2, want1, sizeof(want1)));
	free(p);
	assert_rc(ak("predict", g_ckpt, p5, p2, "--top", "10", NULL), 0);
	assert_non_null(line_of(g_out, 1, line, sizeof(line)));
	assert_rows_close(line, want0);
	assert_non_null(line_of(g_out, 2, line, sizeof(line)));
	assert_rows_close(line, want1);
	assert_null(line_of(g_out, 3, line, sizeof(line)));
	/* --format pnm reads a name without the extension */
	{
		const char *bare = tu_path(g_dir, "image");

		write_pnm(bare, "P5", 0, "255", 0);
		assert_rc(ak("predict", g_ckpt, bare, "--format", "pnm", "--top", "10", NULL), 0);
		assert_non_null(line_of(g_out, 1, line, sizeof(line)));
		assert_rows_close(line, want0);
	}
}

static void predict_bad_input(void **state)
{
	const char *bad = tu_path(g_dir, "bad.pgm"), *out = tu_path(g_dir, "gone.csv");
	char want[2048];

	(void)state;
	SKIP_WITHOUT_MNIST();
	/* a PPM (3 channels) for a 1-channel network */
	write_pnm(bad, "P6", 0, "255", 0);
	assert_rc(ak("predict", g_ckpt, bad, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: samples are 3 x 28 x 28 (channels x height x width), "
		 "but the network takes [1, 28, 28]", bad);
	tu_assert_line(g_err, want);
	assert_string_equal(g_out, "");	/* no header for nothing */
	/* a 16-bit PGM */
	write_pnm(bad, "P5", 0, "65535", 0);
	assert_rc(ak("predict", g_ckpt, bad, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: maxval 65535: only 8-bit images with maxval 255 are read", bad);
	tu_assert_line(g_err, want);
	/* a PGM cut short */
	write_pnm(bad, "P5", 0, "255", 10);
	assert_rc(ak("predict", g_ckpt, bad, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: 774 bytes of pixels, but 28 x 28 takes 784", bad);
	tu_assert_line(g_err, want);
	/* a plain PGM with a value above maxval */
	assert_int_equal(tu_write_file(bad, "P2 2 1 255\n0 256\n", 18), 0);
	assert_rc(ak("predict", g_ckpt, bad, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: pixel value is larger than 255", bad);
	tu_assert_line(g_err, want);
	/* binary pixels right after maxval */
	assert_int_equal(tu_write_file(bad, "P5 2 1 255x\001\002", 13), 0);
	assert_rc(ak("predict", g_ckpt, bad, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: no white space after maxval at byte 10", bad);
	tu_assert_line(g_err, want);
	/* images of the wrong size */
	{
		const char *small = tu_path(g_dir, "small.idx");
		uint32_t dims[3] = { 5, 10, 10 };
		size_t size;
		unsigned char *b = tu_idx_bytes(0x08, 3, dims, NULL, 500, &size);

		assert_int_equal(tu_write_file(small, b, size), 0);
		free(b);
		assert_rc(ak("predict", g_ckpt, small, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s: samples are 1 x 10 x 10 (channels x height x width), "
			 "but the network takes [1, 28, 28]", small);
		tu_assert_line(g_err, want);
	}
	/* a label file, a foreign file */
	assert_rc(ak("predict", g_ckpt, g_labels, NULL), 2);
	tu_assert_line(g_err, "akkctl: datasets/mnist/t10k-labels-idx1-ubyte: not an image file: "
		       "rank 1, expected rank 3 (N x H x W)");
	assert_rc(ak("predict", g_ckpt, "configs/lenet.yaml", NULL), 2);
	tu_assert_line(g_err, "akkctl: configs/lenet.yaml: bad magic 0x23204120: not an idx file "
		       "(first two bytes must be 0)");
	/* a failure after a good input leaves no --out file */
	write_pnm(bad, "P5", 0, "0", 0);
	assert_rc(ak("predict", g_ckpt, g_test, bad, "--out", out, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: maxval is 0", bad);
	tu_assert_line(g_err, want);
	assert_false(tu_exists(out));
}

static void predict_bad_checkpoint(void **state)
{
	const char *newer = tu_path(g_dir, "newer.bin");
	char want[2048];
	struct forge fg;

	(void)state;
	SKIP_WITHOUT_MNIST();
	assert_rc(ak("predict", "configs/lenet.yaml", g_test, NULL), 2);
	tu_assert_line(g_err, "akkctl: configs/lenet.yaml: not an akkctl checkpoint (bad magic)");
	assert_int_equal(forge_load(&fg, g_ckpt), 0);
	forge_set_u(&fg, forge_find(&fg, "header.version"), AKK_CKPT_VERSION + 1);
	assert_int_equal(forge_save(&fg, newer), 0);
	forge_release(&fg);
	assert_rc(ak("predict", newer, g_test, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s: checkpoint format version %d is not supported "
		 "(this akkctl reads versions 1 to %d)", newer, AKK_CKPT_VERSION + 1, AKK_CKPT_VERSION);
	tu_assert_line(g_err, want);
	assert_rc(ak("predict", tu_path(g_dir, "none"), g_test, NULL), 2);
	/* usage */
	assert_rc(ak("predict", g_ckpt, NULL), 2);
	tu_assert_line(g_err, "akkctl: predict needs an INPUT");
	assert_rc(ak("predict", NULL), 2);
	tu_assert_line(g_err, "akkctl: predict needs a CHECKPOINT and an INPUT");
	assert_rc(ak("predict", g_ckpt, g_test, "--format", "csvx", NULL), 2);
	tu_assert_line(g_err, "akkctl: data format 'csvx' has no reader for unlabelled input");
	assert_rc(ak("predict", "--help", NULL), 0);
	tu_assert_prefix(g_out, "usage: akkctl predict CHECKPOINT|DIR INPUT...");
}

/* The header rule the model was trained with (csv header: true) holds in
 * predict: a file without the header is refused at its first row, not
 * read with its first sample taken for the header; --csv-header no reads
 * every row, --csv-header yes takes the first row as the header whatever
 * it holds. */
static void predict_csv_header_rule(const char *run, float (*v)[2], int n,
				    const char *want)
{
	char path[1200], msg[1600];
	FILE *f;

	snprintf(path, sizeof(path), "%s", tu_path(g_dir, "nohdr.csv"));
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%.9g,%.9g\n", v[i][0], v[i][1]);
	assert_int_equal(fclose(f), 0);
	assert_rc(ak("predict", run, path, NULL), 2);
	snprintf(msg, sizeof(msg), "akkctl: %s:1:1: a header row is expected (the model was trained with data.csv.header: true), but this row holds numbers only: it is data; add the header row, or give --csv-header no (the file has none) or --csv-header yes (it is the header)",
		 path);
	tu_assert_line(g_err, msg);
	assert_string_equal(g_out, "");
	assert_rc(ak("predict", run, path, "--csv-header", "no", NULL), 0);
	assert_string_equal(g_out, want);
	/* yes: the first sample is taken for a header, as asked */
	assert_rc(ak("predict", run, path, "--csv-header", "yes", NULL), 0);
	assert_int_equal(count_rows(g_out), n - 1);
	assert_rc(ak("predict", run, path, "--csv-header", "maybe", NULL), 2);
	tu_assert_line(g_err, "akkctl: option '--csv-header' needs yes or no, got 'maybe'");
}

/* A table trained from CSV with named classes: predict takes rows without
 * the label column (the checkpoint's csv options, its names in the
 * output), and the same values as a features-only .npy give the same
 * rows bit for bit. */
static void predict_csv_and_npy(void **state)
{
	const char *train = tu_path(g_dir, "t.csv"), *feat = tu_path(g_dir, "f.csv");
	const char *npy = tu_path(g_dir, "f.npy"), *cfg = tu_path(g_dir, "t.yaml");
	const char *run = tu_path(g_dir, "trun");
	static const char *const names[3] = { "bravo", "alpha", "charlie" };
	FILE *t = fopen(train, "w"), *f = fopen(feat, "w");
	enum { N = 300 };
	static float v[N][2];
	char *csv_out, cfgtext[1024], hdr[128], line[128];
	unsigned char *buf;
	size_t hlen, len;
	long right = 0;
	uint32_t r = 7;

	(void)state;
	assert_non_null(t);
	assert_non_null(f);
	fprintf(t, "x,y,kind\n");
	fprintf(f, "x,y\n");
	for (int i = 0; i < N; i++) {
		int k = i % 3;
		for (int j = 0; j < 2; j++) {
			r = r * 1664525u + 1013904223u;
			v[i][j] = (float)((k == j ? 3 : 0) + (k == 2 ? -3 : 0) +
					  (double)(r >> 8) / (1 << 24) - 0.5);
		}
		fprintf(t, "%.9g,%.9g,%s\n", v[i][0], v[i][1], names[k]);
		fprintf(f, "%.9g,%.9g\n", v[i][0], v[i][1]);
	}
	assert_int_equal(fclose(t), 0);
	assert_int_equal(fclose(f), 0);
	snprintf(cfgtext, sizeof(cfgtext),
		 "name: tcsv\nseed: 3\ndata:\n  format: csv\n  csv: {header: true, label: kind}\n"
		 "  train: {file: %s}\n  validation: {split: 0.2}\n"
		 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 16}, relu, {dense: 3}]\n"
		 "  loss: softmax_cross_entropy\noptimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 10, batch_size: 16}\noutput: {dir: %s}\n",
		 train, run);
	assert_int_equal(tu_write_file(cfg, cfgtext, strlen(cfgtext)), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	/* rows without the label: the classes by name */
	assert_rc(ak("predict", run, feat, NULL), 0);
	csv_out = strdup(g_out);
	assert_non_null(csv_out);
	tu_assert_prefix(csv_out, "index,predicted,probability\n");
	for (long i = 0; i < N; i++) {
		char name[32];
		long idx;

		assert_non_null(line_of(csv_out, i + 1, line, sizeof(line)));
		assert_int_equal(sscanf(line, "%ld,%31[^,],", &idx, name), 2);
		assert_int_equal(idx, i);
		right += !strcmp(name, names[i % 3]);
	}
	if (right < N * 9 / 10)
		fail_msg("predict names %ld of %d rows right", right, N);
	/* the same values as a .npy of features alone: the same output */
	snprintf(hdr, sizeof(hdr), "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, 2), }", N);
	hlen = strlen(hdr);
	while ((10 + hlen + 1) % 64)
		hdr[hlen++] = ' ';
	hdr[hlen++] = '\n';
	len = 10 + hlen + sizeof(v);
	buf = malloc(len);
	assert_non_null(buf);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)(hlen & 255);
	buf[9] = (unsigned char)(hlen >> 8);
	memcpy(buf + 10, hdr, hlen);
	memcpy(buf + 10 + hlen, v, sizeof(v));
	assert_int_equal(tu_write_file(npy, buf, len), 0);
	free(buf);
	assert_rc(ak("predict", run, npy, "--format", "npy", NULL), 0);
	assert_string_equal(g_out, csv_out);
	predict_csv_header_rule(run, v, N, csv_out);
	free(csv_out);
}

/* Class names from a checkpoint reach predict's CSV escaped as every
 * other output escapes them: ESC and TAB as \xNN, a comma or a quote
 * quoted. */
static void predict_escapes_class_names(void **state)
{
	const char *train = tu_path(g_dir, "esc.csv"), *feat = tu_path(g_dir, "esc-f.csv");
	const char *cfg = tu_path(g_dir, "esc.yaml"), *run = tu_path(g_dir, "esc-run");
	static const char *const names[3] = { "\"a\033[31mred\"", "\"tab\there\"",
					      "\"x,\"\"y\"\"\"" };
	FILE *t = fopen(train, "w"), *f = fopen(feat, "w");
	char cfgtext[1024];

	(void)state;
	assert_non_null(t);
	assert_non_null(f);
	fprintf(t, "x,kind\n");
	fprintf(f, "x\n");
	for (int i = 0; i < 30; i++) {
		fprintf(t, "%d,%s\n", i % 3, names[i % 3]);
		fprintf(f, "%d\n", i % 3);
	}
	assert_int_equal(fclose(t), 0);
	assert_int_equal(fclose(f), 0);
	snprintf(cfgtext, sizeof(cfgtext),
		 "name: esc\nseed: 3\ndata:\n  format: csv\n  csv: {header: true, label: kind}\n"
		 "  train: {file: %s}\n"
		 "network:\n  input: [1]\n  gates:\n    - layers: [{dense: 3}]\n"
		 "  loss: softmax_cross_entropy\noptimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 1, batch_size: 10}\noutput: {dir: %s}\n",
		 train, run);
	assert_int_equal(tu_write_file(cfg, cfgtext, strlen(cfgtext)), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_rc(ak("predict", run, feat, "--top", "3", NULL), 0);
	assert_null(strchr(g_out, '\033'));
	assert_null(strchr(g_out, '\t'));
	tu_assert_contains(g_out, "a\\x1b[31mred");
	tu_assert_contains(g_out, "tab\\x09here");
	tu_assert_contains(g_out, "\"x,\"\"y\"\"\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(predict_matches_eval),
		cmocka_unit_test(predict_top_k),
		cmocka_unit_test(predict_pgm),
		cmocka_unit_test(predict_bad_input),
		cmocka_unit_test(predict_bad_checkpoint),
		cmocka_unit_test(predict_csv_and_npy),
		cmocka_unit_test(predict_escapes_class_names),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
