/* spec_data.c - the data section of the config: the files of each part
 * and the keys of each format (csv, series, text), the input map (scale,
 * normalize, standardize), the validation split or folds, augmentation;
 * walked by yaml_keys.c as spec.c walks the other sections. */
#include "config/spec_data.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/data_spec.h"

#define DATA struct akk_data_spec

/* a list of paths (data.train.files), each resolved like
 * akk_yaml_h_path. */
static int h_paths(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key,
		   yaml_node_t *val)
{
	struct akk_path_list *l = FIELD(sec->obj, k, struct akk_path_list);
	yaml_node_item_t *items = val->data.sequence.items.start;
	int n = (int)(val->data.sequence.items.top - items);
	struct key one = *k;
	struct section sub = *sec;

	(void)key;
	if (n < 1)
		return akk_yaml_fail(c, val, "'%s' must list at least one file", k->name);
	for (int i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->n = 0;
	if (!(l->v = calloc((size_t)n, sizeof(*l->v))))
		return akk_err_set(c->e, "out of memory");
	one.off = 0;
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		if (item->type != YAML_SCALAR_NODE)
			return akk_yaml_fail_type(c, "a file", "a string", item);
		/* straight into the list's item, where the path's record points */
		sub.obj = &l->v[i];
		if (akk_yaml_h_path(c, &one, &sub, NULL, item))
			return -1;
		l->n++;
	}
	return 0;
}

#define PATHS(K_, T_, F_)                                                    \
	{ .name = K_, .type = YAML_SEQUENCE_NODE, .fn = h_paths,             \
	  .what = "a list of files", .off = offsetof(T_, F_) }

/* The keys of data.train and data.validation, one table for both (as
 * netplan shares its handler groups): which apply is the format's
 * (data_file_keys below). */
#define FILES struct akk_data_files
static const struct key file_keys[] = {
	STR("images", akk_yaml_h_path, FILES, images, 0),
	STR("labels", akk_yaml_h_path, FILES, labels, 0),
	/* npy features, cifar10 record files */
	STR("features", akk_yaml_h_path, FILES, features, 0),
	PATHS("files", FILES, files),
	/* format csv */
	STR("file", akk_yaml_h_path, FILES, file, 0),
	STR("targets_file", akk_yaml_h_path, FILES, targets, 0),
	STR("folder", akk_yaml_h_path, FILES, folder, 0),
	STR("list", akk_yaml_h_path, FILES, list, 0),
	/* data.targets: files */
	STR("target_images", akk_yaml_h_path, FILES, target, 0),
	STR("target_features", akk_yaml_h_path, FILES, target, 0),
	END,
};

/* The keys of data.train and data.validation per format; 1: required. */
static const struct {
	const char *format, *key;
	int required;
} data_file_keys[] = {
	{ "idx", "images", 1 }, { "idx", "labels", 1 },
	{ "npy", "features", 1 }, { "npy", "labels", 1 },
	{ "cifar10", "files", 1 },
	{ "csv", "file", 1 }, { "csv", "targets_file", 0 },
	{ "images", "folder", 0 }, { "images", "list", 0 },
	{ "text", "file", 0 }, { "text", "files", 0 },
	{ "idx", "target_images", 0 }, { "npy", "target_features", 0 },
	{ NULL, NULL, 0 },
};

/* data.train or data.validation: the section, then the keys its format
 * needs and takes (the format is read first: table order). */
