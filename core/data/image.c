/* image.c - PNG (libpng) and JPEG (libjpeg-turbo) decoding with the
 * libraries' errors turned into struct akk_err. */
#include "data/image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <png.h>

int akk_image_magic(const unsigned char *p, size_t len)
{
	static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

	return (len >= 8 && !memcmp(p, png_sig, 8)) ||
	       (len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff);
}

int akk_image_name(const char *path)
{
	size_t n = strlen(path);

	return (n > 4 && (!strcasecmp(path + n - 4, ".png") || !strcasecmp(path + n - 4, ".jpg"))) ||
	       (n > 5 && !strcasecmp(path + n - 5, ".jpeg"));
}

void akk_image_release(struct akk_image *im)
{
	free(im->x);
	memset(im, 0, sizeof(*im));
}

/* The header's size against the limits and the size asked for. */
static int check_size(unsigned long fw, unsigned long fh, int h, int w,
		      const char *name, struct akk_err *e)
{
	if (!fw || !fh || fw > AKK_IMAGE_MAX_SIDE || fh > AKK_IMAGE_MAX_SIDE ||
	    (size_t)fw * fh > AKK_IMAGE_MAX_PIXELS)
		return akk_err_at(e, name, 0, 0,
				  "image of %lu x %lu pixels: each side must be 1 to %d, at most %zu pixels",
				  fw, fh, AKK_IMAGE_MAX_SIDE, AKK_IMAGE_MAX_PIXELS);
	if (h && w && (fw != (unsigned long)w || fh != (unsigned long)h))
		return akk_err_at(e, name, 0, 0,
				  "image is %lu x %lu (width x height), but the network takes %d x %d: images are not resized",
				  fw, fh, w, h);
	return 0;
}

/* Interleaved rows (h, w, c) to channels first (c, h, w). */
static void planes(uint8_t *out, const uint8_t *in, int c, size_t npix)
{
	if (c == 1) {
		memcpy(out, in, npix);
		return;
	}
	for (size_t i = 0; i < npix; i++)
		for (int k = 0; k < c; k++)
			out[k * npix + i] = in[(size_t)c * i + k];
}

/* --- PNG ------------------------------------------------------------------ */

struct png_io {
	const unsigned char *p;
	size_t len, pos;
	jmp_buf jb;
	char msg[200];
};

static void png_io_error(png_structp png, png_const_charp msg)
{
	struct png_io *io = png_get_error_ptr(png);

	snprintf(io->msg, sizeof(io->msg), "%s", msg);
	longjmp(io->jb, 1);
}

static void png_io_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;	/* ancillary trouble (a bad text chunk): the pixels stand */
}

static void png_io_read(png_structp png, png_bytep out, size_t n)
{
	struct png_io *io = png_get_io_ptr(png);

	if (n > io->len - io->pos)
		png_error(png, "the file ends early (truncated)");
	memcpy(out, io->p + io->pos, n);
	io->pos += n;
}

/* Every chunk's declared length against the bytes the file holds, before
 * libpng sees it: libpng allocates a chunk's buffer (an sPLT's, say) from
 * the length alone, so a 100-byte file declaring a 2 GB chunk would cost
 * 2 GB before the end of the file is noticed. Stops at IEND; a header cut
 * in two is left to libpng, which reports it. */
static int png_chunks_fit(const unsigned char *p, size_t len, const char *name,
			  struct akk_err *e)
{
	size_t pos = 8;

	while (pos + 8 <= len) {
		unsigned long n = (unsigned long)p[pos] << 24 | (unsigned long)p[pos + 1] << 16 |
				  (unsigned long)p[pos + 2] << 8 | p[pos + 3];
		char type[5];

		for (int i = 0; i < 4; i++) {
			unsigned char ch = p[pos + 4 + i];
			type[i] = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ? (char)ch : '?';
		}
		type[4] = 0;
		if (n > len - pos - 8 || len - pos - 8 - n < 4)
			return akk_err_at(e, name, 0, 0,
					  "not a readable PNG image: the file ends early (truncated): chunk '%s' at byte %zu declares %lu bytes, the file holds %zu more",
					  type, pos, n, len - pos - 8);
		if (!memcmp(p + pos + 4, "IEND", 4))
			break;
		pos += 12 + n;
	}
	return 0;
}

