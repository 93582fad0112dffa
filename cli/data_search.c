/* data_search.c - the data search and the run directory of a config
 * outside the working directory (data_search.h). */
#include "data_search.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_find_data(struct akk_spec *s, const char *data_dir, struct akk_err *e)
{
	const char *roots[3] = { data_dir, ".", getenv(CLI_DATA_ENV) };

	return akk_spec_find_data(s, roots, 3, e);
}

/* Whether config is an installed one: its folder, resolved, ends in
 * CLI_INSTALLED_CONFIGS (make install's PREFIX/share/akkctl/configs, for
 * any PREFIX). */
static int installed(const char *config)
{
	char *copy = strdup(config), *dir = NULL;
	size_t n, m = strlen(CLI_INSTALLED_CONFIGS);
	int yes = 0;

	if (copy && (dir = realpath(dirname(copy), NULL))) {
		n = strlen(dir);
		yes = n >= m && !strcmp(dir + n - m, CLI_INSTALLED_CONFIGS);
	}
	free(dir);
	free(copy);
	return yes;
}

int cli_runs_here(struct akk_spec *s, const char *config, struct akk_err *e)
{
	if (!installed(config))
		return 0;
	return akk_spec_out_dir_here(s, e);
}

char *cli_path_from(const char *dir, const char *target)
{
	size_t common = 0, n, up = 0;
	char *out;

	if (dir[0] != '/' || target[0] != '/')
		return NULL;
	/* the longest common prefix that ends at a component */
	for (size_t i = 0;; i++) {
		int end_d = dir[i] == '/' || dir[i] == '\0';
		int end_t = target[i] == '/' || target[i] == '\0';

		if (end_d && end_t)
			common = i;
		if (dir[i] != target[i] || !dir[i])
			break;
	}
	for (size_t i = common; dir[i]; i++)
		if (dir[i] == '/' && dir[i + 1])
			up++;
	n = 3 * up + strlen(target + common) + 2;
	if (!(out = malloc(n)))
		return NULL;
	out[0] = '\0';
	for (size_t i = 0; i < up; i++)
		strcat(out, "../");
	strcat(out, target[common] == '/' ? target + common + 1 : target + common);
	n = strlen(out);
	if (!n)
		strcpy(out, ".");
	else if (out[n - 1] == '/')
		out[n - 1] = '\0';
	return out;
}
