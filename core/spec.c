/* spec.c - the YAML config read with libyaml's document API and checked.
 *
 * The text (at most AKK_SPEC_MAX_BYTES) is first walked as libyaml events
 * (prescan): nesting deeper than AKK_SPEC_MAX_DEPTH and tags that fit no
 * value are rejected before a document is built, and explicit string tags
 * are noted, since the document cannot tell "!!str 42" from "42". Then
 * the file is loaded into one yaml_document_t; each --set override is parsed
 * as a YAML value and spliced into that document (the node ids it adds are
 * remembered, so an error in them is reported against the --set argument),
 * then one walk fills struct akk_spec. Every mapping is walked with a key
 * table {key, node type, handler}: unknown keys (with the nearest key
 * suggested), duplicates and missing required keys are rejected before the
 * handlers run in table order. Messages are lowercase and quote their
 * subject: "'lr' must be greater than 0, got -0.1". A float is checked
 * again as the float it is stored as. libyaml's marks are 0-based; reports
 * and stored marks are 1-based. */
#include "spec.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ctx {
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
};

/* One section being walked: its key table and the struct it fills. */
struct key;
struct section {
	const char *name;		/* "schedule", "gate 2"; NULL = top */
	const struct key *keys;
	void *obj;
	int optional;			/* 1: no key is required (gate optimizer) */
	/* For keys that apply to some kinds only: the current kind of obj
	 * (evaluated when the key's handler runs), its names, and what a kind
	 * is called ("optimizer"). */
	int (*kind)(const void *obj);
	const char *const *kind_names;
	const char *kind_what;
};

/* A key's handler: val (of the key's node type, unless NO_NODE) into
 * sec->obj. key is the key node (NULL for a shorthand value). */
typedef int (*handler)(struct ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val);

enum { F_REQ = 1, F_LO = 2, F_HI = 4, F_LO_OPEN = 8, F_HI_OPEN = 16 };

struct key {
	const char *name;
	yaml_node_type_t type;	/* checked before the handler; NO_NODE: any */
	handler fn;
	const char *what;	/* the expected type, for messages */
	size_t off;		/* field of obj, for the generic handlers */
	unsigned flags;
	double lo, hi;		/* range, per flags */
	unsigned applies;	/* bit per kind; 0 = every kind */
};

/* --- nodes and reports --------------------------------------------------- */

static int node_id(const struct ctx *c, const yaml_node_t *n)
{
	return (int)(n - c->doc.nodes.start) + 1;
}

/* Index of the override that created n, or -1 when n is from the file. */
static int node_set(const struct ctx *c, const yaml_node_t *n)
{
	if (!n)
		return -1;
	int id = node_id(c, n);
	for (int i = 0; i < c->nsets; i++)
		if (id > c->set_lo[i] && id <= c->set_hi[i])
			return i;
	return -1;
}

static struct akk_mark mark_of(const struct ctx *c, const yaml_node_t *n)
{
	struct akk_mark m = { 0, 0 };
	if (n && node_set(c, n) < 0) {
		m.line = (int)n->start_mark.line + 1;
		m.col = (int)n->start_mark.column + 1;
	}
	return m;
}

static int vfail_set(struct ctx *c, int set, const char *fmt, va_list ap)
{
	char file[sizeof(c->e->file)], msg[sizeof(c->e->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(file, sizeof(file), "--set %s", c->sets[set]);
	return akk_err_at(c->e, file, 0, 0, "%s", msg);
}

/* Report at node n (at the --set argument when n came from one; at the
 * whole file when n is NULL). Returns -1. */
static int fail(struct ctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[sizeof(c->e->msg)];
	va_list ap;
	int set = node_set(c, n);

	va_start(ap, fmt);
	if (set >= 0) {
		vfail_set(c, set, fmt, ap);
		va_end(ap);
		return -1;
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!n)
		return akk_err_at(c->e, c->file, 0, 0, "%s", msg);
	return akk_err_at(c->e, c->file, (int)n->start_mark.line + 1,
			  (int)n->start_mark.column + 1, "%s", msg);
}

static int fail_set(struct ctx *c, int set, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_set(struct ctx *c, int set, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail_set(c, set, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

#define CORE_TAG "tag:yaml.org,2002:"

/* The core-schema type a scalar is explicitly tagged with ("int", "float",
 * "bool" or "null"), or NULL for an untagged scalar or a string. libyaml
 * gives an untagged scalar the str tag, as it does !!str, so prescan
 * finds the explicit strings and load marks them quoted (mark_strings):
 * "!!str 42" then reads like "'42'". prescan has rejected every other tag. */
static const char *tag_type(const yaml_node_t *n)
{
	const char *t = (const char *)n->tag;
	size_t len = strlen(CORE_TAG);

	if (n->type != YAML_SCALAR_NODE || !t || strncmp(t, CORE_TAG, len) ||
	    !strcmp(t + len, "str"))
		return NULL;
	return t + len;
}

static int tagged(const yaml_node_t *n, const char *type)
{
	const char *t = tag_type(n);
	return t && !strcmp(t, type);
}

/* A plain scalar without a tag: its type is read from its text. */
static int is_bare(const yaml_node_t *n)
{
	return is_plain(n) && !tag_type(n);
}

static int is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (n->type != YAML_SCALAR_NODE)
		return 0;
	if (tagged(n, "null"))
		return 1;
	if (!is_bare(n))
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (!strcmp(text(n), nulls[i]))
			return 1;
	return 0;
}

/* What a node is, for "got ...": 'abc', null, a list, a mapping. */
static const char *describe(const yaml_node_t *n, char *buf, size_t size)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (is_null(n))
		return "null";
	size_t len = n->data.scalar.length;
	const char *type = tag_type(n);
	if (type) {
		snprintf(buf, size, "!!%s '%.*s%s'", type,
			 len > 40 ? 40 : (int)len, text(n),
			 len > 40 ? "..." : "");
		return buf;
	}
	const char *fmt = is_plain(n) ? "'%.*s%s'" : "the string '%.*s%s'";
	snprintf(buf, size, fmt, len > 40 ? 40 : (int)len, text(n),
		 len > 40 ? "..." : "");
	return buf;
}

static int fail_type(struct ctx *c, const char *subject, const char *what,
		     yaml_node_t *val)
{
	char buf[96];
	return fail(c, val, "%s must be %s, got %s", subject, what,
		    describe(val, buf, sizeof(buf)));
}

/* Optimal string alignment distance (Damerau-Levenshtein with adjacent
 * transpositions); long strings count as far. */
static int distance(const char *a, const char *b)
{
	enum { MAX = 48 };
	int la = (int)strlen(a), lb = (int)strlen(b);
	int d[MAX + 1][MAX + 1];

	if (la > MAX || lb > MAX)
		return 1000;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/* " (did you mean 'x'?)" for the nearest of n names (stride bytes apart),
 * or "" when none is near: at most 1 edit for words under 6 letters, 2
 * otherwise. */
static const char *suggest(const char *word, const void *names, size_t n,
			   size_t stride, char *buf, size_t size)
{
	int limit = strlen(word) >= 6 ? 2 : 1, best = limit + 1;
	const char *pick = NULL;

	for (size_t i = 0; i < n; i++) {
		const char *cand =
			*(const char *const *)((const char *)names + i * stride);
		int d = distance(word, cand);
		if (d < best) {
			best = d;
			pick = cand;
		}
	}
	if (!pick)
		return "";
	snprintf(buf, size, " (did you mean '%s'?)", pick);
	return buf;
}

static size_t count_names(const char *const *names)
{
	size_t n = 0;
	while (names[n])
		n++;
	return n;
}

/* The kind called by the name in val, from a NULL-terminated table, into
 * *out; otherwise "unknown WHAT 'x' (did you mean 'y'?)". */
static int find_name(struct ctx *c, const char *subject, yaml_node_t *val,
		     const char *const *names, const char *what, int *out)
{
	char buf[96];

	if (val->type != YAML_SCALAR_NODE || is_null(val) || tag_type(val))
		return fail_type(c, subject, "a name", val);
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], text(val))) {
			*out = i;
			return 0;
		}
	return fail(c, val, "unknown %s '%s'%s", what, text(val),
		    suggest(text(val), names, count_names(names),
			    sizeof(names[0]), buf, sizeof(buf)));
}

/* --- scalars ------------------------------------------------------------- */

/* YAML 1.2 core: [-+]?[0-9]+ */
static int int_syntax(const char *p)
{
	if (*p == '-' || *p == '+')
		p++;
	return *p && strspn(p, "0123456789") == strlen(p);
}

static int parse_int(struct ctx *c, const char *name, yaml_node_t *val,
		     long long *out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || is_null(val) ||
	    !(is_bare(val) || tagged(val, "int")))
		return fail_type(c, subject, "an integer", val);
	if (!int_syntax(text(val)))
		return fail_type(c, subject, "an integer", val);
	errno = 0;
	*out = strtoll(text(val), NULL, 10);
	if (errno == ERANGE)
		return fail(c, val, "%s is out of range, got %s", subject,
			    text(val));
	return 0;
}

