/* data_paths.c - where a config's data files are found: the data search
 * and the check that every data path names a file (spec.h). */
#include "config/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether ref is a data path (output.dir is the other kind). */
static int is_data(const struct akk_spec *s, const struct akk_path_ref *ref)
{
	return ref->at != &s->out.dir;
}

/* path as written, without its leading "./" and "../" components. */
static const char *rest_of(const char *path)
{
	for (;;) {
		if (!strncmp(path, "./", 2))
			path += 2;
		else if (!strncmp(path, "../", 3))
			path += 3;
		else if (*path == '/' && path[1])
			path++;
		else
			return path;
	}
}

int akk_spec_find_data(struct akk_spec *s, const char *const *roots, int n,
		       struct akk_err *e)
{
	for (int i = 0; i < s->npaths; i++) {
		struct akk_path_ref *ref = &s->paths[i];
		const char *rest = rest_of(ref->given);

		if (!is_data(s, ref) || ref->given[0] == '/' || !*ref->at ||
		    !access(*ref->at, F_OK) || !*rest)
			continue;
		for (int k = 0; k < n; k++) {
			size_t len;
			char *cand;

			if (!roots[k] || !roots[k][0])
				continue;
			len = strlen(roots[k]) + strlen(rest) + 2;
			if (!(cand = malloc(len)))
				return akk_err_set(e, "out of memory");
			if (!strcmp(roots[k], "."))
				snprintf(cand, len, "%s", rest);
			else
				snprintf(cand, len, "%s%s%s", roots[k],
					 roots[k][strlen(roots[k]) - 1] == '/' ? "" : "/", rest);
			if (!access(cand, F_OK)) {
				free(*ref->at);
				*ref->at = cand;
				break;
			}
			free(cand);
		}
	}
	return 0;
}

int akk_spec_out_dir_here(struct akk_spec *s, struct akk_err *e)
{
	for (int i = 0; i < s->npaths; i++) {
		struct akk_path_ref *ref = &s->paths[i];
		const char *rest = rest_of(ref->given);
		char *dir;

		if (is_data(s, ref) || ref->given[0] == '/')
			continue;
		if (!(dir = strdup(*rest ? rest : ".")))
			return akk_err_set(e, "out of memory");
		free(*ref->at);
		*ref->at = dir;
	}
	return 0;
}

int akk_spec_check_data(const struct akk_spec *s, struct akk_err *e)
{
	for (int i = 0; i < s->npaths; i++) {
		const struct akk_path_ref *ref = &s->paths[i];
		char where[sizeof(e->file)];
		int line = ref->mark.line, col = ref->mark.col;

		if (!is_data(s, ref) || !*ref->at || !access(*ref->at, F_OK))
			continue;
		/* at the --set argument when the path came from one */
		if (ref->set >= 0 && ref->set < s->nsets) {
			snprintf(where, sizeof(where), "--set %s", s->sets[ref->set]);
			line = col = 0;
		} else {
			snprintf(where, sizeof(where), "%s", s->path ? s->path : "");
		}
		if (ref->given[0] == '/' || !strcmp(ref->given, *ref->at))
			return akk_err_at(e, where, line, col, "data file '%s' does not exist",
					  ref->given);
		return akk_err_at(e, where, line, col,
				  "data file '%s' does not exist: not as '%s' (against the config's folder), nor under the data search (--data-dir, the working directory, AKKCTL_DATA)",
				  ref->given, *ref->at);
	}
	return 0;
}
