/* test_reshape.c - the reshape layer kind: its config forms and errors at
 * FILE:LINE:COL, row-major order (what numpy's reshape and ONNX's Reshape
 * keep), its gradient against finite differences, and a net that goes from
 * dense features to an image for a transposed convolution, trained by
 * flip-flop bit for bit as the sequential reference. (Its ONNX export is
 * checked by test_onnx on tests/configs/onnx-gen.yaml.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "io/graph_svg.h"
#include "model/model.h"
#include "model/reference.h"
#include "runtime/run_internal.h"
#include "gradcheck.h"
#include "testutil.h"

#define HEAD "data: {train: {images: x, labels: y}}\nnetwork:\n  input: [%s]\n" \
	"  gates:\n    - layers: [%s]\n"
#define TAIL "optimizer: {type: adam, lr: 0.01}\n" \
	"schedule: {mode: flip-flop, epochs: 1, batch_size: 16}\n"

/* The config for input and layers, parsed and planned; the error as
 * "LINE:COL: message", or "" when both passed. */
static const char *try(const char *input, const char *layers)
{
	static char out[5120];
	char text[1024];
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e = { 0 };

	snprintf(text, sizeof(text), HEAD TAIL, input, layers);
	out[0] = 0;
	if (akk_spec_parse(&s, text, strlen(text), "t.yaml", ".", NULL, 0, &e)) {
		snprintf(out, sizeof(out), "%d:%d: %s", e.line, e.col, e.msg);
		return out;
	}
	if (akk_model_plan(&m, &s, &e))
		snprintf(out, sizeof(out), "%d:%d: %s", e.line, e.col, e.msg);
	else
		akk_model_release(&m);
	akk_spec_release(&s);
	return out;
}

static void config_forms_and_errors(void **state)
{
	(void)state;
	assert_string_equal(try("784", "{reshape: [1, 28, 28]}, flatten, {dense: 4}"), "");
	assert_string_equal(try("784", "{reshape: {shape: [28, 28]}}, {lstm: 8}, {dense: 4}"), "");
	assert_string_equal(try("2, 3, 4", "{reshape: [24]}, {dense: 4}"), "");
	assert_string_equal(try("784", "{reshape: [2, 28, 28]}, flatten, {dense: 4}"),
			    "5:16: layer 'reshape' (gate 1, layer 1) cannot take the output of "
			    "network.input: shape [2, 28, 28] holds 1568 values, but its input "
			    "[784] holds 784");
	assert_string_equal(try("784", "{reshape: [1, 0, 784]}, {dense: 4}"),
			    "5:30: 'shape' must be at least 1, got 0");
	assert_string_equal(try("784", "{reshape: [1, 1, 28, 28]}, {dense: 4}"),
			    "5:26: 'shape' must have 1, 2 or 3 dimensions, got 4");
	assert_string_equal(try("784", "{reshape: 784}, {dense: 4}"),
			    "5:26: 'reshape' must be a list of sizes or a mapping, got '784'");
	assert_string_equal(try("784", "reshape, {dense: 4}"),
			    "5:16: missing required key 'shape' in layer 'reshape'");
	assert_string_equal(try("784", "{reshape: [784, x]}, {dense: 4}"),
			    "5:32: 'shape' must be an integer, got 'x'");
}

/* Forward keeps the values in row-major order; backward hands the
 * gradient back unchanged; both against finite differences too. */
static void order_and_gradient(void **state)
{
	struct akk_layer_spec sp = { .ops = &akk_layer_reshape };
	struct akk_shape *to = (struct akk_shape *)sp.iopt;
	struct rig g;

	(void)state;
	*to = (struct akk_shape){ 2, { 3, 8, 0 } };
	rig_open(&g, &sp, (struct akk_shape){ 3, { 2, 3, 4 } }, 3, X_PLAIN);
	assert_int_equal(g.l.out.rank, 2);
	assert_int_equal(g.l.out.d[0], 3);
	assert_int_equal(g.l.out.d[1], 8);
	rig_loss(&g);
	assert_memory_equal(g.y, g.x, g.nin * g.B * sizeof(float));
	g.l.ops->backward(&g.l, g.dx, g.dp, g.work, g.r, g.x, g.y, g.aux, g.p, g.B);
	assert_memory_equal(g.dx, g.r, g.nout * g.B * sizeof(float));
	rig_close(&g);
	grad_check(&sp, (struct akk_shape){ 1, { 24, 0, 0 } }, 4, X_PLAIN);
}

/* Dense features to an image: dense 4 -> 98, reshape [2, 7, 7], a
 * transposed convolution to [3, 14, 14], a pool and a classifier, on two
 * gates; flip-flop's weights after an epoch equal the reference's bit for
 * bit. */
static void decoder_trains_as_the_reference(void **state)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n  input: [1, 8, 8]\n  gates:\n"
		"    - layers: [flatten, {dense: 98}, relu, {reshape: [2, 7, 7]}]\n"
		"    - layers: [{conv_transpose2d: {filters: 3, kernel: 2, stride: 2}}, relu,\n"
		"               {maxpool2d: 2}, flatten, {dense: 4}]\n" TAIL;
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val;
	struct akk_reference ref;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct akk_run_config cfg = { .mode = AKK_MODE_FLIPFLOP, .epochs = 1,
				      .blas_threads = 1 };

	(void)state;
	if (akk_spec_parse(&s, yaml, strlen(yaml), "t.yaml", ".", NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	tu_dataset(&train, 400, 8, 4, 7);	/* 25 batches */
	tu_dataset(&val, 100, 8, 4, 9);
	akk_blas_threads(1);
	assert_int_equal(akk_reference_init(&ref, &m, &train, &e), 0);
	for (int i = 0; i < 25; i++)
		assert_int_equal(akk_reference_step(&ref, NULL, NULL, &e), 0);
	if (akk_run_init(&r, &m, &train, &val, &cfg, &e) || akk_run_train(&r, &e))
		fail_msg("%s", e.msg);
	for (int g = 0; g < m.ngates; g++) {
		const struct akk_gate *a = &r.gates[g].gate, *b = &ref.gates[g];
		assert_int_equal(a->step, 25);
		assert_int_equal(b->step, 25);
		assert_memory_equal(a->params, b->params, a->plan->nparams * sizeof(float));
	}
	akk_run_release(&r);
	akk_reference_release(&ref);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	akk_model_release(&m);
	akk_spec_release(&s);
}

/* check --graph's box for a reshape shows the shape it makes. */
static void graph_box_shows_the_shape(void **state)
{
	static const char *yaml =
		"data: {train: {images: x, labels: y}}\n"
		"network:\n  input: [784]\n  gates:\n"
		"    - layers: [{reshape: [1, 28, 28]}, flatten, {dense: 4}]\n" TAIL;
	struct akk_spec s;
	struct akk_model m;
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };
	int found = 0;

	(void)state;
	if (akk_spec_parse(&s, yaml, strlen(yaml), "t.yaml", ".", NULL, 0, &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(akk_graph_layout(&gl, &m, &e), 0);
	for (int i = 0; i < gl.nv; i++)
		if (!strcmp(gl.v[i].kind, "reshape")) {
			assert_string_equal(gl.v[i].params, "shape [1, 28, 28]");
			found++;
		}
	assert_int_equal(found, 1);
	akk_graph_layout_release(&gl);
	akk_model_release(&m);
	akk_spec_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_forms_and_errors),
		cmocka_unit_test(order_and_gradient),
		cmocka_unit_test(decoder_trains_as_the_reference),
		cmocka_unit_test(graph_box_shows_the_shape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
