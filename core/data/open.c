/* open.c - dispatching a config's data to its format's reader. */
#include "data/open.h"

#include <string.h>

#include "data/csv.h"
#include "data/idx.h"

int akk_data_has(const struct akk_data_spec *s, enum akk_data_part part)
{
	return part == AKK_DATA_TRAIN ? s->train_images || s->train_file
				      : s->val_images || s->val_file;
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
		return akk_idx_dataset(d, images, labels, e);
	if (!strcmp(s->format, "csv"))
		return akk_csv_dataset(d, part == AKK_DATA_TRAIN ? s->train_file : s->val_file,
				       part == AKK_DATA_TRAIN ? s->train_targets : s->val_targets,
				       &s->csv, s->task == AKK_TASK_REGRESSION, e);
	return akk_err_set(e, "data format '%s' has no reader", s->format);
}
