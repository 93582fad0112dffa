/* pictures.c - class names for charts, and SVG files written whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "pictures.h"

char **cli_class_names(const struct akk_checkpoint *ck, int classes)
{
	char **names = calloc((size_t)(classes > 0 ? classes : 1), sizeof(*names));

	/* the names the checkpoint stores (its data's, e.g. a CSV's string
	 * labels); past them, or without them, the class index */
	for (int c = 0; names && c < classes; c++) {
		char buf[16];
		snprintf(buf, sizeof(buf), "%d", c);
		if (!(names[c] = strdup(ck && c < ck->nclass_names && ck->class_names[c] ?
					 ck->class_names[c] : buf))) {
			cli_class_names_free(names, c);
			return NULL;
		}
	}
	return names;
}

void cli_class_names_free(char **names, int classes)
{
	for (int c = 0; names && c < classes; c++)
		free(names[c]);
	free(names);
}

int cli_write_svg(const char *path, const char *buf, size_t len, struct akk_err *e)
{
	if (strcmp(path, "-"))
		return akk_file_replace(path, buf, len, e);
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout))
		return akk_err_set(e, "cannot write the SVG to stdout: %s", strerror(errno));
	return 0;
}