static int h_data_files(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	const char *format = ((const DATA *)sec->obj)->format;
	int targets = ((const DATA *)sec->obj)->targets, folder;
	const char *tkey = !strcmp(format, "npy") ? "target_features" : "target_images";
	yaml_node_t *tk = NULL;

	if (akk_yaml_h_section(c, k, sec, key, val))
		return -1;
	/* a target file per part exactly when data.targets is files (read
	 * before: table order) */
	if (akk_yaml_map_get(c, val, tkey, &tk) && targets != AKK_TARGETS_FILES)
		return akk_yaml_fail(c, tk, "'%s' needs data.targets: files", tkey);
	if (targets == AKK_TARGETS_FILES && (!strcmp(format, "idx") || !strcmp(format, "npy")) &&
	    !akk_yaml_map_get(c, val, tkey, NULL))
		return akk_yaml_fail(c, val, "missing required key '%s' in data.%s (data.targets: files)",
				     tkey, k->name);
	folder = akk_yaml_map_get(c, val, "folder", NULL) != 0;
	if (!strcmp(format, "images") && folder == (akk_yaml_map_get(c, val, "list", NULL) != 0))
		return akk_yaml_fail(c, val, "data.%s %s 'folder' (class folders) or 'list' (an image list)%s",
				     k->name, folder ? "takes" : "needs", folder ? ", not both" : "");
	/* a text: one file, or for training a list read as one text */
	if (!strcmp(format, "text")) {
		yaml_node_t *fk = NULL;
		int one = akk_yaml_map_get(c, val, "file", NULL) != 0;
		int many = akk_yaml_map_get(c, val, "files", &fk) != 0;
		if (many && strcmp(k->name, "train"))
			return akk_yaml_fail(c, fk, "data.%s takes one text 'file'; a list of 'files' is for data.train",
					     k->name);
		if (one == many)
			return akk_yaml_fail(c, val, "data.%s %s 'file' (a text) or 'files' (texts read as one)%s",
					     k->name, one ? "takes" : "needs", one ? ", not both" : "");
	}
	for (int i = 0; data_file_keys[i].format; i++)
		if (data_file_keys[i].required &&
		    (targets == AKK_TARGETS_LABELS || strcmp(data_file_keys[i].key, "labels")) &&
		    !strcmp(data_file_keys[i].format, format) &&
		    !akk_yaml_map_get(c, val, data_file_keys[i].key, NULL))
			return akk_yaml_fail(c, val, "missing required key '%s' in data.%s%s%s%s",
				    data_file_keys[i].key, k->name,
				    strcmp(format, "idx") ? " (data format '" : "",
				    strcmp(format, "idx") ? format : "",
				    strcmp(format, "idx") ? "')" : "");
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start;
	     p < val->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = akk_yaml_node(c, p->key);
		int i;
		for (i = 0; data_file_keys[i].format; i++)
			if (!strcmp(data_file_keys[i].format, format) &&
			    !strcmp(data_file_keys[i].key, akk_yaml_text(kn)))
				break;
		if (!data_file_keys[i].format)
			return akk_yaml_fail(c, kn, "'%s' does not apply to data format '%s'",
				    akk_yaml_text(kn), format);
	}
	return 0;
}

#define CSV struct akk_csv_spec

/* A CSV column: a plain integer is a 0-based index, anything else a
 * name. */
static int parse_csv_col(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
			 struct akk_csv_col *col)
{
	col->mark = akk_yaml_mark_of(c, val);
	if (val->type == YAML_SCALAR_NODE && akk_yaml_is_bare(val) &&
	    akk_yaml_int_syntax(akk_yaml_text(val))) {
		long long v;
		if (akk_yaml_parse_int(c, name, val, &v))
			return -1;
		if (v < 0 || v > AKK_CSV_MAX_COLS - 1)
			return akk_yaml_fail(c, val, "'%s' must be a column name or an index from 0 to %d, got %s",
				    name, AKK_CSV_MAX_COLS - 1, akk_yaml_text(val));
		col->index = (int)v;
		return 0;
	}
	col->index = -1;
	return akk_yaml_parse_str(c, name, val, &col->name);
}

static int h_csv_label(struct akk_yaml_ctx *c, const struct key *k,
		       const struct section *sec, yaml_node_t *key,
		       yaml_node_t *val)
{
	struct akk_csv_col *col = &((CSV *)sec->obj)->label;

	(void)key;
	free(col->name);
	col->name = NULL;
	return parse_csv_col(c, k->name, val, col);
}

/* A list of columns (names or indices), none twice, into *list (n). */
static int parse_col_list(struct akk_yaml_ctx *c, const char *name, yaml_node_t *val,
			  struct akk_csv_col **list, int *n)
{
	yaml_node_item_t *items = val->data.sequence.items.start;
	int len = (int)(val->data.sequence.items.top - items);