static int parse_float(struct ctx *c, const char *name, yaml_node_t *val,
		       double *out)
{
	char subject[80];
	const char *p;
	size_t n;

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || is_null(val) ||
	    !(is_bare(val) || tagged(val, "float") || tagged(val, "int")))
		return fail_type(c, subject, "a number", val);
	if (tagged(val, "int") && !int_syntax(text(val)))
		return fail_type(c, subject, "a number", val);
	/* YAML 1.2 core, finite only:
	 * [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	p = text(val);
	if (*p == '-' || *p == '+')
		p++;
	n = strspn(p, "0123456789");
	p += n;
	if (*p == '.') {
		size_t f = strspn(p + 1, "0123456789");
		if (!n && !f)
			return fail_type(c, subject, "a number", val);
		p += 1 + f;
	} else if (!n) {
		return fail_type(c, subject, "a number", val);
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		n = strspn(p, "0123456789");
		if (!n)
			return fail_type(c, subject, "a number", val);
		p += n;
	}
	if (*p)
		return fail_type(c, subject, "a number", val);
	*out = strtod(text(val), NULL);
	if (!isfinite(*out) || fabs(*out) > 3.4e38)
		return fail(c, val, "%s is out of range, got %s", subject,
			    text(val));
	return 0;
}

static int parse_bool(struct ctx *c, const char *name, yaml_node_t *val,
		      int *out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type == YAML_SCALAR_NODE &&
	    (is_bare(val) || tagged(val, "bool"))) {
		if (!strcmp(text(val), "true")) {
			*out = 1;
			return 0;
		}
		if (!strcmp(text(val), "false")) {
			*out = 0;
			return 0;
		}
	}
	return fail_type(c, subject, "true or false", val);
}

/* A non-empty string (any scalar style but null) into a new copy. */
static int parse_str(struct ctx *c, const char *name, yaml_node_t *val,
		     char **out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || is_null(val) || tag_type(val))
		return fail_type(c, subject, "a string", val);
	if (!val->data.scalar.length)
		return fail(c, val, "%s must not be empty", subject);
	if (strlen(text(val)) != val->data.scalar.length)
		return fail(c, val, "%s must not contain a NUL character",
			    subject);
	*out = strdup(text(val));
	if (!*out)
		return akk_err_set(c->e, "out of memory");
	return 0;
}

/* v against k's bounds; as follows the value in the message. */
static int check_range(struct ctx *c, const struct key *k, yaml_node_t *val,
		       double v, const char *as)
{
	if (k->flags & F_LO) {
		if (k->flags & F_LO_OPEN ? !(v > k->lo) : !(v >= k->lo))
			return fail(c, val, "'%s' must be %s %g, got %s%s",
				    k->name, k->flags & F_LO_OPEN ?
				    "greater than" : "at least", k->lo,
				    text(val), as);
	}
	if (k->flags & F_HI) {
		if (k->flags & F_HI_OPEN ? !(v < k->hi) : !(v <= k->hi))
			return fail(c, val, "'%s' must be %s %g, got %s%s",
				    k->name, k->flags & F_HI_OPEN ?
				    "less than" : "at most", k->hi,
				    text(val), as);
	}
	return 0;
}

#define FIELD(obj, k, type) ((type *)((char *)(obj) + (k)->off))

static int h_int(struct ctx *c, const struct key *k, const struct section *sec,
		 yaml_node_t *key, yaml_node_t *val)
{
	long long v;

	(void)key;
	if (parse_int(c, k->name, val, &v))
		return -1;
	if (!(k->flags & F_HI) && v > INT_MAX)
		return fail(c, val, "'%s' must be at most %d, got %s", k->name,
			    INT_MAX, text(val));
	if (!(k->flags & F_LO) && v < INT_MIN)
		return fail(c, val, "'%s' must be at least %d, got %s", k->name,
			    INT_MIN, text(val));
	if (check_range(c, k, val, (double)v, ""))
		return -1;
	*FIELD(sec->obj, k, int) = (int)v;
	return 0;
}

static int h_float(struct ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	double v = 0;
	float f;
	char as[64];

	(void)key;
	if (parse_float(c, k->name, val, &v) || check_range(c, k, val, v, ""))
		return -1;
	/* What is stored is the float: check it again as that. */
	f = (float)v;
	if (v != 0 && !(fabsf(f) >= FLT_MIN))
		return fail(c, val, "'%s' is too small for a float: %s is "
			    "stored as %.9g", k->name, text(val), (double)f);
	snprintf(as, sizeof(as), " (%.9g as a float)", (double)f);
	if (check_range(c, k, val, (double)f, as))
		return -1;
	*FIELD(sec->obj, k, float) = f;
	return 0;
}

static int h_bool(struct ctx *c, const struct key *k, const struct section *sec,
		  yaml_node_t *key, yaml_node_t *val)
{
	(void)key;
	return parse_bool(c, k->name, val, FIELD(sec->obj, k, int));
}

static int h_str(struct ctx *c, const struct key *k, const struct section *sec,
		 yaml_node_t *key, yaml_node_t *val)
{
	char *v;

	(void)key;
	if (parse_str(c, k->name, val, &v))
		return -1;
	free(*FIELD(sec->obj, k, char *));
	*FIELD(sec->obj, k, char *) = v;
	return 0;
}

