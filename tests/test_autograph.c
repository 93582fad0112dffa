/* test_autograph.c - gates: {auto: N} over graph layers: the partition
 * on hand-made costs (it unfolds a graph's branches onto gates of their
 * own only when that lowers the slowest gate, is exactly the chain split
 * without graphs, and is optimal against brute force), which graphs are
 * of the parallel form, the spec rewrite (configs/fashion-inception-auto
 * unfolded is configs/fashion-inception-gates, and trains bit for bit as
 * it in flip-flop), the config's mistakes with their exact lines, check
 * and partition on an unfolded net, and a resume that keeps the unfold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/balance.h"
#include "model/model.h"
#include "nn/layer_graph.h"
#include "runtime/run_internal.h"
#include "testutil.h"

static char g_dir[512];
static char g_out[1 << 17], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

#define assert_rc(rc, want) do { \
	int r_ = (rc), w_ = (want); \
	if (r_ != w_) { \
		print_error("exit status %d, expected %d\n--- stderr:\n%s\n", r_, w_, g_err); \
		fail(); \
	} \
} while (0)

/* ---- the partition ---------------------------------------------------------- */

static struct akk_balance_unit layer(double c)
{
	return (struct akk_balance_unit){ .cost = c };
}

static struct akk_balance_unit graph2(double a, double b)
{
	return (struct akk_balance_unit){ .cost = a + b, .nbranch = 2, .branch = { a, b } };
}

static void fork_cost(void **state)
{
	const double t[] = { 4, 2, 1, 1 }, even[] = { 3, 3, 3, 3 };

	(void)state;
	assert_true(akk_balance_fork_cost(t, 4, 4) == 4);
	assert_true(akk_balance_fork_cost(t, 4, 2) == 4);	/* 8 / 2 */
	assert_true(akk_balance_fork_cost(even, 4, 8) == 3);
	assert_true(akk_balance_fork_cost(even, 4, 2) == 6);
	assert_true(akk_balance_fork_cost(even, 4, 1) == 12);	/* the sum */
}

static void partition_by_hand(void **state)
{
	int sz[8], ns;
	unsigned char uf[9];	/* an entry a unit: 9 in the second case */

	(void)state;
	{	/* unfolding the graph makes the slowest gate 6, not 8 */
		const struct akk_balance_unit u[] = { layer(3), layer(3), graph2(4, 4),
						      layer(2), layer(2), layer(2) };
		assert_true(akk_balance_partition(u, 6, 4, 2, sz, &ns, uf) == 6);
		assert_int_equal(ns, 2);
		assert_int_equal(sz[0], 2);
		assert_int_equal(sz[1], 3);
		assert_int_equal(uf[2], 1);
		/* on one core the branches take their sum: it stays whole */
		assert_true(akk_balance_partition(u, 6, 4, 1, sz, &ns, uf) == 8);
		assert_int_equal(ns, 4);
		for (int i = 0; i < 6; i++)
			assert_int_equal(uf[i], 0);
	}
	{	/* unfolding would leave the six cheap layers on one gate: whole */
		const struct akk_balance_unit u[] = { layer(1), layer(1), graph2(2, 2),
						      layer(1), layer(1), layer(1),
						      layer(1), layer(1), layer(1) };
		int chain[4];
		assert_true(akk_balance_partition(u, 9, 4, 8, sz, &ns, uf) == 4);
		assert_int_equal(ns, 4);
		assert_int_equal(uf[2], 0);
		{
			const double c[] = { 1, 1, 4, 1, 1, 1, 1, 1, 1 };
			assert_true(akk_balance_split(c, 9, 4, chain) == 4);
			assert_memory_equal(sz, chain, sizeof(chain));
		}
	}
	{	/* first in the list, the branches read the network input */
		const struct akk_balance_unit u[] = { graph2(3, 3), layer(2), layer(2) };
		assert_true(akk_balance_partition(u, 3, 4, 2, sz, &ns, uf) == 3);
		assert_int_equal(ns, 2);
		assert_int_equal(sz[0], 1);
		assert_int_equal(sz[1], 1);
		assert_int_equal(uf[0], 1);
	}
	{	/* last in the list it has no gate to join it: 3 gates cannot be */
		const struct akk_balance_unit u[] = { layer(5), graph2(5, 5) };
		assert_true(akk_balance_partition(u, 2, 2, 4, sz, &ns, uf) == 10);
		assert_int_equal(uf[1], 0);
		assert_true(akk_balance_partition(u, 2, 3, 4, sz, &ns, uf) == -2);
	}
	{	/* two graphs side by side: one unfolds, never both */
		const struct akk_balance_unit u[] = { layer(1), graph2(3, 3), graph2(3, 3),
						      layer(1) };
		assert_true(akk_balance_partition(u, 4, 5, 4, sz, &ns, uf) == 6);
		assert_int_equal(uf[1] + uf[2], 1);
		assert_int_equal(ns, 3);
		assert_true(akk_balance_partition(u, 4, 6, 4, sz, &ns, uf) == -2);
	}
}

