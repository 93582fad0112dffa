/* explicit.c - a config with its gates written out (explicit.h). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/explicit.h"
#include "config/overrides.h"

struct copy {
	yaml_document_t *from, *to;
	const struct akk_spec *s;
	int bad;		/* 1: out of memory or a shape we do not know */
	int split;		/* 1: network.layers becomes network.gates */
	/* Relative paths move from the config's directory to the written
	 * file's (both canonical, absolute); up: the "../"s from the new
	 * directory to their common ancestor, down: the rest of the old one
	 * below it ("" or "a/b/"). rebase 0: paths stay as written. */
	int rebase;
	char up[4096], down[4096];
};

/* The keys whose values (a string, or a list of them) are paths. */
static const char *const path_keys[] = {
	"images", "labels", "file", "targets_file", "features", "files", "folder",
	"list", "dir", NULL
};

static yaml_node_t *get(yaml_document_t *d, int id)
{
	return yaml_document_get_node(d, id);
}

static int is_key(yaml_node_t *k, const char *name)
{
	return k->type == YAML_SCALAR_NODE &&
		!strcmp((const char *)k->data.scalar.value, name);
}

static int scalar(struct copy *c, const char *v)
{
	int id = yaml_document_add_scalar(c->to, NULL, (yaml_char_t *)v, -1,
					  YAML_ANY_SCALAR_STYLE);
	if (!id)
		c->bad = 1;
	return id;
}

static int copy_node(struct copy *c, int id, int depth);

/* c->up and c->down for moving relative paths from directory from to
 * directory to (both canonical): 0, or -1 when they do not fit. */
static int plan_rebase(struct copy *c, const char *from, const char *to)
{
	size_t common = 0, i;
	int n;

	/* the longest common prefix of whole components */
	for (i = 0; from[i] && from[i] == to[i]; i++)
		if (from[i] == '/')
			common = i + 1;
	if ((!from[i] || from[i] == '/') && (!to[i] || to[i] == '/'))
		common = i;
	c->up[0] = c->down[0] = '\0';
	for (const char *p = to + common; *p; p++)
		if (*p != '/' && (p == to + common || p[-1] == '/') &&
		    strlen(c->up) + 4 < sizeof(c->up))
			strcat(c->up, "../");
	while (from[common] == '/')
		common++;
	n = snprintf(c->down, sizeof(c->down), "%s%s", from + common,
		     from[common] ? "/" : "");
	c->rebase = 1;
	return n < (int)sizeof(c->down) ? 0 : -1;
}

/* A path scalar of from, moved as c says when relative. */
static int path_scalar(struct copy *c, yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	char *moved;
	size_t len;
	int id;

	if (!c->rebase || v[0] == '/' || !v[0])
		return yaml_document_add_scalar(c->to, NULL, n->data.scalar.value,
						(int)n->data.scalar.length,
						n->data.scalar.style);
	char down[sizeof(c->down)];
	size_t dl;

	/* each leading "../" of v takes back a component of down: the old
	 * directory is canonical, so its components are real directories */
	snprintf(down, sizeof(down), "%s", c->down);
	for (dl = strlen(down); dl && !strncmp(v, "../", 3); v += 3) {
		down[--dl] = '\0';
		while (dl && down[dl - 1] != '/')
			down[--dl] = '\0';
	}
	len = strlen(c->up) + dl + strlen(v) + 2;
	if (!(moved = malloc(len)))
		return 0;
	snprintf(moved, len, "%s%s%s", c->up, down, *v || *c->up || dl ? v : ".");
	id = yaml_document_add_scalar(c->to, NULL, (yaml_char_t *)moved, -1,
				      n->data.scalar.style);
	free(moved);
	return id;
}

