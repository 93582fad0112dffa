/* cmd_eval.c - akkctl eval: evaluate a checkpoint. */
#include <string.h>

#include "cli.h"

int cmd_eval(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return cli_help("eval");
	return cli_errorf(EXIT_RUNTIME, "eval: checkpoints are not built yet");
}
