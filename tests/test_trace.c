/* test_trace.c - what defines each schedule, read from the run's trace
 * (every actor's forwards, backwards and steps, each with the weight
 * version it computed with) and from the weights it trains.
 *
 * Wheels: K batches in flight, so a gate forwards later batches before
 * the earlier ones come back, each forward meets weights up to K - 1
 * steps newer than its batch's turn in flip-flop would, with weight
 * stashing a backward uses its forward's weights, and the weights differ
 * from flip-flop's, more as K grows. Pipeline: chunks of a batch are on
 * different gates at once, in 1F1B order, one step per batch. Flip-flop:
 * never two batches in flight. In wheels and pipeline the last gate
 * computes each chunk's loss and goes straight on to its backward; in
 * flip-flop the sentinel computes it, as in the seed.
 *
 * Synthetic data (8x8 class patterns), one compute thread per gate.
 * Timing enters only the shares of overlapping work, whose floors are
 * far below what an idle or a loaded 2-core machine shows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "model/model.h"
#include "runtime/run_internal.h"
#include "config/spec.h"

#define SIDE 8
#define CLASSES 4
#define NTRAIN 1000
#define BATCH 16
#define NBATCH ((NTRAIN + BATCH - 1) / BATCH)	/* 63, the last of 8 */
#define EVENTS 8192

static const char *const net2 =
	"    - layers: [{dense: 48}, relu, {dense: 32}, relu]\n"
	"    - layers: [{dense: 32}, tanh, {dense: 4}]\n";
/* the same split in three: the middle gate's backward comes long after
 * its forward */
static const char *const net3 =
	"    - layers: [{dense: 48}, relu]\n"
	"    - layers: [{dense: 32}, relu, {dense: 32}, tanh]\n"
	"    - layers: [{dense: 4}]\n";

struct fixture {
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
	struct akk_run r;
};

/* Train one epoch of `gates` with schedule `sched`, traced. */
static void train_net(struct fixture *f, const char *gates, const char *sched)
{
	char text[2048];
	struct akk_err e = { 0 };

	snprintf(text, sizeof(text),
		 "data: {train: {images: x, labels: y}}\n"
		 "network:\n"
		 "  input: [64]\n"
		 "  gates:\n%s"
		 "optimizer: {type: momentum, lr: 0.05}\n"
		 "schedule: %s\n", gates, sched);
	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, text, strlen(text), "test.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&f->train, NTRAIN, SIDE, CLASSES, 7);
	tu_dataset(&f->val, 200, SIDE, CLASSES, 9);

	struct akk_run_config cfg = {
		.mode = f->spec.sched.mode, .epochs = 1, .blas_threads = 1,
		.trace_events = EVENTS,
	};
	if (akk_run_init(&f->r, &f->model, &f->train, &f->val, &cfg, &e) ||
	    akk_run_train(&f->r, &e))
		fail_msg("run (%s): %s", sched, e.msg);
}

static void train(struct fixture *f, const char *sched)
{
	train_net(f, net2, sched);
}

static void release(struct fixture *f)
{
	akk_run_release(&f->r);
	akk_model_release(&f->model);
	akk_spec_release(&f->spec);
	akk_dataset_release(&f->train);
	akk_dataset_release(&f->val);
}

/* |a - b| / |b| over all the gates' weights. */
static double distance(const struct akk_run *a, const struct akk_run *b)
{
	double d2 = 0, n2 = 0;

	for (int g = 0; g < a->model->ngates; g++) {
		const struct akk_gate *x = &a->gates[g].gate, *y = &b->gates[g].gate;
		for (size_t i = 0; i < x->plan->nparams; i++) {
			double d = (double)x->params[i] - y->params[i];
			d2 += d * d;
			n2 += (double)y->params[i] * y->params[i];
		}
	}
	return sqrt(d2 / n2);
}

/* Gate g's (1-based) training event of `kind` for message id, or NULL. */
static const struct akk_trace_event *find(const struct akk_run *r, int g, int kind,
					  long id)
{
	const struct akk_trace *t = akk_run_trace(r, g);

	for (long i = 0; i < t->n; i++)
		if (t->ev[i].kind == kind && t->ev[i].id == id)
			return &t->ev[i];
	return NULL;
}

