/* yaml_keys.c - reports at a node, scalars, and the key-table walk
 * (yaml_keys.h). */
#include "config/yaml_keys.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* --- nodes and reports --------------------------------------------------- */

static int node_id(const struct akk_yaml_ctx *c, const yaml_node_t *n)
{
	return (int)(n - c->doc.nodes.start) + 1;
}

/* Index of the override that created n, or -1 when n is from the file. */
int akk_yaml_node_set(const struct akk_yaml_ctx *c, const yaml_node_t *n)
{
	if (!n)
		return -1;
	int id = node_id(c, n);
	for (int i = 0; i < c->nsets; i++)
		if (id > c->set_lo[i] && id <= c->set_hi[i])
			return i;
	return -1;
}

struct akk_mark akk_yaml_mark_of(const struct akk_yaml_ctx *c, const yaml_node_t *n)
{
	struct akk_mark m = { 0, 0 };
	if (n && akk_yaml_node_set(c, n) < 0) {
		m.line = (int)n->start_mark.line + 1;
		m.col = (int)n->start_mark.column + 1;
	}
	return m;
}

/* Report at node n (at the --set argument when n came from one; at the
 * whole file when n is NULL). Returns -1. */
int akk_yaml_fail(struct akk_yaml_ctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[sizeof(c->e->msg)];
	va_list ap;
	int set = akk_yaml_node_set(c, n);

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

static int is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}


/* The core-schema type a scalar is explicitly tagged with ("int", "float",
 * "bool" or "null"), or NULL for an untagged scalar or a string. libyaml
 * gives an untagged scalar the str tag, as it does !!str, so prescan
 * finds the explicit strings and load marks them quoted (mark_strings):
 * "!!str 42" then reads like "'42'". prescan has rejected every other tag. */
const char *akk_yaml_tag_type(const yaml_node_t *n)
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
	const char *t = akk_yaml_tag_type(n);
	return t && !strcmp(t, type);
}

/* A plain scalar without a tag: its type is read from its text. */
int akk_yaml_is_bare(const yaml_node_t *n)
{
	return is_plain(n) && !akk_yaml_tag_type(n);
}

int akk_yaml_is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (n->type != YAML_SCALAR_NODE)
		return 0;
	if (tagged(n, "null"))
		return 1;
	if (!akk_yaml_is_bare(n))
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (!strcmp(akk_yaml_text(n), nulls[i]))
			return 1;
	return 0;
}

/* What a node is, for "got ...": 'abc', null, a list, a mapping. */
const char *akk_yaml_describe(const yaml_node_t *n, char *buf, size_t size)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (akk_yaml_is_null(n))
		return "null";
	size_t len = n->data.scalar.length;
	const char *type = akk_yaml_tag_type(n);
	if (type) {
		snprintf(buf, size, "!!%s '%.*s%s'", type,
			 len > 40 ? 40 : (int)len, akk_yaml_text(n),
			 len > 40 ? "..." : "");
		return buf;
	}
	const char *fmt = is_plain(n) ? "'%.*s%s'" : "the string '%.*s%s'";
	snprintf(buf, size, fmt, len > 40 ? 40 : (int)len, akk_yaml_text(n),
		 len > 40 ? "..." : "");
	return buf;
}

int akk_yaml_fail_type(struct akk_yaml_ctx *c, const char *subject, const char *what,
		     yaml_node_t *val)
{
	char buf[96];
	return akk_yaml_fail(c, val, "%s must be %s, got %s", subject, what,
		    akk_yaml_describe(val, buf, sizeof(buf)));
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
const char *akk_yaml_suggest(const char *word, const void *names, size_t n,
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

size_t akk_yaml_count_names(const char *const *names)
{
	size_t n = 0;
	while (names[n])
		n++;
	return n;
}

/* The kind called by the name in val, from a NULL-terminated table, into
 * *out; otherwise "unknown WHAT 'x' (did you mean 'y'?)". */
static int find_name(struct akk_yaml_ctx *c, const char *subject, yaml_node_t *val,
		     const char *const *names, const char *what, int *out)
{
	char buf[96];

	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, subject, "a name", val);
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], akk_yaml_text(val))) {
			*out = i;
			return 0;
		}
	return akk_yaml_fail(c, val, "unknown %s '%s'%s", what, akk_yaml_text(val),
		    akk_yaml_suggest(akk_yaml_text(val), names, akk_yaml_count_names(names),
			    sizeof(names[0]), buf, sizeof(buf)));
}