/* A path, resolved against the config file's directory when relative. */
static int h_path(struct ctx *c, const struct key *k, const struct section *sec,
		  yaml_node_t *key, yaml_node_t *val)
{
	char *v, *joined;
	const char *b = c->base_dir;

	if (h_str(c, k, sec, key, val))
		return -1;
	v = *FIELD(sec->obj, k, char *);
	if (v[0] == '/' || !b || !b[0] || !strcmp(b, "."))
		return 0;
	size_t n = strlen(b) + strlen(v) + 2;
	joined = malloc(n);
	if (!joined)
		return akk_err_set(c->e, "out of memory");
	snprintf(joined, n, "%s%s%s", b, b[strlen(b) - 1] == '/' ? "" : "/", v);
	free(v);
	*FIELD(sec->obj, k, char *) = joined;
	return 0;
}

/* --- mappings ------------------------------------------------------------ */

static yaml_node_t *node(struct ctx *c, int id)
{
	return yaml_document_get_node(&c->doc, id);
}

/* The value of key name in mapping m (the first one), or NULL. */
static yaml_node_t *map_get(struct ctx *c, yaml_node_t *m, const char *name,
			    yaml_node_t **keyp)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(c, p->key);
		if (k->type == YAML_SCALAR_NODE && !strcmp(text(k), name)) {
			if (keyp)
				*keyp = k;
			return node(c, p->value);
		}
	}
	return NULL;
}

static const char *in_section(const struct section *sec, char *buf,
			      size_t size)
{
	if (!sec->name)
		return "";
	snprintf(buf, size, " in %s", sec->name);
	return buf;
}

/* Check the keys of mapping m against sec's table (unknown, duplicate,
 * missing), then run the handlers of the keys present, in table order. */
static int walk(struct ctx *c, yaml_node_t *m, const struct section *sec)
{
	yaml_node_pair_t *pairs = m->data.mapping.pairs.start;
	int npairs = (int)(m->data.mapping.pairs.top - pairs);
	char in[128], sug[96], buf[96];
	const struct key *k;
	size_t nkeys = 0;

	while (sec->keys[nkeys].name)
		nkeys++;
	for (int i = 0; i < npairs; i++) {
		yaml_node_t *kn = node(c, pairs[i].key);
		if (kn->type != YAML_SCALAR_NODE || tag_type(kn))
			return fail(c, kn, "a key must be a name, got %s",
				    describe(kn, buf, sizeof(buf)));
		for (k = sec->keys; k->name && strcmp(k->name, text(kn)); k++)
			;
		if (!k->name)
			return fail(c, kn, "unknown key '%s'%s%s", text(kn),
				    in_section(sec, in, sizeof(in)),
				    suggest(text(kn), sec->keys, nkeys,
					    sizeof(*k), sug, sizeof(sug)));
		for (int j = 0; j < i; j++) {
			yaml_node_t *first = node(c, pairs[j].key);
			if (first->type != YAML_SCALAR_NODE ||
			    strcmp(text(first), text(kn)))
				continue;
			struct akk_mark fm = mark_of(c, first);
			if (fm.line)
				snprintf(buf, sizeof(buf), "line %d", fm.line);
			else
				snprintf(buf, sizeof(buf), "--set");
			return fail(c, kn, "duplicate key '%s'%s (first at %s)",
				    text(kn), in_section(sec, in, sizeof(in)),
				    buf);
		}
	}
	for (k = sec->keys; k->name; k++)
		if ((k->flags & F_REQ) && !sec->optional &&
		    !map_get(c, m, k->name, NULL))
			return fail(c, m, "missing required key '%s'%s",
				    k->name, in_section(sec, in, sizeof(in)));
	for (k = sec->keys; k->name; k++) {
		yaml_node_t *kn, *val = map_get(c, m, k->name, &kn);
		if (!val)
			continue;
		if (k->applies && sec->kind) {
			int kind = sec->kind(sec->obj);
			if (!(k->applies & (1u << kind)))
				return fail(c, kn,
					    "'%s' does not apply to %s '%s'",
					    k->name, sec->kind_what,
					    sec->kind_names[kind]);
		}
		if (k->type != YAML_NO_NODE && val->type != k->type) {
			char subject[80];
			snprintf(subject, sizeof(subject), "'%s'", k->name);
			return fail_type(c, subject, k->what, val);
		}
		if (k->fn(c, k, sec, kn, val))
			return -1;
	}
	return 0;
}

/* --- the optimizer and its learning-rate schedule ------------------------ */

static void lr_defaults(struct akk_lr_spec *l, enum akk_lr_kind kind)
{
	l->kind = kind;
	l->gamma = kind == AKK_LR_EXPONENTIAL ? 0.95f : 0.1f;
	l->step_epochs = 1;
	l->min_lr = 0;
	l->warmup_epochs = 0;
}

/* A schedule type: a different type than the one inherited starts from that
 * type's defaults; the same type keeps the inherited values. */
static int set_lr_type(struct ctx *c, const char *subject,
		       struct akk_lr_spec *l, yaml_node_t *val)
{
	int kind;

	if (find_name(c, subject, val, akk_lr_names, "lr schedule", &kind))
		return -1;
	if ((int)l->kind != kind)
		lr_defaults(l, (enum akk_lr_kind)kind);
	return 0;
}

static int h_lr_type(struct ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	(void)k;
	(void)key;
	return set_lr_type(c, "'type'", sec->obj, val);
}

static int lr_kind(const void *obj)
{
	return (int)((const struct akk_lr_spec *)obj)->kind;
}

#define LR(x) (1u << AKK_LR_##x)
#define LRF(key, field, fl, lo, hi, ap)                                      \
	{ key, YAML_SCALAR_NODE, h_float, "a number",                        \
	  offsetof(struct akk_lr_spec, field), fl, lo, hi, ap }

static const struct key lr_keys[] = {
	{ "type", YAML_NO_NODE, h_lr_type, "a name", 0, 0, 0, 0, 0 },
	LRF("gamma", gamma, F_LO | F_LO_OPEN | F_HI, 0, 1,
	    LR(STEP) | LR(EXPONENTIAL)),
	LRF("step_epochs", step_epochs, F_LO | F_LO_OPEN, 0, 0, LR(STEP)),
	LRF("min_lr", min_lr, F_LO, 0, 0, LR(COSINE)),
	LRF("warmup_epochs", warmup_epochs, F_LO, 0, 0, 0),
	{ NULL, 0, NULL, NULL, 0, 0, 0, 0, 0 },
};

static int h_lr(struct ctx *c, const struct key *k, const struct section *sec,
		yaml_node_t *key, yaml_node_t *val)
{
	struct akk_optim_spec *o = sec->obj;
	char name[96];

	(void)k;
	(void)key;
	if (val->type == YAML_SCALAR_NODE) {
		if (set_lr_type(c, "'schedule'", &o->sched, val))
			return -1;
	} else if (val->type == YAML_MAPPING_NODE) {
		struct section sub = { name, lr_keys, &o->sched, 0, lr_kind,
				       akk_lr_names, "schedule" };
		snprintf(name, sizeof(name), "%s.schedule", sec->name);
		if (walk(c, val, &sub))
			return -1;
	} else {
		return fail_type(c, "'schedule'", "a name or a mapping", val);
	}
	o->sched.mark = mark_of(c, val);
	return 0;
}