/* Index in gate g's trace (its order of work) of an event, or -1. */
static long order(const struct akk_run *r, int g, int kind, long id)
{
	const struct akk_trace_event *ev = find(r, g, kind, id);

	return ev ? ev - akk_run_trace(r, g)->ev : -1;
}

static int overlap(const struct akk_trace_event *a, const struct akk_trace_event *b)
{
	return a && b && a->t0 < b->t1 && b->t0 < a->t1;
}

/* Every gate traced every batch (the trace buffer was big enough). */
static void assert_complete(const struct akk_run *r, long chunks)
{
	for (int g = 1; g <= r->model->ngates; g++)
		for (long id = 0; id < chunks; id++)
			if (!find(r, g, AKK_TRACE_FORWARD, id) ||
			    !find(r, g, AKK_TRACE_BACKWARD, id))
				fail_msg("gate %d: batch %ld missing from the trace", g, id);
}

/* Wheels trains differently from flip-flop, and the more batches are in
 * flight, the more: the weights after one epoch move away from
 * flip-flop's as K grows (K = 1 equals it: test_runtime). */
static void wheels_differs_from_flipflop_more_with_K(void **unused)
{
	static const int Ks[] = { 2, 8 };
	struct fixture ff, w[2];
	double d[2];

	(void)unused;
	train(&ff, "{mode: flip-flop, epochs: 1, batch_size: 16}");
	for (int k = 0; k < 2; k++) {
		char sched[128];
		snprintf(sched, sizeof(sched),
			 "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: %d}}",
			 Ks[k]);
		train(&w[k], sched);
		assert_int_equal(w[k].r.gates[0].gate.step, NBATCH);
		d[k] = distance(&w[k].r, &ff.r);
	}
	print_message("wheels vs flip-flop after one epoch: K=2 %.4g, K=8 %.4g relative\n",
		      d[0], d[1]);
	if (!(d[0] > 1e-4))
		fail_msg("wheels K=2 trained flip-flop's weights (%g relative)", d[0]);
	if (!(d[1] > 1.5 * d[0]))
		fail_msg("wheels K=8 is no further from flip-flop (%g) than K=2 (%g)",
			 d[1], d[0]);
	for (int k = 0; k < 2; k++)
		release(&w[k]);
	release(&ff);
}

/* Wheels with K = 4: batches overlap, a later batch entering before an
 * earlier one is back: gate 1 forwards batch b + 1 before it runs batch
 * b's backward in at least half of the batches (flip-flop, and wheels
 * with a flush between batches: never; a loaded 2-core machine showed 48
 * to 62 of 62). Every forward on every gate meets weights 0..K-1 steps
 * behind its batch (version = batches stepped, id - version = batches
 * still in flight), in every run.
 *
 * That some forward meets K - 1, the whole window, depends on when the
 * system runs the threads: the sentinel issues the next batch only when
 * the data provider, an idle worker's background job, has filled it, and
 * on a loaded machine one worker may be running everything, gates first.
 * A run there kept at most 3 in flight in 11 of 20 runs (a light first
 * gate and a heavy last one); this network, in none of 16 (loaded, and
 * under ThreadSanitizer). So the window must fill in one of TRIES runs, and
 * never overflow in any: a sentinel with K - 1 credits never fills it. How
 * often a later forward on gate 1 computes at the same moment as an
 * earlier backward on gate 2 depends on free cores: printed, not asserted
 * (akkctl bench measures what it buys). */
static long wheels_window_run(int K)
{
	struct fixture f;
	long ahead = 0, concurrent = 0, most = 0;
	char sched[128];

	snprintf(sched, sizeof(sched),
		 "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: %d}}", K);
	train_net(&f, net3, sched);
	assert_complete(&f.r, NBATCH);
	for (long b = 0; b + 1 < NBATCH; b++) {
		const struct akk_trace_event *back2 = find(&f.r, 2, AKK_TRACE_BACKWARD, b);
		if (order(&f.r, 1, AKK_TRACE_FORWARD, b + 1) <
		    order(&f.r, 1, AKK_TRACE_BACKWARD, b))
			ahead++;
		for (long later = b + 1; later < b + K && later < NBATCH; later++)
			if (overlap(find(&f.r, 1, AKK_TRACE_FORWARD, later), back2)) {
				concurrent++;
				break;
			}
	}
	for (int g = 1; g <= f.model.ngates; g++)
		for (long b = 0; b < NBATCH; b++) {
			long stale = b - find(&f.r, g, AKK_TRACE_FORWARD, b)->version;
			if (stale < 0 || stale > K - 1)
				fail_msg("gate %d: batch %ld's forward used version %ld, %ld behind",
					 g, b, b - stale, stale);
			if (stale > most)
				most = stale;
		}
	print_message("wheels K=%d: forward of b+1 before backward of b in %ld of %d batches, at the same time on two gates in %ld, stalest forward %ld steps behind\n",
		      K, ahead, NBATCH - 1, concurrent, most);
	assert_true(ahead >= (NBATCH - 1) / 2);
	release(&f);
	return most;
}