/* Without graphs that may unfold, the partition is the chain split. */
static void partition_of_a_chain_is_the_split(void **state)
{
	unsigned r = 777;

	(void)state;
	for (int trial = 0; trial < 500; trial++) {
		struct akk_balance_unit u[40];
		double c[40];
		int n, k, sz[40], want[40], ns;
		unsigned char uf[40];
		r = r * 1103515245u + 12345u;
		n = 1 + (int)(r >> 16) % 40;
		r = r * 1103515245u + 12345u;
		k = 1 + (int)(r >> 16) % n;
		for (int i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			c[i] = (double)((r >> 16) % 100);
			u[i] = layer(c[i]);
		}
		/* a graph last in the list cannot unfold */
		u[n - 1] = graph2(c[n - 1] / 2, c[n - 1] - c[n - 1] / 2);
		double a = akk_balance_split(c, n, k, want);
		assert_true(akk_balance_partition(u, n, k, 4, sz, &ns, uf) == a);
		assert_int_equal(ns, k);
		assert_memory_equal(sz, want, (size_t)k * sizeof(int));
		for (int i = 0; i < n; i++)
			assert_int_equal(uf[i], 0);
	}
}

/* The least largest cost over every plan, by enumeration: each set of
 * graphs unfolded (none last, no two side by side), then every share of
 * the other gates over the runs between them; *fewest: the fewest graphs
 * unfolded by a plan of that cost. */
static double runs_best(const struct akk_balance_unit *u, const int *lo,
			const int *len, int nruns, int r, int left, double worst)
{
	double best = -1;

	if (r == nruns)
		return left ? -1 : worst;
	for (int j = len[r] ? 1 : 0; j <= (len[r] < left ? len[r] : left); j++) {
		double c[16], w = worst, v;
		int sz[16];
		for (int i = 0; i < len[r]; i++)
			c[i] = u[lo[r] + i].cost;
		if (len[r]) {
			double part = akk_balance_split(c, len[r], j, sz);
			if (part > w)
				w = part;
		}
		v = runs_best(u, lo, len, nruns, r + 1, left - j, w);
		if (v >= 0 && (best < 0 || v < best))
			best = v;
	}
	return best;
}

static double brute(const struct akk_balance_unit *u, int n, int k, int cores,
		    int *fewest)
{
	double best = -1;

	for (unsigned m = 0; m < 1u << n; m++) {
		int lo[16], len[16], nr = 0, start = 0, left = k, ok = 1;
		double worst = 0;
		for (int i = 0; i < n && ok; i++) {
			if (!(m >> i & 1))
				continue;
			ok = u[i].nbranch >= 2 && i + 1 < n && !(i && (m >> (i - 1) & 1));
			if (!ok)
				break;
			lo[nr] = start, len[nr] = i - start, nr++;
			double f = akk_balance_fork_cost(u[i].branch, u[i].nbranch, cores);
			if (f > worst)
				worst = f;
			left -= u[i].nbranch;
			start = i + 1;
		}
		if (!ok || left < 1)
			continue;
		lo[nr] = start, len[nr] = n - start, nr++;
		double v = runs_best(u, lo, len, nr, 0, left, worst);
		int nunf = __builtin_popcount(m);
		if (v >= 0 && (best < 0 || v < best || (v == best && nunf < *fewest)))
			best = v, *fewest = nunf;
	}
	return best < 0 ? -2 : best;
}

