/* preprocess.h - how stored sample values become the network's input.
 *
 * One affine map per feature: x' = v * a[k] + b[k] for value v of feature
 * k (C order, channels first). It folds, in this order, data.scale
 * (v / scale), data.normalize ((u - mean) / std, a scalar or one value per
 * channel) and data.standardize ((u - mu_k) / sd_k, the per-feature mean
 * and standard deviation of the scaled and normalized values over the
 * training split, computed once from the training split only; a constant
 * feature, sd_k = 0, gets sd_k = 1, so it becomes 0). The vectors are stored
 * in the checkpoint and reused as they are by eval, never recomputed from
 * other data. */
#ifndef AKK_PREPROCESS_H
#define AKK_PREPROCESS_H

#include <stddef.h>

#include "base/err.h"
#include "config/spec.h"
#include "data/dataset.h"

struct akk_preprocess {
	size_t in;		/* features */
	float *a;		/* (in) multiplier, owned */
	float *b;		/* (in) offset, owned */
};

/* The divisor data.scale applies to values of type t: the config's value
 * when it gives one (a CSV table's default is 1), else 255 for bytes
 * (pixels) and 1 for floats, which are features as they are, not pixels. */
float akk_preprocess_scale(const struct akk_data_spec *ds, enum akk_xtype t);

/* The map of spec ds for samples of `in` values in `channels` channels
 * (in a multiple of channels). With ds->standardize, train (the training
 * split, exactly what is trained on) gives the statistics; train may be
 * NULL otherwise. The scale is akk_preprocess_scale for train's type (bytes
 * when train is NULL). */
int akk_preprocess_init(struct akk_preprocess *p, const struct akk_data_spec *ds,
			size_t in, int channels, const struct akk_dataset *train,
			struct akk_err *e);
/* A map with the given vectors (copied), as a checkpoint stores them. */
int akk_preprocess_set(struct akk_preprocess *p, size_t in, const float *a,
		       const float *b, struct akk_err *e);
void akk_preprocess_release(struct akk_preprocess *p);

/* dst[k] = src[k] * a[k] + b[k] for one sample: allocation-free and
 * vectorizable. */
void akk_preprocess_u8(float *dst, const unsigned char *src,
		       const struct akk_preprocess *p);
void akk_preprocess_f32(float *dst, const float *src,
			const struct akk_preprocess *p);

#endif