/* --- scalars ------------------------------------------------------------- */

/* YAML 1.2 core: [-+]?[0-9]+ */
int akk_yaml_int_syntax(const char *p)
{
	if (*p == '-' || *p == '+')
		p++;
	return *p && strspn(p, "0123456789") == strlen(p);
}

int akk_yaml_parse_int(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
		     long long *out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) ||
	    !(akk_yaml_is_bare(val) || tagged(val, "int")))
		return akk_yaml_fail_type(c, subject, "an integer", val);
	if (!akk_yaml_int_syntax(akk_yaml_text(val)))
		return akk_yaml_fail_type(c, subject, "an integer", val);
	errno = 0;
	*out = strtoll(akk_yaml_text(val), NULL, 10);
	if (errno == ERANGE)
		return akk_yaml_fail(c, val, "%s is out of range, got %s", subject,
			    akk_yaml_text(val));
	return 0;
}

static int parse_float(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
		       double *out)
{
	char subject[80];
	const char *p;
	size_t n;

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) ||
	    !(akk_yaml_is_bare(val) || tagged(val, "float") || tagged(val, "int")))
		return akk_yaml_fail_type(c, subject, "a number", val);
	if (tagged(val, "int") && !akk_yaml_int_syntax(akk_yaml_text(val)))
		return akk_yaml_fail_type(c, subject, "a number", val);
	/* YAML 1.2 core, finite only:
	 * [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	p = akk_yaml_text(val);
	if (*p == '-' || *p == '+')
		p++;
	n = strspn(p, "0123456789");
	p += n;
	if (*p == '.') {
		size_t f = strspn(p + 1, "0123456789");
		if (!n && !f)
			return akk_yaml_fail_type(c, subject, "a number", val);
		p += 1 + f;
	} else if (!n) {
		return akk_yaml_fail_type(c, subject, "a number", val);
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		n = strspn(p, "0123456789");
		if (!n)
			return akk_yaml_fail_type(c, subject, "a number", val);
		p += n;
	}
	if (*p)
		return akk_yaml_fail_type(c, subject, "a number", val);
	*out = strtod(akk_yaml_text(val), NULL);
	if (!isfinite(*out) || fabs(*out) > 3.4e38)
		return akk_yaml_fail(c, val, "%s is out of range, got %s", subject,
			    akk_yaml_text(val));
	return 0;
}

static int parse_bool(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
		      int *out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type == YAML_SCALAR_NODE &&
	    (akk_yaml_is_bare(val) || tagged(val, "bool"))) {
		if (!strcmp(akk_yaml_text(val), "true")) {
			*out = 1;
			return 0;
		}
		if (!strcmp(akk_yaml_text(val), "false")) {
			*out = 0;
			return 0;
		}
	}
	return akk_yaml_fail_type(c, subject, "true or false", val);
}

/* A non-empty string (any scalar style but null) into a new copy. */
int akk_yaml_parse_str(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
		     char **out)
{
	char subject[80];

	snprintf(subject, sizeof(subject), "'%s'", name);
	if (val->type != YAML_SCALAR_NODE || akk_yaml_is_null(val) || akk_yaml_tag_type(val))
		return akk_yaml_fail_type(c, subject, "a string", val);
	if (!val->data.scalar.length)
		return akk_yaml_fail(c, val, "%s must not be empty", subject);
	if (strlen(akk_yaml_text(val)) != val->data.scalar.length)
		return akk_yaml_fail(c, val, "%s must not contain a NUL character",
			    subject);
	*out = strdup(akk_yaml_text(val));
	if (!*out)
		return akk_err_set(c->e, "out of memory");
	return 0;
}

