/* pictures.h - what the commands that draw SVG share (plot, and eval's
 * --confusion-svg): the class names and writing a picture whole. */
#ifndef AKK_PICTURES_H
#define AKK_PICTURES_H

#include <stddef.h>

#include "base/err.h"
#include "io/checkpoint.h"

/* The names of classes 0..classes-1 of the network in ck: "0", "1", ...
 * today; the one place to take names stored in the checkpoint from when
 * it has them. An array of classes strings, allocated (free with
 * cli_class_names_free); NULL when out of memory. */
char **cli_class_names(const struct akk_checkpoint *ck, int classes);
void cli_class_names_free(char **names, int classes);

/* Write len bytes of SVG to path whole (a temporary file renamed over
 * it), or to stdout when path is "-". */
int cli_write_svg(const char *path, const char *buf, size_t len, struct akk_err *e);

#endif
