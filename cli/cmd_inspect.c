/* cmd_inspect.c - akkctl inspect: what a checkpoint holds.
 *
 * Every string read from the checkpoint (config name and text, paths,
 * --set overrides, tensor names, the network's name) goes through
 * cli_put_safe: a forged file must not put escape sequences on the
 * user's terminal. CHECKPOINT may be a run directory: see ckpt_pick. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "ckpt_files.h"
#include "cli.h"
#include "model/model.h"
#include "config/spec.h"

/* s escaped, left-aligned in width columns, then a space. */
static void put_column(const char *s, int width)
{
	int n = cli_put_safe(stdout, s, 0);

	printf("%*s ", n < width ? width - n : 0, "");
}

int cmd_inspect(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct akk_checkpoint ck;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_err e = { 0 };
	char *path;
	int c, parsed;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help("inspect");
		return cli_bad_option("inspect", c, argv);
	}
	if (cli_operands("inspect", argc, argv))
		return EXIT_USAGE;
	switch (ckpt_pick(argv[optind], 0, &path, &e)) {
	case -1: return cli_report(&e, EXIT_USAGE);
	case 1: fprintf(stderr, "using '%s'\n", path); break;
	}
	if (akk_checkpoint_read(&ck, path, &e)) {
		free(path);
		return cli_report(&e, EXIT_USAGE);
	}
	printf("checkpoint   ");
	cli_put_safe(stdout, path, 0);
	printf("\nformat       version %u\n", ck.version);
	printf("config       ");
	cli_put_safe(stdout, ck.config_name, 0);
	printf(" (paths relative to ");
	cli_put_safe(stdout, ck.base_dir, 0);
	printf(")\n");
	for (int i = 0; i < ck.nsets; i++) {
		printf("override     --set ");
		cli_put_safe(stdout, ck.sets[i], 0);
		printf("\n");
	}
	printf("schedule     %s\n", akk_mode_name(ck.mode));
	printf("position     epoch %ld, batch %ld (%ld steps done)%s\n",
	       (long)ck.pos.epoch + (ck.pos.index ? 1 : 0), ck.pos.index, ck.pos.id,
	       ck.pos.index ? ", mid-epoch" : ", at an epoch boundary");
	if (ck.metrics.epoch && ck.task == 1)	/* R^2 in the accuracy fields */
		printf("last epoch   %d: train loss %.4f r2 %.4f, validation loss %.4f r2 %.4f\n",
		       ck.metrics.epoch, ck.metrics.train_loss, ck.metrics.train_acc,
		       ck.metrics.val_loss, ck.metrics.val_acc);
	else if (ck.metrics.epoch)
		printf("last epoch   %d: train loss %.4f acc %.2f%%, validation loss %.4f acc %.2f%% (best %.2f%%)\n",
		       ck.metrics.epoch, ck.metrics.train_loss,
		       100 * ck.metrics.train_acc, ck.metrics.val_loss,
		       100 * ck.metrics.val_acc, 100 * ck.metrics.best_val_acc);
	parsed = !akk_checkpoint_spec(&ck, &s, NULL, 0, &e) && !akk_model_plan(&m, &s, &e);
	if (!parsed) {
		char msg[1200];
		akk_err_format(&e, msg, sizeof(msg));
		printf("network      the stored config no longer parses: ");
		cli_put_safe(stdout, msg, 0);
		printf("\n");
	} else {
		printf("network      ");
		cli_put_safe(stdout, s.name, 0);
		/* a regression network's outputs are values, not classes */
		printf(": %d gate%s, %zu parameters, %d %s%s\n", m.ngates, m.ngates == 1 ? "" : "s",
		       m.nparams, m.classes,
		       s.data.task == AKK_TASK_REGRESSION ? "regression output" : "class",
		       m.classes == 1 ? "" : s.data.task == AKK_TASK_REGRESSION ? "s" : "es");
	}
	/* the data section (version 2) */
	if (ck.version >= 2) {
		if (ck.task == 1)
			printf("data         regression, %d target%s", ck.targets,
			       ck.targets == 1 ? "" : "s");
		else
			printf("data         classification");
		if (ck.pre.in)
			printf(", input map of %zu values", ck.pre.in);
		if (ck.nheldout)
			printf(", %zu training samples held out for validation", ck.nheldout);
		printf("\n");
	}
	if (ck.nclass_names) {
		printf("classes      ");
		for (int i = 0; i < ck.nclass_names; i++) {
			printf("%s", i ? ", " : "");
			cli_put_safe(stdout, ck.class_names[i], 0);
		}
		printf("\n");
	}
	printf("\n%-5s %-6s %-36s %-20s %10s\n", "gate", "step", "tensor", "shape", "values");
	for (int g = 0; g < ck.ngates; g++)
		for (int t = 0; t < ck.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *x = &ck.gates[g].tensors[t];
			char shape[64];
			int n = snprintf(shape, sizeof(shape), "[");
			for (int d = 0; d < x->rank; d++)
				n += snprintf(shape + n, sizeof(shape) - n, "%s%u", d ? ", " : "", x->dims[d]);
			snprintf(shape + n, sizeof(shape) - n, "]");
			printf("%-5d %-6ld ", g + 1, ck.gates[g].step);
			put_column(x->name, 36);
			printf("%-20s %10llu\n", shape, (unsigned long long)x->count);
		}
	printf("\n--- config ---\n");
	cli_put_safe(stdout, ck.config, 1);
	if (ck.config[0] && ck.config[strlen(ck.config) - 1] != '\n')
		printf("\n");
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	free(path);
	return EXIT_OK;
}