/* The value of a path key: a scalar, or a list of scalars (files). */
static int path_value(struct copy *c, int id)
{
	yaml_node_t *n = get(c->from, id);
	int out;

	if (!n)
		return 0;
	if (n->type == YAML_SCALAR_NODE)
		return path_scalar(c, n);
	if (n->type != YAML_SEQUENCE_NODE)
		return copy_node(c, id, 2);
	out = yaml_document_add_sequence(c->to, NULL, n->data.sequence.style);
	for (yaml_node_item_t *i = n->data.sequence.items.start;
	     out && i < n->data.sequence.items.top; i++) {
		yaml_node_t *item = get(c->from, *i);
		int v = item && item->type == YAML_SCALAR_NODE ? path_scalar(c, item) :
			copy_node(c, *i, 2);
		if (!v || !yaml_document_append_sequence_item(c->to, out, v))
			return 0;
	}
	return out;
}

static int is_path_key(yaml_node_t *k)
{
	for (int i = 0; path_keys[i]; i++)
		if (is_key(k, path_keys[i]))
			return 1;
	return 0;
}

/* --- graphs unfolded: their nodes as the layers of branch gates ------- */

/* The nodes list of the graph layer item (a mapping {graph: NODES} or
 * {graph: {nodes: NODES, ...}}), or NULL. */
static yaml_node_t *graph_nodes(struct copy *c, yaml_node_t *item)
{
	yaml_node_t *v = NULL;

	for (yaml_node_pair_t *p = item && item->type == YAML_MAPPING_NODE ?
		     item->data.mapping.pairs.start : NULL;
	     p && p < item->data.mapping.pairs.top; p++)
		if (is_key(get(c->from, p->key), "graph"))
			v = get(c->from, p->value);
	if (v && v->type == YAML_MAPPING_NODE) {
		yaml_node_t *m = v;
		v = NULL;
		for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
		     p < m->data.mapping.pairs.top; p++)
			if (is_key(get(c->from, p->key), "nodes"))
				v = get(c->from, p->value);
	}
	return v && v->type == YAML_SEQUENCE_NODE ? v : NULL;
}

static int is_null(yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		(!*v || !strcmp(v, "~") || !strcmp(v, "null"));
}

/* A graph's node item written at layer spec l's mark, as a gate's layer:
 * without its name and from ({name: r, relu} becomes relu). */
static int node_layer(struct copy *c, yaml_node_t *nodes, const struct akk_layer_spec *l)
{
	for (yaml_node_item_t *i = nodes->data.sequence.items.start;
	     i < nodes->data.sequence.items.top; i++) {
		yaml_node_t *n = get(c->from, *i), *key = NULL, *val = NULL;
		int kept = 0, out;
		if ((int)n->start_mark.line + 1 != l->mark.line ||
		    (int)n->start_mark.column + 1 != l->mark.col)
			continue;
		if (n->type != YAML_MAPPING_NODE)
			return copy_node(c, *i, 2);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++)
			if (!is_key(get(c->from, p->key), "name") &&
			    !is_key(get(c->from, p->key), "from"))
				kept++, key = get(c->from, p->key), val = get(c->from, p->value);
		if (kept == 1 && is_null(val))
			return scalar(c, (const char *)key->data.scalar.value);
		out = yaml_document_add_mapping(c->to, NULL, YAML_FLOW_MAPPING_STYLE);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     out && p < n->data.mapping.pairs.top; p++) {
			int k, v;
			if (is_key(get(c->from, p->key), "name") ||
			    is_key(get(c->from, p->key), "from"))
				continue;
			k = copy_node(c, p->key, 2);
			v = copy_node(c, p->value, 2);
			if (!k || !v || !yaml_document_append_mapping_pair(c->to, out, k, v))
				return c->bad = 1, 0;
		}
		return out ? out : (c->bad = 1, 0);
	}
	return c->bad = 1, 0;
}

/* Gate g's name (g1, g2, ...) or input, as a scalar. */
static int gate_ref(struct copy *c, int g)
{
	char name[16];

	if (g < 0)
		return scalar(c, "input");
	snprintf(name, sizeof(name), "g%d", g + 1);
	return scalar(c, name);
}

/* Gate g's keys other than layers when graphs unfold: its name, and what
 * it reads when a branch or not the gate before it, with the join. */
