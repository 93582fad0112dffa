/* head_targets.c - a sample's targets laid out at its heads' slices. */
#include "data/head_targets.h"

#include <string.h>

#include "data/preprocess.h"

void akk_target_map_fill(const struct akk_target_map *map, float *row,
			 const struct akk_dataset *d, size_t s)
{
	for (int i = 0; i < map->n; i++) {
		float *dst = row + map->slot[i].off;
		size_t n = (size_t)map->slot[i].size;

		if (map->slot[i].from == AKK_SLOT_Y) {
			memcpy(dst, d->y + s * (size_t)d->targets, n * sizeof(float));
			continue;
		}
		/* the input as the network sees it before normalize: each
		 * stored value divided by data.scale */
		float scale = akk_preprocess_scale(map->ds, d->xtype);
		for (size_t k = 0; k < n; k++)
			dst[k] = akk_dataset_x(d, s * d->in + k) / scale;
	}
}