static void wheels_pipelines_within_K_versions(void **unused)
{
	enum { K = 4, TRIES = 8 };
	long most = 0;
	int run;

	(void)unused;
	for (run = 1; run <= TRIES && most < K - 1; run++) {
		long m = wheels_window_run(K);
		if (m > most)
			most = m;
	}
	if (most != K - 1)
		fail_msg("wheels K=%d: no forward in %d runs met weights K - 1 = %d steps behind (at most %ld)",
			 K, TRIES, K - 1, most);
}

/* Weight stashing, three gates: the middle one, whose backward reads its
 * weights for the input gradient, computes each backward with the
 * weights its forward used; without stashing, with the newest, which
 * differ whenever others stepped in between (many batches at K = 4).
 * The trained weights differ. */
static void stashing_changes_the_backward_weights(void **unused)
{
	struct fixture on, off;
	long same_on = 0, same_off = 0;

	(void)unused;
	train_net(&on, net3, "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: 4}, weight_stashing: true}");
	train_net(&off, net3, "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: 4}, weight_stashing: false}");
	assert_complete(&on.r, NBATCH);
	assert_complete(&off.r, NBATCH);
	assert_true(akk_gate_stash_bytes(&on.r.gates[1].gate) > 0);
	assert_int_equal(akk_gate_stash_bytes(&off.r.gates[1].gate), 0);
	for (long b = 0; b < NBATCH; b++) {
		same_on += find(&on.r, 2, AKK_TRACE_BACKWARD, b)->version ==
			   find(&on.r, 2, AKK_TRACE_FORWARD, b)->version;
		same_off += find(&off.r, 2, AKK_TRACE_BACKWARD, b)->version ==
			    find(&off.r, 2, AKK_TRACE_FORWARD, b)->version;
	}
	print_message("middle gate's backward on its forward's weights: stashing %ld, without %ld of %d; weights differ by %.4g\n",
		      same_on, same_off, NBATCH, distance(&on.r, &off.r));
	assert_int_equal(same_on, NBATCH);
	/* how many depends on how the threads interleave (about a third on
	 * an idle machine, two thirds under ASan on a loaded one); a wheels
	 * that never overlapped would give all of them */
	assert_true(same_off < NBATCH);
	assert_true(distance(&on.r, &off.r) > 1e-5);
	release(&on);
	release(&off);
}

/* Pipeline, 4 micro-batches, 2 gates (K = 2 chunks in flight): in every
 * batch gate 1 forwards chunk 1 before chunk 0's backward comes back
 * through it (two chunks of the batch in flight on different gates),
 * forwards in chunk order, and a chunk's forward waits for the backward
 * of the chunk K before it (1F1B: chunk 0's backward before chunk 3's
 * forward, not all forwards first as in GPipe); no chunk of a batch
 * enters before the last one's backward (the flush), and every forward
 * of a batch meets the same weights. Weights equal flip-flop's:
 * test_pipeline. Chunks computing at the same moment: printed. */