	if (!len)
		return akk_yaml_fail(c, val, "'%s' must not be empty", name);
	if (len > AKK_CSV_MAX_COLS)
		return akk_yaml_fail(c, val, "too many %s: %d, at most %d", name, len,
			    AKK_CSV_MAX_COLS);
	for (int i = 0; i < *n; i++)
		free((*list)[i].name);
	free(*list);
	*n = 0;
	if (!(*list = calloc((size_t)len, sizeof(**list))))
		return akk_err_set(c->e, "out of memory");
	for (int i = 0; i < len; i++) {
		struct akk_csv_col *t = &(*list)[i];
		yaml_node_t *item = akk_yaml_node(c, items[i]);
		if (parse_csv_col(c, name, item, t))
			return -1;
		(*n)++;
		for (int j = 0; j < i; j++)
			if (t->name ? (*list)[j].name && !strcmp(t->name, (*list)[j].name) :
				      !(*list)[j].name && t->index == (*list)[j].index)
				return akk_yaml_fail(c, item, "column %s is twice in '%s'",
					    akk_yaml_text(item), name);
	}
	return 0;
}

static int h_csv_targets(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key,
			 yaml_node_t *val)
{
	CSV *o = sec->obj;

	(void)key;
	return parse_col_list(c, k->name, val, &o->targets, &o->ntargets);
}

static int h_csv_ignore(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	CSV *o = sec->obj;

	(void)key;
	return parse_col_list(c, k->name, val, &o->ignore, &o->nignore);
}

static const char *const delimiter_names[] = { "comma", "whitespace",
					       "semicolon", NULL };

static const struct key csv_keys[] = {
	BOOL("header", CSV, header, 0),
	INT("skip", CSV, skip, F_LO | F_HI, 0, INT_MAX, 0),
	NAMES("delimiter", CSV, delimiter, 0, delimiter_names, "delimiter",
	      AKK_CSV_COMMA),
	{ .name = "label", .type = YAML_SCALAR_NODE, .fn = h_csv_label,
	  .what = "a column name or index" },
	{ .name = "targets", .type = YAML_SEQUENCE_NODE, .fn = h_csv_targets,
	  .what = "a list" },
	{ .name = "ignore", .type = YAML_SEQUENCE_NODE, .fn = h_csv_ignore,
	  .what = "a list" },
	END,
};

/* data.csv: only with format csv (read before it: table order). */
static int h_csv(struct akk_yaml_ctx *c, const struct key *k,
		 const struct section *sec, yaml_node_t *key,
		 yaml_node_t *val)
{
	const char *format = ((const DATA *)sec->obj)->format;

	if (strcmp(format, "csv"))
		return akk_yaml_fail(c, key, "'csv' does not apply to data format '%s'",
			    format);
	return akk_yaml_h_section(c, k, sec, key, val);
}

/* normalize's mean and std are a number, or a list of
 * numbers, one per input channel (checked against network.input after the
 * walk). A number goes into the float at k->off, as akk_yaml_h_float; each item of a
 * list is checked as akk_yaml_h_float checks a number, into the struct akk_channels
 * at k->set_off - 1. */
int akk_spec_h_channels(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key,
		      yaml_node_t *val)
{
	struct akk_channels *ch =
		(struct akk_channels *)((char *)sec->obj + k->set_off - 1);
	yaml_node_item_t *items;
	struct key one = *k;
	int n;

	if (val->type != YAML_SEQUENCE_NODE)
		return akk_yaml_h_float(c, k, sec, key, val);
	items = val->data.sequence.items.start;
	n = (int)(val->data.sequence.items.top - items);
	if (n < 1 || n > AKK_SPEC_MAX_CHANNELS)
		return akk_yaml_fail(c, val, "'%s' must have 1 to %d values, got %d",
			    k->name, AKK_SPEC_MAX_CHANNELS, n);
	free(ch->v);
	ch->n = 0;
	ch->v = malloc((size_t)n * sizeof(float));
	if (!ch->v)
		return akk_err_set(c->e, "out of memory");
	one.off = 0;
	for (int i = 0; i < n; i++) {
		struct section at = *sec;
		at.obj = &ch->v[i];
		if (akk_yaml_h_float(c, &one, &at, key, akk_yaml_node(c, items[i])))
			return -1;
	}
	ch->n = n;
	ch->mark = akk_yaml_mark_of(c, val);
	return 0;
}

#define CHANNELS(K_, T_, F_, LIST_, FL_, D_)                                 \
	{ .name = K_, .type = YAML_NO_NODE, .fn = akk_spec_h_channels,                \
	  .what = "a number or a list of numbers", .off = offsetof(T_, F_),  \
	  .flags = FL_, .def = D_, .set_off = MARK(T_, LIST_) }

