/* overrides.c - loading the config text and splicing --set overrides
 * into its document (overrides.h). */
#include "config/overrides.h"

#include <stdlib.h>
#include <string.h>

/* libyaml's complaint as "syntax error: ...", at its mark in txt (or at
 * override set when set >= 0). */
static int syntax_error(struct akk_yaml_ctx *c, const yaml_parser_t *p,
			const char *txt, int set)
{
	const char *problem = p->problem ? p->problem : "invalid YAML";
	int line, col;

	if (p->error == YAML_MEMORY_ERROR)
		return akk_err_set(c->e, "out of memory");
	if (set >= 0)
		return fail_set(c, set, "syntax error: %s", problem);
	if (p->error == YAML_READER_ERROR) {
		/* Only a byte offset: count lines up to it. */
		line = 1;
		col = 1;
		for (size_t i = 0; i < p->problem_offset && txt[i]; i++) {
			if (txt[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
	} else {
		line = (int)p->problem_mark.line + 1;
		col = (int)p->problem_mark.column + 1;
	}
	return akk_err_at(c->e, c->file, line, col, "syntax error: %s",
			  problem);
}

/* Line and column (1-based) of byte off of txt. */
static void position(const char *txt, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (txt[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Report at a libyaml mark of txt (or at override set). Returns -1. */
static int fail_mark(struct akk_yaml_ctx *c, int set, yaml_mark_t m, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
static int fail_mark(struct akk_yaml_ctx *c, int set, yaml_mark_t m, const char *fmt,
		     ...)
{
	char msg[sizeof(c->e->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (set >= 0)
		return fail_set(c, set, "%s", msg);
	return akk_err_at(c->e, c->file, (int)m.line + 1, (int)m.column + 1,
			  "%s", msg);
}

/* A tag as written: "!!str" for the core schema's, others in full. */
static const char *short_tag(const char *tag, char *buf, size_t size)
{
	size_t len = strlen(CORE_TAG);

	if (!strncmp(tag, CORE_TAG, len))
		snprintf(buf, size, "!!%.60s", tag + len);
	else
		snprintf(buf, size, "%.60s", tag);
	return buf;
}

/* The tags a node of an event type may carry: the core schema's that fit
 * it, and "!" (no particular type; on a scalar, a string). Returns 1 for a
 * tag that makes a scalar a string, 0 for another allowed tag, -1 (error
 * reported) for a tag that does not fit or is unknown. */
static int check_tag(struct akk_yaml_ctx *c, int set, const yaml_event_t *ev,
		     const char *tag)
{
	static const char *const scalar[] = { "int", "float", "bool", "null",
					      NULL };
	static const char *const core[] = { "str", "int", "float", "bool",
		"null", "seq", "map", "binary", "timestamp", "set", "omap",
		"pairs", "merge", "value", "yaml", NULL };
	size_t len = strlen(CORE_TAG);
	const char *what = "a scalar";
	char buf[80];

	if (!strcmp(tag, "!"))
		return ev->type == YAML_SCALAR_EVENT;
	if (!strncmp(tag, CORE_TAG, len)) {
		const char *t = tag + len;
		if (ev->type == YAML_SEQUENCE_START_EVENT) {
			if (!strcmp(t, "seq"))
				return 0;
			what = "a list";
		} else if (ev->type == YAML_MAPPING_START_EVENT) {
			if (!strcmp(t, "map"))
				return 0;
			what = "a mapping";
		} else {
			if (!strcmp(t, "str"))
				return 1;
			for (int i = 0; scalar[i]; i++)
				if (!strcmp(t, scalar[i]))
					return 0;
		}
		for (int i = 0; core[i]; i++)
			if (!strcmp(t, core[i]))
				return fail_mark(c, set, ev->start_mark,
						 "tag '%s' does not fit %s",
						 short_tag(tag, buf, sizeof(buf)),
						 what);
	}
	return fail_mark(c, set, ev->start_mark, "unknown tag '%s'",
			 short_tag(tag, buf, sizeof(buf)));
}

/* Before libyaml builds a document from txt (which costs time and memory
 * in proportion to what it holds, and more for deep nesting), walk its
 * events once: the text must be at most c->max_bytes and nest at most
 * c->max_depth lists and mappings, and every tag must be one we
 * honour. The explicit strings are noted in c->strs for mark_strings. A
 * syntax error stops the walk quietly: load reports it. */
static int prescan(struct akk_yaml_ctx *c, const char *txt, size_t len, int set)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, rc = 0, done = 0;

	c->nstrs = 0;
	if (len > (size_t)c->max_bytes) {
		yaml_mark_t m = { c->max_bytes, 0, 0 };
		int line, col;

		if (set >= 0)
			return fail_set(c, set, "the value is longer than %d "
					"bytes", c->max_bytes);
		position(txt, c->max_bytes, &line, &col);
		m.line = (size_t)line - 1;
		m.column = (size_t)col - 1;
		return fail_mark(c, set, m, "the config is larger than %d bytes",
				 c->max_bytes);
	}
	if (!yaml_parser_initialize(&p))
		return akk_err_set(c->e, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)txt, len);
	while (!done && !rc && yaml_parser_parse(&p, &ev)) {
		const char *tag = NULL;

		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			tag = (const char *)(ev.type == YAML_SEQUENCE_START_EVENT ?
					     ev.data.sequence_start.tag :
					     ev.data.mapping_start.tag);
			if (++depth > c->max_depth) {
				if (set >= 0)
					rc = fail_set(c, set, "the value is nested too deeply");
				else
					rc = fail_mark(c, set, ev.start_mark,
						       "nested too deeply: more than %d levels of lists and mappings",
						       c->max_depth);
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_SCALAR_EVENT:
			tag = (const char *)ev.data.scalar.tag;
			break;
		default:
			break;
		}
		if (!rc && tag) {
			int str = check_tag(c, set, &ev, tag);
			if (str < 0) {
				rc = -1;
			} else if (str) {
				if (c->nstrs == c->capstrs) {
					size_t ncap = c->capstrs ? 2 * c->capstrs : 16;
					size_t *n = realloc(c->strs, ncap * sizeof(*n));
					if (!n)
						rc = akk_err_set(c->e, "out of memory");
					else {
						c->strs = n;
						c->capstrs = ncap;
					}
				}
				if (!rc)
					c->strs[c->nstrs++] = ev.start_mark.index;
			}
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

/* Mark the scalars of doc that prescan found tagged as strings quoted, so
 * that they read as strings whatever their text. */
static void mark_strings(struct akk_yaml_ctx *c, yaml_document_t *doc)
{
	size_t k = 0;

	if (!c->nstrs)
		return;
	/* Both in text order: nodes are added as their events arrive. */
	for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
		if (n->type != YAML_SCALAR_NODE)
			continue;
		while (k < c->nstrs && c->strs[k] < n->start_mark.index)
			k++;
		if (k < c->nstrs && c->strs[k] == n->start_mark.index &&
		    n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			n->data.scalar.style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
	}
}

/* Load one document from txt into doc; a second document is an error. */
int akk_overrides_load(struct akk_yaml_ctx *c, yaml_document_t *doc, const char *txt,
		       size_t len, int set)
{
	yaml_parser_t p;
	yaml_document_t extra;
	int rc = -1;

	if (prescan(c, txt, len, set))
		return -1;
	if (!yaml_parser_initialize(&p))
		return akk_err_set(c->e, "out of memory");
	yaml_parser_set_input_string(&p, (const unsigned char *)txt, len);
	if (!yaml_parser_load(&p, doc)) {
		syntax_error(c, &p, txt, set);
		goto out;
	}
	if (!yaml_parser_load(&p, &extra)) {
		syntax_error(c, &p, txt, set);
		yaml_document_delete(doc);
		goto out;
	}
	if (yaml_document_get_root_node(&extra)) {
		if (set >= 0)
			fail_set(c, set, "the value must be a single document");
		else
			akk_err_at(c->e, c->file,
				   (int)extra.start_mark.line + 1,
				   (int)extra.start_mark.column + 1,
				   "the config must be a single document");
		yaml_document_delete(&extra);
		yaml_document_delete(doc);
		goto out;
	}
	yaml_document_delete(&extra);
	mark_strings(c, doc);
	rc = 0;
out:
	yaml_parser_delete(&p);
	return rc;
}

/* Copy node id of src into c->doc; the new id, or -1. */
static int copy_node(struct akk_yaml_ctx *c, int set, yaml_document_t *src, int id,
		     int depth)
{
	yaml_node_t *n = yaml_document_get_node(src, id);
	int out = 0;

	if (depth > 64)
		return fail_set(c, set, "the value is nested too deeply");
	switch (n->type) {
	case YAML_SCALAR_NODE:
		out = yaml_document_add_scalar(&c->doc, n->tag,
					       n->data.scalar.value,
					       (int)n->data.scalar.length,
					       n->data.scalar.style);
		break;
	case YAML_SEQUENCE_NODE:
		out = yaml_document_add_sequence(&c->doc, n->tag,
						 n->data.sequence.style);
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     out && it < n->data.sequence.items.top; it++) {
			int item = copy_node(c, set, src, *it, depth + 1);
			if (item < 0)
				return -1;
			if (!yaml_document_append_sequence_item(&c->doc, out,
								item))
				out = 0;
		}
		break;
	case YAML_MAPPING_NODE:
		out = yaml_document_add_mapping(&c->doc, n->tag,
						n->data.mapping.style);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     out && p < n->data.mapping.pairs.top; p++) {
			int k = copy_node(c, set, src, p->key, depth + 1);
			if (k < 0)
				return -1;
			int v = copy_node(c, set, src, p->value, depth + 1);
			if (v < 0)
				return -1;
			if (!yaml_document_append_mapping_pair(&c->doc, out, k,
							       v))
				out = 0;
		}
		break;
	default:
		break;
	}
	if (!out)
		return akk_err_set(c->e, "out of memory");
	return out;
}

/* The value of override set (text after '=') as new nodes; its id or -1. */
static int set_value(struct akk_yaml_ctx *c, int set, const char *value)
{
	yaml_document_t vd;
	yaml_node_t *root;
	int id;

	if (akk_overrides_load(c, &vd, value, strlen(value), set))
		return -1;
	root = yaml_document_get_root_node(&vd);
	if (root)
		id = copy_node(c, set, &vd, 1, 0);
	else if (!(id = yaml_document_add_scalar(&c->doc, NULL,
						 (yaml_char_t *)"", 0,
						 YAML_PLAIN_SCALAR_STYLE)))
		id = akk_err_set(c->e, "out of memory");
	yaml_document_delete(&vd);
	return id;
}

static int add_key(struct akk_yaml_ctx *c, int map, const char *name, int value)
{
	int k = yaml_document_add_scalar(&c->doc, NULL,
					 (const yaml_char_t *)name, -1,
					 YAML_PLAIN_SCALAR_STYLE);
	if (!k || !yaml_document_append_mapping_pair(&c->doc, map, k, value))
		return akk_err_set(c->e, "out of memory");
	return 0;
}

/* Turn path, cut into segments at NULs, back into the dotted key walked
 * before segment seg. */
static void walked(char *path, char *seg)
{
	for (char *q = path; q < seg - 1; q++)
		if (!*q)
			*q = '.';
	if (seg > path)
		seg[-1] = '\0';
}

/* Apply override set "a.b.0.c=VALUE" to the document. */
int akk_overrides_apply(struct akk_yaml_ctx *c, int set)
{
	const char *arg = c->sets[set], *eq = strchr(arg, '=');
	char *path = NULL, *seg, *next;
	int cur = 1, value, rc = -1;

	if (!eq)
		return fail_set(c, set, "expected KEY=VALUE");
	if (eq == arg)
		return fail_set(c, set, "empty key");
	path = strndup(arg, (size_t)(eq - arg));
	if (!path)
		return akk_err_set(c->e, "out of memory");
	for (seg = path; seg; seg = next ? next + 1 : NULL) {
		next = strchr(seg, '.');
		if (seg == next || !*seg) {
			fail_set(c, set, "empty name in key '%s'", path);
			goto out;
		}
	}
	if ((value = set_value(c, set, eq + 1)) < 0)
		goto out;
	for (seg = path; seg; seg = next) {
		yaml_node_t *n = akk_yaml_node(c, cur);
		int child = 0;

		next = strchr(seg, '.');
		if (next)
			*next++ = '\0';
		if (n->type == YAML_MAPPING_NODE) {
			yaml_node_pair_t *p;
			for (p = n->data.mapping.pairs.start;
			     p < n->data.mapping.pairs.top; p++) {
				yaml_node_t *k = akk_yaml_node(c, p->key);
				if (k->type == YAML_SCALAR_NODE &&
				    !strcmp(akk_yaml_text(k), seg))
					break;
			}
			if (p < n->data.mapping.pairs.top) {
				if (!next)
					p->value = value;
				child = p->value;
			} else if (!next) {
				if (add_key(c, cur, seg, value))
					goto out;
			} else {
				child = yaml_document_add_mapping(
					&c->doc, NULL, YAML_BLOCK_MAPPING_STYLE);
				if (!child) {
					akk_err_set(c->e, "out of memory");
					goto out;
				}
				if (add_key(c, cur, seg, child))
					goto out;
			}
		} else if (n->type == YAML_SEQUENCE_NODE) {
			long len = n->data.sequence.items.top -
				   n->data.sequence.items.start;
			char *end;
			long i = strtol(seg, &end, 10);
			if (strspn(seg, "0123456789") != strlen(seg) || *end) {
				/* Restore the dots of what was walked. */
				walked(path, seg);
				fail_set(c, set, "'%s' is a list: '%s' is not "
					 "an index", path, seg);
				goto out;
			}
			if (i >= len) {
				walked(path, seg);
				fail_set(c, set, "index %ld is out of range for "
					 "'%s' (%ld items)", i, path, len);
				goto out;
			}
			if (!next)
				n->data.sequence.items.start[i] = value;
			child = n->data.sequence.items.start[i];
		} else {
			walked(path, seg);
			fail_set(c, set, "'%s' is not a mapping or a list",
				 path);
			goto out;
		}
		cur = child;
	}
	rc = 0;
out:
	free(path);
	return rc;
}
