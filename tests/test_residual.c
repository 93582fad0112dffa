/* test_residual.c - residual blocks in configs: the nested lists the spec
 * parses, the errors it reports at FILE:LINE:COL, and the plan's shape
 * checks through akk_model_plan (the gradients are in test_layers.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/spec.h"
#include "model/model.h"
#include "testutil.h"

#define HEAD "data:\n  train: {images: ti, labels: tl}\n"		/* 1-2 */ \
	"optimizer: {type: adam, lr: 0.001}\n"			/* 3 */   \
	"network:\n  input: [%s]\n  gates:\n"			/* 4-6 */

static char text[4096];

static const char *config(const char *input, const char *layers)
{
	snprintf(text, sizeof(text), HEAD "%s", input, layers);
	return text;
}

/* Parsing (and, when it parses, planning) fails with exactly want. */
static void bad(const char *t, const char *want)
{
	char buf[1200];

	if (tu_plan_error(t, buf, sizeof(buf)))
		fail_msg("no error, want: %s", want);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got:  %s\nwant: %s\n", buf, want);
		fail();
	}
}

static void parses(void **state)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e;
	const struct akk_layer_spec *l;

	(void)state;
	if (tu_parse(&s, config("2, 6, 6",
		"    - layers:\n"						/* 7 */
		"        - residual: [{conv2d: {filters: 2, kernel: 3, padding: 1}}, batchnorm, relu]\n"
		"        - relu\n"
		"        - residual:\n"					/* 10 */
		"            layers: [{conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}},\n"
		"                     residual: [tanh]]\n"
		"            shortcut: [{conv2d: {filters: 4, kernel: 1, stride: 2}}]\n"
		"        - global_avgpool\n"
		"        - {dense: 3}\n"), &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(s.gates[0].nlayers, 5);
	l = &s.gates[0].layers[0];
	assert_ptr_equal(l->ops, &akk_layer_residual);
	assert_int_equal(l->ninner, 3);
	assert_int_equal(l->nshort, 0);
	assert_null(l->shortcut);
	assert_ptr_equal(l->inner[0].ops, &akk_layer_conv2d);
	assert_int_equal(l->inner[0].filters, 2);
	assert_int_equal(l->inner[0].mark.line, 8);
	assert_ptr_equal(l->inner[2].ops, &akk_layer_relu);
	l = &s.gates[0].layers[2];
	assert_int_equal(l->ninner, 2);
	assert_int_equal(l->nshort, 1);
	assert_int_equal(l->inner[0].stride, 2);
	assert_int_equal(l->inner[1].ninner, 1);
	assert_ptr_equal(l->inner[1].inner[0].ops, &akk_layer_tanh);
	assert_int_equal(l->shortcut[0].kernel, 1);
	assert_int_equal(l->shortcut[0].bias, 1);	/* defaults apply inside */

	if (akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(m.classes, 3);
	assert_int_equal(m.gates[0].layers[2].out.d[0], 4);
	assert_int_equal(m.gates[0].layers[2].out.d[1], 3);
	/* conv 2*2*9+2, batchnorm 4; conv 4*2*9+4, projection 4*2+4; dense 4*3+3 */
	assert_int_equal(m.nparams, 38 + 4 + 76 + 12 + 15);
	akk_model_release(&m);
	akk_spec_release(&s);
}

static void errors(void **state)
{
	(void)state;
	bad(config("2, 6, 6",
		   "    - layers:\n"
		   "        - residual: [{conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}}]\n"
		   "        - flatten\n        - {dense: 3}\n"),
	    "t.yaml:8:11: layer 'residual' (gate 1, layer 1) cannot take the "
	    "output of network.input: the inner layers output [4, 3, 3] but "
	    "the identity shortcut passes [2, 6, 6]: add a projection "
	    "(shortcut: [conv2d: {filters: 4, kernel: 1, stride: 2}])");
	bad(config("2, 6, 6",
		   "    - layers:\n"
		   "        - residual:\n"
		   "            layers: [{conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}}]\n"
		   "            shortcut: [{conv2d: {filters: 4, kernel: 1}}]\n"
		   "        - flatten\n        - {dense: 3}\n"),
	    "t.yaml:8:11: layer 'residual' (gate 1, layer 1) cannot take the "
	    "output of network.input: the inner layers output [4, 3, 3] but "
	    "the shortcut outputs [4, 6, 6]");
	/* an inner layer's own error, at its own place */
	bad(config("6",
		   "    - layers:\n"
		   "        - {dense: 6}\n"
		   "        - residual: [relu, {maxpool2d: 2}]\n"
		   "        - {dense: 3}\n"),
	    "t.yaml:9:28: layer 'residual' (gate 1, layer 2) cannot take the "
	    "output of layer 'dense' (gate 1, layer 1): inner layer 2 "
	    "'maxpool2d': expects an image input [channels, height, width], "
	    "got [6]");
	bad(config("6",
		   "    - layers:\n        - residual: []\n        - {dense: 3}\n"),
	    "t.yaml:8:21: 'residual' has no layers");
	bad(config("6",
		   "    - layers:\n        - residual\n        - {dense: 3}\n"),
	    "t.yaml:8:11: 'residual' needs a list of layers, or a mapping "
	    "with 'layers' and 'shortcut'");
	bad(config("6",
		   "    - layers:\n        - residual: 3\n        - {dense: 3}\n"),
	    "t.yaml:8:21: 'residual' must be a list or a mapping, got '3'");
	bad(config("6",
		   "    - layers:\n        - residual: {layer: [relu]}\n        - {dense: 3}\n"),
	    "t.yaml:8:22: unknown key 'layer' in 'residual' (did you mean 'layers'?)");
	bad(config("6",
		   "    - layers:\n        - residual: {shortcut: [relu]}\n        - {dense: 3}\n"),
	    "t.yaml:8:21: missing required key 'layers' in 'residual'");
	bad(config("6",
		   "    - layers:\n        - residual: {layers: [relu], shortcut: []}\n        - {dense: 3}\n"),
	    "t.yaml:8:48: 'shortcut' in 'residual' has no layers");
	bad(config("6",
		   "    - layers:\n        - residual: [relu, {dense: {unit: 3}}]\n        - {dense: 3}\n"),
	    "t.yaml:8:37: unknown key 'unit' in layer 'dense' (did you mean 'units'?)");
	bad(config("6",
		   "    - layers:\n        - residual: [relu, denze]\n        - {dense: 3}\n"),
	    "t.yaml:8:28: unknown layer 'denze' (did you mean 'dense'?)");
}

/* --set reaches into a block's list by index. */
static void overrides(void **state)
{
	struct akk_spec s;
	struct akk_err e;
	const char *sets[] = { "network.gates.0.layers.0.residual.1.dense=6" };
	const char *t = config("6", "    - layers:\n"
			       "        - residual: [relu, {dense: 4}]\n"
			       "        - {dense: 3}\n");

	(void)state;
	memset(&e, 0, sizeof(e));
	if (akk_spec_parse(&s, t, strlen(t), "t.yaml", NULL, sets, 1, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_int_equal(s.gates[0].layers[0].inner[1].units, 6);
	akk_spec_release(&s);
}

/* A block as the network's first layer reads its weights in backward (for
 * its inner layers' input gradients): wheels must stash them. */
static void first_block_needs_stash(void **state)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e;

	(void)state;
	if (tu_parse(&s, config("6", "    - layers: [residual: [{dense: 6}, tanh, {dense: 6}]]\n"
			     "    - layers: [{dense: 3}]\n"), &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_true(akk_gate_needs_stash(&m.gates[0]));
	akk_model_release(&m);
	akk_spec_release(&s);
	/* a plain first layer still needs none */
	if (tu_parse(&s, config("6", "    - layers: [{dense: 6}, tanh]\n"
			     "    - layers: [{dense: 3}]\n"), &e) ||
	    akk_model_plan(&m, &s, &e))
		fail_msg("%s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	assert_false(akk_gate_needs_stash(&m.gates[0]));
	akk_model_release(&m);
	akk_spec_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses),
		cmocka_unit_test(errors),
		cmocka_unit_test(overrides),
		cmocka_unit_test(first_block_needs_stash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