static const struct key normalize_keys[] = {
	CHANNELS("mean", DATA, mean, mean_ch, F_REQ, 0),
	CHANNELS("std", DATA, std, std_ch, F_REQ | F_LO | F_LO_OPEN, 1),
	END,
};
/* data.task */
static const char *const task_names[] = { "classification", "regression", NULL };
/* data.targets (enum akk_targets) */
static const char *const targets_names[] = { "labels", "input", "files", NULL };

/* data.task and data.targets: a name, its place kept (config/spec_checks.c
 * checks them together). */
static int h_named_at(struct akk_yaml_ctx *c, const struct key *k,
		      const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_names(c, k, sec, key, val))
		return -1;
	*(struct akk_mark *)((char *)sec->obj + k->mark_off - 1) = akk_yaml_mark_of(c, key);
	return 0;
}

#define NAMED_AT(K_, F_, LIST_, NOUN_, D_, M_)                               \
	{ .name = K_, .type = YAML_NO_NODE, .fn = h_named_at, .what = "a name", \
	  .off = offsetof(DATA, F_), .def = D_, .names = LIST_, .noun = NOUN_, \
	  .mark_off = MARK(DATA, M_) }

/* validation: {split: F} holds out part of train. */
static const struct key split_keys[] = {
	FLOAT("split", DATA, split, F_REQ | F_LO | F_LO_OPEN | F_HI | F_HI_OPEN,
	      0, 1, 0, 0),
	END,
};
/* validation: {folds: K}: K-fold cross-validation (data/split.h). */
static const struct key folds_keys[] = {
	INT("folds", DATA, folds, F_REQ | F_LO | F_HI, 2, 1000, 0),
	END,
};


/* idx is the default (data.format in defaults()). */
static const char *const format_names[] = { "idx", "csv", "npy", "cifar10", "images", "text",
					     NULL };

/* data.format: one of format_names, stored as the name. */
static int h_format(struct akk_yaml_ctx *c, const struct key *k,
		    const struct section *sec, yaml_node_t *key,
		    yaml_node_t *val)
{
	if (akk_yaml_h_names(c, k, sec, key, val) || akk_yaml_h_str(c, k, sec, key, val))
		return -1;
	/* A table's values and a text's token ids are not pixels: scale
	 * (read later) defaults to 1. */
	if (!strcmp(akk_yaml_text(val), "csv") || !strcmp(akk_yaml_text(val), "text"))
		((DATA *)sec->obj)->scale = 1;
	return 0;
}

/* data.scale: a number, remembered as given (the default depends on the
 * data's type: akk_data_scale). */
int akk_spec_h_scale(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		   yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_float(c, k, sec, key, val))
		return -1;
	((DATA *)sec->obj)->scale_given = 1;
	((DATA *)sec->obj)->scale_mark = akk_yaml_mark_of(c, key);
	return 0;
}

/* data.standardize: a bool, its place kept (a text refuses it). */
static int h_standardize(struct akk_yaml_ctx *c, const struct key *k,
			 const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_bool(c, k, sec, key, val))
		return -1;
	((DATA *)sec->obj)->standardize_mark = akk_yaml_mark_of(c, key);
	return 0;
}

/* validation: a mapping with split is a split, with folds
 * K-fold cross-validation; any other, files. */
static int h_validation(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key,
			yaml_node_t *val)
{
	struct key as = *k;
	yaml_node_t *fk = NULL;

	as.off = 0;	/* split and folds are keys of the data section */
	if (val->type == YAML_MAPPING_NODE && akk_yaml_map_get(c, val, "folds", &fk)) {
		if (akk_yaml_map_get(c, val, "split", NULL))
			return akk_yaml_fail(c, fk, "'folds' and 'split' do not go together in data.validation: folds hold out each part in turn");
		as.keys = folds_keys;
		return akk_yaml_h_section(c, &as, sec, key, val);
	}
	if (val->type == YAML_MAPPING_NODE && akk_yaml_map_get(c, val, "split", NULL)) {
		as.keys = split_keys;
		return akk_yaml_h_section(c, &as, sec, key, val);
	}
	return h_data_files(c, k, sec, key, val);
}

