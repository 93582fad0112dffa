/* test_overlap.c - the gates alone (model/overlap.h): in the concurrent
 * run every gate trains its batches on a thread of its own at the same
 * time as the others (their spans overlap, which one thread running them
 * in turn could not give), each takes exactly its n optimizer steps, and
 * what cannot be timed is refused with a message. No timing is asserted:
 * the figures are `akkctl bench`'s to report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/model.h"
#include "model/overlap.h"
#include "testutil.h"

/* Two gates of some 50 ms each for 40 batches of 64 on one core, so that
 * both threads are running before either is done, even on a loaded
 * machine. */
static const char *net2 =
	"data: {train: {images: nope, labels: nope}}\n"
	"network:\n"
	"  input: [512]\n"
	"  gates:\n"
	"    - layers: [{dense: 512}, relu]\n"
	"    - layers: [{dense: 448}, batchnorm, relu, {dropout: 0.1}, {dense: 10}]\n"
	"  loss: softmax_cross_entropy\n"
	"optimizer: {type: adam, lr: 0.001}\n"
	"schedule: {mode: wheels, epochs: 1, batch_size: 64}\n";

/* akk_overlap_bound of the network in config text t (planned, then
 * released), its error in e. */
static int bound_of(const char *t, int B, int n, struct akk_overlap_bound *o,
		    struct akk_err *e)
{
	struct akk_spec s;
	struct akk_model m;
	int rc;

	assert_int_equal(tu_parse(&s, t, e), 0);
	if (akk_model_plan(&m, &s, e))
		fail_msg("%s", e->msg);
	rc = akk_overlap_bound(&m, B, n, o, e);
	akk_model_release(&m);
	akk_spec_release(&s);
	return rc;
}

static void gates_train_at_once_each_on_its_thread(void **state)
{
	struct akk_overlap_bound o;
	struct akk_err e = { 0 };
	const int n = 40;

	(void)state;
	if (bound_of(net2, 64, n, &o, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(o.ngates, 2);
	assert_true(o.sequential > 0);
	assert_true(o.concurrent > 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(o.steps[i], n);
		assert_true(o.begin[i] >= 0);
		assert_true(o.end[i] > o.begin[i]);
		assert_true(o.end[i] <= o.concurrent + 1e-9);
		/* at the same time as every other gate: each began before
		 * any other ended */
		for (int j = 0; j < 2; j++)
			if (j != i && !(o.begin[i] < o.end[j]))
				fail_msg("gate %d began at %.6f s, after gate %d ended at %.6f s",
					 i + 1, o.begin[i], j + 1, o.end[j]);
	}
}

/* An embedding's input is token ids: the gate trains on them without a
 * non-finite gradient (which akk_gate_step refuses). */
static void embedding_gate_trains(void **state)
{
	static const char *text =
		"data: {train: {images: nope, labels: nope}}\n"
		"network:\n"
		"  input: [12]\n"
		"  gates:\n"
		"    - layers: [{embedding: {vocab: 50, units: 8}}, flatten]\n"
		"    - layers: [{dense: 4}]\n"
		"  loss: softmax_cross_entropy\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"schedule: {mode: wheels, epochs: 1, batch_size: 8}\n";
	struct akk_overlap_bound o;
	struct akk_err e = { 0 };

	(void)state;
	if (bound_of(text, 8, 20, &o, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(o.steps[0], 20);
	assert_int_equal(o.steps[1], 20);
}

static void one_gate_or_no_batch_is_refused(void **state)
{
	static const char *one =
		"data: {train: {images: nope, labels: nope}}\n"
		"network:\n  input: [8]\n  gates:\n    - layers: [{dense: 4}]\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"schedule: {mode: flip-flop, epochs: 1, batch_size: 8}\n";
	struct akk_overlap_bound o;
	struct akk_err e = { 0 };
	const char *want = "the overlap bound needs 2 to 256 gates and a batch to time";

	(void)state;
	assert_int_equal(bound_of(one, 8, 10, &o, &e), -1);
	assert_string_equal(e.msg, want);
	e.msg[0] = 0;
	assert_int_equal(bound_of(net2, 64, 0, &o, &e), -1);
	assert_string_equal(e.msg, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gates_train_at_once_each_on_its_thread),
		cmocka_unit_test(embedding_gate_trains),
		cmocka_unit_test(one_gate_or_no_batch_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