static void gate_keys(struct copy *c, int m, int g, int branch)
{
	const struct akk_gate_spec *gs = &c->s->gates[g];
	int from;

	if (!c->s->auto_nunfold || c->bad)
		return;
	if (!yaml_document_append_mapping_pair(c->to, m, scalar(c, "name"), gate_ref(c, g)))
		c->bad = 1;
	if (gs->nfrom == 1 && gs->from[0] == g - 1 && !branch)
		return;
	if (gs->nfrom == 1) {
		from = gate_ref(c, gs->from[0]);
	} else {
		from = yaml_document_add_sequence(c->to, NULL, YAML_FLOW_SEQUENCE_STYLE);
		for (int k = 0; from && k < gs->nfrom; k++)
			if (!yaml_document_append_sequence_item(c->to, from, gate_ref(c, gs->from[k])))
				c->bad = 1;
	}
	if (!from || !yaml_document_append_mapping_pair(c->to, m, scalar(c, "from"), from) ||
	    (gs->nfrom > 1 &&
	     !yaml_document_append_mapping_pair(c->to, m, scalar(c, "join"),
						scalar(c, akk_join_name(gs->join)))))
		c->bad = 1;
}

/* Whether gate g is a branch of a graph unfolded: read by a gate that
 * joins; *last: it is the join's last. */
static int is_branch(const struct akk_spec *s, int g, int *last)
{
	for (int j = g + 1; j < s->ngates; j++)
		for (int k = 0; s->gates[j].nfrom > 1 && k < s->gates[j].nfrom; k++)
			if (s->gates[j].from[k] == g) {
				*last = k + 1 == s->gates[j].nfrom;
				return 1;
			}
	return 0;
}

/* The gates: one mapping {layers: [...]} per gate, over the items of the
 * flat list; a branch of a graph unfolded takes its nodes' items. */
static int gates(struct copy *c, yaml_node_t *flat)
{
	yaml_node_item_t *items = flat->data.sequence.items.start;
	int n = (int)(flat->data.sequence.items.top - items), at = 0;
	int list = yaml_document_add_sequence(c->to, NULL, YAML_BLOCK_SEQUENCE_STYLE);

	if (!list)
		return c->bad = 1, 0;
	for (int g = 0; g < c->s->ngates && !c->bad; g++) {
		const struct akk_gate_spec *gs = &c->s->gates[g];
		int m = yaml_document_add_mapping(c->to, NULL, YAML_FLOW_MAPPING_STYLE);
		int seq = yaml_document_add_sequence(c->to, NULL,
						     flat->data.sequence.style);
		int last = 0, branch = is_branch(c->s, g, &last);
		yaml_node_t *nodes = branch && at < n ? graph_nodes(c, get(c->from, items[at])) : NULL;
		if (!m || !seq || (branch && !nodes) || (!branch && at + gs->nlayers > n))
			return c->bad = 1, 0;
		gate_keys(c, m, g, branch);
		for (int i = 0; i < gs->nlayers; i++) {
			int item = branch ? node_layer(c, nodes, &gs->layers[i]) :
				copy_node(c, items[at++], 1);
			if (!item || !yaml_document_append_sequence_item(c->to, seq, item))
				return c->bad = 1, 0;
		}
		at += branch && last;
		if (!yaml_document_append_mapping_pair(c->to, m, scalar(c, "layers"), seq) ||
		    !yaml_document_append_sequence_item(c->to, list, m))
			return c->bad = 1, 0;
	}
	if (at != n)
		c->bad = 1;
	return list;
}

/* Copy node id of from into to; depth 0 is the root and 1 its values, where
 * the network mapping is rewritten. */