/* v against k's bounds; as follows the value in the message. */
int akk_yaml_check_range(struct akk_yaml_ctx *c, const struct key *k, yaml_node_t *val,
		       double v, const char *as)
{
	if (k->flags & F_LO) {
		if (k->flags & F_LO_OPEN ? !(v > k->lo) : !(v >= k->lo))
			return akk_yaml_fail(c, val, "'%s' must be %s %.10g, got %s%s",
				    k->name, k->flags & F_LO_OPEN ?
				    "greater than" : "at least", k->lo,
				    akk_yaml_text(val), as);
	}
	if (k->flags & F_HI) {
		if (k->flags & F_HI_OPEN ? !(v < k->hi) : !(v <= k->hi))
			return akk_yaml_fail(c, val, "'%s' must be %s %.10g, got %s%s",
				    k->name, k->flags & F_HI_OPEN ?
				    "less than" : "at most", k->hi,
				    akk_yaml_text(val), as);
	}
	return 0;
}

int akk_yaml_h_int(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		 yaml_node_t *key, yaml_node_t *val)
{
	long long v;

	(void)key;
	if (akk_yaml_parse_int(c, k->name, val, &v))
		return -1;
	if (!(k->flags & F_HI) && v > INT_MAX)
		return akk_yaml_fail(c, val, "'%s' must be at most %d, got %s", k->name,
			    INT_MAX, akk_yaml_text(val));
	if (!(k->flags & F_LO) && v < INT_MIN)
		return akk_yaml_fail(c, val, "'%s' must be at least %d, got %s", k->name,
			    INT_MIN, akk_yaml_text(val));
	if (akk_yaml_check_range(c, k, val, (double)v, ""))
		return -1;
	*FIELD(sec->obj, k, int) = (int)v;
	return 0;
}

/* A list of 1 to 3 sizes, each from 1 to INT_MAX, into the struct
 * akk_shape at k's field: network.input, reshape's shape. */
int akk_yaml_h_shape(struct akk_yaml_ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	const struct key dim = { .name = k->name, .flags = F_LO | F_HI,
				 .lo = 1, .hi = INT_MAX };
	struct akk_shape *out = FIELD(sec->obj, k, struct akk_shape);

	(void)key;
	if (n < 1 || n > 3)
		return akk_yaml_fail(c, val, "'%s' must have 1, 2 or 3 dimensions, "
				     "got %d", k->name, n);
	out->rank = n;
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		long long v;
		if (akk_yaml_parse_int(c, k->name, item, &v) ||
		    akk_yaml_check_range(c, &dim, item, (double)v, ""))
			return -1;
		out->d[i] = (int)v;
	}
	return 0;
}

int akk_yaml_h_float(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	double v = 0;
	float f;
	char as[64];

	(void)key;
	if (parse_float(c, k->name, val, &v) || akk_yaml_check_range(c, k, val, v, ""))
		return -1;
	/* What is stored is the float: check it again as that. */
	f = (float)v;
	if (v != 0 && !(fabsf(f) >= FLT_MIN))
		return akk_yaml_fail(c, val, "'%s' is too small for a float: %s is "
			    "stored as %.9g", k->name, akk_yaml_text(val), (double)f);
	snprintf(as, sizeof(as), " (%.9g as a float)", (double)f);
	if (akk_yaml_check_range(c, k, val, (double)f, as))
		return -1;
	*FIELD(sec->obj, k, float) = f;
	return 0;
}

int akk_yaml_h_bool(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		  yaml_node_t *key, yaml_node_t *val)
{
	(void)key;
	return parse_bool(c, k->name, val, FIELD(sec->obj, k, int));
}

int akk_yaml_h_str(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		 yaml_node_t *key, yaml_node_t *val)
{
	char *v;

	(void)key;
	if (akk_yaml_parse_str(c, k->name, val, &v))
		return -1;
	free(*FIELD(sec->obj, k, char *));
	*FIELD(sec->obj, k, char *) = v;
	return 0;
}

