/* yaml_keys.h - walking a YAML mapping with a key table, netplan's way
 * (internal to config/: spec.c's sections are tables of these keys).
 *
 * Every mapping is walked with a key table {key, node type, handler,
 * range, default}: unknown keys (with the nearest key suggested),
 * duplicates and missing required keys are rejected before the handlers
 * run in table order. Besides scalars, two generic key kinds are
 * described by the table alone: a name list (akk_yaml_h_names) and a
 * sub-section with its own key table (akk_yaml_h_section). Reports go to
 * the node's file:line:col, or to the --set argument the node came from. */
#ifndef AKK_YAML_KEYS_H
#define AKK_YAML_KEYS_H

#include <stddef.h>
#include <yaml.h>

#include "config/overrides.h"
#include "nn/layer.h"

struct key;
struct section {
	const char *name;		/* "schedule", "gate 2"; NULL = top */
	const struct key *keys;
	void *obj;
	int optional;			/* 1: no key is required (gate optimizer) */
	/* For keys that apply to some kinds only: 1 + the offset of the int
	 * field of obj that holds the current kind (0: no kinds; read when
	 * the key's handler runs), its names, and what a kind is called
	 * ("optimizer"). */
	size_t kind_off;
	const char *const *kind_names;
	const char *kind_what;
};

/* A key's handler: val (of the key's node type, unless NO_NODE) into
 * sec->obj. key is the key node (NULL for a shorthand value). */
typedef int (*handler)(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val);

/* Range flags as layer.h's options have them, then flags of our own. */
enum {
	F_REQ = AKK_OPTION_REQ, F_LO = AKK_OPTION_LO, F_HI = AKK_OPTION_HI,
	F_LO_OPEN = AKK_OPTION_LO_OPEN, F_HI_OPEN = AKK_OPTION_HI_OPEN,
	F_OPTIONAL = 32,	/* section: none of its keys is required */
	F_SPACED = 64,		/* section named "PARENT KEY", not "PARENT.KEY" */
	F_VAL_MARK = 128,	/* section: the mark is the value's, not the key's */
	F_NOSTORE = 256,	/* name list: checked, not stored */
};

/* A key of a section. Scalars (h_int, h_float, h_bool, h_str, h_path) and
 * the two generic kinds, a name list (h_names) and a sub-section
 * (h_section), are described by the table; other keys have a handler. */
struct key {
	const char *name;
	yaml_node_type_t type;	/* checked before the handler; NO_NODE: any */
	handler fn;
	const char *what;	/* the expected type, for messages */
	size_t off;		/* field of obj (a section: its struct) */
	unsigned flags;
	double lo, hi;		/* range, per flags */
	unsigned applies;	/* bit per kind; 0 = every kind */
	double def;		/* default of a number, bool or name */
	/* A name list: the names (NULL-terminated) and what one is called. */
	const char *const *names;
	const char *noun;
	/* A sub-section: its keys; the key a scalar value stands for (NULL:
	 * a mapping only); 1 + offsets in obj of the struct akk_mark to set
	 * and of an int set to 1 when present (0: none); what its kinds are
	 * called when some keys apply to some kinds (its "type" key). */
	const struct key *keys;
	const char *shorthand;
	size_t mark_off, set_off;
	const char *kind_what;
};

#define FIELD(obj, k, type) ((type *)((char *)(obj) + (k)->off))

/* Table entries; T_ is the struct of the section, F_ a field of it. */
#define KEY(K_, N_, H_, W_, T_, F_, FL_, LO_, HI_, AP_, D_)                 \
	{ .name = K_, .type = YAML_##N_##_NODE, .fn = H_, .what = W_,       \
	  .off = offsetof(T_, F_), .flags = FL_, .lo = LO_, .hi = HI_,      \
	  .applies = AP_, .def = D_ }
#define INT(K_, T_, F_, FL_, LO_, HI_, D_)                                  \
	KEY(K_, SCALAR, akk_yaml_h_int, "an integer", T_, F_, FL_, LO_, HI_, 0, D_)
#define FLOAT(K_, T_, F_, FL_, LO_, HI_, AP_, D_)                           \
	KEY(K_, SCALAR, akk_yaml_h_float, "a number", T_, F_, FL_, LO_, HI_, AP_, D_)
#define BOOL(K_, T_, F_, D_)                                                \
	KEY(K_, SCALAR, akk_yaml_h_bool, "true or false", T_, F_, 0, 0, 0, 0, D_)
#define STR(K_, H_, T_, F_, FL_)                                            \
	KEY(K_, SCALAR, H_, "a string", T_, F_, FL_, 0, 0, 0, 0)
/* A name list: the index of the name into an int or enum field. */
#define NAMES(K_, T_, F_, FL_, LIST_, NOUN_, D_)                            \
	{ .name = K_, .type = YAML_NO_NODE, .fn = akk_yaml_h_names, .what = "a name", \
	  .off = offsetof(T_, F_), .flags = FL_, .def = D_, .names = LIST_, \
	  .noun = NOUN_ }
/* A sub-section filling the struct at OFF_ of the section's (0: the same
 * struct); MARK_: MARK(T_, F_), a struct akk_mark set from its key, or 0. */
#define SECTION(K_, OFF_, FL_, KEYS_, MARK_)                                \
	{ .name = K_, .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,  \
	  .what = "a mapping", .off = OFF_, .flags = FL_, .keys = KEYS_,    \
	  .mark_off = MARK_ }
#define MARK(T_, F_) (offsetof(T_, F_) + 1)
#define END { .name = NULL }

/* The helpers of the key handlers: see yaml_keys.c. */
int akk_yaml_check_range(struct akk_yaml_ctx *c, const struct key *k, yaml_node_t *val, double v,
			 const char *as);
size_t akk_yaml_count_names(const char *const *names);
const char *akk_yaml_describe(const yaml_node_t *n, char *buf, size_t size);
int akk_yaml_fail(struct akk_yaml_ctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int akk_yaml_fail_type(struct akk_yaml_ctx *c, const char *subject, const char *what,
		       yaml_node_t *val);
int akk_yaml_h_bool(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		    yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_float(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		     yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_int(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		   yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_names(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		     yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_shape(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		     yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_path(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		    yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_section(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		       yaml_node_t *key, yaml_node_t *val);
int akk_yaml_h_str(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		   yaml_node_t *key, yaml_node_t *val);
int akk_yaml_int_syntax(const char *p);
int akk_yaml_is_bare(const yaml_node_t *n);
int akk_yaml_is_null(const yaml_node_t *n);
yaml_node_t *akk_yaml_map_get(struct akk_yaml_ctx *c, yaml_node_t *m, const char *name,
			      yaml_node_t **keyp);
struct akk_mark akk_yaml_mark_of(const struct akk_yaml_ctx *c, const yaml_node_t *n);
int akk_yaml_node_set(const struct akk_yaml_ctx *c, const yaml_node_t *n);
int akk_yaml_parse_int(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val, long long *out);
int akk_yaml_parse_str(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val, char **out);
const char *akk_yaml_suggest(const char *word, const void *names, size_t n,
			     size_t stride, char *buf, size_t size);
const char *akk_yaml_tag_type(const yaml_node_t *n);
int akk_yaml_walk(struct akk_yaml_ctx *c, yaml_node_t *m, const struct section *sec);

#endif