static int h_optim_type(struct ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	struct akk_optim_spec *o = sec->obj;
	int kind;

	(void)k;
	(void)key;
	if (find_name(c, "'type'", val, akk_optim_names, "optimizer", &kind))
		return -1;
	o->kind = (enum akk_optim_kind)kind;
	return 0;
}

static int optim_kind(const void *obj)
{
	return (int)((const struct akk_optim_spec *)obj)->kind;
}

#define OPT(x) (1u << AKK_OPT_##x)
#define ADAMS (OPT(ADAM) | OPT(ADAMW) | OPT(RADAM))
#define OF(key, field, fl, lo, hi, ap)                                       \
	{ key, YAML_SCALAR_NODE, h_float, "a number",                        \
	  offsetof(struct akk_optim_spec, field), fl, lo, hi, ap }

static const struct key optim_keys[] = {
	{ "type", YAML_NO_NODE, h_optim_type, "a name", 0, F_REQ, 0, 0, 0 },
	OF("lr", lr, F_REQ | F_LO | F_LO_OPEN, 0, 0, 0),
	OF("momentum", momentum, F_LO | F_HI | F_HI_OPEN, 0, 1,
	   OPT(MOMENTUM) | OPT(NESTEROV)),
	OF("beta1", beta1, F_LO | F_HI | F_HI_OPEN, 0, 1, ADAMS),
	OF("beta2", beta2, F_LO | F_HI | F_HI_OPEN, 0, 1, ADAMS),
	OF("rho", rho, F_LO | F_HI | F_HI_OPEN, 0, 1, OPT(RMSPROP)),
	OF("eps", eps, F_LO | F_LO_OPEN, 0, 0, OPT(RMSPROP) | ADAMS),
	OF("weight_decay", weight_decay, F_LO, 0, 0, 0),
	OF("clip_norm", clip_norm, F_LO, 0, 0, 0),
	{ "schedule", YAML_NO_NODE, h_lr, "a name or a mapping", 0, 0, 0, 0,
	  0 },
	{ NULL, 0, NULL, NULL, 0, 0, 0, 0, 0 },
};

static void optim_defaults(struct akk_optim_spec *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = AKK_OPT_SGD;
	o->momentum = 0.9f;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->rho = 0.99f;
	o->eps = 1e-8f;
	lr_defaults(&o->sched, AKK_LR_CONSTANT);
}

/* The optimizer of section sec's object; name is "optimizer" or
 * "gate 2 optimizer". */
static int walk_optim(struct ctx *c, yaml_node_t *m, const char *name,
		      struct akk_optim_spec *o, int optional)
{
	struct section sec = { name, optim_keys, o, optional, optim_kind,
			       akk_optim_names, "optimizer" };
	return walk(c, m, &sec);
}

/* --- layers -------------------------------------------------------------- */

static const char *const init_names[] = {
	"default", "xavier_uniform", "xavier_normal", "he_uniform",
	"he_normal", "lecun_uniform", "zeros", "constant", NULL,
};

static int h_init(struct ctx *c, const struct key *k, const struct section *sec,
		  yaml_node_t *key, yaml_node_t *val)
{
	struct akk_layer_spec *l = sec->obj;
	int kind;

	(void)k;
	(void)key;
	if (find_name(c, "'init'", val, init_names, "init", &kind))
		return -1;
	l->init = (enum akk_init)kind;
	return 0;
}

#define LI(key, field, fl, lo, hi)                                           \
	{ key, YAML_SCALAR_NODE, h_int, "an integer",                        \
	  offsetof(struct akk_layer_spec, field), fl, lo, hi, 0 }
#define LF(key, field, fl, lo, hi)                                           \
	{ key, YAML_SCALAR_NODE, h_float, "a number",                        \
	  offsetof(struct akk_layer_spec, field), fl, lo, hi, 0 }
#define LBIAS { "bias", YAML_SCALAR_NODE, h_bool, "true or false",          \
		offsetof(struct akk_layer_spec, bias), 0, 0, 0, 0 }
#define LINIT { "init", YAML_NO_NODE, h_init, "a name", 0, 0, 0, 0, 0 },    \
	LF("init_value", init_value, 0, 0, 0)
#define LEND { NULL, 0, NULL, NULL, 0, 0, 0, 0, 0 }

static const struct key dense_keys[] = {
	LI("units", units, F_REQ | F_LO, 1, 0), LBIAS, LINIT, LEND,
};
static const struct key conv_keys[] = {
	LI("filters", filters, F_REQ | F_LO, 1, 0),
	LI("kernel", kernel, F_REQ | F_LO, 1, 0),
	LI("stride", stride, F_LO, 1, 0),
	LI("padding", padding, F_LO, 0, 0),
	LBIAS, LINIT, LEND,
};
static const struct key pool_keys[] = {
	LI("kernel", kernel, F_REQ | F_LO, 1, 0),
	LI("stride", stride, F_LO, 1, 0),
	LI("padding", padding, F_LO, 0, 0),
	LEND,
};
static const struct key dropout_keys[] = {
	LF("rate", rate, F_REQ | F_LO | F_HI | F_HI_OPEN, 0, 1), LEND,
};
static const struct key batchnorm_keys[] = {
	LF("momentum", momentum, F_LO | F_LO_OPEN | F_HI, 0, 1),
	LF("eps", eps, F_LO | F_LO_OPEN, 0, 0),
	LEND,
};
static const struct key leaky_keys[] = {
	LF("alpha", alpha, F_LO, 0, 0), LEND,
};
static const struct key no_keys[] = { LEND };

/* Each kind's options; a scalar value stands for the shorthand key. */
static const struct layer_kind {
	const char *name;
	const struct key *keys;
	const char *shorthand;
	const char *what;	/* what its value may be, for messages */
} layer_kinds[] = {
	{ "dense", dense_keys, "units", "an integer or a mapping" },
	{ "conv2d", conv_keys, NULL, "a mapping" },
	{ "maxpool2d", pool_keys, "kernel", "an integer or a mapping" },
	{ "avgpool2d", pool_keys, "kernel", "an integer or a mapping" },
	{ "flatten", no_keys, NULL, "a mapping" },
	{ "dropout", dropout_keys, "rate", "a number or a mapping" },
	{ "batchnorm", batchnorm_keys, NULL, "a mapping" },
	{ "relu", no_keys, NULL, "a mapping" },
	{ "leaky_relu", leaky_keys, "alpha", "a number or a mapping" },
	{ "sigmoid", no_keys, NULL, "a mapping" },
	{ "tanh", no_keys, NULL, "a mapping" },
	{ "softplus", no_keys, NULL, "a mapping" },
};

static void layer_defaults(struct akk_layer_spec *l)
{
	memset(l, 0, sizeof(*l));
	l->stride = 0;		/* set after: pools = kernel, others 1 */
	l->bias = 1;
	l->alpha = 0.01f;
	l->momentum = 0.1f;
	l->eps = 1e-5f;
	l->init = AKK_INIT_DEFAULT;
}