/* The plan's largest cost, as the partition defines it, and its gates. */
static double plan_cost(const struct akk_balance_unit *u, int n, int cores,
			const int *sz, int ns, const unsigned char *uf, int *gates)
{
	double worst = 0, part = 0;
	int p = 0;

	*gates = ns;
	for (int s = 0; s < ns; s++) {
		while (p < n && uf[p]) {
			double f = akk_balance_fork_cost(u[p].branch, u[p].nbranch, cores);
			worst = f > worst ? f : worst;
			*gates += u[p++].nbranch;
		}
		part = 0;
		for (int i = 0; i < sz[s]; i++, p++) {
			assert_true(p < n && !uf[p]);
			part += u[p].cost;
		}
		worst = part > worst ? part : worst;
	}
	assert_int_equal(p, n);
	return worst;
}

static void partition_is_optimal(void **state)
{
	unsigned r = 4242;

	(void)state;
	for (int trial = 0; trial < 3000; trial++) {
		struct akk_balance_unit u[9];
		int n, k, cores, sz[20], ns, gates;
		unsigned char uf[9];
		r = r * 1103515245u + 12345u;
		n = 1 + (int)(r >> 16) % 9;
		r = r * 1103515245u + 12345u;
		k = 1 + (int)(r >> 16) % (n + 4);
		r = r * 1103515245u + 12345u;
		cores = 1 + (int)(r >> 16) % 4;
		for (int i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			u[i] = layer((double)((r >> 16) % 50));
			if ((r >> 8) % 3 == 0) {	/* a graph of 2 or 3 branches */
				int b = 2 + (int)(r >> 20) % 2;
				u[i].nbranch = b;
				u[i].cost = 0;
				for (int j = 0; j < b; j++) {
					r = r * 1103515245u + 12345u;
					u[i].branch[j] = (double)((r >> 16) % 40);
					u[i].cost += u[i].branch[j];
				}
			}
		}
		int fewest = 0, nunf = 0;
		double got = akk_balance_partition(u, n, k, cores, sz, &ns, uf),
		       want = brute(u, n, k, cores, &fewest);
		if (got != want) {
			print_error("trial %d: n %d k %d cores %d: got %g, brute force %g\n",
				    trial, n, k, cores, got, want);
			fail();
		}
		if (got < 0)
			continue;
		assert_true(plan_cost(u, n, cores, sz, ns, uf, &gates) == got);
		assert_int_equal(gates, k);
		/* of the best plans, one that unfolds the fewest graphs */
		for (int i = 0; i < n; i++)
			nunf += uf[i];
		assert_int_equal(nunf, fewest);
	}
}

/* ---- graphs of the parallel form -------------------------------------------- */

#define HEAD "data:\n  train: {images: ti, labels: tl}\n"			/* 1-2 */ \
	"optimizer: {type: sgd, lr: 0.1}\n"					/* 3 */ \
	"network:\n  input: [4, 6, 6]\n"					/* 4-5 */

static int parse(struct akk_spec *s, const char *text, const char *const *sets,
		 int nsets, struct akk_err *e)
{
	memset(e, 0, sizeof(*e));
	return akk_spec_parse(s, text, strlen(text), "t.yaml", ".", sets, nsets, e);
}

