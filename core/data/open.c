/* open.c - dispatching a config's data to its format's reader. */
#include "data/open.h"

#include <limits.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/cifar.h"
#include "data/csv.h"
#include "data/idx.h"
#include "data/image.h"
#include "data/image_set.h"
#include "data/npy.h"
#include "data/pnm.h"

int akk_data_has(const struct akk_data_spec *s, enum akk_data_part part)
{
	int t = part == AKK_DATA_TRAIN;

	return (t ? s->train_images : s->val_images) != NULL ||
	       (t ? s->train_features : s->val_features) != NULL ||
	       (t ? s->train_files.n : s->val_files.n) > 0 ||
	       (t ? s->train_file : s->val_file) != NULL ||
	       (t ? s->train_folder : s->val_folder) != NULL ||
	       (t ? s->train_list : s->val_list) != NULL;
}

const char *akk_data_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	int t = part == AKK_DATA_TRAIN;
	const struct akk_path_list *f = t ? &s->train_files : &s->val_files;

	if (s->format && !strcmp(s->format, "npy"))
		return t ? s->train_features : s->val_features;
	if (s->format && !strcmp(s->format, "cifar10"))
		return f->n ? f->v[0] : NULL;
	if (s->format && !strcmp(s->format, "csv"))
		return t ? s->train_file : s->val_file;
	if (s->format && !strcmp(s->format, "images"))
		return t ? (s->train_folder ? s->train_folder : s->train_list)
			 : (s->val_folder ? s->val_folder : s->val_list);
	return t ? s->train_images : s->val_images;
}

const char *akk_data_label_file(const struct akk_data_spec *s,
				enum akk_data_part part)
{
	if (s->format && (!strcmp(s->format, "cifar10") || !strcmp(s->format, "csv") ||
			  !strcmp(s->format, "images")))
		return akk_data_file(s, part);
	return part == AKK_DATA_TRAIN ? s->train_labels : s->val_labels;
}

int akk_data_named_classes(const struct akk_data_spec *s)
{
	return s->format && (!strcmp(s->format, "csv") || !strcmp(s->format, "images"));
}

int akk_data_open(struct akk_dataset *d, const struct akk_data_spec *s,
		  enum akk_data_part part, struct akk_err *e)
{
	const char *images = part == AKK_DATA_TRAIN ? s->train_images : s->val_images;
	const char *labels = part == AKK_DATA_TRAIN ? s->train_labels : s->val_labels;

	memset(d, 0, sizeof(*d));
	if (!akk_data_has(s, part))
		return akk_err_set(e, "the config has no %s data",
				   part == AKK_DATA_TRAIN ? "training" : "validation");
	if (!s->format || !strcmp(s->format, "idx"))
		return akk_idx_dataset_layout(d, images, labels,
					      s->layout_nhwc, e);
	if (!strcmp(s->format, "npy"))
		return akk_npy_dataset(d, part == AKK_DATA_TRAIN ?
				       s->train_features : s->val_features,
				       labels, s->layout_nhwc, e);
	if (!strcmp(s->format, "cifar10")) {
		const struct akk_path_list *f = part == AKK_DATA_TRAIN ?
						&s->train_files : &s->val_files;
		return akk_cifar_dataset(d, (const char *const *)f->v, f->n, e);
	}
	if (!strcmp(s->format, "csv"))
		return akk_csv_dataset(d, part == AKK_DATA_TRAIN ? s->train_file : s->val_file,
				       part == AKK_DATA_TRAIN ? s->train_targets : s->val_targets,
				       &s->csv, s->task == AKK_TASK_REGRESSION, e);
	if (!strcmp(s->format, "images")) {
		const char *folder = part == AKK_DATA_TRAIN ? s->train_folder : s->val_folder;
		if (folder)
			return akk_image_folder_dataset(d, folder, s->image.d[0], s->image.d[1],
							s->image.d[2], e);
		return akk_image_list_dataset(d, akk_data_file(s, part), s->image.d[0],
					      s->image.d[1], s->image.d[2], e);
	}
	return akk_err_set(e, "data format '%s' has no reader", s->format);
}

/* An IDX image file alone: its bytes become d's, without labels. */
static int idx_inputs(struct akk_dataset *d, const char *path, struct akk_err *e)
{
	struct akk_idx x;

	if (akk_idx_load(&x, path, e))
		return -1;
	if (x.rank != 3) {
		int rank = x.rank;

		akk_idx_release(&x);
		return akk_err_at(e, path, 0, 0, "not an image file: rank %d, expected rank 3 (N x H x W)",
				  rank);
	}
	if (x.dims[1] > INT_MAX || x.dims[2] > INT_MAX) {
		akk_idx_release(&x);
		return akk_err_at(e, path, 0, 0, "image size %lu x %lu is too large",
				  (unsigned long)x.dims[1], (unsigned long)x.dims[2]);
	}
	d->n = x.count;
	d->in = x.item;
	d->c = 1;
	d->h = (int)x.dims[1];
	d->w = (int)x.dims[2];
	d->xtype = AKK_X_U8;
	d->x8 = x.data;
	return 0;
}

const char *akk_data_input_format(const char *path, const char *config_format)
{
	size_t n = strlen(path);
	struct stat st;

	if (akk_image_name(path) || (!stat(path, &st) && S_ISDIR(st.st_mode)))
		return "images";
	if (n > 4 && (!strcasecmp(path + n - 4, ".pgm") || !strcasecmp(path + n - 4, ".ppm") ||
		      !strcasecmp(path + n - 4, ".pnm")))
		return "pnm";
	return config_format ? config_format : "idx";
}

int akk_data_open_inputs(struct akk_dataset *d, const char *format,
			 const char *path, const struct akk_data_spec *ds,
			 struct akk_err *e)
{
	static const struct akk_csv_spec csv_defaults = { .label = { .index = -1 } };

	memset(d, 0, sizeof(*d));
	if (!format || !strcmp(format, "idx"))
		return idx_inputs(d, path, e);
	if (!strcmp(format, "pnm"))
		return akk_pnm_dataset(d, path, e);
	if (!strcmp(format, "csv"))
		return akk_csv_inputs(d, path, ds ? &ds->csv : &csv_defaults, e);
	if (!strcmp(format, "npy"))
		return akk_npy_dataset(d, path, NULL, ds ? ds->layout_nhwc : 0, e);
	if (!strcmp(format, "cifar10"))
		return akk_cifar_dataset(d, &path, 1, e);
	/* an image network's shape; a flat network takes grey images of
	 * their own size (the caller checks the count of values) */
	if (!strcmp(format, "images"))
		return ds && ds->image.rank ?
		       akk_image_inputs(d, path, ds->image.d[0], ds->image.d[1], ds->image.d[2], e) :
		       akk_image_inputs(d, path, 1, 0, 0, e);
	return akk_err_set(e, "data format '%s' has no reader for unlabelled input", format);
}
