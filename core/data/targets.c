/* targets.c - the input or a second array as the targets. */
#include "data/targets.h"

#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "data/preprocess.h"

float akk_targets_peak(const struct akk_data_spec *ds, enum akk_xtype t)
{
	return t == AKK_X_U8 ? 255.0f / akk_preprocess_scale(ds, t) : 1.0f;
}

/* y = the n * in values of src, divided by the scale of its type. */
static int scaled_copy(struct akk_dataset *d, const struct akk_dataset *src,
		       const struct akk_data_spec *ds, const char *path,
		       struct akk_err *e)
{
	float scale = akk_preprocess_scale(ds, src->xtype);
	size_t n;

	if (!akk_mul_ok(src->n, src->in, &n) || src->in > 0x7fffffff ||
	    !(d->y = malloc((n ? n : 1) * sizeof(float))))
		return akk_err_at(e, path, 0, 0, "out of memory for %zu target values", src->n * src->in);
	for (size_t i = 0; i < n; i++)
		d->y[i] = akk_dataset_x(src, i) / scale;
	d->targets = (int)src->in;
	return 0;
}

int akk_targets_attach(struct akk_dataset *d, const struct akk_data_spec *ds,
		       const struct akk_dataset *t, const char *path,
		       struct akk_err *e)
{
	if (ds->targets == AKK_TARGETS_LABELS)
		return 0;
	/* the labels a file carries are not the targets */
	if (d->class_names)
		for (int i = 0; i < d->classes; i++)
			free(d->class_names[i]);
	free(d->class_names);
	free(d->class_at);
	free(d->labels);
	free(d->y);
	d->class_names = NULL;
	d->class_at = NULL;
	d->labels = NULL;
	d->y = NULL;
	d->classes = d->targets = 0;
	if (ds->targets == AKK_TARGETS_INPUT)
		return scaled_copy(d, d, ds, path, e);
	if (!t)
		return akk_err_set(e, "data.targets: files, but this part names no target file");
	if (t->n != d->n)
		return akk_err_at(e, path, 0, 0, "%zu target samples, but the inputs are %zu",
				  t->n, d->n);
	return scaled_copy(d, t, ds, path, e);
}