/* The branches akk_spec_graph_branches finds in the graph of layer 0. */
static int branches(const char *nodes, int *idx, int *len)
{
	char text[2048];
	struct akk_spec s;
	struct akk_err e;
	enum akk_join op;
	int b;

	snprintf(text, sizeof(text), HEAD "  gates: {auto: 1}\n  layers:\n    - graph:\n%s"
		 "    - flatten\n", nodes);
	if (parse(&s, text, NULL, 0, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	b = akk_spec_graph_branches(&s.gates[0].layers[0], idx, len, &op);
	if (b)
		assert_int_equal(op, strstr(nodes, "add:") ? AKK_JOIN_ADD : AKK_JOIN_CONCAT);
	akk_spec_release(&s);
	return b;
}

static void graph_forms(void **state)
{
	int idx[16], len[8];

	(void)state;
	/* written out of order: the branches come in the join's order */
	assert_int_equal(branches("        - {name: a, conv2d: {filters: 2, kernel: 1}}\n"
				  "        - {name: b, conv2d: {filters: 3, kernel: 1}, from: input}\n"
				  "        - {name: rb, relu}\n"
				  "        - {name: c, maxpool2d: {kernel: 3, stride: 1, padding: 1}, from: input}\n"
				  "        - {concat: [c, rb, a]}\n", idx, len), 3);
	assert_int_equal(len[0], 1);
	assert_int_equal(idx[0], 3);
	assert_int_equal(len[1], 2);
	assert_int_equal(idx[1], 1);
	assert_int_equal(idx[2], 2);
	assert_int_equal(len[2], 1);
	assert_int_equal(idx[3], 0);
	assert_int_equal(branches("        - {name: a, conv2d: {filters: 4, kernel: 1}}\n"
				  "        - {name: b, tanh, from: input}\n"
				  "        - {add: [a, b]}\n", idx, len), 2);
	/* the input itself as a branch: no gate could hold it */
	assert_int_equal(branches("        - {name: a, conv2d: {filters: 4, kernel: 1}}\n"
				  "        - {add: [a, input]}\n", idx, len), 0);
	/* two branches sharing a node */
	assert_int_equal(branches("        - {name: s, conv2d: {filters: 4, kernel: 1}}\n"
				  "        - {name: a, relu, from: s}\n"
				  "        - {name: b, tanh, from: s}\n"
				  "        - {concat: [a, b]}\n", idx, len), 0);
	/* a slice is no layer */
	assert_int_equal(branches("        - {name: a, slice: {start: 0, end: 2}}\n"
				  "        - {name: b, relu, from: input}\n"
				  "        - {concat: [a, b]}\n", idx, len), 0);
	/* a layer after the join */
	assert_int_equal(branches("        - {name: a, relu}\n"
				  "        - {name: b, tanh, from: input}\n"
				  "        - {concat: [a, b]}\n        - relu\n", idx, len), 0);
}

/* ---- the spec rewrite ------------------------------------------------------- */

#define BRANCHY HEAD "  gates: {auto: %s}\n  layers:\n"				/* 6-7 */ \
	"    - {conv2d: {filters: 4, kernel: 3, padding: 1}}\n"			/* 8 */ \
	"    - graph:\n"							/* 9 */ \
	"        - {name: a, conv2d: {filters: 2, kernel: 1}}\n"		/* 10 */ \
	"        - {name: ra, relu}\n"					/* 11 */ \
	"        - {name: b, conv2d: {filters: 3, kernel: 3, padding: 1}, from: input}\n" \
	"        - {concat: [ra, b]}\n"					/* 13 */ \
	"    - flatten\n    - {dense: 3}\n"					/* 14-15 */

static void bad(const char *gates, const char *set, const char *want)
{
	char text[2048], buf[1200];
	struct akk_spec s;
	struct akk_err e;

	snprintf(text, sizeof(text), BRANCHY, gates);
	assert_int_equal(parse(&s, text, set ? &set : NULL, set ? 1 : 0, &e), -1);
	akk_err_format(&e, buf, sizeof(buf));
	if (strcmp(buf, want)) {
		print_error("got:  %s\nwant: %s\n", buf, want);
		fail();
	}
}

static void rewrite(void **state)
{
	char text[2048];
	struct akk_spec s;
	struct akk_err e;
	struct akk_model m;

	(void)state;
	snprintf(text, sizeof(text), BRANCHY, "4, split: [1, 2], unfold: [1]");
	if (parse(&s, text, NULL, 0, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(s.ngates, 4);
	assert_int_equal(s.gates[0].nlayers, 1);
	assert_int_equal(s.gates[1].nlayers, 2);	/* a: conv2d, relu */
	assert_string_equal(s.gates[1].layers[1].ops->name, "relu");
	assert_int_equal(s.gates[1].from[0], 0);
	assert_int_equal(s.gates[2].nlayers, 1);
	assert_int_equal(s.gates[2].layers[0].filters, 3);
	assert_int_equal(s.gates[2].from[0], 0);
	assert_int_equal(s.gates[3].nfrom, 2);
	assert_int_equal(s.gates[3].from[0], 1);
	assert_int_equal(s.gates[3].from[1], 2);
	assert_int_equal(s.gates[3].join, AKK_JOIN_CONCAT);
	assert_string_equal(s.gates[3].layers[0].ops->name, "flatten");
	assert_int_equal(akk_model_plan(&m, &s, &e), 0);
	assert_int_equal(m.gates[3].in.d[0], 5);	/* 2 + 3 channels */
	akk_model_release(&m);
	akk_spec_release(&s);

	bad("4, unfold: [1]", NULL,
	    "t.yaml:6:28: 'unfold' comes with the 'split' of the other gates");
	bad("4, split: [1, 2], unfold: [0]", NULL,
	    "t.yaml:6:10: unfold: layer 0 of network.layers is not a graph of branches joined by one concat or add");
	bad("5, split: [1, 2], unfold: [1]", NULL,
	    "t.yaml:6:10: split and unfold make 4 gates, but auto is 5");
	bad("4, split: [2, 1], unfold: [1]", NULL,
	    "t.yaml:6:10: split: gate 1 of 2 layers does not fit the 4 layers of network.layers and the graphs unfolded");
	bad("6", NULL,
	    "t.yaml:6:10: gates: {auto: 6} asks for more gates than the 4 layers of network.layers make with their graphs' branches on gates of their own");
	bad("4", "network.gates.unfold=[1]",
	    "--set network.gates.unfold=[1]: 'unfold' comes with the 'split' of the other gates");
}

/* The balance unfolds by FLOPs on enough cores and records it; the
 * override rebuilds the same gates; on one core nothing unfolds. */
static void balance_records_the_unfold(void **state)
{
	char text[2048];
	struct akk_spec s, s2;
	struct akk_err e;
	const char *sets[2];

	(void)state;
	snprintf(text, sizeof(text), BRANCHY, "4");
	assert_int_equal(parse(&s, text, NULL, 0, &e), 0);
	assert_int_equal(akk_balance_cores(&s, 0, 4, NULL, &e), 0);
	assert_int_equal(s.nsets, 2);
	assert_string_equal(s.sets[0], "network.gates.split=[1, 2]");
	assert_string_equal(s.sets[1], "network.gates.unfold=[1]");
	sets[0] = s.sets[0];
	sets[1] = s.sets[1];
	assert_int_equal(parse(&s2, text, sets, 2, &e), 0);
	assert_int_equal(s2.ngates, 4);
	for (int g = 0; g < 4; g++) {
		assert_int_equal(s2.gates[g].nlayers, s.gates[g].nlayers);
		assert_int_equal(s2.gates[g].nfrom, s.gates[g].nfrom);
		assert_memory_equal(s2.gates[g].from, s.gates[g].from, sizeof(s.gates[g].from));
	}
	akk_spec_release(&s2);
	akk_spec_release(&s);
	/* auto: 3 cannot unfold (a gate before, two branches, a join) */
	snprintf(text, sizeof(text), BRANCHY, "3");
	assert_int_equal(parse(&s, text, NULL, 0, &e), 0);
	assert_int_equal(akk_balance_cores(&s, 0, 4, NULL, &e), 0);
	assert_int_equal(s.nsets, 1);
	akk_spec_release(&s);
	/* two graphs side by side unfold one at most: 1 + 2 + 2 gates */
	snprintf(text, sizeof(text), HEAD "  gates: {auto: 6}\n  layers:\n"
		 "    - {conv2d: {filters: 4, kernel: 1}}\n"
		 "    - graph: [{name: a, relu}, {name: b, tanh, from: input}, {concat: [a, b]}]\n"
		 "    - graph: [{name: a, relu}, {name: b, tanh, from: input}, {add: [a, b]}]\n"
		 "    - flatten\n");
	assert_int_equal(parse(&s, text, NULL, 0, &e), 0);
	assert_int_equal(akk_balance_cores(&s, 0, 4, NULL, &e), -1);
	assert_string_equal(e.msg, "gates: {auto: 6}: no split of network.layers makes exactly 6 gates (a graph unfolds into a gate per branch, after a gate and before one)");
	akk_spec_release(&s);
	snprintf(text, sizeof(text), HEAD "  gates: {auto: 5}\n  layers:\n"
		 "    - {conv2d: {filters: 4, kernel: 1}}\n"
		 "    - graph: [{name: a, relu}, {name: b, tanh, from: input}, {concat: [a, b]}]\n"
		 "    - graph: [{name: a, relu}, {name: b, tanh, from: input}, {add: [a, b]}]\n"
		 "    - flatten\n");
	assert_int_equal(parse(&s, text, NULL, 0, &e), 0);
	assert_int_equal(akk_balance_cores(&s, 0, 4, NULL, &e), 0);
	assert_int_equal(s.ngates, 5);
	akk_spec_release(&s);
}

/* configs/fashion-inception-auto.yaml unfolded as balance would on
 * enough cores is configs/fashion-inception-gates.yaml: the same gates,
 * and the same parameters to the bit after three flip-flop batches. */
static void inception_unfolded_is_the_hand_written(void **state)
{
	const char *paths[2] = { "configs/fashion-inception-auto.yaml",
				 "configs/fashion-inception-gates.yaml" };
	const char *sets[] = { "schedule.batch_size=16", "schedule.epochs=1",
			       "network.gates.split=[4, 1, 2]",
			       "network.gates.unfold=[4, 6]" };
	struct akk_spec s[2];
	struct akk_model m[2];
	struct akk_dataset train[2], val[2];
	struct akk_run r[2];
	struct akk_err e = { 0 };

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct akk_run_config cfg = { .epochs = 1, .blas_threads = 1 };
		if (akk_spec_load(&s[k], paths[k], sets, k ? 2 : 4, &e) ||
		    akk_model_plan(&m[k], &s[k], &e))
			fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
		cfg.mode = s[k].sched.mode;
		assert_int_equal(cfg.mode, AKK_MODE_FLIPFLOP);
		tu_dataset(&train[k], 3 * 16, 28, 10, 7);
		tu_dataset(&val[k], 8, 28, 10, 9);
		assert_int_equal(akk_run_init(&r[k], &m[k], &train[k], &val[k], &cfg, &e), 0);
		assert_int_equal(akk_run_train(&r[k], &e), 0);
	}
	assert_int_equal(s[0].ngates, 11);
	assert_int_equal(s[1].ngates, 11);
	for (int g = 0; g < 11; g++) {
		const struct akk_gate_spec *a = &s[0].gates[g], *b = &s[1].gates[g];
		assert_int_equal(a->nlayers, b->nlayers);
		assert_int_equal(a->nfrom, b->nfrom);
		assert_memory_equal(a->from, b->from, (size_t)a->nfrom * sizeof(int));
		assert_int_equal(a->join, b->join);
		for (int i = 0; i < a->nlayers; i++) {
			assert_ptr_equal(a->layers[i].ops, b->layers[i].ops);
			assert_int_equal(a->layers[i].filters, b->layers[i].filters);
			assert_int_equal(a->layers[i].kernel, b->layers[i].kernel);
			assert_int_equal(a->layers[i].padding, b->layers[i].padding);
		}
		const struct akk_gate *ga = &r[0].gates[g].gate, *gb = &r[1].gates[g].gate;
		assert_int_equal(ga->plan->nparams, gb->plan->nparams);
		assert_int_equal(ga->step, 3);
		assert_int_equal(gb->step, 3);
		assert_memory_equal(ga->params, gb->params, ga->plan->nparams * sizeof(float));
		assert_memory_equal(ga->state, gb->state, ga->plan->nstate * sizeof(float));
	}
	for (int k = 0; k < 2; k++) {
		akk_run_release(&r[k]);
		akk_model_release(&m[k]);
		akk_spec_release(&s[k]);
		akk_dataset_release(&train[k]);
		akk_dataset_release(&val[k]);
	}
}

/* ---- the command line ------------------------------------------------------- */

static const char *write_config(const char *name, int gates)
{
	char text[2048];
	const char *path = tu_path(g_dir, name);

	snprintf(text, sizeof(text),
		 "name: autograph\nseed: 7\n"
		 "data:\n  train: {images: train-images, labels: train-labels}\n"
		 "network:\n  input: [1, 8, 8]\n  gates: {auto: %d}\n  layers:\n"
		 "    - {conv2d: {filters: 4, kernel: 3, padding: 1}}\n"
		 "    - relu\n"
		 "    - graph:\n"
		 "        - {name: a, conv2d: {filters: 2, kernel: 1}}\n"
		 "        - {name: r, relu}\n"
		 "        - {name: b, conv2d: {filters: 3, kernel: 3, padding: 1}, from: input}\n"
		 "        - {concat: [r, b]}\n"
		 "    - flatten\n    - {dense: 4}\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 1, batch_size: 50}\n"
		 "output: {dir: run-%s}\n", gates, name);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
	return path;
}

/* check shows the unfolded gates with their costs; partition writes them
 * out with from and join, and the file written plans the same layers. */
static void check_and_partition(void **state)
{
	const char *cfg = write_config("c.yaml", 4);
	const char *out = tu_path(g_dir, "c-explicit.yaml");
	char *text, *a, *b;

	(void)state;
	assert_rc(ak("check", "--no-profile", cfg, "--set", "network.gates.split=[2, 2]",
		     "--set", "network.gates.unfold=[2]", NULL), 0);
	tu_assert_contains(g_out, "\nsplit (gates: {auto: 4}, by FLOPs): network.gates.split=[2, 2] network.gates.unfold=[2]\n");
	tu_assert_line(g_out, "gate  reads            layers           cost MFLOP  predicted share");
	tu_assert_contains(g_out, "\n1     input            1-2      ");
	tu_assert_contains(g_out, "\n2     1                3 branch 1       ");
	tu_assert_contains(g_out, "\n3     1                3 branch 2       ");
	tu_assert_contains(g_out, "\n4     2,3 concat       4-5      ");
	tu_assert_contains(g_out, "\nslowest gate: ");
	tu_assert_contains(g_out, "\nbranches joined by gate 4: ");
	assert_rc(ak("partition", "--no-profile", cfg, "-o", out, NULL), 0);
	/* with -o the split and its costs come on standard output */
	tu_assert_contains(g_out, "split (gates: {auto: 4}, by FLOPs): network.gates.split=[");
	tu_assert_line(g_out, "gate  reads            layers           cost MFLOP  predicted share");
	text = tu_slurp(out, NULL);
	assert_non_null(text);
	/* whatever the split, the branches read the gate before them */
	tu_assert_contains(text, ", layers: [{conv2d: {filters: 2, kernel: 1}}, relu]}\n");
	tu_assert_contains(text, ", layers: [{conv2d: {filters: 3, kernel: 3, padding: 1}}]}\n");
	tu_assert_contains(text, "join: concat");
	tu_assert_not_contains(text, "auto:");
	free(text);
	assert_rc(ak("check", "--no-profile", cfg, NULL), 0);
	tu_assert_contains(g_out, "network.gates.unfold=[2]");
	a = strdup(g_out);
	assert_rc(ak("check", out, NULL), 0);
	b = strdup(g_out);
	assert_non_null(a);
	assert_non_null(b);
	/* the layers table, up to the gates' (whose names differ) */
	*strstr(a, "\ngate  name") = 0;
	*strstr(b, "\ngate  name") = 0;
	assert_string_equal(strchr(a, '\n'), strchr(b, '\n'));
	free(a);
	free(b);
}

/* The first run unfolds the graph on a split no balancing picks; the
 * resume must take both from the checkpoint, not balance again. */
static void resume_keeps_the_unfold(void **state)
{
	const char *cfg = write_config("resume.yaml", 5);
	const char *run = tu_path(g_dir, "run-resume.yaml");

	(void)state;
	assert_rc(ak("train", "-q", cfg, "--set", "network.gates.split=[2, 1, 1]",
		     "--set", "network.gates.unfold=[2]", NULL), 0);
	assert_rc(ak("train", "-q", cfg, "--resume", run, "--epochs", "2", NULL), 0);
	assert_rc(ak("train", "-q", cfg, "--resume", run, "--epochs", "3", NULL), 0);
	assert_rc(ak("eval", run, "--images", tu_path(g_dir, "train-images"),
		     "--labels", tu_path(g_dir, "train-labels"), NULL), 0);
	assert_rc(ak("inspect", run, NULL), 0);
	tu_assert_contains(g_out, "network.gates.split=[2, 1, 1]");
	tu_assert_contains(g_out, "network.gates.unfold=[2]");
	/* and a fresh split differs: the resume did not use it */
	assert_rc(ak("check", "--no-profile", cfg, NULL), 0);
	tu_assert_not_contains(g_out, "network.gates.split=[2, 1, 1] network.gates.unfold=[2]\n");
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
		cmocka_unit_test(fork_cost),
		cmocka_unit_test(partition_by_hand),
		cmocka_unit_test(partition_of_a_chain_is_the_split),
		cmocka_unit_test(partition_is_optimal),
		cmocka_unit_test(graph_forms),
		cmocka_unit_test(rewrite),
		cmocka_unit_test(balance_records_the_unfold),
		cmocka_unit_test(inception_unfolded_is_the_hand_written),
		cmocka_unit_test(check_and_partition),
		cmocka_unit_test(resume_keeps_the_unfold),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
