/* data_search.h - where the commands look for a config's data and put its
 * runs: the data search (--data-dir, the working directory, AKKCTL_DATA;
 * config/spec.h, akk_spec_find_data) and the run directory of a config
 * installed by make install. */
#ifndef AKK_CLI_DATA_SEARCH_H
#define AKK_CLI_DATA_SEARCH_H

#include "base/err.h"
#include "config/spec.h"

/* The environment variable of the data search's last folder. */
#define CLI_DATA_ENV "AKKCTL_DATA"

/* s's data paths that name no file against the config's folder, looked
 * for under data_dir (--data-dir; NULL: none), the working directory, then
 * $AKKCTL_DATA. */
int cli_find_data(struct akk_spec *s, const char *data_dir, struct akk_err *e);

/* The end of an installed config's folder (make install). */
#define CLI_INSTALLED_CONFIGS "/share/akkctl/configs"

/* An installed config (its folder, resolved, ends in
 * CLI_INSTALLED_CONFIGS) writes its runs under the working directory: a
 * relative output.dir becomes the path as written without its leading ./
 * and ../, taken from the working directory. Any other config keeps
 * output.dir against its own folder. */
int cli_runs_here(struct akk_spec *s, const char *config, struct akk_err *e);

/* The path from directory dir to target, both absolute and resolved
 * (realpath): "../../configs" (allocated); NULL when either is relative
 * or out of memory. */
char *cli_path_from(const char *dir, const char *target);

#endif
