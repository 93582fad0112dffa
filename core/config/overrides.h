/* overrides.h - the config text as one YAML document, with the --set
 * overrides spliced in (spec.c's loader and editor; internal to config/).
 *
 * The text is walked as libyaml events first (prescan): nesting deeper
 * than AKK_SPEC_MAX_DEPTH and tags that fit no value are rejected before a
 * document is built, and explicit string tags are noted, since the
 * document cannot tell "!!str 42" from "42". Each --set KEY=VALUE is
 * parsed as a YAML value and spliced into the document at KEY; the node
 * ids it adds are remembered, so that an error in them is reported
 * against the --set argument. */
#ifndef AKK_OVERRIDES_H
#define AKK_OVERRIDES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <yaml.h>

#include "base/err.h"

struct akk_spec;

/* The parse of one config: the document, where reports go, the overrides
 * and what spec.c's walk fills. */
struct akk_yaml_ctx {
	yaml_document_t doc;
	const char *file;	/* name used in reports */
	const char *base_dir;	/* for relative paths; NULL = as written */
	struct akk_spec *s;
	struct akk_err *e;
	/* Node ids added by override i are in (set_lo[i], set_hi[i]]. */
	const char *const *sets;
	int nsets;
	int *set_lo, *set_hi;
	/* Byte offsets of the scalars of the text being loaded that carry an
	 * explicit string tag (!!str or !), found by prescan. */
	size_t *strs;
	size_t nstrs, capstrs;
	int nested;		/* layers inside residual blocks and graphs so far */
	/* The limits of the text: bytes, and lists and mappings nested. */
	int max_bytes, max_depth;
	/* Called by akk_yaml_h_path with each path as written (at: the
	 * field that holds it) and its node, before it is resolved; NULL:
	 * not recorded. */
	int (*note_path)(struct akk_yaml_ctx *c, char **at, yaml_node_t *val);
};

/* The prefix of YAML's core schema tags (!!str is CORE_TAG "str"). */
#define CORE_TAG "tag:yaml.org,2002:"

static inline const char *akk_yaml_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static inline yaml_node_t *akk_yaml_node(struct akk_yaml_ctx *c, int id)
{
	return yaml_document_get_node(&c->doc, id);
}

/* Report against override set ("--set KEY=VALUE"). Returns -1. */
static inline int vfail_set(struct akk_yaml_ctx *c, int set, const char *fmt, va_list ap)
{
	char file[sizeof(c->e->file)], msg[sizeof(c->e->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(file, sizeof(file), "--set %s", c->sets[set]);
	return akk_err_at(c->e, file, 0, 0, "%s", msg);
}

static inline int fail_set(struct akk_yaml_ctx *c, int set, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int fail_set(struct akk_yaml_ctx *c, int set, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail_set(c, set, fmt, ap);
	va_end(ap);
	return -1;
}

/* Load one document from txt (the config, set -1; or override set's
 * value) into doc; a second document is an error. */
int akk_overrides_load(struct akk_yaml_ctx *c, yaml_document_t *doc, const char *txt,
		       size_t len, int set);
/* Splice override set (c->sets[set], "KEY=VALUE") into c->doc: its value
 * replaces KEY's, or is added with the mappings KEY's path needs. */
int akk_overrides_apply(struct akk_yaml_ctx *c, int set);

#endif
