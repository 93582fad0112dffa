/* test_plot.c - the pictures: akkctl plot and eval --confusion-svg.
 *
 * Metrics files are written by hand into a temp directory (plain runs, no
 * validation, one epoch, NaN and inf, resumes, 20000 epochs, damaged
 * files); one small real run (synthetic 8x8 images, 4 classes, flip-flop,
 * a second of training) gives a run directory with checkpoints for the
 * title and for eval. Every SVG is checked with xmllint and by its
 * elements (points per curve, the best epoch's x, legend, ticks); three are
 * rendered with headless Chromium (tests/render_svg.sh) and the PNG is
 * decoded (tu_assert_renders) to check its size and that it is not blank. xmllint
 * and Chromium checks are skipped, with a message, when the tool is
 * missing (sh datasets/deps.sh installs both). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/curves.h"
#include "io/plot.h"
#include "io/svg.h"
#include "testutil.h"

#define HEADER "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_max"

static char g_dir[512];
static char g_out[1 << 16], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stdout:\n%s\n--- stderr:\n%s\n", \
			    r_, w_, g_out, g_err); \
		fail(); \
	} \
} while (0)

/* ---- helpers ---------------------------------------------------------- */

static int have(const char *tool)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* xmllint --noout on path: the SVG is well-formed XML. */
static void assert_well_formed(const char *path)
{
	const char *argv[] = { "xmllint", "--noout", path, NULL };
	static int warned;

	if (!have("xmllint")) {
		if (!warned++)
			fprintf(stderr, "SKIP xmllint checks: no xmllint (Debian: libxml2-utils; "
				"sh datasets/deps.sh)\n");
		return;
	}
	if (tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)) != 0) {
		print_error("xmllint rejects %s:\n%s\n", path, g_err);
		fail();
	}
}

/* A fresh directory dir/name. */
static const char *subdir(const char *name)
{
	const char *p = tu_path(g_dir, name);

	assert_int_equal(mkdir(p, 0777), 0);
	return p;
}

/* Append printf text to a growing buffer. */
struct text {
	char *s;
	size_t n, cap;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
		va_end(ap);
		if (t->s && t->n + (size_t)k < t->cap)
			break;
		t->cap = (t->cap + (size_t)k + 1) * 2;
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	t->n += (size_t)k;
}

/* A metrics row as akkctl writes it. */
static void row(struct text *t, int epoch, const char *phase, double loss, double acc,
		double lr)
{
	add(t, "%d,%s,%d,%.6f,%.6f,%.6g,%.3f,%.1f,%d,%d\n", epoch, phase,
	    strcmp(phase, "train") ? 200 : 600, loss, acc, lr, 0.5, 1000.0, 0, 0);
}

/* The loss, accuracy and lr of a plausible run at epoch e of n. */
static double loss_at(int e) { return 2.3 / (e + 0.0) + 0.1; }
static double acc_at(int e, int n) { return 0.5 + 0.48 * e / n; }
static double lr_at(int e, int n) { return 0.001 * (1 - (e - 1.0) / n); }

/* A run directory name holding metrics.csv with text; returns the dir. */
static const char *run_dir(const char *name, const struct text *t)
{
	const char *d = subdir(name);

	assert_int_equal(tu_write_file(tu_path(d, "metrics.csv"), t->s, t->n), 0);
	return d;
}

/* Points of every <polyline class="cls">, in total; *lines gets how many
 * polylines (may be NULL). */
static long points(const char *svg, const char *cls, int *lines)
{
	char key[64];
	long n = 0;
	int k = 0;

	snprintf(key, sizeof(key), "<polyline class=\"%s\"", cls);
	for (const char *p = strstr(svg, key); p; p = strstr(p + 1, key)) {
		const char *q = strstr(p, "points=\""), *end;
		assert_non_null(q);
		q += 8;
		end = strchr(q, '"');
		for (; q < end; q++)
			n += *q == ',';
		k++;
	}
	if (lines)
		*lines = k;
	return n;
}

/* The x1 of the first <line> after <g class="cls">. */
static double group_line_x(const char *svg, const char *cls)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "<g class=\"%s\">", cls);
	p = strstr(svg, key);
	if (!p) {
		print_error("no %s in the SVG\n", key);
		fail();
	}
	p = strstr(p, "<line x1=\"");
	assert_non_null(p);
	return atof(p + 10);
}

/* Text element content: ">text</text>". */
static void assert_text(const char *svg, const char *text)
{
	char key[300];

	snprintf(key, sizeof(key), ">%s</text>", text);
	tu_assert_contains(svg, key);
}

/* ---- setup ------------------------------------------------------------ */

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

