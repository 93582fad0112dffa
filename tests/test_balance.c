/* test_balance.c - network.gates: {auto: N}: the exact splitter against
 * brute force, the FLOP split (deterministic), the config's mistakes with
 * their exact lines, `akkctl partition` round trip (check prints the same
 * plan for both forms) and a resume that keeps its checkpoint's split. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/spec.h"
#include "model/balance.h"
#include "model/model.h"
#include "model/profile.h"
#include "testutil.h"

static char g_dir[512];
static char g_out[1 << 16], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

/* ---- the splitter ---------------------------------------------------------- */

/* The least largest part over every split of c[0..n) into k parts. */
static double brute(const double *c, int n, int k)
{
	double best = -1;
	/* cuts: a bit set at i (1 <= i < n) cuts before item i */
	for (unsigned m = 0; m < 1u << (n - 1); m++) {
		if (__builtin_popcount(m) != k - 1)
			continue;
		double part = 0, worst = 0;
		for (int i = 0; i < n; i++) {
			if (i && (m >> (i - 1) & 1))
				part = 0;
			part += c[i];
			if (part > worst)
				worst = part;
		}
		if (best < 0 || worst < best)
			best = worst;
	}
	return best;
}

static double largest(const double *c, const int *sizes, int k)
{
	double worst = 0;
	for (int g = 0, at = 0; g < k; g++) {
		double part = 0;
		for (int i = 0; i < sizes[g]; i++)
			part += c[at++];
		if (part > worst)
			worst = part;
	}
	return worst;
}

static void split_by_hand(void **state)
{
	const double a[] = { 10, 1, 1, 1 }, b[] = { 1, 2, 3, 4, 5 },
		     c[] = { 1, 1, 1, 1 }, d[] = { 0, 0, 5, 0, 0 };
	int sz[5];

	(void)state;
	assert_true(akk_balance_split(a, 4, 2, sz) == 10);
	assert_int_equal(sz[0], 1);
	assert_int_equal(sz[1], 3);
	assert_true(akk_balance_split(b, 5, 3, sz) == 6);
	assert_int_equal(sz[0], 3);
	assert_int_equal(sz[1], 1);
	assert_int_equal(sz[2], 1);
	assert_true(akk_balance_split(c, 4, 2, sz) == 2);
	assert_int_equal(sz[0], 2);
	assert_true(akk_balance_split(c, 4, 4, sz) == 1);
	assert_true(akk_balance_split(b, 5, 1, sz) == 15);
	assert_int_equal(sz[0], 5);
	/* zero costs: every part still holds a layer */
	assert_true(akk_balance_split(d, 5, 3, sz) == 5);
	for (int i = 0; i < 3; i++)
		assert_true(sz[i] >= 1);
	/* a relu its dense layer applies costs 0 (model/profile.c); on a tie
	 * the last part is as short as it can be, so the relu stays with its
	 * dense layer (dense relu | dense relu dense, not dense | relu ...) */
	{
		const double f[] = { 10, 0, 6, 0, 4 };
		assert_true(akk_balance_split(f, 5, 2, sz) == 10);
		assert_int_equal(sz[0], 2);
		assert_int_equal(sz[1], 3);
	}
}

static void split_is_optimal(void **state)
{
	unsigned r = 12345;

	(void)state;
	for (int trial = 0; trial < 2000; trial++) {
		double c[12];
		int sz[12], n, k, sum = 0;
		r = r * 1103515245u + 12345u;
		n = 1 + (int)(r >> 16) % 12;
		r = r * 1103515245u + 12345u;
		k = 1 + (int)(r >> 16) % n;
		for (int i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			/* integers, some zero, some large: exact comparisons */
			c[i] = (int)((r >> 16) % 7 == 0 ? 0 : (r >> 16) % 1000);
		}
		double got = akk_balance_split(c, n, k, sz);
		for (int g = 0; g < k; g++) {
			assert_true(sz[g] >= 1);
			sum += sz[g];
		}
		assert_int_equal(sum, n);
		assert_true(got == largest(c, sz, k));
		if (got != brute(c, n, k)) {
			print_error("n %d k %d: got %g, brute force %g\n", n, k, got,
				    brute(c, n, k));
			fail();
		}
	}
}

