/* targets.h - targets that are the data's own values (data.targets).
 *
 * data.targets: input makes every sample's target its own input (an
 * autoencoder); data.targets: files makes it the sample of the same index
 * in the part's target file, an IDX image file (target_images) or a .npy
 * array (target_features) of as many samples (image-to-image, or a
 * denoiser trained on stored noisy and clean pairs). Either way the
 * targets become the data set's float targets y (one per value of a
 * sample), so the run treats them as any regression: losses mse, mae or
 * huber, RMSE and R^2, and PSNR (nn/loss.h). The targets follow the
 * input's scaling only: v / data.scale (bytes: / 255 by default), never
 * data.normalize nor data.standardize, so they stay in the data's own
 * units and their PSNR has the data's range as its peak. Class labels the
 * files carry are dropped. */
#ifndef AKK_TARGETS_H
#define AKK_TARGETS_H

#include "base/err.h"
#include "config/spec.h"
#include "data/dataset.h"

/* The range of the scaled data, PSNR's peak: 255 / scale for bytes (1 by
 * default), 1 for floats (taken to be in [0, 1] once scaled). */
float akk_targets_peak(const struct akk_data_spec *ds, enum akk_xtype t);

/* Give d the targets ds->targets says: nothing for labels; y = d's own
 * scaled values for input; for files, y = the scaled values of t, the
 * samples of the part's target file (path, named in errors; data/open.c
 * reads it), which must be d->n. */
int akk_targets_attach(struct akk_dataset *d, const struct akk_data_spec *ds,
		       const struct akk_dataset *t, const char *path,
		       struct akk_err *e);

#endif