/* One item of a gate's layers: NAME, or {NAME: OPTIONS}. */
static int layer_item(struct ctx *c, yaml_node_t *item,
		      struct akk_layer_spec *l)
{
	yaml_node_t *name, *opts = NULL;
	const struct layer_kind *kind = NULL;
	char buf[96], secname[64], subject[64];

	layer_defaults(l);
	l->mark = mark_of(c, item);
	if (item->type == YAML_SEQUENCE_NODE || is_null(item))
		return fail_type(c, "a layer", "a name or a mapping", item);
	if (item->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *p = item->data.mapping.pairs.start;
		long n = item->data.mapping.pairs.top - p;
		if (n == 0)
			return fail(c, item, "a layer must be a name or a "
				    "mapping with one key, got an empty mapping");
		if (n > 1) {
			yaml_node_t *second = node(c, p[1].key);
			return fail(c, second, "a layer must be a mapping with "
				    "one key, got a second key %s (each layer "
				    "is its own list item)",
				    describe(second, buf, sizeof(buf)));
		}
		name = node(c, p->key);
		opts = node(c, p->value);
	} else {
		name = item;
	}
	if (name->type != YAML_SCALAR_NODE || is_null(name) || tag_type(name))
		return fail_type(c, "a layer name", "a name", name);
	for (size_t i = 0; i < sizeof(layer_kinds) / sizeof(layer_kinds[0]);
	     i++)
		if (!strcmp(layer_kinds[i].name, text(name)))
			kind = &layer_kinds[i];
	l->ops = akk_layer_find(text(name));
	if (!kind || !l->ops)
		return fail(c, name, "unknown layer '%s'%s", text(name),
			    suggest(text(name), akk_layer_names,
				    count_names(akk_layer_names),
				    sizeof(akk_layer_names[0]), buf,
				    sizeof(buf)));
	snprintf(secname, sizeof(secname), "layer '%s'", kind->name);
	snprintf(subject, sizeof(subject), "'%s'", kind->name);
	struct section sec = { secname, kind->keys, l, 0, NULL, NULL, NULL };
	if (!opts || is_null(opts)) {
		/* No options: only the required keys can be wrong. */
		for (const struct key *k = kind->keys; k->name; k++)
			if (k->flags & F_REQ)
				return fail(c, opts && node_set(c, opts) >= 0 ?
					    opts : item,
					    "missing required key '%s' in %s",
					    k->name, secname);
	} else if (opts->type == YAML_SCALAR_NODE && kind->shorthand) {
		const struct key *k = kind->keys;
		while (strcmp(k->name, kind->shorthand))
			k++;
		if (k->fn(c, k, &sec, NULL, opts))
			return -1;
	} else if (opts->type == YAML_MAPPING_NODE) {
		yaml_node_t *kn, *iv;
		if (walk(c, opts, &sec))
			return -1;
		iv = map_get(c, opts, "init_value", &kn);
		if (iv && l->init != AKK_INIT_CONSTANT)
			return fail(c, kn, "'init_value' does not apply to "
				    "init '%s'", init_names[l->init]);
	} else {
		return fail_type(c, subject, kind->what, opts);
	}
	if (!l->stride) {
		int pool = l->ops == &akk_layer_maxpool2d ||
			   l->ops == &akk_layer_avgpool2d;
		l->stride = pool ? l->kernel : 1;
	}
	return 0;
}

/* --- the network --------------------------------------------------------- */

static int h_layers(struct ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);

	int gi = (int)(g - c->s->gates), before = 0;

	(void)k;
	(void)key;
	if (!n)
		return fail(c, val, "gate %d has no layers", gi + 1);
	/* Aliases can repeat one long list in every gate: bound the total. */
	for (int i = 0; i < gi; i++)
		before += c->s->gates[i].nlayers;
	if (n > AKK_MAX_LAYERS - before)
		return fail(c, node(c, items[AKK_MAX_LAYERS - before]),
			    "too many layers: more than %d in the network",
			    AKK_MAX_LAYERS);
	g->layers = calloc((size_t)n, sizeof(*g->layers));
	if (!g->layers)
		return akk_err_set(c->e, "out of memory");
	g->nlayers = n;
	for (int i = 0; i < n; i++)
		if (layer_item(c, node(c, items[i]), &g->layers[i]))
			return -1;
	return 0;
}

static int h_gate_optim(struct ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	struct akk_gate_spec *g = sec->obj;
	char name[64];

	(void)k;
	snprintf(name, sizeof(name), "%s optimizer", sec->name);
	g->optim.mark = mark_of(c, key);
	g->has_optim = 1;
	return walk_optim(c, val, name, &g->optim, 1);
}

static const struct key gate_keys[] = {
	{ "layers", YAML_SEQUENCE_NODE, h_layers, "a list", 0, F_REQ, 0, 0,
	  0 },
	{ "optimizer", YAML_MAPPING_NODE, h_gate_optim, "a mapping", 0, 0, 0,
	  0, 0 },
	{ "rank", YAML_SCALAR_NODE, h_int, "an integer",
	  offsetof(struct akk_gate_spec, rank), F_LO | F_HI, 0, 4095, 0 },
	LEND,
};

static int h_gates(struct ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	char name[32];

	(void)k;
	(void)key;
	if (!n)
		return fail(c, val, "'gates' must not be empty");
	if (n > AKK_MAX_GATES)
		return fail(c, node(c, items[AKK_MAX_GATES]),
			    "too many gates: %d, at most %d", n, AKK_MAX_GATES);
	s->gates = calloc((size_t)n, sizeof(*s->gates));
	if (!s->gates)
		return akk_err_set(c->e, "out of memory");
	s->ngates = n;
	for (int i = 0; i < n; i++) {
		struct akk_gate_spec *g = &s->gates[i];
		yaml_node_t *item = node(c, items[i]);
		struct section gs = { name, gate_keys, g, 0, NULL, NULL, NULL };

		snprintf(name, sizeof(name), "gate %d", i + 1);
		g->optim = s->optim;
		g->rank = -1;
		g->mark = mark_of(c, item);
		if (item->type != YAML_MAPPING_NODE)
			return fail_type(c, name, "a mapping", item);
		if (walk(c, item, &gs))
			return -1;
	}
	return 0;
}

static int h_input(struct ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	const struct key dim = { "input", YAML_SCALAR_NODE, NULL, NULL, 0,
				 F_LO | F_HI, 1, INT_MAX, 0 };

	(void)k;
	(void)key;
	if (n != 1 && n != 3)
		return fail(c, val, "'input' must have 1 or 3 dimensions, "
			    "got %d", n);
	s->input.rank = n;
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = node(c, items[i]);
		long long v;
		if (parse_int(c, "input", item, &v) ||
		    check_range(c, &dim, item, (double)v, ""))
			return -1;
		s->input.d[i] = (int)v;
	}
	s->input_mark = mark_of(c, val);
	return 0;
}

static int h_loss_type(struct ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	char subject[16];
	int kind;

	(void)key;
	/* k is "type" in the mapping form, "loss" in the short one. */
	snprintf(subject, sizeof(subject), "'%s'", k->name);
	if (find_name(c, subject, val, akk_loss_names, "loss", &kind))
		return -1;
	s->loss = (enum akk_loss_kind)kind;
	return 0;
}

static int loss_kind(const void *obj)
{
	return (int)((const struct akk_spec *)obj)->loss;
}

