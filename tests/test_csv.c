/* test_csv.c - CSV reading (data/csv.h): good tables with every option,
 * and the bad-file corpus: each bad table is written by the test, read, and
 * its exact error line ("FILE:LINE:COL: message") asserted; then the same
 * through `akkctl train` (exit 2). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "config/spec.h"
#include "data/csv.h"
#include "data/open.h"

static const char *dir;

static const char *write_text(const char *name, const char *text, size_t n)
{
	const char *path = tu_path(dir, name);

	assert_int_equal(tu_write_file(path, text, n), 0);
	return path;
}

static const char *write_str(const char *name, const char *text)
{
	return write_text(name, text, strlen(text));
}

static const char *write_gz(const char *name, const char *text, size_t n)
{
	const char *path = tu_path(dir, name);
	gzFile gz = gzopen(path, "wb9");

	assert_non_null(gz);
	while (n) {
		unsigned k = n > (1u << 30) ? 1u << 30 : (unsigned)n;
		assert_int_equal(gzwrite(gz, text, k), (int)k);
		text += k;
		n -= k;
	}
	assert_int_equal(gzclose(gz), Z_OK);
	return path;
}

/* Default options: comma, no header, no skip, the last column the label. */
static struct akk_csv_spec opts(void)
{
	struct akk_csv_spec o;

	memset(&o, 0, sizeof(o));
	o.label.index = -1;
	return o;
}

static void expect_error_o(const char *path, const char *targets,
			   const struct akk_csv_spec *o, int regression,
			   const char *want)
{
	struct akk_dataset d;
	struct akk_err e;
	char line[sizeof(e.msg) + sizeof(e.file) + 32];

	memset(&e, 0, sizeof(e));
	assert_int_equal(akk_csv_dataset(&d, path, targets, o, regression, &e), -1);
	akk_err_format(&e, line, sizeof(line));
	assert_string_equal(line, want);
	assert_null(d.xf);
	assert_null(d.labels);
	assert_null(d.y);
}

/* The bad-file corpus: content, options, and the exact error after
 * "FILE" (":LINE:COL: message" or ": message"). */
struct bad {
	const char *name, *text;
	int header, skip, delimiter, label, regression;
	const char *want;
};

static const struct bad corpus[] = {
	{ "empty", "", 0, 0, 0, -1, 0, ": empty file" },
	{ "blank-lines", "\n  \r\n\t\n", 0, 0, 0, -1, 0,
	  ": no data rows in 3 lines" },
	{ "header-only", "a,b,c\n", 1, 0, 0, -1, 0,
	  ": no data rows after the header on line 1" },
	{ "skip-past-end", "150,4\n", 0, 3, 0, -1, 0,
	  ": the file ends at line 1, within the 3 lines to skip (data.csv.skip)" },
	{ "too-few-cells", "1,2,0\n3,4,1\n5,6\n", 0, 0, 0, -1, 0,
	  ":3:3: 2 cells, expected 3 as on line 1" },
	{ "too-many-cells", "a,b,c\n1,2,0\n3,4,1,7\n", 1, 0, 0, -1, 0,
	  ":3:4: 4 cells, expected 3 as on line 1" },
	{ "truncated", "1,2,0\n3,4,1\n5,", 0, 0, 0, -1, 0,
	  ":3:3: 2 cells, expected 3 as on line 1" },
	{ "non-numeric", "1,2,0\n3,x4,1\n", 0, 0, 0, -1, 0,
	  ":2:2: not a number: 'x4'" },
	{ "hex", "0x10,2,0\n", 0, 0, 0, -1, 0, ":1:1: not a number: '0x10'" },
	{ "control-bytes", "1,a\x1b[31m\x7f,0\n", 0, 0, 0, -1, 0,
	  ":1:2: not a number: 'a\\x1b[31m\\x7f'" },
	{ "long-cell", "1,"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  ",0\n", 0, 0, 0, -1, 0,
	  ":1:2: not a number: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'" },
	{ "two-points", "1.2.3,2,0\n", 0, 0, 0, -1, 0,
	  ":1:1: not a number: '1.2.3'" },
	{ "missing-value", "1,2,0\n3,,1\n", 0, 0, 0, -1, 0,
	  ":2:2: missing value" },
	{ "missing-blank", "1,2,0\n3, \t,1\n", 0, 0, 0, -1, 0,
	  ":2:2: missing value" },
	{ "missing-label", "1,2,\n", 0, 0, 0, -1, 0, ":1:3: missing value" },
	{ "nan", "1,nan,0\n", 0, 0, 0, -1, 0,
	  ":1:2: not a finite number: 'nan'" },
	{ "inf", "-inf,1,0\n", 0, 0, 0, -1, 0,
	  ":1:1: not a finite number: '-inf'" },
	{ "beyond-float", "1e39,1,0\n", 0, 0, 0, -1, 0,
	  ":1:1: too large for a float: '1e39'" },
	{ "label-negative", "1,2,0\n1,2,-1\n", 0, 0, 0, -1, 0,
	  ":2:3: class label -1 is out of range: labels are integers from 0 to 65535" },
	{ "label-too-large", "1,2,65536\n", 0, 0, 0, -1, 0,
	  ":1:3: class label 65536 is out of range: labels are integers from 0 to 65535" },
	{ "label-fraction", "1,2,0.5\n", 0, 0, 0, -1, 0,
	  ":1:3: class label 0.5 is not an integer" },
	{ "label-name-after-numbers", "1,2,0\n1,2,cat\n", 0, 0, 0, -1, 0,
	  ":2:3: not a number: 'cat' (the labels are numbers, as on line 1)" },
	{ "target-not-a-number", "1,2,0.5\n1,2,n/a\n", 0, 0, 0, -1, 1,
	  ":2:3: not a number: 'n/a'" },
	{ "nul-byte", "1,2,0\n1,\0,0\n", 0, 0, 0, -1, 0,
	  ":2:0: NUL byte in the line: not a text file" },
	{ "unterminated-quote", "1,\"2,0\n", 0, 0, 0, -1, 0,
	  ":1:2: unterminated quote" },
	{ "after-quote", "1,\"2\"x,0\n", 0, 0, 0, -1, 0,
	  ":1:2: text after the closing quote" },
	{ "semicolon-as-comma", "1;2;0\n1,5;2;0\n", 0, 0, AKK_CSV_SEMICOLON,
	  -1, 0, ":2:1: not a number: '1,5'" },
	{ "whitespace-count", "1 2 0\n1  2\t0 4\n", 0, 0, AKK_CSV_WHITESPACE,
	  -1, 0, ":2:4: 4 cells, expected 3 as on line 1" },
	{ "header-missing", "x,y,label\n1,2,0\n", 0, 0, 0, -1, 0,
	  ":1:1: not a number: 'x'" },
	{ "label-index-beyond", "1,2,0\n", 0, 0, 0, 3, 0,
	  ":1:0: data.csv.label is column 3 (0-based), but the row has 3 cells" },
	{ "no-features", "0\n1\n", 0, 0, 0, -1, 0,
	  ":1:0: no feature columns: each of the 1 is a label, a target or ignored" },
};

