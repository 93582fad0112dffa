/* explicit.h - a gates: {auto: N} config written back with its gates
 * written out: `akkctl partition`.
 *
 * The config's own text is loaded again with libyaml and copied node by
 * node, with network.gates replaced by a list of gates holding the flat
 * list's items in turn and network.layers dropped; every other key and
 * value is kept as it was (comments are not: libyaml drops them). The
 * result parses to the same network. */
#ifndef AKK_EXPLICIT_H
#define AKK_EXPLICIT_H

#include <stddef.h>

#include "base/err.h"
#include "config/spec.h"

/* The YAML text (allocated, NUL-terminated, *len bytes) of s->text with
 * gates of s->gates[i].nlayers layers each. s must come from a config with
 * gates: {auto: N}, split, and no override of network.layers. to_dir: the
 * directory the text will be written to, when not the config's own: each
 * relative path (the values of images, labels, file, targets_file,
 * features, files and dir) is rewritten to name the same file from there
 * ("../" up to the directories' common ancestor, then down the config's);
 * NULL keeps them as written. */
int akk_spec_explicit_yaml(const struct akk_spec *s, const char *to_dir,
			   char **out, size_t *len, struct akk_err *e);

/* The YAML text (allocated, *len bytes) of the config as it was run: s's
 * text with its --set overrides (s->sets) spliced in, every other key and
 * value as written; comments are not kept. to_dir: the directory the text
 * will be written to, whose relative paths are rewritten to name the same
 * files from there, as akk_spec_explicit_yaml does (NULL: as written,
 * relative to the config's directory). `akkctl train` writes it to the
 * run directory as config.yaml, to_dir that directory. */
int akk_spec_resolved_yaml(const struct akk_spec *s, const char *to_dir, char **out,
			   size_t *len, struct akk_err *e);

#endif