static const struct key loss_keys[] = {
	{ "type", YAML_NO_NODE, h_loss_type, "a name", 0, F_REQ, 0, 0, 0 },
	{ "delta", YAML_SCALAR_NODE, h_float, "a number",
	  offsetof(struct akk_spec, huber_delta), F_LO | F_LO_OPEN, 0, 0,
	  1u << AKK_LOSS_HUBER },
	LEND,
};

static int h_loss(struct ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	struct section ls = { "network.loss", loss_keys, s, 0, loss_kind,
			      akk_loss_names, "loss" };

	s->loss_mark = mark_of(c, val);
	if (val->type == YAML_SCALAR_NODE)
		return h_loss_type(c, k, sec, key, val);
	if (val->type == YAML_MAPPING_NODE)
		return walk(c, val, &ls);
	return fail_type(c, "'loss'", "a name or a mapping", val);
}

static const char *const placement_names[] = { "explicit", "contiguous", NULL };

static int h_placement(struct ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;
	int kind;

	(void)k;
	(void)key;
	if (find_name(c, "'placement'", val, placement_names, "placement", &kind))
		return -1;
	s->placement = (enum akk_placement)kind;
	return 0;
}

static const struct key network_keys[] = {
	{ "input", YAML_SEQUENCE_NODE, h_input, "a list", 0, F_REQ, 0, 0, 0 },
	{ "gates", YAML_SEQUENCE_NODE, h_gates, "a list", 0, F_REQ, 0, 0, 0 },
	{ "loss", YAML_NO_NODE, h_loss, "a name or a mapping", 0, 0, 0, 0,
	  0 },
	{ "placement", YAML_NO_NODE, h_placement, "a name", 0, 0, 0, 0, 0 },
	LEND,
};

/* --- data, schedule, output ---------------------------------------------- */

#define DATA(f) offsetof(struct akk_data_spec, f)

static const struct key train_keys[] = {
	{ "images", YAML_SCALAR_NODE, h_path, "a string", DATA(train_images),
	  F_REQ, 0, 0, 0 },
	{ "labels", YAML_SCALAR_NODE, h_path, "a string", DATA(train_labels),
	  F_REQ, 0, 0, 0 },
	LEND,
};
static const struct key val_keys[] = {
	{ "images", YAML_SCALAR_NODE, h_path, "a string", DATA(val_images),
	  F_REQ, 0, 0, 0 },
	{ "labels", YAML_SCALAR_NODE, h_path, "a string", DATA(val_labels),
	  F_REQ, 0, 0, 0 },
	LEND,
};
static const struct key normalize_keys[] = {
	{ "mean", YAML_SCALAR_NODE, h_float, "a number", DATA(mean), F_REQ,
	  0, 0, 0 },
	{ "std", YAML_SCALAR_NODE, h_float, "a number", DATA(std),
	  F_REQ | F_LO | F_LO_OPEN, 0, 0, 0 },
	LEND,
};

static int h_train(struct ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_data_spec *d = sec->obj;
	struct section ts = { "data.train", train_keys, d, 0, NULL, NULL,
			      NULL };

	(void)k;
	d->train_mark = mark_of(c, key);
	return walk(c, val, &ts);
}

static int h_val(struct ctx *c, const struct key *k,
		 const struct section *sec, yaml_node_t *key,
		 yaml_node_t *val)
{
	struct akk_data_spec *d = sec->obj;
	struct section vs = { "data.validation", val_keys, d, 0, NULL, NULL,
			      NULL };

	(void)k;
	d->val_mark = mark_of(c, key);
	return walk(c, val, &vs);
}

static int h_normalize(struct ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_data_spec *d = sec->obj;
	struct section ns = { "data.normalize", normalize_keys, d, 0, NULL,
			      NULL, NULL };

	(void)k;
	(void)key;
	d->normalize = 1;
	return walk(c, val, &ns);
}

static const char *const format_names[] = { "idx", NULL };

static int h_format(struct ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	int kind;

	(void)k;
	(void)sec;
	(void)key;
	/* idx is the only format, and the default. */
	return find_name(c, "'format'", val, format_names, "data format",
			 &kind);
}

static const struct key data_keys[] = {
	{ "format", YAML_NO_NODE, h_format, "a name", 0, 0, 0, 0, 0 },
	{ "train", YAML_MAPPING_NODE, h_train, "a mapping", 0, F_REQ, 0, 0,
	  0 },
	{ "validation", YAML_MAPPING_NODE, h_val, "a mapping", 0, 0, 0, 0,
	  0 },
	{ "scale", YAML_SCALAR_NODE, h_float, "a number", DATA(scale),
	  F_LO | F_LO_OPEN, 0, 0, 0 },
	{ "normalize", YAML_MAPPING_NODE, h_normalize, "a mapping", 0, 0, 0,
	  0, 0 },
	LEND,
};

static const char *const mode_names[] = { "flip-flop", "wheels", NULL };

static int h_mode(struct ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	struct akk_schedule_spec *sc = sec->obj;
	int kind;

	(void)k;
	(void)key;
	if (find_name(c, "'mode'", val, mode_names, "mode", &kind))
		return -1;
	sc->mode = (enum akk_mode)kind;
	return 0;
}

static const char *const parallel_names[] = { "pipeline", "data", NULL };

static int h_parallel(struct ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key,
		      yaml_node_t *val)
{
	struct akk_schedule_spec *sc = sec->obj;
	int kind;

	(void)k;
	(void)key;
	if (find_name(c, "'parallel'", val, parallel_names, "parallel", &kind))
		return -1;
	sc->data_parallel = kind == 1;
	return 0;
}

#define SCHED_INT(key, field, fl, lo, hi)                                    \
	{ key, YAML_SCALAR_NODE, h_int, "an integer",                        \
	  offsetof(struct akk_schedule_spec, field), fl, lo, hi, 0 }

static const struct key conc_keys[] = {
	SCHED_INT("train", conc_train, F_LO | F_HI, 1, 64),
	SCHED_INT("validation", conc_val, F_LO | F_HI, 1, 64),
	LEND,
};

static int h_conc(struct ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	struct section cs = { "schedule.concurrency", conc_keys, sec->obj, 0,
			      NULL, NULL, NULL };

	(void)k;
	(void)key;
	return walk(c, val, &cs);
}

static const struct key sched_keys[] = {
	{ "mode", YAML_NO_NODE, h_mode, "a name", 0, 0, 0, 0, 0 },
	SCHED_INT("epochs", epochs, F_LO, 1, 0),
	SCHED_INT("batch_size", batch_size, F_LO | F_HI, 1, 65536),
	{ "concurrency", YAML_MAPPING_NODE, h_conc, "a mapping", 0, 0, 0, 0,
	  0 },
	{ "weight_stashing", YAML_SCALAR_NODE, h_bool, "true or false",
	  offsetof(struct akk_schedule_spec, stashing), 0, 0, 0, 0 },
	SCHED_INT("threads", threads, F_LO | F_HI, 0, 256),
	{ "max_loss", YAML_SCALAR_NODE, h_float, "a number",
	  offsetof(struct akk_schedule_spec, max_loss), F_LO, 0, 0, 0 },
	{ "parallel", YAML_NO_NODE, h_parallel, "a name", 0, 0, 0, 0, 0 },
	LEND,
};