/* augment.noise: a number, its place kept (config/spec_checks.c). */
static int h_noise(struct akk_yaml_ctx *c, const struct key *k,
		   const struct section *sec, yaml_node_t *key, yaml_node_t *val)
{
	if (akk_yaml_h_float(c, k, sec, key, val))
		return -1;
	((DATA *)sec->obj)->noise_mark = akk_yaml_mark_of(c, key);
	return 0;
}

/* rank-4 image layout and augmentation. */
static const char *const layout_names[] = { "nchw", "nhwc", NULL };
static const struct key augment_keys[] = {
	INT("crop_padding", DATA, crop_padding, F_LO | F_HI, 0, 64, 0),
	BOOL("flip", DATA, flip, 0),
	INT("translate", DATA, translate, F_LO | F_HI, 0, 64, 0),
	KEY("noise", SCALAR, h_noise, "a number", DATA, noise, F_LO | F_HI, 0, 1e6, 0, 0),
	BOOL("noise_clip", DATA, noise_clip, 1),
	BOOL("noise_eval", DATA, noise_eval, 0),
	END,
};

/* series: a table read as a time series (data/series.h). */
static const struct key series_keys[] = {
	INT("window", DATA, window, F_REQ | F_LO | F_HI, 1, 65536, 0),
	INT("horizon", DATA, horizon, F_LO | F_HI, 1, 65536, 1),
	INT("stride", DATA, stride, F_LO | F_HI, 1, 65536, 1),
	END,
};

/* text: a text's windows (data/text.h); 0: network.input's length, and
 * a stride of seq_len. */
static const struct key text_keys[] = {
	INT("seq_len", DATA, text_len, F_LO | F_HI, 1, 65536, 0),
	INT("stride", DATA, text_stride, F_LO | F_HI, 1, 65536, 0),
	END,
};

const struct key akk_spec_data_keys[] = {
	{ .name = "format", .type = YAML_NO_NODE, .fn = h_format,
	  .what = "a name", .off = offsetof(DATA, format), .flags = F_NOSTORE,
	  .names = format_names, .noun = "data format" },
	/* before train and validation: it says which target keys they take */
	NAMED_AT("targets", targets, targets_names, "targets", AKK_TARGETS_LABELS, targets_mark),
	{ .name = "train", .type = YAML_MAPPING_NODE, .fn = h_data_files,
	  .what = "a mapping", .off = offsetof(DATA, train), .flags = F_REQ,
	  .keys = file_keys, .mark_off = MARK(DATA, train_mark) },
	{ .name = "validation", .type = YAML_MAPPING_NODE, .fn = h_validation,
	  .what = "a mapping", .off = offsetof(DATA, val), .keys = file_keys,
	  .mark_off = MARK(DATA, val_mark) },
	/* format csv */
	{ .name = "csv", .type = YAML_MAPPING_NODE, .fn = h_csv,
	  .what = "a mapping", .off = offsetof(DATA, csv), .keys = csv_keys,
	  .mark_off = MARK(DATA, csv.mark) },
	{ .name = "scale", .type = YAML_SCALAR_NODE, .fn = akk_spec_h_scale, .what = "a number",
	  .off = offsetof(DATA, scale), .flags = F_LO | F_LO_OPEN, .def = 255 },
	{ .name = "normalize", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = normalize_keys,
	  .set_off = MARK(DATA, normalize), .mark_off = MARK(DATA, normalize_mark) },
	NAMES("layout", DATA, layout_nhwc, 0, layout_names, "layout", 0),
	{ .name = "augment", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = augment_keys,
	  .set_off = MARK(DATA, augment), .mark_off = MARK(DATA, augment_mark) },
	KEY("standardize", SCALAR, h_standardize, "true or false", DATA, standardize,
	    0, 0, 0, 0, 0),
	NAMED_AT("task", task, task_names, "task", AKK_TASK_CLASSIFICATION, task_mark),
	{ .name = "series", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = series_keys,
	  .mark_off = MARK(DATA, series_mark) },
	{ .name = "text", .type = YAML_MAPPING_NODE, .fn = akk_yaml_h_section,
	  .what = "a mapping", .keys = text_keys,
	  .mark_off = MARK(DATA, text_mark) },
	END,
};