static int copy_node(struct copy *c, int id, int depth)
{
	yaml_node_t *n = get(c->from, id);
	int out = 0;

	if (c->bad || !n)
		return c->bad = 1, 0;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		out = yaml_document_add_scalar(c->to, NULL, n->data.scalar.value,
					       (int)n->data.scalar.length,
					       n->data.scalar.style);
		break;
	case YAML_SEQUENCE_NODE:
		out = yaml_document_add_sequence(c->to, NULL, n->data.sequence.style);
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     out && i < n->data.sequence.items.top; i++) {
			int item = copy_node(c, *i, depth + 1);
			if (!item || !yaml_document_append_sequence_item(c->to, out, item))
				return c->bad = 1, 0;
		}
		break;
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *p, *top = n->data.mapping.pairs.top;
		yaml_node_t *flat = NULL;
		out = yaml_document_add_mapping(c->to, NULL, n->data.mapping.style);
		/* the network mapping: the root's value of key network */
		int network = 0;
		if (depth == 1 && c->split) {
			yaml_node_t *root = yaml_document_get_root_node(c->from);
			for (p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++)
				if (p->value == id && is_key(get(c->from, p->key), "network"))
					network = 1;
		}
		for (p = n->data.mapping.pairs.start; network && p < top; p++)
			if (is_key(get(c->from, p->key), "layers"))
				flat = get(c->from, p->value);
		if (network && (!flat || flat->type != YAML_SEQUENCE_NODE))
			return c->bad = 1, 0;
		for (p = n->data.mapping.pairs.start; out && p < top; p++) {
			yaml_node_t *k = get(c->from, p->key);
			int kid, vid;
			if (network && is_key(k, "layers"))
				continue;
			kid = copy_node(c, p->key, depth + 1);
			vid = network && is_key(k, "gates") ? gates(c, flat) :
				depth >= 1 && is_path_key(k) ? path_value(c, p->value) :
				copy_node(c, p->value, depth + 1);
			if (!kid || !vid ||
			    !yaml_document_append_mapping_pair(c->to, out, kid, vid))
				return c->bad = 1, 0;
		}
		break;
	}
	default:
		break;
	}
	if (!out)
		c->bad = 1;
	return out;
}

static int write_out(void *data, unsigned char *buf, size_t size)
{
	return fwrite(buf, 1, size, data) == size;
}

/* The plan that moves the config's relative paths to directory to_dir. */
static int rebase_to(struct copy *c, const struct akk_spec *s, const char *to_dir,
		     struct akk_err *e)
{
	char *from = NULL, *to = NULL, *cfg = s->path ? strdup(s->path) : NULL;
	int rc = -1;

	if (!cfg)
		return akk_err_set(e, "the config has no file to move its paths from");
	if (!(from = realpath(dirname(cfg), NULL)))
		akk_err_set(e, "cannot resolve the directory of '%s': %s", s->path, strerror(errno));
	else if (!(to = realpath(to_dir, NULL)))
		akk_err_set(e, "cannot resolve '%s': %s", to_dir, strerror(errno));
	else if (plan_rebase(c, from, to))
		akk_err_set(e, "the path from '%s' to '%s' is too long", to, from);
	else
		rc = 0;
	free(from);
	free(to);
	free(cfg);
	return rc;
}