/* The transformations to 8-bit samples, c channels, no alpha. */
static void png_to_channels(png_structp png, png_infop info, int c)
{
	int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
	int colour = type == PNG_COLOR_TYPE_PALETTE || (type & PNG_COLOR_MASK_COLOR);

	if (type == PNG_COLOR_TYPE_PALETTE)
		png_set_palette_to_rgb(png);
	if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
		png_set_expand_gray_1_2_4_to_8(png);
	if (depth == 16)
		png_set_strip_16(png);
	png_set_strip_alpha(png);
	if (c == 3 && !colour)
		png_set_gray_to_rgb(png);
	if (c == 1 && colour)	/* BT.601 weights in 1/100000 */
		png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
}

static int png_decode(struct akk_image *im, const unsigned char *p, size_t len,
		      int c, int h, int w, const char *name, struct akk_err *e)
{
	struct png_io io = { .p = p, .len = len };
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, png_io_error,
						 png_io_warning);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	uint8_t *volatile pix = NULL;
	png_bytep *volatile rows = NULL;
	png_uint_32 fw, fh;
	volatile int rc = -1;

	if (!info) {
		akk_err_set(e, "out of memory reading '%s'", name);
		goto out;
	}
	if (png_chunks_fit(p, len, name, e))
		goto out;
	if (setjmp(io.jb)) {
		akk_err_at(e, name, 0, 0, "not a readable PNG image: %s", io.msg);
		goto out;
	}
	/* the sides are checked below, with their values in the message */
	png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
	png_set_chunk_malloc_max(png, AKK_IMAGE_MAX_BYTES);
	png_set_read_fn(png, &io, png_io_read);
	png_read_info(png, info);
	fw = png_get_image_width(png, info);
	fh = png_get_image_height(png, info);
	if (check_size(fw, fh, h, w, name, e))
		goto out;
	png_to_channels(png, info, c);
	if (png_get_channels(png, info) != c || png_get_bit_depth(png, info) != 8 ||
	    png_get_rowbytes(png, info) != (size_t)fw * c) {
		akk_err_at(e, name, 0, 0, "PNG colour type %d at %d bits cannot become %d channel%s",
			   png_get_color_type(png, info), png_get_bit_depth(png, info), c,
			   c == 1 ? "" : "s");
		goto out;
	}
	pix = malloc((size_t)fw * fh * c);
	rows = malloc(fh * sizeof(*rows));
	if (!pix || !rows || !(im->x = malloc((size_t)fw * fh * c))) {
		akk_err_set(e, "out of memory reading '%s'", name);
		goto out;
	}
	for (png_uint_32 y = 0; y < fh; y++)
		rows[y] = pix + (size_t)y * fw * c;
	png_read_image(png, rows);
	png_read_end(png, NULL);
	planes(im->x, pix, c, (size_t)fw * fh);
	im->c = c;
	im->h = (int)fh;
	im->w = (int)fw;
	rc = 0;
out:
	png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
	free(pix);
	free(rows);
	if (rc)
		akk_image_release(im);
	return rc;
}

/* --- JPEG ----------------------------------------------------------------- */

struct jpeg_fail {
	struct jpeg_error_mgr mgr;	/* first: libjpeg's cinfo->err */
	struct jpeg_progress_mgr progress;
	jmp_buf jb;
	char msg[JMSG_LENGTH_MAX];
};

static void jpeg_fail_exit(j_common_ptr ci)
{
	struct jpeg_fail *f = (struct jpeg_fail *)ci->err;

	f->mgr.format_message(ci, f->msg);
	longjmp(f->jb, 1);
}

/* Level -1 is a warning: corrupt data or a premature end, which libjpeg
 * would paint grey. Refused like an error; trace messages ignored. */
static void jpeg_fail_message(j_common_ptr ci, int level)
{
	if (level < 0)
		jpeg_fail_exit(ci);
}

static void jpeg_quiet(j_common_ptr ci)
{
	(void)ci;
}

/* A progressive file of endless scans takes endless time: bounded. */
static void jpeg_scans(j_common_ptr ci)
{
	struct jpeg_fail *f = (struct jpeg_fail *)ci->err;

	if (ci->is_decompressor &&
	    ((j_decompress_ptr)ci)->input_scan_number > AKK_IMAGE_MAX_SCANS) {
		snprintf(f->msg, sizeof(f->msg), "more than %d scans", AKK_IMAGE_MAX_SCANS);
		longjmp(f->jb, 1);
	}
}

