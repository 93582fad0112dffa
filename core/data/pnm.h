/* pnm.h - single images as Netpbm files: PGM (P5 binary, P2 plain) and
 * PPM (P6 binary).
 *
 * One image becomes a data set of one unlabelled sample: bytes, channels
 * first (a PPM's interleaved RGB is split into three planes), values as
 * the file holds them. Only maxval 255 is taken (8-bit images, what the
 * IDX readers give too); the header's width, height and maxval are checked
 * against the bytes present, with the place of a bad field in the error. */
#ifndef AKK_PNM_H
#define AKK_PNM_H

#include "base/err.h"
#include "data/dataset.h"

/* The largest image read: 2^26 pixels per channel (8192 x 8192). */
#define AKK_PNM_MAX_PIXELS ((size_t)1 << 26)

/* Whether the first bytes of a file are a PNM magic akk_pnm_dataset
 * reads ("P2", "P5", "P6" followed by white space). */
int akk_pnm_magic(const unsigned char *p, size_t len);
/* Read the image at path into d (n = 1, c = 1 or 3, xtype AKK_X_U8, no
 * labels). Errors name the file and the field. */
int akk_pnm_dataset(struct akk_dataset *d, const char *path, struct akk_err *e);

#endif