static void test_bad_corpus(void **state)
{
	char want[512], name[64];

	(void)state;
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		const struct bad *b = &corpus[i];
		struct akk_csv_spec o = opts();
		size_t n = strlen(b->text);
		if (!strcmp(b->name, "nul-byte"))
			n = 12;
		snprintf(name, sizeof(name), "%s.csv", b->name);
		const char *path = write_text(name, b->text, n);
		o.header = b->header;
		o.skip = b->skip;
		o.delimiter = b->delimiter;
		o.label.index = b->label;
		snprintf(want, sizeof(want), "%s%s", path, b->want);
		expect_error_o(path, NULL, &o, b->regression, want);
		/* The same table gzipped fails the same way. */
		snprintf(name, sizeof(name), "%s.csv.gz", b->name);
		path = write_gz(name, b->text, n);
		snprintf(want, sizeof(want), "%s%s", path, b->want);
		expect_error_o(path, NULL, &o, b->regression, want);
	}
}

static void test_cannot_open(void **state)
{
	struct akk_csv_spec o = opts();
	char want[512];
	const char *path = tu_path(dir, "absent.csv");

	(void)state;
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	expect_error_o(path, NULL, &o, 0, want);
	snprintf(want, sizeof(want), "%s: cannot open: Is a directory", dir);
	expect_error_o(dir, NULL, &o, 0, want);
}

static void test_bad_columns(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_csv_col t[2] = { { NULL, 0, { 0, 0 } }, { NULL, 0, { 0, 0 } } };
	char want[512];
	const char *path = write_str("cols.csv", "a,b,a\n1,2,0\n");

	(void)state;
	/* A name needs a header. */
	o.label.name = "b";
	snprintf(want, sizeof(want), "%s: data.csv.label names column 'b', but the file has no header (data.csv.header: false)", path);
	expect_error_o(path, NULL, &o, 0, want);
	o.header = 1;
	o.label.name = "species";
	snprintf(want, sizeof(want), "%s:1:0: no column named 'species' (data.csv.label) in the header", path);
	expect_error_o(path, NULL, &o, 0, want);
	o.label.name = "a";
	snprintf(want, sizeof(want), "%s:1:3: column name 'a' (data.csv.label) is in the header twice", path);
	expect_error_o(path, NULL, &o, 0, want);
	/* Two targets naming one column. */
	o.label.name = NULL;
	o.targets = t;
	o.ntargets = 2;
	t[0].name = "b";
	t[1].index = 1;
	snprintf(want, sizeof(want), "%s:1:2: data.csv.targets names column 1 twice", path);
	expect_error_o(path, NULL, &o, 1, want);
	t[1].index = 5;
	snprintf(want, sizeof(want), "%s:1:0: data.csv.targets is column 5 (0-based), but the header has 3 cells", path);
	expect_error_o(path, NULL, &o, 1, want);
}