/* ---- core: ticks, escaping ------------------------------------------- */

static void test_ticks(void **state)
{
	struct akk_ticks t;
	char lab[32];

	(void)state;
	akk_plot_ticks(0.03, 0.97, 6, 0, &t);
	assert_true(t.lo == 0 && fabs(t.hi - 1) < 1e-12 && fabs(t.step - 0.2) < 1e-12 && t.n == 6);
	akk_plot_ticks(0.13, 2.4, 6, 0, &t);
	assert_true(t.lo == 0 && fabs(t.hi - 2.5) < 1e-12 && fabs(t.step - 0.5) < 1e-12 && t.n == 6);
	akk_plot_ticks(52.4, 98.1, 6, 0, &t);
	assert_true(t.lo == 50 && t.hi == 100 && t.step == 10 && t.n == 6);
	akk_plot_ticks(1, 7, 10, 1, &t);
	assert_true(t.lo == 1 && t.hi == 7 && t.step == 1);
	akk_plot_ticks(1, 100000, 10, 1, &t);
	assert_true(t.step == 10000 && t.lo == 0 && t.hi == 100000 && t.n == 11);
	akk_plot_ticks(0, 0.001, 5, 0, &t);
	assert_true(fabs(t.step - 0.0002) < 1e-15 && t.n == 6);
	/* One value: widened around it. */
	akk_plot_ticks(0.5, 0.5, 6, 0, &t);
	assert_true(t.lo <= 0.45 && t.hi >= 0.55 && t.n >= 2);
	akk_plot_ticks(0, 0, 6, 0, &t);
	assert_true(t.lo <= -1 && t.hi >= 1);
	akk_plot_ticks(NAN, INFINITY, 6, 0, &t);
	assert_true(isfinite(t.lo) && isfinite(t.hi) && t.hi > t.lo);
	akk_plot_ticks(-1e308, 1e308, 6, 0, &t);
	assert_true(isfinite(t.lo) && isfinite(t.hi) && t.hi > t.lo && t.n >= 2);

	akk_plot_tick_label(lab, sizeof(lab), 0.5, 0.5);
	assert_string_equal(lab, "0.5");
	akk_plot_tick_label(lab, sizeof(lab), 0.0004, 0.0002);
	assert_string_equal(lab, "0.0004");
	akk_plot_tick_label(lab, sizeof(lab), 40, 20);
	assert_string_equal(lab, "40");
	akk_plot_tick_label(lab, sizeof(lab), 1e-17, 0.25);
	assert_string_equal(lab, "0.00");
}

static void test_escape(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	/* Markup, a control byte, a C1 control, invalid UTF-8, then valid
	 * two- and three-byte characters kept as they are. */
	assert_int_equal(akk_svg_escape(f, "a<b>&\"c'\x01\xc2\x85\xff\xc3(\xc3\xa9\xe2\x80\x94"), 0);
	fclose(f);
	assert_string_equal(buf, "a&lt;b&gt;&amp;&quot;c&apos;" "?" "?" "?" "?" "(\xc3\xa9\xe2\x80\x94");
	free(buf);
}

/* A write that fails is reported by akk_svg_end, naming the output. */
static void test_write_error(void **state)
{
	struct akk_svg s;
	struct akk_err e = { 0 };
	FILE *f = fopen("/dev/full", "w");
	char msg[600];

	(void)state;
	if (!f) {
		skip();
		return;
	}
	akk_svg_begin(&s, f, 100, 100, "t");
	for (int i = 0; i < 2000; i++)
		akk_svg_line(&s, 0, 0, i, i, "#000000", 1, NULL);
	assert_int_equal(akk_svg_end(&s, "x.svg", &e), -1);
	akk_err_format(&e, msg, sizeof(msg));
	assert_string_equal(msg, "cannot write 'x.svg': No space left on device");
	fclose(f);
}

/* ---- akkctl plot --------------------------------------------------------- */

/* Seven epochs with validation: a curve of seven points each, the best
 * epoch's line at its x, the legend, the ticks, the title. */