static void pipeline_runs_1f1b(void **unused)
{
	const int M = 4, K = 2;
	struct fixture f;
	long together = 0;

	(void)unused;
	train(&f, "{mode: pipeline, micro_batches: 4, epochs: 1, batch_size: 16}");
	assert_int_equal(f.r.sched.K, K);
	assert_complete(&f.r, (long)NBATCH * M);
	for (long b = 0; b < NBATCH; b++) {
		long c0 = b * M;
		int both = 0;
		for (long c = c0; c < c0 + M; c++) {
			for (int g = 1; g <= 2; g++)
				assert_int_equal(find(&f.r, g, AKK_TRACE_FORWARD, c)->version, b);
			if (c >= c0 + K)
				assert_true(order(&f.r, 1, AKK_TRACE_BACKWARD, c - K) <
					    order(&f.r, 1, AKK_TRACE_FORWARD, c));
			if (c > c0)
				assert_true(order(&f.r, 1, AKK_TRACE_FORWARD, c - 1) <
					    order(&f.r, 1, AKK_TRACE_FORWARD, c));
			for (long o = c0; o < c0 + M; o++)
				if (o != c) {
					both |= overlap(find(&f.r, 1, AKK_TRACE_FORWARD, c),
							find(&f.r, 2, AKK_TRACE_FORWARD, o));
					both |= overlap(find(&f.r, 1, AKK_TRACE_FORWARD, c),
							find(&f.r, 2, AKK_TRACE_BACKWARD, o));
					both |= overlap(find(&f.r, 1, AKK_TRACE_BACKWARD, c),
							find(&f.r, 2, AKK_TRACE_BACKWARD, o));
				}
		}
		together += both;
		assert_true(order(&f.r, 1, AKK_TRACE_FORWARD, c0 + 1) <
			    order(&f.r, 1, AKK_TRACE_BACKWARD, c0));
		if (b + 1 < NBATCH)	/* the flush */
			assert_true(order(&f.r, 1, AKK_TRACE_BACKWARD, c0 + M - 1) <
				    order(&f.r, 1, AKK_TRACE_FORWARD, c0 + M));
	}
	print_message("pipeline: chunks of one batch on both gates at once in %ld of %d batches\n",
		      together, NBATCH);
	for (int g = 0; g < 2; g++)
		assert_int_equal(f.r.gates[g].gate.step, NBATCH);
	release(&f);
}

/* Flip-flop: a batch's first forward starts only after the previous
 * batch's last backward (gate 1's) has ended, and every forward meets
 * the weights every earlier batch stepped. */
static void flipflop_one_batch_in_flight(void **unused)
{
	struct fixture f;

	(void)unused;
	train(&f, "{mode: flip-flop, epochs: 1, batch_size: 16}");
	assert_complete(&f.r, NBATCH);
	for (long b = 0; b < NBATCH; b++) {
		for (int g = 1; g <= 2; g++)
			assert_int_equal(find(&f.r, g, AKK_TRACE_FORWARD, b)->version, b);
		if (b + 1 < NBATCH)
			assert_true(find(&f.r, 1, AKK_TRACE_BACKWARD, b)->t1 <=
				    find(&f.r, 1, AKK_TRACE_FORWARD, b + 1)->t0);
	}
	release(&f);
}

/* Gates that fork and join: a stem, two branch gates reading it, a head
 * joining them by concat; the branches wide enough (about 0.3 ms a
 * forward) that waking a second worker is small next to them. */
static const char *const fork2 =
	"    - {name: stem, layers: [{dense: 48}, relu]}\n"
	"    - {name: left, from: stem, layers: [{dense: 512}, relu, {dense: 128}, tanh]}\n"
	"    - {name: right, from: stem, layers: [{dense: 512}, relu, {dense: 128}, tanh]}\n"
	"    - {name: head, from: [left, right], join: concat, layers: [{dense: 4}]}\n";

/* Flip-flop on a fork: the two branch gates compute one batch's forwards
 * (and backwards) at once, on two workers; the join starts only when
 * both branches' outputs are there, and the stem's backward only when
 * both branches' gradients are. The share of batches whose branch
 * forwards overlap is printed: on an idle 2-core machine nearly every
 * batch; when another process holds a core, a few. Branches run one
 * after the other never overlap, so the floor is one overlapping forward
 * or backward in an epoch, in one of three tries (a loaded machine may
 * hold the second core for a whole epoch now and then). */