static void load_ok(struct akk_dataset *d, const char *path,
		    const char *targets, const struct akk_csv_spec *o,
		    int regression);

/* The bounds on a cell and on the columns, at and past them. */
static void test_bounds(void **state)
{
	struct akk_csv_spec o = opts();
	size_t cap = 2 * (AKK_CSV_MAX_COLS + 1) + 64, n;
	char *text = malloc(cap), want[512];
	struct akk_dataset d;
	const char *path;

	(void)state;
	assert_non_null(text);
	/* A cell of 1024 bytes (0...01) is 1; of 1025, too long. */
	for (int len = AKK_CSV_MAX_CELL; len <= AKK_CSV_MAX_CELL + 1; len++) {
		n = (size_t)snprintf(text, cap, "1,2,0\n3,");
		memset(text + n, '0', (size_t)len - 1);
		n += (size_t)len - 1;
		n += (size_t)snprintf(text + n, cap - n, "1,1\n");
		path = write_text("cell.csv", text, n);
		if (len == AKK_CSV_MAX_CELL) {
			load_ok(&d, path, NULL, &o, 0);
			assert_true(akk_dataset_x(&d, 3) == 1);
			akk_dataset_release(&d);
		} else {
			snprintf(want, sizeof(want), "%s:2:2: cell longer than 1024 bytes", path);
			expect_error_o(path, NULL, &o, 0, want);
		}
	}
	/* 65536 cells (65535 features and the label), then 65537. */
	for (int cells = AKK_CSV_MAX_COLS; cells <= AKK_CSV_MAX_COLS + 1; cells++) {
		n = 0;
		for (int i = 0; i < cells; i++) {
			text[n++] = '0';
			text[n++] = i + 1 < cells ? ',' : '\n';
		}
		path = write_text("cols.csv", text, n);
		if (cells == AKK_CSV_MAX_COLS) {
			load_ok(&d, path, NULL, &o, 0);
			assert_int_equal(d.in, AKK_CSV_MAX_COLS - 1);
			akk_dataset_release(&d);
		} else {
			snprintf(want, sizeof(want), "%s:1:65537: more than 65536 cells", path);
			expect_error_o(path, NULL, &o, 0, want);
		}
	}
	free(text);
}

static void test_targets_file_rows(void **state)
{
	struct akk_csv_spec o = opts();
	char want[1024];
	const char *x = write_str("tx.csv", "1 2\n3 4\n5 6\n");
	const char *y = write_str("ty.csv", "10\n20\n");

	(void)state;
	o.delimiter = AKK_CSV_WHITESPACE;
	snprintf(want, sizeof(want), "'%s' has 3 rows but '%s' has 2", x, y);
	expect_error_o(x, y, &o, 1, want);
}

/* The corrupt and truncated gzip streams. */
static void test_bad_gzip(void **state)
{
	struct akk_csv_spec o = opts();
	char text[4096], want[512];
	size_t n = 0;
	const char *path;
	char *z;
	size_t zn;

	(void)state;
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%d,%d,%d\n",
				      i, i * 7 % 13, i % 3);
	path = write_gz("whole.csv.gz", text, n);
	z = tu_slurp(path, &zn);
	assert_non_null(z);
	path = write_text("cut.csv.gz", z, zn / 2);
	snprintf(want, sizeof(want), "%s: corrupt gzip stream: unexpected end of file", path);
	expect_error_o(path, NULL, &o, 0, want);
	z[zn / 2] ^= 0x55;
	z[zn / 2 + 1] ^= 0x55;
	path = write_text("flipped.csv.gz", z, zn);
	{
		struct akk_dataset d;
		struct akk_err e;
		assert_int_equal(akk_csv_dataset(&d, path, NULL, &o, 0, &e), -1);
		assert_string_equal(e.file, path);
		assert_int_equal(strncmp(e.msg, "corrupt gzip stream: ", 21), 0);
	}
	z[zn / 2] ^= 0x55;
	z[zn / 2 + 1] ^= 0x55;
	z = realloc(z, zn + 4);
	assert_non_null(z);
	memcpy(z + zn, "junk", 4);
	path = write_text("junk.csv.gz", z, zn + 4);
	snprintf(want, sizeof(want), "%s: junk after the gzip stream at byte %zu", path, zn);
	expect_error_o(path, NULL, &o, 0, want);
	free(z);
}

static long peak_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* 64 MiB of "0,0,...,0\n" in a gzip file of a few hundred KiB: stopped
 * at 256 times the compressed bytes, long before the end. */
