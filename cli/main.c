/* main.c - akkctl's entry point: the command table and dispatch. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const struct cli_command cli_commands[] = {
	{ "train", cmd_train,
	  "usage: akkctl train CONFIG [--mode flip-flop|wheels] [--epochs N] [--out DIR]\n"
	  "                    [--resume CHECKPOINT|DIR] [--force] [--set KEY=VALUE]... [--quiet]\n"
	  "\n"
	  "  -m, --mode MODE        schedule.mode: flip-flop or wheels\n"
	  "  -e, --epochs N         schedule.epochs\n"
	  "  -o, --out DIR          output directory (overrides output.dir)\n"
	  "  -r, --resume FILE      resume from a checkpoint (or a run directory)\n"
	  "  -f, --force            start over in an output directory that holds a run\n"
	  "  -s, --set KEY=VALUE    override any config key, e.g. schedule.batch_size=128\n"
	  "  -q, --quiet            print nothing but errors\n",
	  "train a network described by a YAML config" },
	{ "eval", cmd_eval,
	  "usage: akkctl eval CHECKPOINT [--data DIR | --images F --labels F] [--batch N]\n"
	  "                   [--confusion] [--predictions FILE.csv]\n",
	  "evaluate a checkpoint on a dataset" },
	{ "bench", cmd_bench,
	  "usage: akkctl bench [--mode flip-flop|wheels|both] [--config CONFIG]\n"
	  "                    [--epochs N | --steps N] [--concurrency N] [--threads N]\n"
	  "                    [--set KEY=VALUE]... [--no-validation] [--csv FILE]\n"
	  "                    [--trace FILE.json]\n"
	  "       akkctl bench --hops\n"
	  "\n"
	  "  -m, --mode MODE        flip-flop, wheels or both (default both)\n"
	  "  -c, --config CONFIG    the network and data (default: the built-in Akkordeon\n"
	  "                         MNIST net; synthetic data when the files are missing)\n"
	  "  -e, --epochs N         epochs per mode, the repeats (default 3)\n"
	  "  -n, --steps N          instead, N training batches per mode\n"
	  "  -k, --concurrency N    training batches in flight in wheels\n"
	  "  -t, --threads N        compute threads of a busy gate (default: the\n"
	  "                         config's schedule.threads)\n"
	  "  -s, --set KEY=VALUE    override a config key\n"
	  "  -V, --no-validation    train only (as the peer scripts time it)\n"
	  "  -v, --csv FILE         write the results as CSV\n"
	  "  -r, --trace FILE       write a Chrome trace (open it in Perfetto)\n"
	  "  -H, --hops             measure the message latency between two actors\n",
	  "measure the throughput of the schedules" },
	{ "check", cmd_check,
	  "usage: akkctl check CONFIG [--set KEY=VALUE]...\n"
	  "\n"
	  "Validate CONFIG and print each gate's layers with output shape, parameters\n"
	  "and forward FLOPs per sample, then the memory each gate plans. Trains nothing.\n"
	  "\n"
	  "  -s, --set KEY=VALUE    override a config key, with the same checks\n",
	  "validate a config and print its gate/layer/shape table" },
	{ "inspect", cmd_inspect,
	  "usage: akkctl inspect CHECKPOINT\n",
	  "show what a checkpoint holds" },
	{ "help", cmd_help,
	  "usage: akkctl help [COMMAND]\n",
	  "show help for a command" },
	{ NULL, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: akkctl [--version] [--help] COMMAND [ARGS]\n\ncommands:\n");
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "\n'akkctl help COMMAND' or 'akkctl COMMAND --help' for a command's options;\n"
		   "akkctl(1) and akkctl(5) for the details.\n");
}

static const struct cli_command *find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

int cli_report(const struct akk_err *e, int code)
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	char buf[1200];

	/* Under mpirun every rank finds the same bad input: rank 0 says it. */
	if (code == EXIT_USAGE && rank && strcmp(rank, "0"))
		return code;
	akk_err_format(e, buf, sizeof(buf));
	fprintf(stderr, "akkctl: %s\n", buf);
	return code;
}

int cli_errorf(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("akkctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_usage_error(const char *command)
{
	const struct cli_command *c = find(command);

	fputs(c->usage, stderr);
	return EXIT_USAGE;
}

int cli_help(const char *command)
{
	fputs(find(command)->usage, stdout);
	return EXIT_OK;
}

int cli_bad_option(const char *command, int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		cli_errorf(EXIT_USAGE, "option '%s' needs a value", arg);
	else if (optopt && strncmp(arg, "--", 2))
		cli_errorf(EXIT_USAGE, "unknown option '-%c'", optopt);
	else
		cli_errorf(EXIT_USAGE, "unknown option '%s'", arg);
	return cli_usage_error(command);
}

int cli_parse_int(const char *opt, const char *arg, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		return cli_errorf(EXIT_USAGE, "option '%s' needs a whole number from %d to %d, got '%s'",
				  opt, min, max, arg);
	*out = (int)v;
	return 0;
}

int cmd_help(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cli_help("help");
	if (argv[1][0] == '-') {
		cli_errorf(EXIT_USAGE, "unknown option '%s'", argv[1]);
		return cli_usage_error("help");
	}
	if (!(c = find(argv[1])))
		return cli_errorf(EXIT_USAGE, "'%s' is not an akkctl command; see 'akkctl --help'", argv[1]);
	fputs(c->usage, stdout);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("akkctl %s\n", AKK_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argv[1][0] == '-') {
		cli_errorf(EXIT_USAGE, "unknown option '%s'", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!(c = find(argv[1]))) {
		cli_errorf(EXIT_USAGE, "'%s' is not an akkctl command; see 'akkctl --help'", argv[1]);
		return EXIT_USAGE;
	}
	return c->run(argc - 1, argv + 1);
}