static int h_metrics(struct ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	const char *m;

	if (h_str(c, k, sec, key, val))
		return -1;
	m = ((struct akk_output_spec *)sec->obj)->metrics;
	if (strchr(m, '/') || !strcmp(m, ".") || !strcmp(m, ".."))
		return fail(c, val, "'metrics' must be a file name without "
			    "'/', got '%s'", m);
	return 0;
}

#define OUT(f) offsetof(struct akk_output_spec, f)

static const struct key output_keys[] = {
	{ "dir", YAML_SCALAR_NODE, h_path, "a string", OUT(dir), 0, 0, 0, 0 },
	{ "checkpoint_every", YAML_SCALAR_NODE, h_int, "an integer",
	  OUT(checkpoint_every), F_LO, 0, 0, 0 },
	{ "keep", YAML_SCALAR_NODE, h_int, "an integer", OUT(keep), F_LO, 1,
	  0, 0 },
	{ "metrics", YAML_SCALAR_NODE, h_metrics, "a string", OUT(metrics), 0,
	  0, 0, 0 },
	LEND,
};

/* --- the top level ------------------------------------------------------- */

static int h_seed(struct ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	long long v;

	(void)k;
	(void)key;
	if (parse_int(c, "seed", val, &v))
		return -1;
	if (v < 0)
		return fail(c, val, "'seed' must be at least 0, got %s",
			    text(val));
	((struct akk_spec *)sec->obj)->seed = (uint64_t)v;
	return 0;
}

/* A section of struct akk_spec: name, keys and field. */
static int sub(struct ctx *c, yaml_node_t *val, const char *name,
	       const struct key *keys, void *obj)
{
	struct section sec = { name, keys, obj, 0, NULL, NULL, NULL };
	return walk(c, val, &sec);
}

static int h_data(struct ctx *c, const struct key *k,
		  const struct section *sec, yaml_node_t *key,
		  yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;

	(void)k;
	s->data.mark = mark_of(c, key);
	return sub(c, val, "data", data_keys, &s->data);
}

static int h_optim(struct ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;

	(void)k;
	s->optim.mark = mark_of(c, key);
	return walk_optim(c, val, "optimizer", &s->optim, 0);
}

static int h_network(struct ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	(void)k;
	(void)key;
	return sub(c, val, "network", network_keys, sec->obj);
}

static int h_schedule(struct ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key,
		      yaml_node_t *val)
{
	struct akk_spec *s = sec->obj;

	(void)k;
	s->sched.mark = mark_of(c, key);
	return sub(c, val, "schedule", sched_keys, &s->sched);
}

static int h_output(struct ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	(void)k;
	(void)key;
	return sub(c, val, "output", output_keys,
		   &((struct akk_spec *)sec->obj)->out);
}

/* The optimizer comes before the network: gates start from it. */
static const struct key top_keys[] = {
	{ "name", YAML_SCALAR_NODE, h_str, "a string",
	  offsetof(struct akk_spec, name), 0, 0, 0, 0 },
	{ "seed", YAML_SCALAR_NODE, h_seed, "an integer", 0, 0, 0, 0, 0 },
	{ "data", YAML_MAPPING_NODE, h_data, "a mapping", 0, F_REQ, 0, 0, 0 },
	{ "optimizer", YAML_MAPPING_NODE, h_optim, "a mapping", 0, F_REQ, 0,
	  0, 0 },
	{ "network", YAML_MAPPING_NODE, h_network, "a mapping", 0, F_REQ, 0,
	  0, 0 },
	{ "schedule", YAML_MAPPING_NODE, h_schedule, "a mapping", 0, 0, 0, 0,
	  0 },
	{ "output", YAML_MAPPING_NODE, h_output, "a mapping", 0, 0, 0, 0, 0 },
	LEND,
};

/* --- loading and overrides ----------------------------------------------- */

/* libyaml's complaint as "syntax error: ...", at its mark in txt (or at
 * override set when set >= 0). */