static void test_gzip_bomb(void **state)
{
	struct akk_csv_spec o = opts();
	size_t n = (size_t)64 << 20, row = 64;
	char *text = malloc(n), want[512];
	const char *path;
	long before;

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < n; i += 2)
		memcpy(text + i, (i + 2) % row ? "0," : "0\n", 2);
	path = write_gz("bomb.csv.gz", text, n);
	free(text);
	before = peak_kb();
	snprintf(want, sizeof(want), "%s: gzip bomb: inflates to more than 256 times its compressed size", path);
	expect_error_o(path, NULL, &o, 0, want);
	assert_true(peak_kb() - before < 128 * 1024);
}

/* --- good tables ---------------------------------------------------------- */

static void load_ok(struct akk_dataset *d, const char *path,
		    const char *targets, const struct akk_csv_spec *o,
		    int regression)
{
	struct akk_err e;
	char line[sizeof(e.msg) + sizeof(e.file) + 32];

	if (akk_csv_dataset(d, path, targets, o, regression, &e)) {
		akk_err_format(&e, line, sizeof(line));
		fprintf(stderr, "unexpected error: %s\n", line);
		fail();
	}
}

static void assert_floats(const float *got, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i]) {
			fprintf(stderr, "value %zu: got %.9g, want %.9g\n", i,
				(double)got[i], (double)want[i]);
			fail();
		}
}

/* The data set's values, stored as bytes or floats. */
static void assert_x(const struct akk_dataset *d, const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (akk_dataset_x(d, i) != want[i]) {
			fprintf(stderr, "value %zu: got %.9g, want %.9g\n", i,
				(double)akk_dataset_x(d, i), (double)want[i]);
			fail();
		}
}

static void test_good_integer_labels(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	static const float x[] = { 5.1f, 3.5f, -1.25f, 4e-3f, 0, 1e10f };
	static const int32_t l[] = { 0, 4, 2 };
	/* The iris quirk: a count line first (skip: 1); blank lines, CRLF
	 * and a last line with no newline; "4.0" is the integer 4. */
	const char *text = "150,4,setosa,versicolor,virginica\r\n"
			   "5.1,3.5,0\r\n\r\n -1.25 ,+4e-3, 4.0\n0,1E10,2";

	(void)state;
	o.skip = 1;
	load_ok(&d, write_str("iris-like.csv", text), NULL, &o, 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.in, 2);
	assert_int_equal(d.c, 1);
	assert_int_equal(d.h, 1);
	assert_int_equal(d.w, 2);
	assert_int_equal(d.xtype, AKK_X_F32);
	assert_null(d.x8);
	assert_int_equal(d.classes, 5);
	assert_null(d.class_names);
	assert_x(&d, x, 6);
	assert_memory_equal(d.labels, l, sizeof(l));
	assert_int_equal(d.targets, 0);
	assert_null(d.y);
	akk_dataset_release(&d);
	/* gzip gives the same. */
	load_ok(&d, write_gz("iris-like.csv.gz", text, strlen(text)), NULL, &o, 0);
	assert_int_equal(d.n, 3);
	assert_x(&d, x, 6);
	assert_memory_equal(d.labels, l, sizeof(l));
	akk_dataset_release(&d);
}

static void test_good_names_header(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	static const float x[] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static const int32_t l[] = { 2, 0, 1, 3 };
	/* A BOM, a header, the label by name in the middle, quoted cells;
	 * names sorted in byte order (strcmp). */
	const char *text = "\xef\xbb\xbf" "x,\"species\",y\n"
			   "1,b\"\"c,2\n3,Zebra,4\n5 , \"ant\" ,6\n7,\"b\"\"c\",8\n";

	(void)state;
	o.header = 1;
	o.label.name = "species";
	load_ok(&d, write_str("names.csv", text), NULL, &o, 0);
	assert_int_equal(d.n, 4);
	assert_int_equal(d.in, 2);
	assert_x(&d, x, 8);
	/* Unquoted, b""c is those four bytes; quoted, "b""c" is b"c. */
	assert_int_equal(d.classes, 4);
	assert_non_null(d.class_names);
	assert_string_equal(d.class_names[0], "Zebra");
	assert_string_equal(d.class_names[1], "ant");
	assert_string_equal(d.class_names[2], "b\"\"c");
	assert_string_equal(d.class_names[3], "b\"c");
	assert_memory_equal(d.labels, l, sizeof(l));
	akk_dataset_release(&d);
}

static void test_good_delimiters(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	static const float x[] = { 1.5f, 2, 3, 4 };
	static const int32_t l[] = { 1, 0 };

	(void)state;
	o.delimiter = AKK_CSV_SEMICOLON;
	o.label.index = 0;
	load_ok(&d, write_str("semi.csv", "1;1.5;2\n0 ; 3;4\n"), NULL, &o, 0);
	assert_int_equal(d.in, 2);
	assert_x(&d, x, 4);
	assert_memory_equal(d.labels, l, sizeof(l));
	assert_int_equal(d.classes, 2);
	akk_dataset_release(&d);
	o.delimiter = AKK_CSV_WHITESPACE;
	load_ok(&d, write_str("blanks.csv", "  1 \t 1.5   2\r\n0\t3 4\n\n"), NULL,
		&o, 0);
	assert_int_equal(d.n, 2);
	assert_x(&d, x, 4);
	assert_memory_equal(d.labels, l, sizeof(l));
	akk_dataset_release(&d);
}

