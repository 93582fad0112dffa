/* cmd_export.c - akkctl export: a checkpoint's inference graph as ONNX.
 *
 * The network is rebuilt from the checkpoint alone (its stored config) as
 * eval does, its weights restored, and io/onnx.c writes the model whole.
 * CHECKPOINT may be a run directory: see ckpt_pick (eval's choice). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/onnx.h"
#include "ckpt_files.h"
#include "cli.h"
#include "model/gate.h"
#include "model/model.h"
#include "config/spec.h"



int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "onnx", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *onnx = NULL;
	char *ckpath = NULL;
	int c, rc = EXIT_USAGE;
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_gate *gates = NULL;
	const struct akk_gate **gp = NULL;
	struct akk_gate **wgp = NULL;
	float *a = NULL, *b = NULL;
	size_t n;
	struct akk_err e = { 0 };

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': onnx = optarg; break;
		case 'h': return cli_help("export");
		default: return cli_bad_option("export", c, argv);
		}
	}
	if (cli_operands("export", argc, argv))
		return EXIT_USAGE;
	if (!onnx || !*onnx) {
		cli_errorf(EXIT_USAGE, "export needs --onnx FILE");
		return cli_usage_error("export");
	}
	if (ckpt_load(argv[optind], 1, &ckpath, &ck, &s, &e))
		goto report;
	if (akk_model_plan(&m, &s, &e) || akk_checkpoint_match(&ck, &m, ckpath, &e) ||
	    akk_onnx_check(&m, ckpath, &e))
		goto report;
	n = (size_t)akk_shape_size(s.input);
	gates = calloc(m.ngates, sizeof(*gates));
	gp = calloc(m.ngates, sizeof(*gp));
	wgp = calloc(m.ngates, sizeof(*wgp));
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	if (!gates || !gp || !wgp || !a || !b) {
		akk_err_set(&e, "out of memory");
		rc = EXIT_RUNTIME;
		goto report;
	}
	for (int i = 0; i < m.ngates; i++) {
		gp[i] = wgp[i] = &gates[i];
		/* two samples: akk_onnx_check_finite's probes */
		struct akk_gate_config gc = akk_gate_config_eval(2, s.seed);

		if (akk_gate_init(&gates[i], &m.gates[i], &gc, &e)) {
			rc = EXIT_RUNTIME;
			goto report;
		}
	}
	if (akk_checkpoint_restore(&ck, wgp, m.ngates, ckpath, &e) ||
	    akk_onnx_check_finite(&m, wgp, ckpath, &e) ||
	    akk_onnx_input_map(&ck, &s, a, b, n, &e))
		goto report;
	struct akk_onnx_source src = { &m, gp, a, b, s.name };
	if (akk_onnx_write(onnx, &src, &e))
		goto report;
	char shape[64], oshape[64];
	akk_shape_format(s.input, shape, sizeof(shape));
	if (!s.ninputs)
		printf("wrote '%s': ONNX opset %d, input '%s' [N, %s float32 raw values, ",
		       onnx, AKK_ONNX_OPSET, AKK_ONNX_INPUT, shape[0] == '[' ? shape + 1 : shape);
	else
		printf("wrote '%s': ONNX opset %d, inputs ", onnx, AKK_ONNX_OPSET);
	for (int i = 0; i < s.ninputs; i++) {
		akk_shape_format(s.inputs[i].shape, shape, sizeof(shape));
		printf("'%s' [N, %s%s", s.inputs[i].name, shape + 1,
		       i + 1 < s.ninputs ? ", " : " float32 raw values, ");
	}
	for (int i = 0; i < s.nheads; i++)
		printf("%s'%s' [N, %d]%s", i ? "" : "outputs ", s.heads[i].name,
		       akk_head_size(&s, i, m.classes), i + 1 < s.nheads ? ", " : "\n");
	if (s.nheads) {
		rc = EXIT_OK;
		goto out;
	}
	akk_shape_format(akk_onnx_output_shape(&m), oshape, sizeof(oshape));
	printf("output '%s' [N, %s\n", akk_onnx_output(&m),
	       oshape[0] == '[' ? oshape + 1 : oshape);
	rc = EXIT_OK;
	goto out;
report:
	cli_report(&e, rc);
out:
	for (int i = 0; gates && i < m.ngates; i++)
		akk_gate_release(&gates[i]);
	free(gates);
	free(gp);
	free(wgp);
	free(a);
	free(b);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	free(ckpath);
	return rc;
}