static int jpeg_decode(struct akk_image *im, const unsigned char *p, size_t len,
		       int c, int h, int w, const char *name, struct akk_err *e)
{
	struct jpeg_decompress_struct ci;
	struct jpeg_fail f;
	uint8_t *volatile pix = NULL;
	volatile int rc = -1;

	memset(&ci, 0, sizeof(ci));
	ci.err = jpeg_std_error(&f.mgr);
	f.mgr.error_exit = jpeg_fail_exit;
	f.mgr.emit_message = jpeg_fail_message;
	f.mgr.output_message = jpeg_quiet;
	f.progress.progress_monitor = jpeg_scans;
	if (setjmp(f.jb)) {
		akk_err_at(e, name, 0, 0, "not a readable JPEG image: %s", f.msg);
		goto out;
	}
	jpeg_create_decompress(&ci);
	ci.progress = &f.progress;
	ci.mem->max_memory_to_use = (long)AKK_IMAGE_MAX_BYTES * 4;
	jpeg_mem_src(&ci, p, (unsigned long)len);
	jpeg_read_header(&ci, TRUE);
	if (check_size(ci.image_width, ci.image_height, h, w, name, e))
		goto out;
	if (ci.jpeg_color_space == JCS_CMYK || ci.jpeg_color_space == JCS_YCCK) {
		akk_err_at(e, name, 0, 0, "CMYK JPEG images are not read: only grey and colour (YCbCr, RGB)");
		goto out;
	}
	ci.out_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_start_decompress(&ci);
	if (ci.output_components != c || ci.output_width != ci.image_width ||
	    ci.output_height != ci.image_height) {
		akk_err_at(e, name, 0, 0, "JPEG of %d components cannot become %d channel%s",
			   ci.num_components, c, c == 1 ? "" : "s");
		goto out;
	}
	pix = malloc((size_t)ci.output_width * ci.output_height * c);
	if (!pix || !(im->x = malloc((size_t)ci.output_width * ci.output_height * c))) {
		akk_err_set(e, "out of memory reading '%s'", name);
		goto out;
	}
	while (ci.output_scanline < ci.output_height) {
		JSAMPROW row = pix + (size_t)ci.output_scanline * ci.output_width * c;
		jpeg_read_scanlines(&ci, &row, 1);
	}
	jpeg_finish_decompress(&ci);
	planes(im->x, pix, c, (size_t)ci.output_width * ci.output_height);
	im->c = c;
	im->h = (int)ci.output_height;
	im->w = (int)ci.output_width;
	rc = 0;
out:
	jpeg_destroy_decompress(&ci);
	free(pix);
	if (rc)
		akk_image_release(im);
	return rc;
}

int akk_image_decode(struct akk_image *im, const unsigned char *p, size_t len,
		     int c, int h, int w, const char *name, struct akk_err *e)
{
	memset(im, 0, sizeof(*im));
	if (c != 1 && c != 3)
		return akk_err_at(e, name, 0, 0, "images have 1 or 3 channels, but %d are asked for", c);
	if (len > AKK_IMAGE_MAX_BYTES)
		return akk_err_at(e, name, 0, 0, "file of %zu bytes is larger than %zu for an image",
				  len, AKK_IMAGE_MAX_BYTES);
	if (!akk_image_magic(p, len))
		return akk_err_at(e, name, 0, 0, "not a PNG or JPEG image (no PNG signature or JPEG marker)");
	if (p[0] == 0x89)
		return png_decode(im, p, len, c, h, w, name, e);
	return jpeg_decode(im, p, len, c, h, w, name, e);
}

int akk_image_load(struct akk_image *im, const char *path, int c, int h, int w,
		   struct akk_err *e)
{
	unsigned char *p = NULL;
	struct stat st;
	int rc = -1;
	FILE *f;

	memset(im, 0, sizeof(*im));
	/* a FIFO would block the open itself: refused before it */
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return akk_err_at(e, path, 0, 0, "cannot read: not a regular file");
	if (!(f = fopen(path, "rb")))
		return akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		akk_err_at(e, path, 0, 0, "cannot read: not a regular file");
		goto out;
	}
	if ((unsigned long long)st.st_size > AKK_IMAGE_MAX_BYTES) {
		akk_err_at(e, path, 0, 0, "file of %lld bytes is larger than %zu for an image",
			   (long long)st.st_size, AKK_IMAGE_MAX_BYTES);
		goto out;
	}
	if (!(p = malloc(st.st_size ? (size_t)st.st_size : 1))) {
		akk_err_set(e, "out of memory reading '%s'", path);
		goto out;
	}
	if (fread(p, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		akk_err_at(e, path, 0, 0, "cannot read: %s", ferror(f) ? strerror(errno) : "the file shrank");
		goto out;
	}
	rc = akk_image_decode(im, p, (size_t)st.st_size, c, h, w, path, e);
out:
	free(p);
	fclose(f);
	return rc;
}