static void test_good_regression(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_csv_col t[2] = { { NULL, 2, { 0, 0 } },
				    { "a", -1, { 0, 0 } } };
	struct akk_dataset d;
	static const float x1[] = { 2, 4, 6, 8 }, y1[] = { 3, 1, 7, 5 };
	static const float x2[] = { 1, 2, 5, 6 }, y2[] = { 3, 7 };

	(void)state;
	/* Targets by index and by name, in the order given. */
	o.header = 1;
	o.targets = t;
	o.ntargets = 2;
	load_ok(&d, write_str("reg.csv", "a,b,c,d\n1,2,3,4\n5,6,7,8\n"), NULL,
		&o, 1);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.in, 2);
	assert_int_equal(d.targets, 2);
	assert_null(d.labels);
	assert_int_equal(d.classes, 0);
	assert_x(&d, x1, 4);
	assert_floats(d.y, y1, 4);
	akk_dataset_release(&d);
	/* No targets: the label column (the last) is the one target. */
	o = opts();
	o.label.index = 2;
	load_ok(&d, write_str("reg1.csv", "1,2,3\n5,6,7\n"), NULL, &o, 1);
	assert_int_equal(d.targets, 1);
	assert_x(&d, x2, 4);
	assert_floats(d.y, y2, 2);
	akk_dataset_release(&d);
}

/* The diabetes form: features in one file, targets in another. */
static void test_good_targets_file(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	static const float x[] = { 59, 2, 32.1f, 48, 1, 21.6f };
	static const float y[] = { 151, 75 };
	static const int32_t l[] = { 1, 0 };
	const char *xp = write_gz("dx.csv.gz", "59 2 32.1\n48 1 21.6\n", 20);
	const char *yp = write_gz("dy.csv.gz",
				  "1.510000000000000000e+02\n7.500000000000000000e+01\n",
				  50);

	(void)state;
	o.delimiter = AKK_CSV_WHITESPACE;
	load_ok(&d, xp, yp, &o, 1);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.in, 3);
	assert_x(&d, x, 6);
	assert_int_equal(d.targets, 1);
	assert_floats(d.y, y, 2);
	akk_dataset_release(&d);
	/* Class labels from a second file: its label column. */
	yp = write_str("dl.csv", "a 1\nb 0\n");
	o.label.index = 1;
	load_ok(&d, xp, yp, &o, 0);
	assert_int_equal(d.in, 3);
	assert_memory_equal(d.labels, l, sizeof(l));
	assert_int_equal(d.classes, 2);
	akk_dataset_release(&d);
}

/* A long table through gzip: many input chunks and lines. */
static void test_good_large(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	size_t rows = 20000, cap = rows * 40, n = 0;
	char *text = malloc(cap);

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < rows; i++)
		n += (size_t)snprintf(text + n, cap - n, "%zu,%zu.5,%zu\n", i,
				      i % 977, i % 10);
	load_ok(&d, write_gz("large.csv.gz", text, n), NULL, &o, 0);
	assert_int_equal(d.n, rows);
	assert_int_equal(d.classes, 10);
	for (size_t i = 0; i < rows; i++) {
		assert_true(akk_dataset_x(&d, 2 * i) == (float)i);
		assert_true(akk_dataset_x(&d, 2 * i + 1) == (float)(i % 977) + 0.5f);
		assert_int_equal(d.labels[i], (int)(i % 10));
	}
	akk_dataset_release(&d);
	free(text);
}

/* A table of whole numbers in 0..255 is kept as bytes, as IDX keeps
 * pixels; one value outside (256, -1, 0.5) keeps the whole table as floats.
 * The values read back the same either way. */
static void test_byte_table(void **state)
{
	static const struct { const char *text; int bytes; float v[4]; } c[] = {
		{ "0,255,0\n17,3,1\n", 1, { 0, 255, 17, 3 } },
		{ "0,256,0\n17,3,1\n", 0, { 0, 256, 17, 3 } },
		{ "0,-1,0\n17,3,1\n", 0, { 0, -1, 17, 3 } },
		{ "0,2,0\n17,0.5,1\n", 0, { 0, 2, 17, 0.5f } },
	};
	struct akk_csv_spec o = opts();
	struct akk_dataset d;

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		load_ok(&d, write_str("bytes.csv", c[i].text), NULL, &o, 0);
		assert_int_equal(d.xtype, c[i].bytes ? AKK_X_U8 : AKK_X_F32);
		assert_true(c[i].bytes ? d.x8 && !d.xf : d.xf && !d.x8);
		assert_x(&d, c[i].v, 4);
		akk_dataset_release(&d);
	}
}