static long branches_at_once(void)
{
	struct fixture f;
	long fwd = 0, bwd = 0;
	double both = 0, busy = 0;

	train_net(&f, fork2, "{mode: flip-flop, epochs: 1, batch_size: 16}");
	assert_complete(&f.r, NBATCH);
	assert_true(f.r.workers.n >= 2);
	for (long b = 0; b < NBATCH; b++) {
		const struct akk_trace_event *lf = find(&f.r, 2, AKK_TRACE_FORWARD, b),
			*rf = find(&f.r, 3, AKK_TRACE_FORWARD, b),
			*lb = find(&f.r, 2, AKK_TRACE_BACKWARD, b),
			*rb = find(&f.r, 3, AKK_TRACE_BACKWARD, b),
			*hf = find(&f.r, 4, AKK_TRACE_FORWARD, b),
			*sb = find(&f.r, 1, AKK_TRACE_BACKWARD, b);
		/* the join waits for both sources, the fork for both readers */
		assert_true(hf->t0 >= lf->t1 && hf->t0 >= rf->t1);
		assert_true(sb->t0 >= lb->t1 && sb->t0 >= rb->t1);
		for (int g = 1; g <= 4; g++)
			assert_int_equal(find(&f.r, g, AKK_TRACE_FORWARD, b)->version, b);
		fwd += overlap(lf, rf);
		bwd += overlap(lb, rb);
		/* the time both branches computed, of the time either did */
		double lo = lf->t0 > rf->t0 ? lf->t0 : rf->t0, hi = lf->t1 < rf->t1 ? lf->t1 : rf->t1;
		double common = hi > lo ? hi - lo : 0;
		both += common;
		busy += (lf->t1 - lf->t0) + (rf->t1 - rf->t0) - common;
	}
	print_message("flip-flop fork: branch forwards overlap in %ld of %d batches (%.0f%%), "
		      "backwards in %ld; both branches computing %.0f%% of the forwards' time\n",
		      fwd, NBATCH, 100.0 * fwd / NBATCH, bwd, busy > 0 ? 100 * both / busy : 0);
	release(&f);
	return fwd + bwd;
}

static void flipflop_branches_run_at_once(void **unused)
{
	long n = 0;

	(void)unused;
	for (int k = 0; k < 3 && !n; k++)
		n = branches_at_once();
	assert_true(n >= 1);
}

/* Where each training chunk's loss is computed: by the last gate, right
 * after its forward and right before its backward of the same chunk, with
 * nothing between (wheels, pipeline); or by the sentinel (flip-flop).
 * When the sentinel computed it in wheels, the last gate forwarded later
 * batches between a batch's forward and backward while the sentinel's
 * thread ran another gate's handler. */
static void loss_beside_the_last_gate(void **unused)
{
	static const struct {
		const char *gates, *sched;
		int G, chunks, here;
	} runs[] = {
		{ net2, "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: 4}}",
		  2, NBATCH, 1 },
		{ net3, "{mode: wheels, epochs: 1, batch_size: 16, concurrency: {train: 8}}",
		  3, NBATCH, 1 },
		{ net3, "{mode: pipeline, micro_batches: 4, epochs: 1, batch_size: 16}",
		  3, NBATCH * 4, 1 },
		{ net2, "{mode: flip-flop, epochs: 1, batch_size: 16}", 2, NBATCH, 0 },
	};

	(void)unused;
	for (size_t k = 0; k < sizeof(runs) / sizeof(*runs); k++) {
		struct fixture f;
		int G = runs[k].G;
		long on_sentinel = 0;
		const struct akk_trace *st;

		train_net(&f, runs[k].gates, runs[k].sched);
		assert_complete(&f.r, runs[k].chunks);
		st = akk_run_trace(&f.r, 0);
		for (long i = 0; i < st->n; i++)
			on_sentinel += st->ev[i].kind == AKK_TRACE_LOSS;
		for (long c = 0; c < runs[k].chunks; c++) {
			long fwd = order(&f.r, G, AKK_TRACE_FORWARD, c);
			long loss = order(&f.r, G, AKK_TRACE_LOSS, c);
			long bwd = order(&f.r, G, AKK_TRACE_BACKWARD, c);

			if (!runs[k].here) {
				assert_int_equal(loss, -1);
				continue;
			}
			if (loss != fwd + 1 || bwd != loss + 1)
				fail_msg("%s: chunk %ld: the last gate's forward, loss and backward are its events %ld, %ld and %ld, not one after another",
					 runs[k].sched, c, fwd, loss, bwd);
		}
		assert_int_equal(on_sentinel, runs[k].here ? 0 : runs[k].chunks);
		release(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wheels_differs_from_flipflop_more_with_K),
		cmocka_unit_test(wheels_pipelines_within_K_versions),
		cmocka_unit_test(stashing_changes_the_backward_weights),
		cmocka_unit_test(pipeline_runs_1f1b),
		cmocka_unit_test(flipflop_one_batch_in_flight),
		cmocka_unit_test(flipflop_branches_run_at_once),
		cmocka_unit_test(loss_beside_the_last_gate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