/* dir/rel as one path, each leading "../" of rel taken back from dir's
 * last component while that component is a directory and no symbolic
 * link (then "d/.." is exactly d's parent, so the path names the same
 * file): "configs" and "../runs/x" give "runs/x", not "configs/../runs/x".
 * NULL when out of memory. */
static char *join_path(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 3;
	char *b = malloc(n), *out;
	size_t bl;

	if (!b)
		return NULL;
	snprintf(b, n, "%s", dir);
	for (bl = strlen(b); bl > 1 && b[bl - 1] == '/'; )
		b[--bl] = '\0';
	while (!strncmp(rel, "../", 3) && bl > 0) {
		char *last = strrchr(b, '/');
		const char *comp = last ? last + 1 : b;
		struct stat st;

		if (!*comp || !strcmp(comp, ".") || !strcmp(comp, "..") ||
		    lstat(b, &st) || !S_ISDIR(st.st_mode))
			break;
		if (last)
			*(last == b ? last + 1 : last) = '\0';
		else
			b[0] = '\0';
		bl = strlen(b);
		for (rel += 3; *rel == '/'; rel++)
			;
	}
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s%s", b, !bl || b[bl - 1] == '/' ? "" : "/",
			 *rel || bl ? rel : ".");
	free(b);
	return out;
}

/* A path, resolved against the config file's directory when relative. */
int akk_yaml_h_path(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		  yaml_node_t *key, yaml_node_t *val)
{
	char *v, *joined;
	const char *b = c->base_dir;

	if (akk_yaml_h_str(c, k, sec, key, val))
		return -1;
	v = *FIELD(sec->obj, k, char *);
	if (c->note_path && c->note_path(c, FIELD(sec->obj, k, char *), val))
		return -1;
	if (v[0] == '/' || !b || !b[0] || !strcmp(b, "."))
		return 0;
	if (!(joined = join_path(b, v)))
		return akk_err_set(c->e, "out of memory");
	free(v);
	*FIELD(sec->obj, k, char *) = joined;
	return 0;
}

/* --- mappings ------------------------------------------------------------ */