/* Plain decimals take a fast path: each must come out as strtod's. */
static void test_decimals_as_strtod(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset d;
	size_t rows = 20000, cap = rows * 40, n = 0;
	char *text = malloc(cap), cell[32];
	uint32_t r = 12345;

	(void)state;
	assert_non_null(text);
	for (size_t i = 0; i < rows; i++) {
		int len = 1 + (int)((r = r * 1664525u + 1013904223u) >> 28);
		int point = (int)((r = r * 1664525u + 1013904223u) >> 27) % (len + 2);
		size_t k = 0;
		if ((r = r * 1664525u + 1013904223u) >> 31)
			cell[k++] = '-';
		for (int j = 0; j < len; j++) {
			if (j == point)
				cell[k++] = '.';
			cell[k++] = (char)('0' + ((r = r * 1664525u + 1013904223u) >> 24) % 10);
		}
		cell[k] = '\0';
		n += (size_t)snprintf(text + n, cap - n, "%s,0\n", cell);
	}
	load_ok(&d, write_str("decimals.csv", text), NULL, &o, 0);
	assert_int_equal(d.n, rows);
	{
		const char *p = text;
		for (size_t i = 0; i < rows; i++) {
			float want = (float)strtod(p, NULL);
			if (memcmp(&d.xf[i], &want, sizeof(want))) {
				fprintf(stderr, "row %zu: '%.*s' read as %.9g, strtod gives %.9g\n",
					i + 1, (int)strcspn(p, ","), p,
					(double)d.xf[i], (double)want);
				fail();
			}
			p = strchr(p, '\n') + 1;
		}
	}
	akk_dataset_release(&d);
	free(text);
}

/* --- the config keys ------------------------------------------------------ */

static void test_spec_keys(void **state)
{
	static const char text[] =
		"data:\n"
		"  format: csv\n"
		"  train: {file: d/x.csv.gz, targets_file: d/y.csv.gz}\n"
		"  validation: {file: /v.csv}\n"
		"  csv: {header: true, skip: 2, delimiter: whitespace,\n"
		"        label: species, targets: [3, price]}\n"
		"network:\n  input: [4]\n  gates:\n    - layers: [{dense: 3}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	struct akk_spec s;
	struct akk_err e;

	(void)state;
	assert_int_equal(akk_spec_parse(&s, text, strlen(text), "c.yaml", "cfg",
					NULL, 0, &e), 0);
	assert_string_equal(s.data.format, "csv");
	assert_string_equal(s.data.train.file, "cfg/d/x.csv.gz");
	assert_string_equal(s.data.train.targets, "cfg/d/y.csv.gz");
	assert_string_equal(s.data.val.file, "/v.csv");
	assert_null(s.data.val.targets);
	assert_null(s.data.train.images);
	assert_int_equal(s.data.csv.header, 1);
	assert_int_equal(s.data.csv.skip, 2);
	assert_int_equal(s.data.csv.delimiter, AKK_CSV_WHITESPACE);
	assert_string_equal(s.data.csv.label.name, "species");
	assert_int_equal(s.data.csv.label.mark.line, 6);
	assert_int_equal(s.data.csv.ntargets, 2);
	assert_null(s.data.csv.targets[0].name);
	assert_int_equal(s.data.csv.targets[0].index, 3);
	assert_string_equal(s.data.csv.targets[1].name, "price");
	akk_spec_release(&s);
	/* The defaults: comma, no header, the last column the label. */
	static const char min[] =
		"data: {format: csv, train: {file: t.csv}}\n"
		"network:\n  input: [4]\n  gates:\n    - layers: [{dense: 3}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	assert_int_equal(akk_spec_parse(&s, min, strlen(min), "c.yaml", NULL,
					NULL, 0, &e), 0);
	assert_int_equal(s.data.csv.header, 0);
	assert_int_equal(s.data.csv.skip, 0);
	assert_int_equal(s.data.csv.delimiter, AKK_CSV_COMMA);
	assert_null(s.data.csv.label.name);
	assert_int_equal(s.data.csv.label.index, -1);
	assert_int_equal(s.data.csv.ntargets, 0);
	assert_true(s.data.scale == 1);	/* not 255: not pixels */
	akk_spec_release(&s);
}