static int syntax_error(struct ctx *c, const yaml_parser_t *p,
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
static int fail_mark(struct ctx *c, int set, yaml_mark_t m, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));
static int fail_mark(struct ctx *c, int set, yaml_mark_t m, const char *fmt,
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
static int check_tag(struct ctx *c, int set, const yaml_event_t *ev,
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
 * events once: the text must be at most AKK_SPEC_MAX_BYTES and nest at most
 * AKK_SPEC_MAX_DEPTH lists and mappings, and every tag must be one we
 * honour. The explicit strings are noted in c->strs for mark_strings. A
 * syntax error stops the walk quietly: load reports it. */
static int prescan(struct ctx *c, const char *txt, size_t len, int set)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, rc = 0, done = 0;

	c->nstrs = 0;
	if (len > AKK_SPEC_MAX_BYTES) {
		yaml_mark_t m = { AKK_SPEC_MAX_BYTES, 0, 0 };
		int line, col;

		if (set >= 0)
			return fail_set(c, set, "the value is longer than %d "
					"bytes", AKK_SPEC_MAX_BYTES);
		position(txt, AKK_SPEC_MAX_BYTES, &line, &col);
		m.line = (size_t)line - 1;
		m.column = (size_t)col - 1;
		return fail_mark(c, set, m, "the config is larger than %d bytes",
				 AKK_SPEC_MAX_BYTES);
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
			if (++depth > AKK_SPEC_MAX_DEPTH) {
				if (set >= 0)
					rc = fail_set(c, set, "the value is nested too deeply");
				else
					rc = fail_mark(c, set, ev.start_mark,
						       "nested too deeply: more than %d levels of lists and mappings",
						       AKK_SPEC_MAX_DEPTH);
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
static void mark_strings(struct ctx *c, yaml_document_t *doc)
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
static int load(struct ctx *c, yaml_document_t *doc, const char *txt,
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
static int copy_node(struct ctx *c, int set, yaml_document_t *src, int id,
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
static int set_value(struct ctx *c, int set, const char *value)
{
	yaml_document_t vd;
	yaml_node_t *root;
	int id;

	if (load(c, &vd, value, strlen(value), set))
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

static int add_key(struct ctx *c, int map, const char *name, int value)
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
static int apply_set(struct ctx *c, int set)
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
		yaml_node_t *n = node(c, cur);
		int child = 0;

		next = strchr(seg, '.');
		if (next)
			*next++ = '\0';
		if (n->type == YAML_MAPPING_NODE) {
			yaml_node_pair_t *p;
			for (p = n->data.mapping.pairs.start;
			     p < n->data.mapping.pairs.top; p++) {
				yaml_node_t *k = node(c, p->key);
				if (k->type == YAML_SCALAR_NODE &&
				    !strcmp(text(k), seg))
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

/* --- the spec ------------------------------------------------------------ */

static char *base_name(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	const char *dot;

	b = b ? b + 1 : path ? path : "";
	dot = strrchr(b, '.');
	if (!dot || dot == b)
		dot = b + strlen(b);
	if (dot == b)
		return strdup("config");
	return strndup(b, (size_t)(dot - b));
}

static int defaults(struct akk_spec *s, const char *name)
{
	s->seed = 42;
	s->data.format = strdup("idx");
	s->data.scale = 255;
	s->data.std = 1;
	s->loss = AKK_LOSS_SOFTMAX_CE;
	s->huber_delta = 1;
	optim_defaults(&s->optim);
	s->sched.mode = AKK_MODE_WHEELS;
	s->sched.epochs = 10;
	s->sched.batch_size = 64;
	s->sched.conc_train = 4;
	s->sched.conc_val = 1;
	s->sched.stashing = 1;
	s->sched.threads = 0;
	s->out.checkpoint_every = 1;
	s->out.keep = 3;
	s->out.metrics = strdup("metrics.csv");
	s->name = base_name(name);
	return s->data.format && s->out.metrics && s->name ? 0 : -1;
}

static char *copy_text(const char *t, size_t len)
{
	char *p = malloc(len + 1);
	if (p) {
		memcpy(p, t, len);
		p[len] = '\0';
	}
	return p;
}

int akk_spec_parse(struct akk_spec *s, const char *txt, size_t len,
		   const char *name, const char *base_dir,
		   const char *const *sets, int nsets, struct akk_err *e)
{
	struct ctx c;
	yaml_node_t *root;
	int rc = -1, have_doc = 0;

	memset(s, 0, sizeof(*s));
	memset(&c, 0, sizeof(c));
	c.file = name ? name : "";
	c.base_dir = base_dir;
	c.s = s;
	c.e = e;
	c.sets = sets;
	s->text = copy_text(txt, len);
	s->path = name ? strdup(name) : NULL;
	if (nsets > 0) {
		s->sets = calloc((size_t)nsets, sizeof(*s->sets));
		c.set_lo = calloc((size_t)nsets, sizeof(int));
		c.set_hi = calloc((size_t)nsets, sizeof(int));
		if (!s->sets || !c.set_lo || !c.set_hi)
			goto oom;
		for (int i = 0; i < nsets; i++) {
			if (!(s->sets[i] = strdup(sets[i])))
				goto oom;
			s->nsets++;
		}
	}
	if (!s->text || (name && !s->path) || defaults(s, name))
		goto oom;

	if (load(&c, &c.doc, txt, len, -1))
		goto out;
	have_doc = 1;
	root = yaml_document_get_root_node(&c.doc);
	if (!root) {
		akk_err_at(e, c.file, 0, 0,
			   "the config must be a mapping, got an empty file");
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		fail_type(&c, "the config", "a mapping", root);
		goto out;
	}
	for (int i = 0; i < nsets; i++) {
		c.set_lo[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
		if (apply_set(&c, i))
			goto out;
		c.set_hi[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
	}
	c.nsets = nsets;
	{
		struct section top = { NULL, top_keys, s, 0, NULL, NULL,
				       NULL };
		if (walk(&c, yaml_document_get_root_node(&c.doc), &top))
			goto out;
	}
	/* values that overflow together: the pixel map (batch.h) */
	{
		const struct akk_data_spec *d = &s->data;
		double std = d->normalize ? d->std : 1;
		double a = 1.0 / ((double)d->scale * std);
		double b = d->normalize ? -(double)d->mean / std : 0;
		if (!(fabs(a) <= FLT_MAX) || !(fabs(b) <= FLT_MAX)) {
			akk_err_at(e, s->path ? s->path : name, d->mark.line,
				   d->mark.col,
				   "pixels would become (pixel / %g - %g) / %g, which overflows a float",
				   (double)d->scale, d->normalize ? (double)d->mean : 0.0,
				   std);
			goto out;
		}
	}
	/* keys that contradict each other across sections */
	for (int i = 0; s->sched.data_parallel && i < s->ngates; i++)
		if (s->gates[i].rank >= 0) {
			akk_err_at(e, s->path ? s->path : name, s->gates[i].mark.line,
				   s->gates[i].mark.col,
				   "gate %d has a rank, but with schedule.parallel: data every rank runs every gate",
				   i + 1);
			goto out;
		}
	if (!s->out.dir) {
		size_t n = strlen(s->name) + sizeof("runs/");
		if (!(s->out.dir = malloc(n)))
			goto oom;
		snprintf(s->out.dir, n, "runs/%s", s->name);
	}
	rc = 0;
	goto out;
oom:
	akk_err_set(e, "out of memory");
out:
	if (have_doc)
		yaml_document_delete(&c.doc);
	free(c.set_lo);
	free(c.set_hi);
	free(c.strs);
	if (rc)
		akk_spec_release(s);
	return rc;
}

int akk_spec_load(struct akk_spec *s, const char *path,
		  const char *const *sets, int nsets, struct akk_err *e)
{
	FILE *f;
	char *buf = NULL, *dir = NULL, *slash;
	size_t len = 0, cap = 0;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "rb");
	if (!f)
		return akk_err_set(e, "cannot open '%s': %s", path,
				   strerror(errno));
	/* At most one byte more than the limit, whatever the file is (a FIFO,
	 * /dev/zero): akk_spec_parse reports a text over the limit. */
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			if (cap > (size_t)AKK_SPEC_MAX_BYTES + 1)
				cap = (size_t)AKK_SPEC_MAX_BYTES + 1;
			char *nb = realloc(buf, cap);
			if (!nb) {
				akk_err_set(e, "out of memory");
				goto out;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0 || len > (size_t)AKK_SPEC_MAX_BYTES)
			break;
	}
	if (ferror(f)) {
		akk_err_set(e, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!(dir = strdup(path))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	rc = akk_spec_parse(s, buf, len, path, dir, sets, nsets, e);
out:
	fclose(f);
	free(buf);
	free(dir);
	return rc;
}

void akk_spec_release(struct akk_spec *s)
{
	if (!s)
		return;
	free(s->path);
	free(s->text);
	free(s->name);
	free(s->data.format);
	free(s->data.train_images);
	free(s->data.train_labels);
	free(s->data.val_images);
	free(s->data.val_labels);
	for (int i = 0; s->gates && i < s->ngates; i++)
		free(s->gates[i].layers);
	free(s->gates);
	free(s->out.dir);
	free(s->out.metrics);
	for (int i = 0; s->sets && i < s->nsets; i++)
		free(s->sets[i]);
	free(s->sets);
	memset(s, 0, sizeof(*s));
}

const char *akk_mode_name(enum akk_mode m)
{
	return (unsigned)m <= AKK_MODE_WHEELS ? mode_names[m] : NULL;
}

int akk_spec_place(const struct akk_spec *s, int nranks, int *gate_rank,
		   struct akk_err *e)
{
	for (int i = 0; i < s->ngates; i++) {
		const struct akk_gate_spec *g = &s->gates[i];

		if (s->placement == AKK_PLACE_CONTIGUOUS) {
			gate_rank[i] = (int)((long)i * nranks / s->ngates);
			continue;
		}
		gate_rank[i] = g->rank < 0 ? 0 : g->rank;
		if (gate_rank[i] >= nranks)
			return akk_err_at(e, s->path, g->mark.line, g->mark.col,
					  "gate %d is placed on rank %d, but there %s %d rank%s (mpirun -np %d)",
					  i + 1, gate_rank[i], nranks == 1 ? "is" : "are",
					  nranks, nranks == 1 ? "" : "s", nranks);
	}
	return 0;
}
