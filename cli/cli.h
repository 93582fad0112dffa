/* cli.h - what the command implementations share. */
#ifndef AKK_CLI_H
#define AKK_CLI_H

#include <stdio.h>

#include "base/err.h"
#include "config/spec.h"
#include "runtime/world.h"
#include "tensor/kernels.h"

/* Exit codes (akkctl(1)). */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

/* What a command takes after its options (git's RUN_SETUP | ...): one
 * operand, named in the usage and the error when it is missing; with
 * CLI_INPUTS one INPUT or more after it. cli_operands checks them. */
enum cli_needs {
	CLI_NO_OPERAND = 0,
	CLI_CONFIG = 1 << 0,		/* CONFIG */
	CLI_CHECKPOINT = 1 << 1,	/* CHECKPOINT|DIR */
	CLI_RUNDIR = 1 << 2,		/* RUNDIR|METRICS.csv */
	CLI_INPUTS = 1 << 3,		/* then INPUT... */
	CLI_ANY_OPERANDS = 1 << 4,	/* the command checks them itself */
};

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	int needs;		/* enum cli_needs */
	const char *usage;	/* the synopsis and options, for --help */
	const char *summary;	/* one line for the command list */
	const char *details;	/* what it does and prints, for --help only
				 * (not after a usage error); may be NULL */
};

extern const struct cli_command cli_commands[];
/* The OpenBLAS kernels this process runs and why, chosen first thing in
 * main (tensor/kernels.h); check, bench and train report them. */
extern struct akk_kernels cli_kernels;

/* Print "akkctl: <formatted err>" on stderr; returns code. */
int cli_report(const struct akk_err *e, int code);
/* Print "akkctl: <msg>" on stderr; returns code. */
int cli_errorf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "usage: ..." of a command on stderr and return EXIT_USAGE. */
int cli_usage_error(const char *command);
/* After getopt_long: the operands argv[optind..argc) are what the
 * command's table row needs, else "akkctl: train needs a CONFIG" (or
 * "unexpected argument 'X'") and the usage on stderr. Returns EXIT_OK or
 * EXIT_USAGE. */
int cli_operands(const char *command, int argc, char **argv);
/* Print the command's usage and details on stdout and return EXIT_OK. */
int cli_help(const char *command);
/* After getopt_long returned '?' or ':' (optstrings start with ':' and
 * opterr is 0): "akkctl: unknown option 'X'" or "option 'X' needs a
 * value", then the command's usage on stderr. Returns EXIT_USAGE. */
int cli_bad_option(const char *command, int c, char **argv);
/* Write s to f with every byte that could drive a terminal written as
 * \xNN instead: control characters (but newline and tab when multiline),
 * DEL, C1 controls and bytes that are not valid UTF-8. For any string read
 * from a file. Returns the number of bytes written. */
int cli_put_safe(FILE *f, const char *s, int multiline);
/* Write s as one CSV field: escaped as cli_put_safe does (a newline, a
 * carriage return or a tab too), then quoted when it holds a comma or a
 * double quote (doubled). The number of bytes written, -1 when out of
 * memory. */
int cli_put_csv(FILE *f, const char *s);
/* Parse a whole positive int option value or fail with usage. */
int cli_parse_int(const char *opt, const char *arg, int min, int max, int *out);

/* Under mpirun: start MPI and, for a pipeline, place the gates
 * (*gate_rank, ngates entries, to free; NULL for one process or data
 * parallelism). Without mpirun a gate placed on rank > 0 is an error at
 * its line. */
int cli_start_world(const struct akk_spec *s, struct akk_world *w,
		    int **gate_rank, struct akk_err *e);
/* With data parallelism over w's ranks, every rank must get samples of
 * each epoch's last batch (n training samples): else a config error at
 * schedule.batch_size (same on every rank). */
int cli_check_split(const struct akk_spec *s, const struct akk_world *w,
		    size_t n, struct akk_err *e);
/* End every rank of the job at once (after a failure on this rank). */
void cli_world_abort(struct akk_world *w, int code);

/* The defaults that change the data, one line each on f ("data.scale 255
 * (the default for byte data): ..."), for data of type xtype (0: bytes,
 * 1: floats). Nothing when no default changes it. */
void cli_print_data_defaults(FILE *f, const struct akk_data_spec *ds, int float_data);
/* gates: {auto: N} once split (cost: each layer's of the gates made, as
 * akk_balance gives them): the split, each gate with what it reads, the
 * layers it holds and its cost, and each join's branches. */
void cli_print_split(const struct akk_spec *s, const double *cost, int profile);

/* The program as the user typed it (main's argv[0]), for the commands the
 * CLI prints for the user to run; "akkctl" until main sets it. */
extern const char *cli_program;

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_lrfind(int argc, char **argv);
int cmd_partition(int argc, char **argv);
/* gates: {auto: N} not yet split: split it (model/balance.h), measured or
 * (profile 0) by FLOPs; a resumed run (resume: the --resume argument)
 * takes the split its checkpoint recorded. */
int cli_auto_split(struct akk_spec *s, const char *resume, int profile,
		   struct akk_err *e);
int cmd_plot(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_help(int argc, char **argv);

#endif
