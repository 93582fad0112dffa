/* pnm.c - PGM and PPM images read into a one-sample data set. */
#include "data/pnm.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int akk_pnm_magic(const unsigned char *p, size_t len)
{
	return len >= 3 && p[0] == 'P' && (p[1] == '2' || p[1] == '5' || p[1] == '6') &&
	       isspace(p[2]);
}

/* The next decimal field at *pos, past white space and '#' comments;
 * min <= value <= max. */
static int field(const unsigned char *p, size_t len, size_t *pos, long min, long max,
		 long *out, const char *what, const char *path, struct akk_err *e)
{
	size_t i = *pos;
	long v = 0;

	for (;;) {
		while (i < len && isspace(p[i]))
			i++;
		if (i < len && p[i] == '#') {
			while (i < len && p[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	if (i >= len || !isdigit(p[i]))
		return akk_err_at(e, path, 0, 0, "%s: expected a number at byte %zu", what, i);
	for (; i < len && isdigit(p[i]); i++) {
		v = v * 10 + (p[i] - '0');
		if (v > max)
			return akk_err_at(e, path, 0, 0, "%s is larger than %ld", what, max);
	}
	if (v < min)
		return akk_err_at(e, path, 0, 0, "%s is %ld", what, v);
	*pos = i;
	*out = v;
	return 0;
}

static unsigned char *slurp(const char *path, size_t *len, struct akk_err *e)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = NULL;
	long size;

	if (!f) {
		akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		akk_err_at(e, path, 0, 0, "cannot read: not a regular file");
		goto out;
	}
	/* header (at most a few hundred bytes) plus 3 channels of pixels */
	if ((size_t)size > 3 * 4 * AKK_PNM_MAX_PIXELS + 4096) {
		akk_err_at(e, path, 0, 0, "file of %ld bytes is too large for an image", size);
		goto out;
	}
	if (!(p = malloc(size ? size : 1))) {
		akk_err_set(e, "out of memory reading '%s'", path);
		goto out;
	}
	if (fread(p, 1, size, f) != (size_t)size) {
		akk_err_at(e, path, 0, 0, "cannot read: %s", strerror(errno));
		free(p);
		p = NULL;
		goto out;
	}
	*len = (size_t)size;
out:
	fclose(f);
	return p;
}

int akk_pnm_dataset(struct akk_dataset *d, const char *path, struct akk_err *e)
{
	size_t len = 0, pos = 2, npix, nval;
	unsigned char *p = slurp(path, &len, e);
	long w, h, maxval;
	int c, plain;
	uint8_t *x = NULL;

	memset(d, 0, sizeof(*d));
	if (!p)
		return -1;
	if (!akk_pnm_magic(p, len)) {
		akk_err_at(e, path, 0, 0, "not a PGM or PPM image (no P2, P5 or P6 magic)");
		goto fail;
	}
	c = p[1] == '6' ? 3 : 1;
	plain = p[1] == '2';
	if (field(p, len, &pos, 1, 65536, &w, "width", path, e) ||
	    field(p, len, &pos, 1, 65536, &h, "height", path, e) ||
	    field(p, len, &pos, 1, 65535, &maxval, "maxval", path, e))
		goto fail;
	if (maxval != 255) {
		akk_err_at(e, path, 0, 0, "maxval %ld: only 8-bit images with maxval 255 are read", maxval);
		goto fail;
	}
	npix = (size_t)w * (size_t)h;
	if (npix > AKK_PNM_MAX_PIXELS) {
		akk_err_at(e, path, 0, 0, "%ld x %ld image is larger than %zu pixels", w, h,
			   AKK_PNM_MAX_PIXELS);
		goto fail;
	}
	nval = npix * c;
	if (!(x = malloc(nval))) {
		akk_err_set(e, "out of memory reading '%s'", path);
		goto fail;
	}
	if (plain) {
		for (size_t k = 0; k < nval; k++) {
			long v;
			while (pos < len && isspace(p[pos]))
				pos++;
			if (pos >= len) {
				akk_err_at(e, path, 0, 0, "%zu pixel values, but the header says %zu",
					   k, nval);
				goto fail;
			}
			if (field(p, len, &pos, 0, 255, &v, "pixel value", path, e))
				goto fail;
			x[k] = (uint8_t)v;
		}
	} else {
		/* exactly one white-space byte ends the header */
		if (pos >= len || !isspace(p[pos])) {
			akk_err_at(e, path, 0, 0, "no white space after maxval at byte %zu", pos);
			goto fail;
		}
		pos++;
		if (len < pos || len - pos != nval) {
			akk_err_at(e, path, 0, 0, "%zu bytes of pixels, but %ld x %ld%s takes %zu",
				   len < pos ? 0 : len - pos, w, h, c == 3 ? " RGB" : "", nval);
			goto fail;
		}
		if (c == 1)
			memcpy(x, p + pos, nval);
		else	/* interleaved RGB to channels first */
			for (size_t i = 0; i < npix; i++)
				for (int k = 0; k < 3; k++)
					x[k * npix + i] = p[pos + 3 * i + k];
	}
	free(p);
	d->n = 1;
	d->in = nval;
	d->c = c;
	d->h = (int)h;
	d->w = (int)w;
	d->xtype = AKK_X_U8;
	d->x8 = x;
	return 0;
fail:
	free(p);
	free(x);
	return -1;
}
