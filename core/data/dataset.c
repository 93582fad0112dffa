/* dataset.c - releasing a data set, and where its samples live. */
#include "data/dataset.h"

#include "base/hugemem.h"

#include <stdlib.h>
#include <string.h>

void akk_dataset_release(struct akk_dataset *d)
{
	if (d->class_names)
		for (int i = 0; i < d->classes; i++)
			free(d->class_names[i]);
	free(d->class_names);
	free(d->class_at);
	akk_hugemem_free(d->x8, d->x_mapped);
	akk_hugemem_free(d->xf, d->x_mapped);
	free(d->labels);
	free(d->y);
	memset(d, 0, sizeof(*d));
}

void akk_dataset_huge_pages(struct akk_dataset *d)
{
	void *x = d->xtype == AKK_X_U8 ? (void *)d->x8 : (void *)d->xf;
	size_t bytes = d->n * d->in * (d->xtype == AKK_X_U8 ? 1 : sizeof(float));
	size_t mapped;

	if (d->x_mapped || !x || !(mapped = akk_hugemem_move(&x, bytes)))
		return;
	if (d->xtype == AKK_X_U8)
		d->x8 = x;
	else
		d->xf = x;
	d->x_mapped = mapped;
}
