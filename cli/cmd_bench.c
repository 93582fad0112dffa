/* cmd_bench.c - akkctl bench: throughput of the schedules. */
#include <string.h>

#include "cli.h"

int cmd_bench(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return cli_help("bench");
	return cli_errorf(EXIT_RUNTIME, "bench: the benchmark is not built yet");
}
