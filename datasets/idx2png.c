/* idx2png.c - the first N images of an IDX image file (rank 3, bytes,
 * plain or gzip) as grey PNG files in a folder per class: OUT/LABEL/NNNNN.png,
 * the label from the IDX label file, NNNNN the image's index. Built and
 * run by fetch.sh mnist-png; links with libpng and zlib only.
 *
 *   idx2png IMAGES LABELS N OUT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <png.h>
#include <zlib.h>

static void die(const char *what, const char *path)
{
	fprintf(stderr, "idx2png: %s: %s\n", path, what);
	exit(1);
}

/* The IDX file at path, whole, and its header checked: rank dims, bytes. */
static unsigned char *load(const char *path, int rank, unsigned long *dims, size_t *n)
{
	gzFile f = gzopen(path, "rb");
	unsigned char hdr[16], *p;
	size_t size = 1;

	if (!f)
		die(strerror(errno), path);
	if (gzread(f, hdr, 4 + 4 * rank) != 4 + 4 * rank || hdr[0] || hdr[1] ||
	    hdr[2] != 0x08 || hdr[3] != rank)
		die("not an IDX file of bytes of the expected rank", path);
	for (int i = 0; i < rank; i++) {
		const unsigned char *d = hdr + 4 + 4 * i;
		dims[i] = (unsigned long)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3];
		size *= dims[i];
	}
	if (size > (size_t)1 << 30 || !(p = malloc(size ? size : 1)))
		die("too large", path);
	if (gzread(f, p, (unsigned)size) != (int)size)
		die("truncated", path);
	gzclose(f);
	*n = size;
	return p;
}

static void write_png(const char *path, const unsigned char *pix, int w, int h)
{
	FILE *f = fopen(path, "wb");
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;

	if (!f || !info)
		die("cannot write", path);
	if (setjmp(png_jmpbuf(png)))
		die("libpng failed", path);
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int y = 0; y < h; y++)
		png_write_row(png, (png_const_bytep)(pix + (size_t)y * w));
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	if (fclose(f))
		die("cannot write", path);
}

int main(int argc, char **argv)
{
	unsigned long idims[3], ldims[1], count;
	unsigned char *img, *lab;
	size_t ni, nl;
	char path[4096];

	if (argc != 5) {
		fprintf(stderr, "usage: idx2png IMAGES LABELS N OUT\n");
		return 2;
	}
	img = load(argv[1], 3, idims, &ni);
	lab = load(argv[2], 1, ldims, &nl);
	count = strtoul(argv[3], NULL, 10);
	if (ldims[0] != idims[0])
		die("not as many labels as images", argv[2]);
	if (count > idims[0])
		count = idims[0];
	if (mkdir(argv[4], 0755) && errno != EEXIST)
		die(strerror(errno), argv[4]);
	for (unsigned long i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/%u", argv[4], lab[i]);
		if (mkdir(path, 0755) && errno != EEXIST)
			die(strerror(errno), path);
		snprintf(path, sizeof(path), "%s/%u/%05lu.png", argv[4], lab[i], i);
		write_png(path, img + i * idims[1] * idims[2], (int)idims[2], (int)idims[1]);
	}
	free(img);
	free(lab);
	return 0;
}
