/* cmd_inspect.c - akkctl inspect: show what a checkpoint holds. */
#include <string.h>

#include "cli.h"

int cmd_inspect(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return cli_help("inspect");
	return cli_errorf(EXIT_RUNTIME, "inspect: checkpoints are not built yet");
}
