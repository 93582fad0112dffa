/* test_lib.c - the inference library (akk.h, libakk.so, akk(3)).
 *
 * In-process through libakk.a: a short lenet run opened, its shape and
 * classes, predictions equal to `akkctl predict` bit for bit (%.9g), four
 * threads predicting at once on one model equal to one thread (this
 * program runs under ThreadSanitizer in `make tsan`), and every error
 * string. Then, in the plain build only (a sanitized build has no
 * libakk.so): `make install DESTDIR=tmp PREFIX=/usr/local`, the exported
 * symbols, the man page's example program (man/akk-example.c, which akk(3)
 * must show verbatim) built with pkg-config against the staged copy and
 * run on MNIST test images, its output equal to `akkctl predict`'s.
 * Skips what needs MNIST when datasets/mnist is missing. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "io/checkpoint.h"
#include "forge.h"
#include "api/akk.h"
#include "tensor/kernels.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define NIMG 1000

static char g_dir[512], g_out[1 << 16], g_err[1 << 14];
static const char *g_ckpt, *g_images;	/* the run's best.bin; NIMG test images */
static float *g_x;			/* NIMG * 784 raw pixels */
static int g_skip;

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)
#define assert_rc(call, want) do { int rc_ = (call); \
	if (rc_ != (want)) fail_msg("exit %d, want %d; stderr:\n%s", rc_, (want), g_err); } while (0)
#define SKIP_WITHOUT_MNIST() do { if (g_skip) skip(); } while (0)

static int group_setup(void **state)
{
	size_t len;
	unsigned char *p;
	int rc;

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	rc = tu_lenet_run(g_dir, 1000);
	if (rc > 0) {
		printf("skipped: datasets/mnist is missing (make data)\n");
		g_skip = 1;
		return 0;
	}
	if (rc)
		return -1;
	g_ckpt = strdup(tu_path(tu_path(g_dir, "run"), "best.bin"));
	g_images = strdup(tu_path(g_dir, "images.idx"));
	p = (unsigned char *)tu_slurp("datasets/mnist/t10k-images-idx3-ubyte", &len);
	if (!p || len < 16 + 784 * (size_t)NIMG || !(g_x = malloc(sizeof(float) * 784 * NIMG)))
		return -1;
	for (size_t i = 0; i < 784 * (size_t)NIMG; i++)
		g_x[i] = p[16 + i];
	p[6] = NIMG >> 8;	/* count: the first NIMG images */
	p[7] = NIMG & 255;
	p[4] = p[5] = 0;
	rc = tu_write_file(g_images, p, 16 + 784 * (size_t)NIMG);
	free(p);
	return rc;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	free(g_x);
	return 0;
}

static akk_model *open_ok(void)
{
	char err[512] = "";
	akk_model *m = akk_open(g_ckpt, err, sizeof(err));

	if (!m)
		fail_msg("akk_open: %s", err);
	return m;
}

static void lib_version(void **state)
{
	char v[32];

	(void)state;
	snprintf(v, sizeof(v), "%d.%d.%d", AKK_VERSION_MAJOR, AKK_VERSION_MINOR, AKK_VERSION_PATCH);
	assert_string_equal(akk_version(), v);
	assert_string_equal(AKK_VERSION, v);	/* the Makefile's VERSION */
	assert_int_equal(AKK_VERSION_NUMBER,
			 AKK_VERSION_MAJOR * 10000 + AKK_VERSION_MINOR * 100 + AKK_VERSION_PATCH);
}

/* The kernels this process runs, and the ones to ask for: 1 exactly when
 * they are weaker (a forced OPENBLAS_CORETYPE under make test-kernels). */