static void test_plot_run(void **state)
{
	struct text t = { 0 };
	struct akk_curves cv;
	struct akk_err e = { 0 };
	const char *d, *svgpath;
	char *svg;
	char x[700];
	int lines;

	(void)state;
	add(&t, HEADER "\n");
	for (int ep = 1; ep <= 7; ep++) {
		row(&t, ep, "train", loss_at(ep), acc_at(ep, 7), lr_at(ep, 7));
		/* The best validation accuracy at epoch 5. */
		row(&t, ep, "validation", loss_at(ep) + 0.05, ep == 5 ? 0.97 : acc_at(ep, 7) - 0.02,
		    lr_at(ep, 7));
	}
	d = run_dir("seven", &t);
	assert_rc(ak("plot", d, NULL), 0);
	svgpath = tu_path(d, "curves.svg");
	snprintf(x, sizeof(x), "wrote '%s'", svgpath);
	tu_assert_line(g_err, x);
	assert_string_equal(g_out, "");
	assert_well_formed(svgpath);
	svg = tu_slurp(svgpath, NULL);
	assert_non_null(svg);
	assert_int_equal(points(svg, "train-loss", &lines), 7);
	assert_int_equal(lines, 1);
	assert_int_equal(points(svg, "validation-loss", NULL), 7);
	assert_int_equal(points(svg, "train-accuracy", NULL), 7);
	assert_int_equal(points(svg, "validation-accuracy", NULL), 7);
	assert_int_equal(points(svg, "lr", NULL), 7);
	assert_int_equal(akk_curves_load(&cv, tu_path(d, "metrics.csv"), &e), 0);
	assert_true(fabs(group_line_x(svg, "best-epoch") - akk_plot_epoch_x(&cv, 5)) < 0.06);
	assert_true(akk_plot_epoch_x(&cv, 1) < akk_plot_epoch_x(&cv, 7));
	akk_curves_release(&cv);
	assert_text(svg, "best: epoch 5, 97.00%");
	tu_assert_contains(svg, "<title>seven: learning curves</title>");
	assert_text(svg, "seven: learning curves");
	for (const char *const *n = (const char *const[]){ "training", "validation",
		"learning rate (right axis)", "best epoch", "loss", "accuracy (%)", "epoch",
		"learning rate", NULL }; *n; n++)
		assert_text(svg, *n);
	/* Loss 0.43..2.45: 0 to 2.5 by 0.5; accuracy 55..98%: 50 to 100 by
	 * 10; lr 0.0001..0.001: 0 to 0.001 by 0.0002; epochs 1..7. */
	for (const char *const *n = (const char *const[]){ "0.0", "0.5", "2.5", "50", "100",
		"0.0002", "0.0010", "1", "7", NULL }; *n; n++)
		assert_text(svg, *n);
	tu_assert_not_contains(svg, "resumed");
	tu_assert_not_contains(svg, "not drawn");
	tu_assert_not_contains(svg, "final pass");
	free(svg);
	tu_assert_renders(svgpath, AKK_PLOT_CURVES_W, AKK_PLOT_CURVES_H, 0.01, 8,
		       (const unsigned[]){ 0x1f77b4, 0xff7f0e, 0x2ca02c, 0x222222, 0 });

	/* A trailing slash: the same paths. */
	assert_rc(ak("plot", tu_path(g_dir, "seven/"), NULL), 0);
	tu_assert_line(g_err, x);
	/* -o elsewhere, and the metrics file given itself. */
	assert_rc(ak("plot", tu_path(d, "metrics.csv"), "-o", tu_path(g_dir, "seven.svg"), NULL), 0);
	assert_well_formed(tu_path(g_dir, "seven.svg"));
	/* -o -: the SVG on stdout, nothing on stderr. */
	assert_rc(ak("plot", d, "-o", "-", NULL), 0);
	tu_assert_prefix(g_out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ");
	tu_assert_contains(g_out, "</svg>\n");
	assert_string_equal(g_err, "");
	free(t.s);
}

/* Only training rows: no validation curve, the best epoch by training
 * accuracy, and a note that says so. */
static void test_plot_no_validation(void **state)
{
	struct text t = { 0 };
	const char *d;
	char *svg;

	(void)state;
	add(&t, HEADER "\n");
	for (int ep = 1; ep <= 4; ep++)
		row(&t, ep, "train", loss_at(ep), ep == 3 ? 0.99 : acc_at(ep, 4) - 0.1, 0.01);
	d = run_dir("noval", &t);
	assert_rc(ak("plot", d, NULL), 0);
	assert_well_formed(tu_path(d, "curves.svg"));
	svg = tu_slurp(tu_path(d, "curves.svg"), NULL);
	assert_int_equal(points(svg, "train-loss", NULL), 4);
	assert_int_equal(points(svg, "validation-loss", NULL), 0);
	assert_int_equal(points(svg, "validation-accuracy", NULL), 0);
	assert_text(svg, "best: epoch 3, 99.00% (training)");
	assert_text(svg, "no validation rows: the best epoch is the one of the highest training accuracy");
	tu_assert_not_contains(svg, ">validation</text>");
	free(svg);
	free(t.s);
}

/* One epoch: one point a curve, drawn as dots, x in the middle. */
static void test_plot_one_epoch(void **state)
{
	struct text t = { 0 };
	const char *d;
	char *svg;

	(void)state;
	add(&t, HEADER "\n");
	row(&t, 1, "train", 0.7, 0.8, 0.001);
	row(&t, 1, "validation", 0.6, 0.85, 0.001);
	d = run_dir("one", &t);
	assert_rc(ak("plot", d, NULL), 0);
	assert_well_formed(tu_path(d, "curves.svg"));
	svg = tu_slurp(tu_path(d, "curves.svg"), NULL);
	assert_int_equal(points(svg, "train-loss", NULL), 1);
	assert_int_equal(points(svg, "validation-accuracy", NULL), 1);
	tu_assert_contains(svg, "<g class=\"points\">");
	assert_true(fabs(group_line_x(svg, "best-epoch") -
			 (80 + (AKK_PLOT_CURVES_W - 80 - 90) / 2.0)) < 0.06);
	assert_text(svg, "best: epoch 1, 85.00%");
	free(svg);
	free(t.s);
}

/* NaN and inf are left out (the curves break there) and counted in a
 * note naming the first. */
static void test_plot_not_finite(void **state)
{
	struct text t = { 0 };
	const char *d;
	char *svg;
	int lines;

	(void)state;
	add(&t, HEADER "\n");
	for (int ep = 1; ep <= 6; ep++) {
		row(&t, ep, "train", ep == 3 ? NAN : loss_at(ep), ep == 4 ? INFINITY : acc_at(ep, 6),
		    lr_at(ep, 6));
		row(&t, ep, "validation", ep == 5 ? -INFINITY : loss_at(ep), acc_at(ep, 6), lr_at(ep, 6));
	}
	d = run_dir("nan", &t);
	/* What the writer prints for them. */
	tu_assert_contains(t.s, "\n3,train,600,nan,");
	tu_assert_contains(t.s, ",inf,");
	tu_assert_contains(t.s, ",-inf,");
	assert_rc(ak("plot", d, NULL), 0);
	assert_well_formed(tu_path(d, "curves.svg"));
	svg = tu_slurp(tu_path(d, "curves.svg"), NULL);
	assert_int_equal(points(svg, "train-loss", &lines), 5);
	assert_int_equal(lines, 2);
	assert_int_equal(points(svg, "train-accuracy", &lines), 5);
	assert_int_equal(lines, 2);
	assert_int_equal(points(svg, "validation-loss", &lines), 5);
	assert_int_equal(lines, 2);
	assert_int_equal(points(svg, "validation-accuracy", &lines), 6);
	assert_int_equal(lines, 1);
	assert_text(svg, "not drawn: 3 values not finite (NaN or inf), the first the training loss "
		    "of epoch 3 (line 6)");
	tu_assert_not_contains(svg, "nan\"");
	tu_assert_not_contains(svg, "inf\"");
	free(svg);
	tu_assert_renders(tu_path(d, "curves.svg"), AKK_PLOT_CURVES_W, AKK_PLOT_CURVES_H, 0.01, 8,
		       (const unsigned[]){ 0x1f77b4, 0xff7f0e, 0 });
	free(t.s);
}

/* Resumes: a finished run (its final row) continued, and epochs that
 * start over; each makes a segment, a dotted line and a legend entry. */
static void test_plot_resumed(void **state)
{
	struct text t = { 0 };
	struct akk_curves cv;
	struct akk_err e = { 0 };
	const char *d;
	char *svg;
	int lines;

	(void)state;
	add(&t, HEADER "\n");
	for (int ep = 1; ep <= 3; ep++) {
		row(&t, ep, "train", loss_at(ep), acc_at(ep, 6), lr_at(ep, 6));
		row(&t, ep, "validation", loss_at(ep), acc_at(ep, 6), lr_at(ep, 6));
	}
	row(&t, 3, "final", loss_at(3), acc_at(3, 6), lr_at(3, 6));
	for (int ep = 4; ep <= 6; ep++) {
		row(&t, ep, "train", loss_at(ep), acc_at(ep, 6), lr_at(ep, 6));
		row(&t, ep, "validation", loss_at(ep), acc_at(ep, 6), lr_at(ep, 6));
	}
	d = run_dir("resumed", &t);
	assert_int_equal(akk_curves_load(&cv, tu_path(d, "metrics.csv"), &e), 0);
	assert_int_equal(cv.segments, 2);
	assert_rc(ak("plot", d, NULL), 0);
	assert_well_formed(tu_path(d, "curves.svg"));
	svg = tu_slurp(tu_path(d, "curves.svg"), NULL);
	assert_int_equal(points(svg, "train-loss", &lines), 6);
	assert_int_equal(lines, 2);
	assert_true(fabs(group_line_x(svg, "resume") - akk_plot_epoch_x(&cv, 3.5)) < 0.06);
	assert_text(svg, "resumed");
	assert_text(svg, "final pass");
	tu_assert_contains(svg, "<g class=\"final-pass\">");
	free(svg);
	akk_curves_release(&cv);

	/* Epochs 1-4, then 3-5 again (appended by hand): a restart. */
	free(t.s);
	t = (struct text){ 0 };
	add(&t, HEADER "\n");
	for (int ep = 1; ep <= 4; ep++)
		row(&t, ep, "train", loss_at(ep), acc_at(ep, 6), 0.01);
	for (int ep = 3; ep <= 5; ep++)
		row(&t, ep, "train", loss_at(ep), acc_at(ep, 6), 0.01);
	d = run_dir("restarted", &t);
	assert_rc(ak("plot", d, NULL), 0);
	svg = tu_slurp(tu_path(d, "curves.svg"), NULL);
	assert_int_equal(points(svg, "train-loss", &lines), 7);
	assert_int_equal(lines, 2);
	assert_int_equal(akk_curves_load(&cv, tu_path(d, "metrics.csv"), &e), 0);
	assert_int_equal(cv.segments, 2);
	assert_true(fabs(group_line_x(svg, "resume") - akk_plot_epoch_x(&cv, 2.5)) < 0.06);
	akk_curves_release(&cv);
	free(svg);
	free(t.s);
}

/* 20000 epochs: thinned to at most two points a pixel column, a small
 * file, and a note. Extra lr_gN columns are read past. */
static void test_plot_many_epochs(void **state)
{
	struct text t = { 0 };
	const char *d;
	char *svg;
	size_t len;
	long n;

	(void)state;
	add(&t, HEADER ",lr_g1,lr_g2\n");
	for (int ep = 1; ep <= 20000; ep++) {
		row(&t, ep, "train", 1.0 / ep + 0.05 * (ep % 7), 0.5 + 0.4 * ep / 20000.0, 0.001);
		t.n--;	/* over the row's newline: the two lr columns go on */
		add(&t, ",0.001,0.002\n");
		row(&t, ep, "validation", 1.0 / ep, 0.5 + 0.4 * ep / 20000.0, 0.001);
		t.n--;
		add(&t, ",0.001,0.002\n");
	}
	d = run_dir("many", &t);
	assert_rc(ak("plot", d, NULL), 0);
	assert_well_formed(tu_path(d, "curves.svg"));
	svg = tu_slurp(tu_path(d, "curves.svg"), &len);
	n = points(svg, "train-loss", NULL);
	assert_true(n > 700 && n <= 2 * (AKK_PLOT_CURVES_W - 80 - 90 + 1));
	assert_true(len < 200000);
	assert_text(svg, "20000 epochs: each pixel column shows the least and the greatest value of its epochs");
	assert_text(svg, "20000");
	free(svg);
	free(t.s);
}

/* Bad input: exit 2 and one line naming the file and the line. */
static void test_plot_bad_input(void **state)
{
	static const struct {
		const char *name, *text, *msg;	/* msg after "akkctl: FILE" */
	} cases[] = {
		{ "foreign", "a,b,c\n1,2,3\n",
		  ":1:1: not a metrics file: the header does not start with epoch,phase,samples,loss,accuracy,lr,..." },
		{ "prefix", "epoch,phase,samples,loss,accuracy,lr,seconds,samples_per_second,weight_version_min,weight_version_maxi\n",
		  ":1:1: not a metrics file: the header does not start with epoch,phase,samples,loss,accuracy,lr,..." },
		{ "cut", HEADER "\n1,train,600,0.5,0.8,0.001,0.5,1000.0,0,0\n2,train,600,0.4",
		  ":3:16: the line is cut short (no newline at its end)" },
		{ "short", HEADER "\n1,train,600,0.5,0.8,0.001,0.5,1000.0,0,0\n2,train,600,0.4\n",
		  ":3:1: the row has 4 fields, the header 10" },
		{ "phase", HEADER "\n1,training,600,0.5,0.8,0.001,0.5,1000.0,0,0\n",
		  ":2:3: the phase is not train, validation or final" },
		{ "number", HEADER "\n1,train,600,0.5x,0.8,0.001,0.5,1000.0,0,0\n",
		  ":2:13: loss is not a number" },
		{ "empty-field", HEADER "\n1,train,600,0.5,,0.001,0.5,1000.0,0,0\n",
		  ":2:17: accuracy is not a number" },
		{ "epoch", HEADER "\n0,train,600,0.5,0.8,0.001,0.5,1000.0,0,0\n",
		  ":2:1: the epoch is not a whole number from 1" },
		{ "samples", HEADER "\n1,train,-6,0.5,0.8,0.001,0.5,1000.0,0,0\n",
		  ":2:9: samples is not a whole number" },
		{ "nul", HEADER "\n1,train,600,0.5,0.8,0.001\0,0.5,1000.0,0,0\n",
		  ":2:1: not a line of text (a NUL byte)" },
		{ "header-only", HEADER "\n", ": no epoch in it yet: only the header" },
		{ "empty", "", ": no epoch in it yet: the file is empty" },
	};
	char want[1200];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *d = subdir(cases[i].name), *m = tu_path(d, "metrics.csv");
		size_t len = strlen(cases[i].text);
		if (!strcmp(cases[i].name, "nul"))
			len = sizeof(HEADER "\n1,train,600,0.5,0.8,0.001\0,0.5,1000.0,0,0\n") - 1;
		assert_int_equal(tu_write_file(m, cases[i].text, len), 0);
		assert_rc(ak("plot", d, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s%s\n", m, cases[i].msg);
		assert_string_equal(g_err, want);
		assert_false(tu_exists(tu_path(d, "curves.svg")));
		/* The file given itself: the same. */
		assert_rc(ak("plot", m, NULL), 2);
		assert_string_equal(g_err, want);
	}

	/* Not there, not a run, no argument, two arguments, a bad option. */
	assert_rc(ak("plot", tu_path(g_dir, "nowhere"), NULL), 2);
	snprintf(want, sizeof(want), "akkctl: cannot open '%s': No such file or directory\n",
		 tu_path(g_dir, "nowhere"));
	assert_string_equal(g_err, want);
	assert_rc(ak("plot", subdir("notarun"), NULL), 2);
	snprintf(want, sizeof(want), "akkctl: '%s' is not a run directory: it has no metrics.csv\n",
		 tu_path(g_dir, "notarun"));
	assert_string_equal(g_err, want);
	assert_rc(ak("plot", NULL), 2);
	tu_assert_line(g_err, "akkctl: plot needs a RUNDIR");
	tu_assert_line(g_err, "usage: akkctl plot RUNDIR|METRICS.csv [-o FILE.svg]");
	assert_rc(ak("plot", "a", "b", NULL), 2);
	tu_assert_line(g_err, "akkctl: unexpected argument 'b'");
	assert_rc(ak("plot", "--frobnicate", NULL), 2);
	tu_assert_line(g_err, "akkctl: unknown option '--frobnicate'");
	assert_rc(ak("plot", "--help", NULL), 0);
	tu_assert_prefix(g_out, "usage: akkctl plot RUNDIR|METRICS.csv [-o FILE.svg]\n");
	assert_rc(ak("help", NULL), 0);
	tu_assert_contains(g_out, "\n  plot      draw a run's learning curves as an SVG chart\n");
}

/* An output that cannot be written: exit 1, nothing left behind. */
static void test_plot_cannot_write(void **state)
{
	struct text t = { 0 };
	const char *d;

	(void)state;
	add(&t, HEADER "\n");
	row(&t, 1, "train", 0.7, 0.8, 0.001);
	d = run_dir("nowrite", &t);
	assert_rc(ak("plot", d, "-o", tu_path(d, "no/such/dir.svg"), NULL), 1);
	tu_assert_prefix(g_err, "akkctl: cannot create '");
	tu_assert_contains(g_err, "/no/such/dir.svg.tmp.");
	free(t.s);
}

/* ---- a real run: plot's title from the checkpoint, eval's heat map ------ */

static void write_set(const char *dir, const char *name, size_t n, uint32_t seed)
{
	struct akk_dataset d;
	char img[64], lab[64];

	tu_dataset(&d, n, 8, 4, seed);
	snprintf(img, sizeof(img), "%s-images", name);
	snprintf(lab, sizeof(lab), "%s-labels", name);
	tu_write_idx(tu_path(dir, img), &d, 1);
	tu_write_idx(tu_path(dir, lab), &d, 0);
	akk_dataset_release(&d);
}

static void test_real_run(void **state)
{
	static const char cfg[] =
		"name: \"tiny <&> run\"\n"
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
		"schedule: {mode: flip-flop, epochs: 3, batch_size: 32}\n"
		"output: {dir: out, metrics: m.csv}\n";
	const char *d = subdir("real"), *out = tu_path(d, "out"), *svgpath;
	char *svg, want[700];
	long sum = 0;

	(void)state;
	write_set(d, "train", 400, 1);
	write_set(d, "val", 200, 2);
	assert_int_equal(tu_write_file(tu_path(d, "tiny.yaml"), cfg, sizeof(cfg) - 1), 0);
	assert_rc(ak("train", tu_path(d, "tiny.yaml"), "--quiet", NULL), 0);

	/* The title is the config's name (escaped); the metrics file is the
	 * one the config names. */
	assert_rc(ak("plot", out, NULL), 0);
	svgpath = tu_path(out, "curves.svg");
	assert_well_formed(svgpath);
	svg = tu_slurp(svgpath, NULL);
	tu_assert_contains(svg, "<title>tiny &lt;&amp;&gt; run: learning curves</title>");
	assert_int_equal(points(svg, "train-loss", NULL), 3);
	assert_int_equal(points(svg, "validation-accuracy", NULL), 3);
	free(svg);

	/* eval --confusion-svg: 4 classes, counts that sum to the samples. */
	svgpath = tu_path(d, "confusion.svg");
	assert_rc(ak("eval", out, "--confusion-svg", svgpath, NULL), 0);
	tu_assert_prefix(g_out, "samples 200  loss ");
	assert_well_formed(svgpath);
	svg = tu_slurp(svgpath, NULL);
	tu_assert_contains(svg, "<title>tiny &lt;&amp;&gt; run: confusion matrix (best.bin)</title>");
	for (const char *const *n = (const char *const[]){ "true class", "predicted class",
		"share of the true class", "0%", "100%", NULL }; *n; n++)
		assert_text(svg, *n);
	tu_assert_contains(svg, "200 samples, accuracy ");
	/* Row labels 0..3 and column labels 0..3. */
	for (const char *g = strstr(svg, "<g class=\"row-labels\">"), *end = strstr(g, "</g>"); g;
	     g = NULL) {
		int k = 0;
		for (const char *p = strstr(g, "</text>"); p && p < end; p = strstr(p + 1, "</text>"))
			k++;
		assert_int_equal(k, 4 + 1);	/* and "true class" */
		assert_text(g, "3");
	}
	/* The counts in the cells sum to the samples. */
	{
		const char *g = strstr(svg, "<g class=\"cells\">"), *end = strstr(g, "</g>");
		int k = 0;
		for (const char *p = strstr(g, "<text"); p && p < end; p = strstr(p + 1, "<text")) {
			sum += atol(strchr(p, '>') + 1);
			k++;
		}
		assert_int_equal(k, 16);
		assert_int_equal(sum, 200);
	}
	free(svg);
	{
		int w = 0, h = 0;
		svg = tu_slurp(svgpath, NULL);
		assert_int_equal(sscanf(strstr(svg, "<svg "), "<svg xmlns=\"http://www.w3.org/2000/svg\" "
					"version=\"1.1\" width=\"%d\" height=\"%d\"", &w, &h), 2);
		assert_true(w >= 460 && h > 4 * 56);
		free(svg);
		tu_assert_renders(svgpath, w, h, 0.02, 8, (const unsigned[]){ 0x08306b, 0 });
	}

	/* -: the SVG alone on stdout. */
	assert_rc(ak("eval", out, "--confusion-svg", "-", NULL), 0);
	tu_assert_prefix(g_out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ");
	tu_assert_not_contains(g_out, "samples 200  loss");
	/* An empty name, a file that cannot be written. */
	assert_rc(ak("eval", out, "--confusion-svg", "", NULL), 2);
	assert_string_equal(g_err, "akkctl: option '--confusion-svg' needs a file name\n");
	assert_rc(ak("eval", out, "--confusion-svg", tu_path(d, "no/x.svg"), NULL), 1);
	snprintf(want, sizeof(want), "akkctl: cannot create '%s.tmp.", tu_path(d, "no/x.svg"));
	tu_assert_prefix(g_err, "using '");
	tu_assert_contains(g_err, want);
	assert_string_equal(g_out, "");
}

/* More classes than the heat map draws: refused before evaluating. */
static void test_eval_too_many_classes(void **state)
{
	static const char cfg[] =
		"name: wide\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates: [{layers: [{dense: 300}]}]\n"
		"optimizer: {type: sgd, lr: 0.01}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 32}\n"
		"output: {dir: out}\n";
	const char *d = subdir("wide"), *out = tu_path(d, "out");

	(void)state;
	write_set(d, "train", 64, 3);
	assert_int_equal(tu_write_file(tu_path(d, "wide.yaml"), cfg, sizeof(cfg) - 1), 0);
	assert_rc(ak("train", tu_path(d, "wide.yaml"), "--quiet", NULL), 0);
	assert_rc(ak("eval", tu_path(out, "last.bin"), "--images", tu_path(d, "train-images"),
		     "--labels", tu_path(d, "train-labels"), "--confusion-svg",
		     tu_path(d, "c.svg"), NULL), 2);
	assert_string_equal(g_err, "akkctl: --confusion-svg draws at most 256 classes; the network has 300\n");
	assert_string_equal(g_out, "");
	assert_false(tu_exists(tu_path(d, "c.svg")));
}

/* The heat map straight from core: names escaped, the bound on classes,
 * counts left out when the cells are too small. */
static void test_confusion_core(void **state)
{
	const long m[9] = { 5, 1, 0, 0, 7, 2, 3, 0, 9 };
	const char *names[3] = { "cat", "<dog>", "bird & co" };
	struct akk_err e = { 0 };
	char *buf = NULL, msg[600];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	long *big;

	(void)state;
	assert_int_equal(akk_plot_confusion(f, m, 3, names, "pets", "x.svg", &e), 0);
	fclose(f);
	assert_text(buf, "&lt;dog&gt;");
	assert_text(buf, "bird &amp; co");
	assert_text(buf, "27 samples, accuracy 77.78%; colour: share of the true class");
	assert_text(buf, "9");
	free(buf);

	assert_int_equal(akk_plot_confusion(NULL, m, 257, names, "x", "x.svg", &e), -1);
	akk_err_format(&e, msg, sizeof(msg));
	assert_string_equal(msg, "cannot draw a confusion matrix of 257 classes (1 to 256)");

	/* 200 classes: cells of 2 pixels, no counts, every fifth label. */
	big = calloc(200 * 200, sizeof(*big));
	const char **many = calloc(200, sizeof(*many));
	char (*nm)[8] = calloc(200, 8);
	for (int i = 0; i < 200; i++) {
		big[i * 200 + i] = 10;
		snprintf(nm[i], 8, "c%d", i);
		many[i] = nm[i];
	}
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(akk_plot_confusion(f, big, 200, many, "many", "x.svg", &e), 0);
	fclose(f);
	tu_assert_contains(buf, "(cells too small for counts)");
	assert_text(buf, "c195");
	tu_assert_not_contains(buf, ">c1</text>");
	free(buf);

	/* 120 classes named by number: cells of 4 pixels; a column label
	 * every 5 (two or three digits fit in 20 pixels), a row label every 3
	 * (8-pixel text in 12). */
	for (int i = 0; i < 120; i++)
		snprintf(nm[i], 8, "%d", i);
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(akk_plot_confusion(f, big, 120, many, "many", "x.svg", &e), 0);
	fclose(f);
	{
		const char *g = strstr(buf, "<g class=\"column-labels\">"), *end = strstr(g, "</g>");
		int k = 0;
		for (const char *p = strstr(g, "</text>"); p && p < end; p = strstr(p + 1, "</text>"))
			k++;
		assert_int_equal(k, 24 + 1);	/* and "predicted class" */
		g = strstr(buf, "<g class=\"row-labels\">");
		end = strstr(g, "</g>");
		k = 0;
		for (const char *p = strstr(g, "</text>"); p && p < end; p = strstr(p + 1, "</text>"))
			k++;
		assert_int_equal(k, 40 + 1);	/* and "true class" */
	}
	free(buf);
	free(big);
	free(many);
	free(nm);
}

/* The chart the README shows is well-formed and small. */
static void test_readme_chart(void **state)
{
	struct stat st;
	char *readme = tu_slurp("README.md", NULL);

	(void)state;
	assert_int_equal(stat("docs/curves.svg", &st), 0);
	assert_true(st.st_size < 30 * 1024);
	assert_well_formed("docs/curves.svg");
	assert_non_null(readme);
	tu_assert_contains(readme, "![learning curves of configs/mnist.yaml](docs/curves.svg)");
	free(readme);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticks),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_plot_run),
		cmocka_unit_test(test_plot_no_validation),
		cmocka_unit_test(test_plot_one_epoch),
		cmocka_unit_test(test_plot_not_finite),
		cmocka_unit_test(test_plot_resumed),
		cmocka_unit_test(test_plot_many_epochs),
		cmocka_unit_test(test_plot_bad_input),
		cmocka_unit_test(test_plot_cannot_write),
		cmocka_unit_test(test_real_run),
		cmocka_unit_test(test_eval_too_many_classes),
		cmocka_unit_test(test_confusion_core),
		cmocka_unit_test(test_readme_chart),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
