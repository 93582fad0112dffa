/* test_stash.c - weight stashing in a gate (model/gate.c): each backward
 * computes its input gradient with the weights its own forward saw, while
 * the forwards of one weight version share one buffer and a step writes
 * the new version into a buffer that no batch in flight still reads. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/gate.h"
#include "model/model.h"

enum { B = 3, NT = 3, NB = 6 };

/* The input gradient of x and dy through a gate whose weights are w: a
 * gate without a stash, one batch at a time. */
static void reference_dx(const struct akk_gate_plan *p, const float *w,
			 const float *x, const float *dy, float *dx)
{
	struct akk_gate g;
	struct akk_err e = { 0 };
	const float *d;

	if (akk_gate_init(&g, p, &(struct akk_gate_config){ .max_batch = B, .ntapes = 1,
			  .nevals = 1, .steps_per_epoch = 10, .epochs = 1, .seed = 5 }, &e))
		fail_msg("gate: %s", e.msg);
	memcpy(g.params, w, p->nparams * sizeof(float));
	if (!akk_gate_forward(&g, x, B, 0, &e) ||
	    !(d = akk_gate_backward(&g, dy, B, 0, 1, &e)))
		fail_msg("reference: %s", e.msg);
	memcpy(dx, d, (size_t)B * akk_shape_size(p->in) * sizeof(float));
	akk_gate_release(&g);
}

/* Three tapes; forwards F and backwards+steps S in the order
 * F0 F1 F2 S0 F3 S1 F4 S2 F5 S3 S4 S5: F0-F2 share version 0, so S0 must
 * write version 1 into a buffer other than the one F1 and F2 still read,
 * and each later step finds another free buffer in turn. */
static void t_backward_sees_its_forward_weights(void **state)
{
	static const char *text =
		"data:\n  train: {images: ti, labels: tl}\n"
		"optimizer: {type: momentum, lr: 0.5, momentum: 0.9}\n"
		"network:\n  input: [5]\n  gates:\n"
		"    - layers: [{dense: 4}, tanh, {dense: 3}]\n";
	static const char order[] = "FFFSFSFSFSSS";
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate g;
	struct akk_err e = { 0 };
	int nf = 0, nb = 0;

	(void)state;
	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	const struct akk_gate_plan *p = &m.gates[0];
	size_t ni = (size_t)B * akk_shape_size(p->in);
	size_t no = (size_t)B * akk_shape_size(p->out), np = p->nparams;
	float *x = calloc(NB * ni, sizeof(float)), *dy = calloc(no, sizeof(float));
	float *w = calloc(NB * np, sizeof(float));
	float *dx = calloc(ni, sizeof(float)), *ref = calloc(ni, sizeof(float));
	const float *shared[NB] = { 0 };

	assert_non_null(x), assert_non_null(dy), assert_non_null(w);
	assert_non_null(dx), assert_non_null(ref);
	tu_fill(x, NB * ni, -1, 1, 3);
	tu_fill(dy, no, -1, 1, 4);
	if (akk_gate_init(&g, p, &(struct akk_gate_config){ .max_batch = B, .ntapes = NT,
			  .nevals = 1, .stash = 1, .steps_per_epoch = 10, .epochs = 1,
			  .seed = 5 }, &e))
		fail_msg("gate: %s", e.msg);
	for (const char *c = order; *c; c++) {
		if (*c == 'F') {
			int slot = (g.head + g.count) % NT;

			memcpy(w + nf * np, g.params, np * sizeof(float));
			if (!akk_gate_forward(&g, x + nf * ni, B, nf, &e))
				fail_msg("forward %d: %s", nf, e.msg);
			shared[nf++] = g.tapes[slot].w;
			continue;
		}
		const float *d = akk_gate_backward(&g, dy, B, nb, 1, &e);
		if (!d)
			fail_msg("backward %d: %s", nb, e.msg);
		memcpy(dx, d, ni * sizeof(float));
		reference_dx(p, w + nb * np, x + nb * ni, dy, ref);
		assert_memory_equal(dx, ref, ni * sizeof(float));
		if (nb++ < NB - 1 && akk_gate_step(&g, &e))
			fail_msg("step: %s", e.msg);
	}
	/* one buffer for version 0, then one per forward after a step */
	assert_ptr_equal(shared[1], shared[0]);
	assert_ptr_equal(shared[2], shared[0]);
	assert_ptr_not_equal(shared[3], shared[0]);
	/* the weights did change between the versions */
	assert_memory_not_equal(w, w + 3 * np, np * sizeof(float));
	/* the pool besides the gate's own weights: one buffer per tape */
	assert_int_equal(akk_gate_stash_bytes(&g), NT * np * sizeof(float));
	akk_gate_release(&g);
	free(x), free(dy), free(w), free(dx), free(ref);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* A step while every tape is in flight, each on a version of its own
 * (the gate API allows it, the runtime never does it: a step follows a
 * backward): no buffer is free, and the step says so instead of
 * overwriting weights a batch in flight reads. */
static void t_step_with_every_buffer_read_fails(void **state)
{
	static const char *text =
		"data:\n  train: {images: ti, labels: tl}\n"
		"optimizer: {type: sgd, lr: 0.1}\n"
		"network:\n  input: [5]\n  gates:\n    - layers: [{dense: 3}]\n";
	struct akk_spec s;
	struct akk_model m;
	struct akk_gate g;
	struct akk_err e = { 0 };
	float x[B * 5] = { 0 };

	(void)state;
	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", NULL, NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_gate_init(&g, &m.gates[0], &(struct akk_gate_config){ .max_batch = B,
			  .ntapes = NT, .nevals = 1, .stash = 1, .steps_per_epoch = 10,
			  .epochs = 1, .seed = 5 }, &e))
		fail_msg("gate: %s", e.msg);
	for (int i = 0; i < NT; i++) {
		if (!akk_gate_forward(&g, x, B, i, &e))
			fail_msg("forward %d: %s", i, e.msg);
		if (i < NT - 1 && akk_gate_step(&g, &e))
			fail_msg("step %d: %s", i, e.msg);
	}
	assert_int_equal(akk_gate_step(&g, &e), 0);	/* the fourth buffer */
	assert_int_equal(akk_gate_step(&g, &e), -1);
	assert_string_equal(e.msg, "gate 1: a step with 3 batches in flight, "
			    "every weight buffer in use");
	akk_gate_release(&g);
	akk_model_release(&m);
	akk_spec_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_backward_sees_its_forward_weights),
		cmocka_unit_test(t_step_with_every_buffer_read_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
