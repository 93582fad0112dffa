/* dataset.c - releasing a data set. */
#include "data/dataset.h"

#include <stdlib.h>
#include <string.h>

void akk_dataset_release(struct akk_dataset *d)
{
	if (d->class_names)
		for (int i = 0; i < d->classes; i++)
			free(d->class_names[i]);
	free(d->class_names);
	free(d->class_at);
	free(d->x8);
	free(d->xf);
	free(d->labels);
	free(d->y);
	memset(d, 0, sizeof(*d));
}