/* ---- the spec and the FLOP split ------------------------------------------- */

#define HEAD "data:\n  train: {images: ti, labels: tl}\n"			/* 1-2 */ \
	"optimizer: {type: sgd, lr: 0.1}\n"					/* 3 */
#define SEED HEAD "network:\n  input: [784]\n"				/* 4-5 */
#define SEED_LAYERS "  layers: [{dense: 50}, relu, {dense: 20}, relu, {dense: 10}]\n"

static int parse(struct akk_spec *s, const char *text, const char *const *sets,
		 int nsets, struct akk_err *e)
{
	memset(e, 0, sizeof(*e));
	return akk_spec_parse(s, text, strlen(text), "t.yaml", NULL, sets, nsets, e);
}

static void bad(const char *text, const char *want)
{
	struct akk_spec s;
	struct akk_err e;
	char buf[1200];

	assert_int_equal(parse(&s, text, NULL, 0, &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		print_error("got:  %s\nwant: %s\n", buf, want);
		fail();
	}
	assert_null(s.gates);
}

static void bad_configs(void **state)
{
	(void)state;
	bad(SEED "  gates: {auto: 0}\n" SEED_LAYERS,
	    "t.yaml:6:17: 'auto' must be at least 1, got 0");
	bad(SEED "  gates: {auto: 6}\n" SEED_LAYERS,
	    "t.yaml:6:10: gates: {auto: 6} asks for more gates than the 5 layers of network.layers");
	bad(SEED "  gates:\n    - layers: [{dense: 10}]\n" SEED_LAYERS,
	    "t.yaml:8:3: 'layers' is given with a list of gates: write the layers in each gate, or use gates: {auto: N}");
	bad(SEED "  gates: {auto: 2}\n",
	    "t.yaml:6:10: gates: {auto: 2} needs the network's layers as one flat list, network.layers");
	bad(SEED SEED_LAYERS,
	    "t.yaml:5:3: missing required key 'gates' in network");
	bad(SEED "  gates: {auto: 2, split: [2]}\n" SEED_LAYERS,
	    "t.yaml:6:27: 'split' has 1 entry, but auto is 2");
	bad(SEED "  gates: {auto: 2, split: [2, 2]}\n" SEED_LAYERS,
	    "t.yaml:6:10: split: the gates hold 4 layers, but network.layers has 5");
	bad(SEED "  gates: {auto: 2, split: [0, 5]}\n" SEED_LAYERS,
	    "t.yaml:6:28: 'split' must be at least 1, got 0");
	bad(SEED "  gates: {layers: [relu]}\n" SEED_LAYERS,
	    "t.yaml:6:10: 'gates' must be a list, got a mapping");
	bad(SEED "  gates: {auto: 2, splits: [2, 3]}\n" SEED_LAYERS,
	    "t.yaml:6:20: unknown key 'splits' in network.gates (did you mean 'split'?)");
	bad(SEED "  gates: 2\n" SEED_LAYERS,
	    "t.yaml:6:10: 'gates' must be a list, got '2'");
}

static void split_given_in_config(void **state)
{
	struct akk_spec s;
	struct akk_err e;

	(void)state;
	assert_int_equal(parse(&s, SEED "  gates: {auto: 2, split: [2, 3]}\n" SEED_LAYERS,
			       NULL, 0, &e), 0);
	assert_int_equal(s.ngates, 2);
	assert_int_equal(s.gates[0].nlayers, 2);
	assert_int_equal(s.gates[1].nlayers, 3);
	assert_string_equal(s.gates[1].layers[0].ops->name, "dense");
	assert_int_equal(s.gates[1].layers[0].units, 20);
	akk_spec_release(&s);
}

static void flop_split_is_deterministic(void **state)
{
	const char *lenet = HEAD "network:\n  input: [1, 28, 28]\n  gates: {auto: 2}\n"
		"  layers: [{conv2d: {filters: 6, kernel: 5, padding: 2}}, relu, {maxpool2d: 2},\n"
		"           {conv2d: {filters: 16, kernel: 5}}, relu, {maxpool2d: 2}, flatten,\n"
		"           {dense: 120}, relu, {dense: 84}, relu, {dense: 10}]\n";
	const char *texts[] = { SEED "  gates: {auto: 2}\n" SEED_LAYERS, lenet,
				SEED "  gates: {auto: 3}\n" SEED_LAYERS };
	const char *want[] = { "network.gates.split=[1, 4]",
			       "network.gates.split=[3, 9]",
			       "network.gates.split=[1, 2, 2]" };

	(void)state;
	for (int t = 0; t < 3; t++)
		for (int rep = 0; rep < 2; rep++) {
			struct akk_spec s;
			struct akk_err e;
			assert_int_equal(parse(&s, texts[t], NULL, 0, &e), 0);
			assert_int_equal(s.ngates, 1);
			assert_int_equal(akk_balance(&s, 0, NULL, &e), 0);
			assert_int_equal(s.nsets, 1);
			assert_string_equal(s.sets[0], want[t]);
			/* the recorded override rebuilds the same gates */
			{
				struct akk_spec s2;
				const char *set = s.sets[0] + 0;
				assert_int_equal(parse(&s2, texts[t], &set, 1, &e), 0);
				assert_int_equal(s2.ngates, s.ngates);
				for (int g = 0; g < s.ngates; g++)
					assert_int_equal(s2.gates[g].nlayers, s.gates[g].nlayers);
				/* and balancing it again changes nothing */
				assert_int_equal(akk_balance(&s2, 1, NULL, &e), 0);
				assert_int_equal(s2.nsets, 1);
				akk_spec_release(&s2);
			}
			akk_spec_release(&s);
		}
}

/* The profiler's costs come one per layer, positive but for the relus
 * the dense layers before them apply (akk_layers_fuse: their time is the
 * dense layer's). */
static void profile_times_every_layer(void **state)
{
	struct akk_spec s;
	struct akk_err e;
	double cost[5];

	(void)state;
	assert_int_equal(parse(&s, SEED "  gates: {auto: 2}\n" SEED_LAYERS, NULL, 0, &e), 0);
	assert_int_equal(akk_balance(&s, 1, cost, &e), 0);
	assert_int_equal(s.ngates, 2);
	for (int i = 0; i < 5; i++)
		assert_true(i % 2 ? cost[i] == 0 : cost[i] > 0);
	/* the first dense layer holds nearly all the work */
	assert_true(cost[0] > cost[2] + cost[4]);
	akk_spec_release(&s);
}

/* ---- the command line ------------------------------------------------------ */

static const char *write_config(const char *name, const char *gates, const char *extra)
{
	char text[2048];
	const char *path = tu_path(g_dir, name);

	snprintf(text, sizeof(text),
		 "# a comment partition drops\n"
		 "name: bal\nseed: 7\n"
		 "data:\n  train: {images: train-images, labels: train-labels}\n"
		 "network:\n  input: [64]\n%s"
		 "  layers: [{dense: 32}, relu, {dense: 16}, tanh, {dense: 4}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 1, batch_size: 50}\n%s",
		 gates, extra ? extra : "");
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	return path;
}

/* check's output up to the split block (which only the auto form has). */
static char *plan_of(const char *out)
{
	char *p = strdup(out), *cut = strstr(p, "\nsplit (");
	assert_non_null(p);
	if (cut)
		*cut = 0;
	return p;
}

static void partition_round_trip(void **state)
{
	const char *cfg = write_config("auto.yaml", "  gates: {auto: 3}\n", NULL);
	const char *out = tu_path(g_dir, "explicit.yaml");
	char *a, *b, *text;

	(void)state;
	assert_rc(ak("partition", "--no-profile", cfg, "-o", out, NULL), 0);
	text = tu_slurp(out, NULL);
	assert_non_null(text);
	tu_assert_contains(text, "  gates:\n  - {layers: [{dense: 32}]}\n");
	tu_assert_not_contains(text, "auto");
	tu_assert_not_contains(text, "# a comment");
	free(text);
	assert_rc(ak("check", "--no-profile", cfg, NULL), 0);
	tu_assert_contains(g_out, "\nsplit (gates: {auto: 3}, by FLOPs): network.gates.split=[1, 2, 2]\n");
	tu_assert_line(g_out, "gate  reads            layers           cost MFLOP  predicted share");
	tu_assert_line(g_out, "1     input            1                     0.413            69.3%");
	tu_assert_line(g_out, "3     2                4-5                   0.022             3.7%");
	tu_assert_line(g_out, "slowest gate: 0.413 MFLOP, 69.3% of the work (the branches of a graph unfolded run at once)");
	a = plan_of(g_out);
	assert_rc(ak("check", out, NULL), 0);
	tu_assert_not_contains(g_out, "split (");
	b = plan_of(g_out);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* written into another directory: the relative paths are rewritten
	 * to name the same files from there, so the new file trains */
	{
		char sub[700], moved[800], run[800];

		snprintf(sub, sizeof(sub), "%s", tu_path(g_dir, "elsewhere"));
		assert_int_equal(mkdir(sub, 0755), 0);
		snprintf(moved, sizeof(moved), "%s/moved.yaml", sub);
		snprintf(run, sizeof(run), "%s/run", sub);
		assert_rc(ak("partition", "--no-profile", cfg, "-o", moved, NULL), 0);
		text = tu_slurp(moved, NULL);
		assert_non_null(text);
		tu_assert_contains(text, "train: {images: ../train-images, labels: ../train-labels}");
		free(text);
		assert_rc(ak("train", moved, "--quiet", "--out", run, NULL), 0);
	}
	/* to standard output, and refused for explicit gates */
	assert_rc(ak("partition", "--no-profile", cfg, NULL), 0);
	tu_assert_contains(g_out, "name: bal\n");
	assert_rc(ak("partition", out, NULL), 2);
	{
		char want[1024];
		snprintf(want, sizeof(want), "akkctl: %s: network.gates is a list already: partition needs gates: {auto: N}", out);
		tu_assert_line(g_err, want);
	}
}

static void resume_keeps_the_split(void **state)
{
	/* the first run is split [2, 3], which no balancing would choose
	 * ([1, ...]: the first dense is the heaviest): the resume must take
	 * it from the checkpoint, not balance again */
	const char *cfg = write_config("resume.yaml", "  gates: {auto: 2}\n",
				       "output: {dir: run}\n");
	const char *run = tu_path(g_dir, "run");

	(void)state;
	assert_rc(ak("train", "-q", cfg, "--set", "network.gates.split=[2, 3]", NULL), 0);
	assert_rc(ak("train", "-q", cfg, "--resume", run, "--epochs", "2", NULL), 0);
	/* the resumed run's checkpoints record the split again */
	assert_rc(ak("train", "-q", cfg, "--resume", run, "--epochs", "3", NULL), 0);
	/* eval rebuilds the gates from the checkpoint's config alone */
	assert_rc(ak("eval", run, "--images", tu_path(g_dir, "train-images"),
		     "--labels", tu_path(g_dir, "train-labels"), NULL), 0);
	/* and with FLOPs the fresh split differs: the resume did not use it */
	assert_rc(ak("check", "--no-profile", cfg, NULL), 0);
	tu_assert_contains(g_out, "network.gates.split=[1, 4]");
}

/* bench --layers: a row per layer of the split network and the GEMM share
 * (no figure is checked: the machine is shared) */
static void bench_layers_table(void **state)
{
	const char *cfg = write_config("bench.yaml", "  gates: {auto: 2}\n", NULL);

	(void)state;
	assert_rc(ak("bench", "--layers", "--no-profile", "-c", cfg, NULL), 0);
	tu_assert_line(g_out, "per layer, one training batch of 50 (best of 10, the calling thread alone):");
	tu_assert_line(g_out, "gate  layer  kind       output            fwd ms    bwd ms  optim ms   GFLOP/s   share");
	tu_assert_contains(g_out, "\n1     1      dense      [32]     ");
	tu_assert_contains(g_out, "\n2     1      relu       [32]     ");
	tu_assert_contains(g_out, "\n2     4      dense      [4]      ");
	tu_assert_contains(g_out, "% of it (GEMM time attributed:");
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "train", 200, 8, 4, 1);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_by_hand),
		cmocka_unit_test(split_is_optimal),
		cmocka_unit_test(bad_configs),
		cmocka_unit_test(split_given_in_config),
		cmocka_unit_test(flop_split_is_deterministic),
		cmocka_unit_test(profile_times_every_layer),
		cmocka_unit_test(partition_round_trip),
		cmocka_unit_test(resume_keeps_the_split),
		cmocka_unit_test(bench_layers_table),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
