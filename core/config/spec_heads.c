/* spec_heads.c - network.outputs: the heads' key table, the list's
 * handler and the checks of the heads against the data and the loss. */
#include "config/spec_heads.h"

#include <stdlib.h>
#include <string.h>


const char *const akk_head_target_names[] = { "labels", "targets", "input", NULL };

#define HEAD struct akk_head_spec

static const struct key head_keys[] = {
	STR("name", akk_yaml_h_str, HEAD, name, F_REQ),
	INT("size", HEAD, size, F_LO | F_HI, 1, 1 << 30, 0),
	NAMES("loss", HEAD, loss, F_REQ, akk_loss_names, "loss", AKK_LOSS_SOFTMAX_CE),
	FLOAT("weight", HEAD, weight, F_LO | F_LO_OPEN | F_HI, 0, 1e30, 0, 1),
	FLOAT("delta", HEAD, huber_delta, F_LO | F_LO_OPEN, 0, 0, 1u << AKK_LOSS_HUBER, 1),
	NAMES("target", HEAD, target, 0, akk_head_target_names, "target",
	      AKK_TARGET_LABELS),
	END,
};

/* The keys' places in item, for the later checks. */
static void head_marks(struct akk_yaml_ctx *c, yaml_node_t *item, HEAD *h)
{
	yaml_node_t *v;

	h->mark = akk_yaml_mark_of(c, item);
	h->size_mark = (v = akk_yaml_map_get(c, item, "size", NULL)) ?
		       akk_yaml_mark_of(c, v) : h->mark;
	h->loss_mark = (v = akk_yaml_map_get(c, item, "loss", NULL)) ?
		       akk_yaml_mark_of(c, v) : h->mark;
	v = akk_yaml_map_get(c, item, "target", NULL);
	h->target_set = v != NULL;
	h->target_mark = v ? akk_yaml_mark_of(c, v) : h->mark;
}

int akk_spec_h_outputs(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	HEAD *heads = FIELD(sec->obj, k, HEAD);
	int *nheads = (int *)((char *)sec->obj + k->set_off - 1);
	struct akk_mark *mark = (struct akk_mark *)((char *)sec->obj + k->mark_off - 1);
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	char name[48];

	(void)key;
	*mark = akk_yaml_mark_of(c, val);
	if (n < 1)
		return akk_yaml_fail(c, val, "'outputs' needs at least one head");
	if (n > AKK_MAX_HEADS)
		return akk_yaml_fail(c, val, "too many outputs: %d, at most %d", n,
				     AKK_MAX_HEADS);
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		HEAD *h = &heads[i];
		struct section hs = { name, head_keys, h, 0,
				      offsetof(HEAD, loss) + 1, akk_loss_names, "loss" };

		snprintf(name, sizeof(name), "output %d", i + 1);
		memset(h, 0, sizeof(*h));
		h->weight = 1;
		h->huber_delta = 1;
		*nheads = i + 1;	/* released with the spec from here on */
		if (item->type != YAML_MAPPING_NODE)
			return akk_yaml_fail_type(c, name, "a mapping", item);
		if (akk_yaml_walk(c, item, &hs))
			return -1;
		head_marks(c, item, h);
	}
	return 0;
}

/* A head's target as the data allows it; -1 with e set if not. */
static int check_target(HEAD *h, const struct akk_data_spec *d, struct akk_shape input,
			const char *file, struct akk_err *e)
{
	int reg = d->task == AKK_TASK_REGRESSION;
	int elementwise = h->loss == AKK_LOSS_MSE || h->loss == AKK_LOSS_MAE ||
			  h->loss == AKK_LOSS_HUBER;
	long in = akk_shape_size(input);
	struct akk_mark *at = &h->target_mark;

	if (!h->target_set)
		h->target = reg ? AKK_TARGET_TARGETS : AKK_TARGET_LABELS;
	if (h->target == AKK_TARGET_LABELS && reg)
		return akk_err_at(e, file, at->line, at->col,
				  "output '%s' compares with labels, but data.task regression has none",
				  h->name);
	if (h->target == AKK_TARGET_TARGETS && !reg)
		return akk_err_at(e, file, at->line, at->col,
				  "output '%s' compares with targets, but the data has them only with data.task: regression",
				  h->name);
	if (h->target != AKK_TARGET_LABELS && !elementwise)
		return akk_err_at(e, file, h->loss_mark.line, h->loss_mark.col,
				  "output '%s' compares with float %s: its loss must be mse, mae or huber, not '%s'",
				  h->name, akk_head_target_names[h->target],
				  akk_loss_name(h->loss));
	if (h->target == AKK_TARGET_LABELS && h->size == 1)
		return akk_err_at(e, file, h->size_mark.line, h->size_mark.col,
				  "output '%s' compares with class labels: it needs at least 2 outputs, not 1",
				  h->name);
	if (h->target == AKK_TARGET_INPUT && h->size && h->size != in)
		return akk_err_at(e, file, h->size_mark.line, h->size_mark.col,
				  "output '%s' compares with the input, which has %ld values, but its size is %d",
				  h->name, in, h->size);
	if (h->target == AKK_TARGET_INPUT && d->augment)
		return akk_err_at(e, file, at->line, at->col,
				  "output '%s' compares with the input, which data.augment changes after it is read; drop one of them",
				  h->name);
	return 0;
}

int akk_spec_check_heads(HEAD *heads, int n, const struct akk_data_spec *d,
			 struct akk_shape input, struct akk_mark loss_mark, const char *file,
			 struct akk_err *e)
{
	if (!n)
		return 0;
	if (loss_mark.line)
		return akk_err_at(e, file, loss_mark.line, loss_mark.col,
				  "network.loss and network.outputs both given: each output names its own loss");
	for (int i = 0; i < n; i++) {
		HEAD *h = &heads[i];

		for (int j = 0; j < i; j++)
			if (!strcmp(heads[j].name, h->name))
				return akk_err_at(e, file, h->mark.line, h->mark.col,
						  "output name '%s' is used twice (first at line %d)",
						  h->name, heads[j].mark.line);
		if (!h->name[0] || h->name[strspn(h->name, "abcdefghijklmnopqrstuvwxyz"
						   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")])
			return akk_err_at(e, file, h->mark.line, h->mark.col,
					  "output name '%s' is not a name: letters, digits, '_' and '-' only (it names metrics columns)",
					  h->name);
		if (n > 1 && !h->size)
			return akk_err_at(e, file, h->mark.line, h->mark.col,
					  "output '%s' needs a size: with several outputs each is a slice of the network's output",
					  h->name);
		if (check_target(h, d, input, file, e))
			return -1;
	}
	return 0;
}

void akk_spec_heads_release(HEAD *heads, int *n)
{
	for (int i = 0; i < *n; i++)
		free(heads[i].name);
	*n = 0;
}