static void lib_blas_kernels(void **state)
{
	char run[32], rec[32], tiny[4];
	struct akk_cpu c;
	int weak;

	(void)state;
	weak = akk_blas_kernels(run, sizeof(run), rec, sizeof(rec));
	assert_string_equal(run, openblas_get_corename());
	assert_int_equal(weak, akk_kernels_tier(run) < akk_kernels_tier(rec));
	assert_int_equal(weak, strcmp(run, rec) != 0);
	akk_cpu_this(&c);
	if (!weak && (c.features & AKK_CPU_AVX2) && akk_kernels_tier(run) >= 0)
		assert_true(akk_kernels_tier(run) >= 3);
	/* cut to fit, NULL allowed */
	assert_int_equal(akk_blas_kernels(tiny, sizeof(tiny), NULL, 0), weak);
	assert_int_equal(strlen(tiny), strlen(run) < 3 ? strlen(run) : 3);
}

static void lib_shape(void **state)
{
	int dims[4] = { 0 };
	akk_model *m;

	(void)state;
	SKIP_WITHOUT_MNIST();
	m = open_ok();
	assert_int_equal(akk_input_shape(m, dims), 3);
	assert_int_equal(akk_input_shape(m, NULL), 3);
	assert_int_equal(dims[0], 1);
	assert_int_equal(dims[1], 28);
	assert_int_equal(dims[2], 28);
	assert_int_equal(akk_input_size(m), 784);
	assert_int_equal(akk_outputs(m), 10);
	assert_int_equal(akk_is_regression(m), 0);
	assert_null(akk_class_name(m, 0));
	assert_null(akk_class_name(m, -1));
	akk_close(m);
	akk_close(NULL);
}

/* Every probability of out (NIMG x 10) as akkctl predict --top 10 prints
 * it, in class order: %.9g strings must be equal, so the floats are. */
static void assert_equals_cli(const float *out)
{
	const char *csv = tu_path(g_dir, "cli.csv");
	char *p, *line;
	long row = 0;

	assert_rc(ak("predict", g_ckpt, g_images, "--top", "10", "--out", csv, NULL), 0);
	p = tu_slurp(csv, NULL);
	assert_non_null(p);
	line = strchr(p, '\n') + 1;	/* past the header */
	for (; *line; row++) {
		char *end = strchr(line, '\n'), *tok, *save = NULL;
		int f = 0, cls = 0;

		assert_non_null(end);
		*end = '\0';
		for (tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save), f++) {
			char mine[32];

			if (f == 0) {
				assert_int_equal(atol(tok), row);
			} else if (f % 2) {
				cls = atoi(tok);
			} else {
				snprintf(mine, sizeof(mine), "%.9g", out[row * 10 + cls]);
				if (strcmp(mine, tok))
					fail_msg("sample %ld class %d: library %s, akkctl predict %s",
						 row, cls, mine, tok);
			}
		}
		assert_int_equal(f, 21);
		line = end + 1;
	}
	assert_int_equal(row, NIMG);
	free(p);
}

static void lib_predict_equals_cli(void **state)
{
	float *out;
	char err[512];
	akk_model *m;

	(void)state;
	SKIP_WITHOUT_MNIST();
	out = malloc(sizeof(float) * 10 * NIMG);
	assert_non_null(out);
	m = open_ok();
	assert_int_equal(akk_predict(m, g_x, 784 * (size_t)NIMG, out, 10 * NIMG, err, sizeof(err)), 0);
	assert_equals_cli(out);
	/* nothing to predict is not an error */
	assert_int_equal(akk_predict(m, NULL, 0, NULL, 0, err, sizeof(err)), 0);
	akk_close(m);
	free(out);
}

struct job {
	const akk_model *m;
	float *out;
	int rc;
	char err[256];
};

static void *predict_job(void *arg)
{
	struct job *j = arg;

	j->rc = akk_predict(j->m, g_x, 784 * (size_t)NIMG, j->out, 10 * NIMG, j->err, sizeof(j->err));
	return NULL;
}