/* Emit doc (deleted, as yaml_emitter_dump does) as YAML text into *out. */
static int emit(yaml_document_t *doc, char **out, size_t *len, struct akk_err *e)
{
	yaml_emitter_t emitter;
	FILE *f = open_memstream(out, len);
	int rc = -1;

	if (!f) {
		yaml_document_delete(doc);
		return akk_err_set(e, "out of memory");
	}
	if (!yaml_emitter_initialize(&emitter)) {
		yaml_document_delete(doc);
		fclose(f);
		free(*out);
		*out = NULL;
		return akk_err_set(e, "out of memory");
	}
	yaml_emitter_set_output(&emitter, write_out, f);
	yaml_emitter_set_unicode(&emitter, 1);
	yaml_emitter_set_width(&emitter, 100);
	if (!yaml_emitter_dump(&emitter, doc) || !yaml_emitter_close(&emitter))
		akk_err_set(e, "cannot write YAML: %s",
			    emitter.problem ? emitter.problem : "unknown error");
	else
		rc = 0;
	yaml_emitter_delete(&emitter);
	if (fclose(f) && !rc)
		rc = akk_err_set(e, "out of memory");
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

int akk_spec_explicit_yaml(const struct akk_spec *s, const char *to_dir,
			   char **out, size_t *len, struct akk_err *e)
{
	yaml_parser_t parser;
	yaml_document_t from, to;
	struct copy c = { .from = &from, .to = &to, .s = s, .split = 1 };
	int rc = -1, loaded = 0, made = 0;

	*out = NULL;
	*len = 0;
	if (!s->auto_gates || !s->auto_split)
		return akk_err_set(e, "the config has no gates: {auto: N} to write out");
	if (to_dir && rebase_to(&c, s, to_dir, e))
		return -1;
	if (!yaml_parser_initialize(&parser))
		return akk_err_set(e, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)s->text,
				     strlen(s->text));
	if (!yaml_parser_load(&parser, &from) ||
	    !yaml_document_get_root_node(&from)) {
		akk_err_set(e, "cannot read the config again");
		goto out_parser;
	}
	loaded = 1;
	if (!yaml_document_initialize(&to, NULL, NULL, NULL, 1, 1)) {
		akk_err_set(e, "out of memory");
		goto out_parser;
	}
	made = 1;
	copy_node(&c, 1, 0);
	if (c.bad) {
		int n = 0;
		for (int g = 0; g < s->ngates; g++)
			n += s->gates[g].nlayers;
		akk_err_set(e, "cannot write the gates out: network.layers in the config's text does not hold the %d layers split", n);
		goto out_parser;
	}
	made = 0;	/* emit deletes the document */
	rc = emit(&to, out, len, e);
out_parser:
	if (made)
		yaml_document_delete(&to);
	if (loaded)
		yaml_document_delete(&from);
	yaml_parser_delete(&parser);
	return rc;
}

/* doc copied into a new document whose relative paths name the same files
 * from to_dir; doc is deleted either way. */
static int rebased(const struct akk_spec *s, yaml_document_t *doc, const char *to_dir,
		   yaml_document_t *to, struct akk_err *e)
{
	struct copy c = { .from = doc, .to = to, .s = s };
	int rc = -1;

	if (rebase_to(&c, s, to_dir, e))
		goto out;
	if (!yaml_document_initialize(to, NULL, NULL, NULL, 1, 1)) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	copy_node(&c, 1, 0);
	if (c.bad) {
		yaml_document_delete(to);
		akk_err_set(e, "out of memory");
		goto out;
	}
	rc = 0;
out:
	yaml_document_delete(doc);
	return rc;
}

int akk_spec_resolved_yaml(const struct akk_spec *s, const char *to_dir, char **out,
			   size_t *len, struct akk_err *e)
{
	struct akk_yaml_ctx c;
	yaml_document_t moved;
	int rc = -1, have_doc = 0;

	*out = NULL;
	*len = 0;
	memset(&c, 0, sizeof(c));
	c.file = s->path ? s->path : "";
	c.e = e;
	c.sets = (const char *const *)s->sets;
	c.max_bytes = AKK_SPEC_MAX_BYTES;
	c.max_depth = AKK_SPEC_MAX_DEPTH;
	if (s->nsets > 0 &&
	    (!(c.set_lo = calloc((size_t)s->nsets, sizeof(int))) ||
	     !(c.set_hi = calloc((size_t)s->nsets, sizeof(int))))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_overrides_load(&c, &c.doc, s->text, strlen(s->text), -1))
		goto out;
	have_doc = 1;
	for (int i = 0; i < s->nsets; i++) {
		c.set_lo[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
		if (akk_overrides_apply(&c, i))
			goto out;
		c.set_hi[i] = (int)(c.doc.nodes.top - c.doc.nodes.start);
	}
	have_doc = 0;
	if (!to_dir)
		rc = emit(&c.doc, out, len, e);
	else if (!rebased(s, &c.doc, to_dir, &moved, e))
		rc = emit(&moved, out, len, e);
out:
	if (have_doc)
		yaml_document_delete(&c.doc);
	free(c.set_lo);
	free(c.set_hi);
	free(c.strs);
	return rc;
}