/* A validation table's names numbered as the training table's. */
static void test_match_classes(void **state)
{
	struct akk_csv_spec o = opts();
	struct akk_dataset t, v;
	struct akk_err e;
	char want[1024], line[sizeof(e.msg) + sizeof(e.file) + 32];
	static const int32_t lv[] = { 2, 0, 2 };
	const char *vp;

	(void)state;
	load_ok(&t, write_str("mt.csv", "1,ant\n2,bee\n3,cat\n"), NULL, &o, 0);
	/* Alone, v's names would be 0 = ant, 1 = cat. */
	vp = write_str("mv.csv", "1,cat\n2,ant\n3,cat\n");
	load_ok(&v, vp, NULL, &o, 0);
	assert_int_equal(v.classes, 2);
	assert_int_equal(akk_csv_match_classes(&v, t.class_names, t.classes, vp, &e), 0);
	assert_int_equal(v.classes, 3);
	assert_memory_equal(v.labels, lv, sizeof(lv));
	assert_string_equal(v.class_names[1], "bee");
	akk_dataset_release(&v);
	vp = write_str("mw.csv", "1,cat\n2,wasp\n");
	load_ok(&v, vp, NULL, &o, 0);
	assert_int_equal(akk_csv_match_classes(&v, t.class_names, t.classes, vp, &e), -1);
	akk_err_format(&e, line, sizeof(line));
	/* at the line the name is first seen on */
	snprintf(want, sizeof(want), "%s:2:2: class 'wasp' is not one of the training set's 3 classes", vp);
	assert_string_equal(line, want);
	akk_dataset_release(&v);
	vp = write_str("mn.csv", "1,0\n2,1\n");
	load_ok(&v, vp, NULL, &o, 0);
	assert_int_equal(akk_csv_match_classes(&v, t.class_names, t.classes, vp, &e), -1);
	akk_err_format(&e, line, sizeof(line));
	snprintf(want, sizeof(want), "%s: its class labels are numbers, but the training set's are names", vp);
	assert_string_equal(line, want);
	/* Numbers on both sides (no names, or none counted): nothing to do. */
	assert_int_equal(akk_csv_match_classes(&v, NULL, 0, vp, &e), 0);
	assert_int_equal(akk_csv_match_classes(&v, t.class_names, 0, vp, &e), 0);
	akk_dataset_release(&v);
	/* A checkpoint's names in any order. */
	{
		char *un[] = { "cat", "ant", "bee" };
		static const int32_t lu[] = { 0, 1, 0 };
		vp = write_str("mu.csv", "1,cat\n2,ant\n3,cat\n");
		load_ok(&v, vp, NULL, &o, 0);
		assert_int_equal(akk_csv_match_classes(&v, un, 3, vp, &e), 0);
		assert_memory_equal(v.labels, lu, sizeof(lu));
		assert_string_equal(v.class_names[0], "cat");
		akk_dataset_release(&v);
	}
	akk_dataset_release(&t);
}

/* data.task reaches the reader through data/open.c. */
static void test_open_task(void **state)
{
	static const char text[] =
		"data:\n"
		"  format: csv\n"
		"  task: regression\n"
		"  train: {file: x.csv, targets_file: y.csv}\n"
		"  validation: {file: x.csv}\n"
		"  csv: {delimiter: whitespace}\n"
		"network:\n  input: [2]\n  gates:\n    - layers: [{dense: 1}]\n"
		"  loss: mse\n"
		"optimizer: {type: sgd, lr: 0.1}\n";
	static const float x[] = { 1, 2, 3, 4 }, y[] = { 0.5f, -7 }, v[] = { 2, 4 };
	struct akk_spec s;
	struct akk_dataset d;
	struct akk_err e;

	(void)state;
	write_str("x.csv", "1 2\n3 4\n");
	write_str("y.csv", "0.5\n-7\n");
	assert_int_equal(akk_spec_parse(&s, text, strlen(text), "c.yaml", dir,
					NULL, 0, &e), 0);
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_TRAIN, &e), 0);
	assert_int_equal(d.targets, 1);
	assert_null(d.labels);
	assert_x(&d, x, 4);
	assert_floats(d.y, y, 2);
	akk_dataset_release(&d);
	/* Without targets_file, the last column is the target. */
	assert_int_equal(akk_data_open(&d, &s.data, AKK_DATA_VAL, &e), 0);
	assert_int_equal(d.in, 1);
	assert_floats(d.y, v, 2);
	akk_dataset_release(&d);
	akk_spec_release(&s);
}

/* --- through the command line --------------------------------------------- */

static char g_out[8192], g_err[8192];
#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

static const char *write_config(const char *name, const char *train,
				const char *extra)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "data:\n"
		 "  format: csv\n"
		 "  train: {file: %s}\n"
		 "  validation: {file: %s}\n"
		 "  scale: 1\n"
		 "%s"
		 "network:\n"
		 "  input: [2]\n"
		 "  gates:\n"
		 "    - layers: [{dense: 3}]\n"
		 "optimizer: {type: sgd, lr: 0.1}\n"
		 "schedule: {epochs: 1, batch_size: 2}\n"
		 "output: {dir: %s/run-%s}\n",
		 train, train, extra, dir, name);
	return write_str(name, text);
}