static void lib_threads(void **state)
{
	struct job jobs[4];
	pthread_t t[4];
	float *seq;
	char err[256];
	akk_model *m;

	(void)state;
	SKIP_WITHOUT_MNIST();
	seq = malloc(sizeof(float) * 10 * NIMG);
	assert_non_null(seq);
	m = open_ok();
	assert_int_equal(akk_predict(m, g_x, 784 * (size_t)NIMG, seq, 10 * NIMG, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		jobs[i].m = m;
		jobs[i].out = malloc(sizeof(float) * 10 * NIMG);
		assert_int_equal(pthread_create(&t[i], NULL, predict_job, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		if (jobs[i].rc)
			fail_msg("thread %d: %s", i, jobs[i].err);
		assert_memory_equal(jobs[i].out, seq, sizeof(float) * 10 * NIMG);
		free(jobs[i].out);
	}
	akk_close(m);
	free(seq);
}

static void lib_errors(void **state)
{
	char err[512], want[1024], tiny[8];
	const char *newer = tu_path(g_dir, "newer.bin");
	float out[10];
	struct forge fg;
	akk_model *m;

	(void)state;
	assert_null(akk_open("/nonexistent/best.bin", err, sizeof(err)));
	assert_string_equal(err, "/nonexistent/best.bin: cannot open: No such file or directory");
	assert_null(akk_open("configs/lenet.yaml", err, sizeof(err)));
	assert_string_equal(err, "configs/lenet.yaml: not an akkctl checkpoint (bad magic)");
	assert_null(akk_open(NULL, err, sizeof(err)));
	assert_string_equal(err, "no checkpoint path");
	/* a message cut to the caller's buffer; no buffer at all */
	assert_null(akk_open("configs/lenet.yaml", tiny, sizeof(tiny)));
	assert_string_equal(tiny, "configs");
	assert_null(akk_open("configs/lenet.yaml", NULL, 0));
	SKIP_WITHOUT_MNIST();
	assert_int_equal(forge_load(&fg, g_ckpt), 0);
	forge_set_u(&fg, forge_find(&fg, "header.version"), AKK_CKPT_VERSION + 1);
	assert_int_equal(forge_save(&fg, newer), 0);
	forge_release(&fg);
	assert_null(akk_open(newer, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s: checkpoint format version %d is not supported "
		 "(this akkctl reads versions 1 to %d)", newer, AKK_CKPT_VERSION + 1, AKK_CKPT_VERSION);
	assert_string_equal(err, want);
	m = open_ok();
	/* the wrong input shape: 10 x 10 images */
	assert_int_equal(akk_predict(m, g_x, 500, out, 10, err, sizeof(err)), -1);
	assert_string_equal(err, "500 input values are not a whole number of samples of 784 values ([1, 28, 28])");
	assert_int_equal(akk_predict(m, g_x, 2 * 784, out, 10, err, sizeof(err)), -1);
	assert_string_equal(err, "an output buffer of 10 floats is too small for 2 samples of 10 outputs");
	assert_int_equal(akk_predict(m, NULL, 784, out, 10, err, sizeof(err)), -1);
	assert_string_equal(err, "no input or output buffer");
	/* a NaN input is the input's fault, named, not "the weights overflow" */
	{
		static float x[784];
		x[100] = NAN;
		assert_int_equal(akk_predict(m, x, 784, out, 10, err, sizeof(err)), AKK_ERR_INPUT);
		assert_string_equal(err, "input value 101 of sample 1 is not a finite number (nan)");
	}
	/* counts whose bytes overflow size_t */
	assert_int_equal(akk_predict(m, g_x, SIZE_MAX / 2, out, 10, err, sizeof(err)), AKK_ERR_SIZE);
	tu_assert_prefix(err, "an input of ");
	akk_close(m);
	/* a NULL model: a code and a message, no crash */
	assert_int_equal(akk_predict(NULL, g_x, 784, out, 10, err, sizeof(err)), AKK_ERR_USAGE);
	assert_string_equal(err, "no model (NULL)");
	assert_int_equal(akk_input_shape(NULL, NULL), -1);
	assert_int_equal(akk_input_size(NULL), 0);
	assert_int_equal(akk_outputs(NULL), -1);
	assert_int_equal(akk_is_regression(NULL), -1);
	assert_null(akk_class_name(NULL, 0));
}

/* The man page's example, unescaped, equals man/akk-example.c with each
 * leading tab as four spaces (a man page holds no tabs). */
static void lib_man_example(void **state)
{
	char *man = tu_slurp("man/akk.3", NULL), *src = tu_slurp("man/akk-example.c", NULL);
	char *p, *end, *text, *o;

	(void)state;
	assert_non_null(man);
	assert_non_null(src);
	p = strstr(man, "\n.SH EXAMPLE\n");
	assert_non_null(p);
	p = strstr(p, "\n.EX\n");
	assert_non_null(p);
	p += 5;
	end = strstr(p, "\n.EE\n");
	assert_non_null(end);
	text = o = calloc(end - p + 2, 1);
	for (int bol = 1; p <= end; p++) {
		if (bol && p[0] == '\\' && p[1] == '&') {
			p++;
			continue;
		}
		if (bol && !strncmp(p, "    ", 4)) {
			*o++ = '\t';
			p += 3;
			continue;
		}
		bol = *p == '\n';
		if (p[0] == '\\' && (p[1] == 'e' || p[1] == '-')) {
			*o++ = p[1] == 'e' ? '\\' : '-';
			p++;
		} else
			*o++ = *p;
	}
	assert_string_equal(text, src);
	free(text);
	free(man);
	free(src);
}

static void lib_install_example(void **state)
{
	const char *stage = tu_path(g_dir, "stage"), *ex = tu_path(g_dir, "akk-example");
	const char *build = getenv("AKK_BUILD") ? getenv("AKK_BUILD") : "build";
	char cmd[4096], bset[600], dset[600], *nm, *tok, *save = NULL;
	char lib[700], pc[720], triplet[128] = "";
	float *out;
	int n = 0;

	(void)state;
	if (SANITIZED) {
		printf("skipped in a sanitized build: it has no libakk.so to install\n");
		skip();
	}
	snprintf(bset, sizeof(bset), "B=%s", build);
	snprintf(dset, sizeof(dset), "DESTDIR=%s", stage);
	{
		const char *argv[] = { "make", "-s", "install-lib", bset, dset, "PREFIX=/usr/local", NULL };

		if (tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)))
			fail_msg("make install failed:\n%s%s", g_out, g_err);
	}
	/* the library in Debian's multiarch directory, PREFIX/lib/TRIPLET */
	{
		const char *argv[] = { "sh", "-c", "dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || "
				       "cc -print-multiarch", NULL };

		if (!tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)))
			snprintf(triplet, sizeof(triplet), "%.*s", (int)strcspn(g_out, "\n"), g_out);
	}
	snprintf(lib, sizeof(lib), "%s/usr/local/lib%s%s", stage, *triplet ? "/" : "", triplet);
	snprintf(pc, sizeof(pc), "%s/pkgconfig", lib);
	assert_true(tu_exists(tu_path(stage, "usr/local/include/akk.h")));
	assert_true(tu_exists(tu_path(lib, "libakk.so.0.1.0")));
	assert_true(tu_exists(tu_path(stage, "usr/local/share/man/man3/akk.3")));
	/* the soname, and no symbol of core/ beyond akk.h's */
	{
		const char *argv[] = { "sh", "-c", "readelf -d \"$0\" | grep SONAME; "
				       "nm -D --defined-only \"$0\" | awk '$2 == \"T\" { print $3 }' | sort",
				       tu_path(lib, "libakk.so"), NULL };

		assert_int_equal(tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)), 0);
		tu_assert_contains(g_out, "Library soname: [libakk.so.0]");
		nm = strchr(g_out, '\n') + 1;
		for (tok = strtok_r(nm, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save), n++) {
			static const char *const api[] = { "akk_blas_kernels@@AKK_0",
				"akk_class_name@@AKK_0", "akk_close@@AKK_0",
				"akk_head@@AKK_0", "akk_heads@@AKK_0", "akk_input@@AKK_0",
				"akk_input_shape@@AKK_0", "akk_input_size@@AKK_0", "akk_inputs@@AKK_0",
				"akk_is_regression@@AKK_0",
				"akk_open@@AKK_0", "akk_outputs@@AKK_0", "akk_predict@@AKK_0",
				"akk_steps@@AKK_0", "akk_version@@AKK_0" };

			assert_true(n < 15);
			assert_string_equal(tok, api[n]);
		}
		assert_int_equal(n, 15);
	}
	SKIP_WITHOUT_MNIST();
	/* build the example as akk(3) says, against the staged copy */
	snprintf(cmd, sizeof(cmd),
		 "PKG_CONFIG_SYSROOT_DIR='%s' PKG_CONFIG_PATH='%s' "
		 "PKG_CONFIG_LIBDIR=/nonexistent "
		 "&& export PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH PKG_CONFIG_LIBDIR "
		 "&& cc -Wall -Wextra -Werror man/akk-example.c $(pkg-config --cflags --libs akk) -o '%s'",
		 stage, pc, ex);
	{
		const char *argv[] = { "sh", "-c", cmd, NULL };

		if (tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)))
			fail_msg("building the example failed:\n%s", g_err);
	}
	/* run it on the test images: its %.9g equal akkctl predict's */
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' exec \"$0\" \"$1\" \"$2\" > '%s'",
		 lib, tu_path(g_dir, "example.out"));
	{
		const char *argv[] = { "sh", "-c", cmd, ex, g_ckpt, g_images, NULL };
		char *text, *line;

		if (tu_run(argv, g_out, sizeof(g_out), g_err, sizeof(g_err)))
			fail_msg("the example failed:\n%s", g_err);
		tu_assert_line(g_err, "libakk 0.1.0: input rank 3 (784 values), 10 classes");
		text = tu_slurp(tu_path(g_dir, "example.out"), NULL);
		assert_non_null(text);
		out = malloc(sizeof(float) * 10 * NIMG);
		line = text;
		for (long i = 0; i < NIMG; i++) {
			char *end;

			assert_int_equal(strtol(line, &end, 10), i);
			for (int k = 0; k < 10; k++) {
				assert_true(*end == ',');
				out[i * 10 + k] = strtof(end + 1, &end);
			}
			assert_true(*end == '\n');
			line = end + 1;
		}
		assert_string_equal(line, "");
		free(text);
		/* %.9g of a float read back with strtof is the same float */
		assert_equals_cli(out);
		free(out);
	}
	/* its errors: a foreign checkpoint, images of the wrong size */
	{
		const char *small = tu_path(g_dir, "small.idx");
		uint32_t dims[3] = { 5, 10, 10 };
		size_t size;
		unsigned char *b = tu_idx_bytes(0x08, 3, dims, NULL, 500, &size);
		const char *argv1[] = { "sh", "-c", cmd, ex, "configs/lenet.yaml", g_images, NULL };
		const char *argv2[] = { "sh", "-c", cmd, ex, g_ckpt, small, NULL };

		assert_int_equal(tu_write_file(small, b, size), 0);
		free(b);
		assert_int_equal(tu_run(argv1, g_out, sizeof(g_out), g_err, sizeof(g_err)), 1);
		tu_assert_line(g_err, "akk_open: configs/lenet.yaml: not an akkctl checkpoint (bad magic)");
		assert_int_equal(tu_run(argv2, g_out, sizeof(g_out), g_err, sizeof(g_err)), 1);
		tu_assert_line(g_err, "akk_predict: 500 input values are not a whole number of samples "
			       "of 784 values ([1, 28, 28])");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lib_version),
		cmocka_unit_test(lib_blas_kernels),
		cmocka_unit_test(lib_shape),
		cmocka_unit_test(lib_predict_equals_cli),
		cmocka_unit_test(lib_threads),
		cmocka_unit_test(lib_errors),
		cmocka_unit_test(lib_man_example),
		cmocka_unit_test(lib_install_example),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