/* The value of key name in mapping m (the first one), or NULL. */
yaml_node_t *akk_yaml_map_get(struct akk_yaml_ctx *c, yaml_node_t *m, const char *name,
			    yaml_node_t **keyp)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = akk_yaml_node(c, p->key);
		if (k->type == YAML_SCALAR_NODE && !strcmp(akk_yaml_text(k), name)) {
			if (keyp)
				*keyp = k;
			return akk_yaml_node(c, p->value);
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
int akk_yaml_walk(struct akk_yaml_ctx *c, yaml_node_t *m, const struct section *sec)
{
	yaml_node_pair_t *pairs = m->data.mapping.pairs.start;
	int npairs = (int)(m->data.mapping.pairs.top - pairs);
	char in[128], sug[96], buf[96];
	const struct key *k;
	size_t nkeys = 0;

	while (sec->keys[nkeys].name)
		nkeys++;
	for (int i = 0; i < npairs; i++) {
		yaml_node_t *kn = akk_yaml_node(c, pairs[i].key);
		if (kn->type != YAML_SCALAR_NODE || akk_yaml_tag_type(kn))
			return akk_yaml_fail(c, kn, "a key must be a name, got %s",
				    akk_yaml_describe(kn, buf, sizeof(buf)));
		for (k = sec->keys; k->name && strcmp(k->name, akk_yaml_text(kn)); k++)
			;
		if (!k->name)
			return akk_yaml_fail(c, kn, "unknown key '%s'%s%s", akk_yaml_text(kn),
				    in_section(sec, in, sizeof(in)),
				    akk_yaml_suggest(akk_yaml_text(kn), sec->keys, nkeys,
					    sizeof(*k), sug, sizeof(sug)));
		for (int j = 0; j < i; j++) {
			yaml_node_t *first = akk_yaml_node(c, pairs[j].key);
			if (first->type != YAML_SCALAR_NODE ||
			    strcmp(akk_yaml_text(first), akk_yaml_text(kn)))
				continue;
			struct akk_mark fm = akk_yaml_mark_of(c, first);
			if (fm.line)
				snprintf(buf, sizeof(buf), "line %d", fm.line);
			else
				snprintf(buf, sizeof(buf), "--set");
			return akk_yaml_fail(c, kn, "duplicate key '%s'%s (first at %s)",
				    akk_yaml_text(kn), in_section(sec, in, sizeof(in)),
				    buf);
		}
	}
	for (k = sec->keys; k->name; k++)
		if ((k->flags & F_REQ) && !sec->optional &&
		    !akk_yaml_map_get(c, m, k->name, NULL))
			return akk_yaml_fail(c, m, "missing required key '%s'%s",
				    k->name, in_section(sec, in, sizeof(in)));
	for (k = sec->keys; k->name; k++) {
		yaml_node_t *kn, *val = akk_yaml_map_get(c, m, k->name, &kn);
		if (!val)
			continue;
		if (k->applies && sec->kind_off) {
			int kind = *(const int *)((const char *)sec->obj +
						  sec->kind_off - 1);
			if (!(k->applies & (1u << kind)))
				return akk_yaml_fail(c, kn,
					    "'%s' does not apply to %s '%s'",
					    k->name, sec->kind_what,
					    sec->kind_names[kind]);
		}
		if (k->type != YAML_NO_NODE && val->type != k->type) {
			char subject[80];
			snprintf(subject, sizeof(subject), "'%s'", k->name);
			return akk_yaml_fail_type(c, subject, k->what, val);
		}
		if (k->fn(c, k, sec, kn, val))
			return -1;
	}
	return 0;
}

/* --- the two generic key kinds: a name list and a sub-section ------------ */

/* A name list: val must be one of k->names; its index goes into the int
 * (or enum) field, unless F_NOSTORE. */
int akk_yaml_h_names(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	char subject[80];
	int kind = 0;

	(void)key;
	snprintf(subject, sizeof(subject), "'%s'", k->name);
	if (find_name(c, subject, val, k->names, k->noun, &kind))
		return -1;
	if (!(k->flags & F_NOSTORE))
		*FIELD(sec->obj, k, int) = kind;
	return 0;
}

/* A sub-section: the mapping val walked with k->keys into the struct at
 * k->off of obj, named "PARENT.KEY" ("PARENT KEY" with F_SPACED); a scalar
 * sets k->shorthand, reported as k's own name. */
int akk_yaml_h_section(struct akk_yaml_ctx *c, const struct key *k,
		     const struct section *sec, yaml_node_t *key,
		     yaml_node_t *val)
{
	char name[128], subject[80];
	struct section sub = { name, k->keys, (char *)sec->obj + k->off,
			       !!(k->flags & F_OPTIONAL), 0, NULL,
			       k->kind_what };
	const struct key *sk;

	if (sec->name)
		snprintf(name, sizeof(name), "%s%c%s", sec->name,
			 k->flags & F_SPACED ? ' ' : '.', k->name);
	else
		snprintf(name, sizeof(name), "%s", k->name);
	/* The kind of the sub-section's object is its "type" key. */
	for (sk = k->keys; k->kind_what && strcmp(sk->name, "type"); sk++)
		;
	if (k->kind_what) {
		sub.kind_off = sk->off + 1;
		sub.kind_names = sk->names;
	}
	if (k->mark_off)
		*(struct akk_mark *)((char *)sec->obj + k->mark_off - 1) =
			akk_yaml_mark_of(c, k->flags & F_VAL_MARK ? val : key);
	if (k->set_off)
		*(int *)((char *)sec->obj + k->set_off - 1) = 1;
	if (val->type == YAML_SCALAR_NODE && k->shorthand) {
		struct key as;
		for (sk = k->keys; strcmp(sk->name, k->shorthand); sk++)
			;
		as = *sk;
		as.name = k->name;
		return as.fn(c, &as, &sub, key, val);
	}
	if (val->type != YAML_MAPPING_NODE) {
		snprintf(subject, sizeof(subject), "'%s'", k->name);
		return akk_yaml_fail_type(c, subject, k->what, val);
	}
	return akk_yaml_walk(c, val, &sub);
}