static void test_cli(void **state)
{
	char want[1024];
	const char *bad = write_str("cli-bad.csv", "1,2,0\n3,4\n");
	const char *good = write_str("cli-good.csv", "x;y;class\n1;2;a\n3;4;b\n5;6;c\n");
	const char *cfg;

	(void)state;
	cfg = write_config("cli-bad.yaml", bad, "");
	assert_int_equal(ak("train", cfg, NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s:2:3: 2 cells, expected 3 as on line 1", bad);
	tu_assert_line(g_err, want);
	cfg = write_config("cli-good.yaml", good,
			   "  csv: {header: true, delimiter: semicolon, label: class}\n");
	assert_int_equal(ak("train", cfg, NULL), 0);
	/* A validation table with a class the training table lacks. */
	{
		char text[2048];
		const char *val = write_str("cli-val.csv", "x;y;class\n1;2;a\n3;4;d\n");
		snprintf(text, sizeof(text),
			 "data:\n  format: csv\n  train: {file: %s}\n"
			 "  validation: {file: %s}\n"
			 "  csv: {header: true, delimiter: semicolon, label: class}\n"
			 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 3}]\n"
			 "optimizer: {type: sgd, lr: 0.1}\n"
			 "output: {dir: %s/run-val}\n", good, val, dir);
		cfg = write_str("cli-val.yaml", text);
		assert_int_equal(ak("train", cfg, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s:3:3: class 'd' is not one of the training set's 3 classes", val);
		tu_assert_line(g_err, want);
	}
	/* A validation table of one class (alone it would be class 0): train
	 * and eval both number it as the training table does. */
	{
		char text[2048], ck[1024];
		const char *tr = write_str("nt.csv", "x;y;class\n0;0;ant\n0;1;bee\n1;0;cat\n"
					   "0;0;ant\n0;1;bee\n1;0;cat\n");
		const char *val = write_str("nv.csv", "x;y;class\n1;0;cat\n1;0;cat\n");
		snprintf(text, sizeof(text),
			 "data:\n  format: csv\n  train: {file: %s}\n"
			 "  validation: {file: %s}\n"
			 "  csv: {header: true, delimiter: semicolon, label: class}\n"
			 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 3}]\n"
			 "optimizer: {type: adam, lr: 0.1}\n"
			 "schedule: {epochs: 50, batch_size: 2, mode: flip-flop}\n"
			 "output: {dir: %s/run-nv}\n", tr, val, dir);
		cfg = write_str("nv.yaml", text);
		assert_int_equal(ak("train", cfg, NULL), 0);
		tu_assert_contains(g_err, "final validation accuracy 100.00%");
		snprintf(ck, sizeof(ck), "%s/run-nv/last.bin", dir);
		assert_int_equal(ak("eval", ck, NULL), 0);
		tu_assert_contains(g_out, "accuracy 100.00%");
		tu_assert_contains(g_out, "cat      100.00%   100.00%        2");
	}
	/* One regression target: a network of one output (the diabetes
	 * form: targets in a second file). */
	{
		char text[2048];
		const char *xs = write_str("rx.csv", "1 2\n2 1\n3 5\n4 4\n5 0\n6 1\n");
		const char *ys = write_str("ry.csv", "3\n3\n8\n8\n5\n7\n");
		snprintf(text, sizeof(text),
			 "data:\n  format: csv\n  task: regression\n"
			 "  train: {file: %s, targets_file: %s}\n"
			 "  validation: {file: %s, targets_file: %s}\n"
			 "  csv: {delimiter: whitespace}\n"
			 "network:\n  input: [2]\n  gates:\n    - layers: [{dense: 1}]\n"
			 "  loss: mse\n"
			 "optimizer: {type: adam, lr: 0.1}\n"
			 "schedule: {epochs: 200, batch_size: 6, mode: flip-flop}\n"
			 "output: {dir: %s/run-reg}\n", xs, ys, xs, ys, dir);
		cfg = write_str("reg.yaml", text);
		assert_int_equal(ak("train", cfg, "--quiet", NULL), 0);
		snprintf(text, sizeof(text), "%s/run-reg/last.bin", dir);
		assert_int_equal(ak("eval", text, NULL), 0);
		const char *r2 = strstr(g_out, "r2 ");
		assert_non_null(r2);
		assert_true(strtod(r2 + 3, NULL) > 0.95);
	}
}

int main(void)
{
	int failed;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_corpus),
		cmocka_unit_test(test_cannot_open),
		cmocka_unit_test(test_bad_columns),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_targets_file_rows),
		cmocka_unit_test(test_bad_gzip),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_good_integer_labels),
		cmocka_unit_test(test_good_names_header),
		cmocka_unit_test(test_good_delimiters),
		cmocka_unit_test(test_good_regression),
		cmocka_unit_test(test_good_targets_file),
		cmocka_unit_test(test_good_large),
		cmocka_unit_test(test_byte_table),
		cmocka_unit_test(test_decimals_as_strtod),
		cmocka_unit_test(test_spec_keys),
		cmocka_unit_test(test_open_task),
		cmocka_unit_test(test_match_classes),
		cmocka_unit_test(test_cli),
	};

	dir = tu_tmpdir();
	if (!dir) {
		perror("tu_tmpdir");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (!failed)
		tu_rm_tree(dir);
	return failed;
}
