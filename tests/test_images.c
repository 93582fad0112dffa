/* test_images.c - PNG and JPEG images: decoding and the channel rule
 * (data/image.h), class folders and image lists (data/image_set.h), and
 * through the CLI: training on a generated folder of PNGs and JPEGs,
 * predict on single files and folders, and hostile files refused with
 * exit 2 naming the file.
 *
 * The images are written here with libpng and libjpeg. The learnable set:
 * 8 x 8 grey images, class "bottom" bright in its lower half, class "top"
 * in its upper half, with noise; stored as grey PNG, RGB PNG (the same
 * grey in the three channels), grey JPEG and RGB JPEG in turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include "testutil.h"
#include "data/image.h"
#include "data/image_set.h"

static char g_out[1 << 16], g_err[1 << 14];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)
#define assert_rc(call, want) do { int rc_ = (call); \
	if (rc_ != (want)) fail_msg("exit %d, want %d; stderr:\n%s", rc_, (want), g_err); } while (0)

#define SIDE 8

/* A PNG of w x h with the given colour type and depth; px interleaved
 * samples, 1 or 2 bytes each (16 bits big-endian), palette: 256 entries
 * when PNG_COLOR_TYPE_PALETTE. */
static void write_png(const char *path, int w, int h, int type, int depth,
		      const unsigned char *px, const png_color *palette)
{
	FILE *f = fopen(path, "wb");
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(png);
	int ch = type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_PALETTE ? 1 :
		 type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : type == PNG_COLOR_TYPE_RGB ? 3 : 4;
	size_t row = (size_t)w * ch * (depth == 16 ? 2 : 1);

	assert_non_null(f);
	if (setjmp(png_jmpbuf(png)))
		fail_msg("libpng could not write %s", path);
	png_init_io(png, f);
	png_set_IHDR(png, info, w, h, depth, type, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (palette)
		png_set_PLTE(png, info, palette, 256);
	png_write_info(png, info);
	for (int y = 0; y < h; y++)
		png_write_row(png, px + y * row);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	assert_int_equal(fclose(f), 0);
}

static void write_jpeg(const char *path, int w, int h, int comps, const unsigned char *px)
{
	struct jpeg_compress_struct ci;
	struct jpeg_error_mgr err;
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	ci.err = jpeg_std_error(&err);
	jpeg_create_compress(&ci);
	jpeg_stdio_dest(&ci, f);
	ci.image_width = w;
	ci.image_height = h;
	ci.input_components = comps;
	ci.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
	jpeg_set_defaults(&ci);
	jpeg_set_quality(&ci, 100, TRUE);
	jpeg_start_compress(&ci, TRUE);
	while (ci.next_scanline < ci.image_height) {
		JSAMPROW r = (JSAMPROW)(px + (size_t)ci.next_scanline * w * comps);
		jpeg_write_scanlines(&ci, &r, 1);
	}
	jpeg_finish_compress(&ci);
	jpeg_destroy_compress(&ci);
	assert_int_equal(fclose(f), 0);
}

/* Sample i of class k (0: bottom half bright, 1: top half bright). */
static void sample(unsigned char *g, int k, int i)
{
	uint32_t s = 2654435761u * (uint32_t)(i + 1) + (uint32_t)k;

	for (int y = 0; y < SIDE; y++)
		for (int x = 0; x < SIDE; x++) {
			int bright = (y >= SIDE / 2) == (k == 0);
			s = s * 1664525u + 1013904223u;
			g[y * SIDE + x] = (unsigned char)((bright ? 170 : 30) + (s >> 27));
		}
}

/* Sample i of class k at path (its extension says PNG or JPEG), grey or
 * as RGB of equal channels. */
static void write_sample(const char *path, int k, int i, int rgb)
{
	unsigned char g[SIDE * SIDE], c[3 * SIDE * SIDE];
	size_t n = strlen(path);

	sample(g, k, i);
	for (int j = 0; j < SIDE * SIDE; j++)
		c[3 * j] = c[3 * j + 1] = c[3 * j + 2] = g[j];
	if (!strcmp(path + n - 4, ".png"))
		write_png(path, SIDE, SIDE, rgb ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, 8,
			  rgb ? c : g, NULL);
	else
		write_jpeg(path, SIDE, SIDE, rgb ? 3 : 1, rgb ? c : g);
}

static const char *const g_class[2] = { "bottom", "top" };

/* dir/CLASS/NNN.{png,jpg} for n samples a class, from sample index first;
 * classes: which of the two (bit 0: bottom, bit 1: top). */
static void write_folder(const char *dir, int n, int first, int classes)
{
	char sub[1024], name[1100];

	mkdir(dir, 0755);
	for (int k = 0; k < 2; k++) {
		if (!(classes & (1 << k)))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, g_class[k]);
		mkdir(sub, 0755);
		for (int i = first; i < first + n; i++) {
			snprintf(name, sizeof(name), "%s/%03d.%s", sub, i, i % 4 < 2 ? "png" : "jpg");
			write_sample(name, k, i, i % 2);
		}
	}
}

/* dir/name into buf (tu_path's buffers rotate). */
static const char *at(char *buf, const char *dir, const char *name)
{
	snprintf(buf, 1024, "%s/%s", dir, name);
	return buf;
}

static void write_config(const char *path, const char *train, const char *val, const char *run,
			 int channels)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "name: images\nseed: 7\n"
		 "data:\n  format: images\n  train: %s\n%s%s%s  scale: 255\n"
		 "network:\n  input: [%d, %d, %d]\n"
		 "  gates:\n    - layers: [flatten, {dense: 16}, relu, {dense: 2}]\n"
		 "optimizer: {type: adam, lr: 0.01}\n"
		 "schedule: {mode: flip-flop, epochs: 8, batch_size: 16}\n"
		 "output: {dir: %s}\n",
		 train, val ? "  validation: " : "", val ? val : "", val ? "\n" : "",
		 channels, SIDE, SIDE, run);
	assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

/* --- decoding and the channel rule ---------------------------------------- */

static struct akk_image load(const char *path, int c, int h, int w)
{
	struct akk_image im;
	struct akk_err e = { 0 };

	if (akk_image_load(&im, path, c, h, w, &e))
		fail_msg("%s: %s", path, e.msg);
	return im;
}

static void png_channels(void **state)
{
	const char *dir = tu_tmpdir(), *p = tu_path(dir, "a.png");
	unsigned char rgb[3 * 6], rgba[4 * 6], g16[2 * 6];
	struct akk_image im;

	(void)state;
	/* 3 x 2 RGB: channels come out as planes */
	for (int i = 0; i < 6; i++) {
		rgb[3 * i] = (unsigned char)(10 * i);
		rgb[3 * i + 1] = (unsigned char)(100 + i);
		rgb[3 * i + 2] = (unsigned char)(250 - i);
	}
	write_png(p, 3, 2, PNG_COLOR_TYPE_RGB, 8, rgb, NULL);
	im = load(p, 3, 2, 3);
	assert_int_equal(im.c, 3);
	assert_int_equal(im.h, 2);
	assert_int_equal(im.w, 3);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(im.x[i], 10 * i);
		assert_int_equal(im.x[6 + i], 100 + i);
		assert_int_equal(im.x[12 + i], 250 - i);
	}
	akk_image_release(&im);
	/* colour to grey: BT.601 luminance, to within rounding */
	im = load(p, 1, 0, 0);
	for (int i = 0; i < 6; i++) {
		double y = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
		assert_true(abs(im.x[i] - (int)(y + 0.5)) <= 1);
	}
	akk_image_release(&im);
	/* alpha dropped, colours as stored */
	for (int i = 0; i < 6; i++) {
		memcpy(rgba + 4 * i, rgb + 3 * i, 3);
		rgba[4 * i + 3] = (unsigned char)(i * 40);
	}
	write_png(p, 3, 2, PNG_COLOR_TYPE_RGB_ALPHA, 8, rgba, NULL);
	im = load(p, 3, 2, 3);
	for (int i = 0; i < 6; i++)
		assert_int_equal(im.x[6 + i], 100 + i);
	akk_image_release(&im);
	/* 16-bit grey: the high byte, replicated into three channels */
	for (int i = 0; i < 6; i++) {
		g16[2 * i] = (unsigned char)(40 * i);
		g16[2 * i + 1] = 0xff;
	}
	write_png(p, 3, 2, PNG_COLOR_TYPE_GRAY, 16, g16, NULL);
	im = load(p, 3, 2, 3);
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 6; i++)
			assert_int_equal(im.x[k * 6 + i], 40 * i);
	akk_image_release(&im);
	tu_rm_tree(dir);
}

static void png_palette(void **state)
{
	const char *dir = tu_tmpdir(), *p = tu_path(dir, "p.png");
	png_color pal[256];
	unsigned char idx[4] = { 0, 1, 2, 255 };
	struct akk_image im;

	(void)state;
	for (int i = 0; i < 256; i++)
		pal[i] = (png_color){ (png_byte)i, (png_byte)(255 - i), 7 };
	write_png(p, 2, 2, PNG_COLOR_TYPE_PALETTE, 8, idx, pal);
	im = load(p, 3, 2, 2);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(im.x[i], idx[i]);
		assert_int_equal(im.x[4 + i], 255 - idx[i]);
		assert_int_equal(im.x[8 + i], 7);
	}
	akk_image_release(&im);
	tu_rm_tree(dir);
}

static void jpeg_channels(void **state)
{
	const char *dir = tu_tmpdir(), *p = tu_path(dir, "a.jpg");
	unsigned char g[64], c[3 * 64];
	struct akk_image im;

	(void)state;
	/* flat blocks survive quality 100 to within a few levels */
	memset(g, 90, sizeof(g));
	write_jpeg(p, 8, 8, 1, g);
	im = load(p, 3, 8, 8);
	for (int i = 0; i < 3 * 64; i++)
		assert_true(abs(im.x[i] - 90) <= 2);
	akk_image_release(&im);
	for (int i = 0; i < 64; i++) {
		c[3 * i] = 200;
		c[3 * i + 1] = 40;
		c[3 * i + 2] = 10;
	}
	write_jpeg(p, 8, 8, 3, c);
	im = load(p, 3, 8, 8);
	assert_true(abs(im.x[0] - 200) <= 3 && abs(im.x[64] - 40) <= 3 && abs(im.x[128] - 10) <= 3);
	akk_image_release(&im);
	im = load(p, 1, 8, 8);	/* Y = 0.299 R + 0.587 G + 0.114 B = 84.5 */
	assert_true(abs(im.x[0] - 84) <= 3);
	akk_image_release(&im);
	tu_rm_tree(dir);
}

/* --- hostile files ----------------------------------------------------------- */

/* Set the IHDR field at offset off (from the chunk's data) and fix its CRC. */
static void patch_ihdr(unsigned char *p, int off, const unsigned char *v, int n)
{
	uLong crc;

	memcpy(p + 16 + off, v, n);
	crc = crc32(0, p + 12, 17);
	p[29] = (unsigned char)(crc >> 24);
	p[30] = (unsigned char)(crc >> 16);
	p[31] = (unsigned char)(crc >> 8);
	p[32] = (unsigned char)crc;
}

/* A PNG chunk of type t and n bytes d at p; returns its length. */
static size_t png_chunk(unsigned char *p, const char *t, const unsigned char *d, size_t n)
{
	uLong crc;

	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(n >> (24 - 8 * i));
	memcpy(p + 4, t, 4);
	if (n)
		memcpy(p + 8, d, n);
	crc = crc32(0, p + 4, (uInt)(n + 4));
	for (int i = 0; i < 4; i++)
		p[8 + n + i] = (unsigned char)(crc >> (24 - 8 * i));
	return n + 12;
}

/* An 8 x 8 grey PNG whose chunks are whole but whose zlib stream stops
 * half-way: the rows run out. */
static void write_short_png(const char *path)
{
	static const unsigned char ihdr[13] = { 0, 0, 0, 8, 0, 0, 0, 8, 8, 0, 0, 0, 0 };
	unsigned char raw[8 * 9], z[256], file[512];
	uLongf zn = sizeof(z);
	size_t n = 8;

	for (int i = 0; i < 8 * 9; i++)
		raw[i] = i % 9 ? (unsigned char)(i * 29) : 0;	/* filter byte 0 */
	assert_int_equal(compress(z, &zn, raw, sizeof(raw)), Z_OK);
	memcpy(file, "\x89PNG\r\n\x1a\n", 8);
	n += png_chunk(file + n, "IHDR", ihdr, 13);
	n += png_chunk(file + n, "IDAT", z, zn / 2);
	n += png_chunk(file + n, "IEND", NULL, 0);
	assert_int_equal(tu_write_file(path, file, n), 0);
}

/* An 8 x 8 grey PNG whose second chunk, an sPLT, declares 0x73737373
 * bytes in a file of 61: libpng allocates a chunk's buffer from its
 * length, so the length is checked against the file first (a fuzzer's
 * find: 2 GB a decode). */
static void write_huge_chunk_png(const char *path)
{
	static const unsigned char ihdr[13] = { 0, 0, 0, 8, 0, 0, 0, 8, 8, 0, 0, 0, 0 };
	unsigned char file[128];
	size_t n = 8;

	memcpy(file, "\x89PNG\r\n\x1a\n", 8);
	n += png_chunk(file + n, "IHDR", ihdr, 13);
	memcpy(file + n, "sssssPLTpalette\0\x08rrggbbaaff", 28);
	n += 28;
	assert_int_equal(tu_write_file(path, file, n), 0);
}

/* Write the hostile files into dir: name -> what the error must say. */
static const struct {
	const char *name, *says;
} g_hostile[] = {
	{ "truncated.png", "not a readable PNG image: the file ends early (truncated)" },
	{ "shortdata.png", "not a readable PNG image: Not enough image data" },
	{ "truncated.jpg", "not a readable JPEG image" },
	{ "wrongsize.png", "image is 9 x 8 (width x height), but the network takes 8 x 8" },
	{ "hugedims.png", "image of 1000000 x 8 pixels" },
	{ "badcolour.png", "not a readable PNG image" },
	{ "text.png", "not a PNG or JPEG image" },
	{ "empty.jpg", "not a PNG or JPEG image" },
	{ "corrupt.jpg", "not a readable JPEG image" },
	{ "hugechunk.png",
	  "not a readable PNG image: the file ends early (truncated): chunk 'sPLT' at byte 33 declares 1936946035 bytes, the file holds 20 more" },
};

static void write_hostile(const char *dir)
{
	char b[2][1024];
	const char *good = at(b[0], dir, "good.png"), *goodj = at(b[1], dir, "good.jpg");
	unsigned char g[9 * 8] = { 0 }, *p;
	size_t len, sos;

	write_sample(good, 0, 1, 0);
	write_sample(goodj, 0, 1, 1);
	p = (unsigned char *)tu_slurp(good, &len);
	assert_int_equal(tu_write_file(tu_path(dir, "truncated.png"), p, len - 20), 0);
	patch_ihdr(p, 0, (const unsigned char[]){ 0, 0x0f, 0x42, 0x40 }, 4);	/* 1000000 */
	assert_int_equal(tu_write_file(tu_path(dir, "hugedims.png"), p, len), 0);
	free(p);
	p = (unsigned char *)tu_slurp(good, &len);
	patch_ihdr(p, 9, (const unsigned char[]){ 5 }, 1);	/* no colour type 5 */
	assert_int_equal(tu_write_file(tu_path(dir, "badcolour.png"), p, len), 0);
	free(p);
	p = (unsigned char *)tu_slurp(goodj, &len);
	/* cut, then garble, the entropy-coded data after the SOS segment:
	 * libjpeg only warns about either */
	for (sos = 2; sos + 4 < len && !(p[sos] == 0xff && p[sos + 1] == 0xda); sos++)
		;
	sos += 2 + (p[sos + 2] << 8 | p[sos + 3]);
	assert_true(sos + 8 < len);
	assert_int_equal(tu_write_file(tu_path(dir, "truncated.jpg"), p, sos + (len - sos) / 2), 0);
	for (size_t i = sos; i + 2 < len; i++)
		p[i] = (unsigned char)(p[i] * 7 + 13) | 0x01;
	p[len - 2] = 0xff;
	p[len - 1] = 0xd9;
	assert_int_equal(tu_write_file(tu_path(dir, "corrupt.jpg"), p, len), 0);
	free(p);
	write_png(tu_path(dir, "wrongsize.png"), 9, 8, PNG_COLOR_TYPE_GRAY, 8, g, NULL);
	assert_int_equal(tu_write_file(tu_path(dir, "text.png"), "hello\n", 6), 0);
	assert_int_equal(tu_write_file(tu_path(dir, "empty.jpg"), "", 0), 0);
	write_short_png(tu_path(dir, "shortdata.png"));
	write_huge_chunk_png(tu_path(dir, "hugechunk.png"));
}

static void hostile_decode(void **state)
{
	const char *dir = tu_tmpdir();

	(void)state;
	write_hostile(dir);
	for (size_t i = 0; i < sizeof(g_hostile) / sizeof(g_hostile[0]); i++) {
		struct akk_image im;
		struct akk_err e = { 0 };
		char msg[1024];
		const char *path = tu_path(dir, g_hostile[i].name);

		if (!akk_image_load(&im, path, 1, SIDE, SIDE, &e))
			fail_msg("%s was read", g_hostile[i].name);
		akk_err_format(&e, msg, sizeof(msg));
		tu_assert_prefix(msg, path);
		tu_assert_contains(msg, g_hostile[i].says);
		assert_null(im.x);
	}
	tu_rm_tree(dir);
}

/* --- class folders and lists ---------------------------------------------------- */

static void folder_dataset(void **state)
{
	const char *dir = tu_tmpdir(), *root = tu_path(dir, "set");
	struct akk_dataset d;
	struct akk_err e = { 0 };
	unsigned char g[SIDE * SIDE];

	(void)state;
	write_folder(root, 4, 0, 3);
	mkdir(tu_path(root, ".hidden"), 0755);
	assert_int_equal(tu_write_file(tu_path(tu_path(root, "top"), "notes.txt"), "x", 1), 0);
	if (akk_image_folder_dataset(&d, root, 1, SIDE, SIDE, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(d.n, 8);
	assert_int_equal(d.classes, 2);
	assert_string_equal(d.class_names[0], "bottom");
	assert_string_equal(d.class_names[1], "top");
	/* sorted: bottom/000.png first, top/003.jpg last */
	assert_int_equal(d.labels[0], 0);
	assert_int_equal(d.labels[7], 1);
	sample(g, 0, 0);
	assert_memory_equal(d.x8, g, sizeof(g));	/* a lossless PNG */
	akk_dataset_release(&d);
	/* an image outside any class folder, and an empty class */
	write_sample(tu_path(root, "stray.png"), 0, 0, 0);
	assert_int_equal(akk_image_folder_dataset(&d, root, 1, SIDE, SIDE, &e), -1);
	tu_assert_contains(e.msg, "an image outside any class folder");
	remove(tu_path(root, "stray.png"));
	mkdir(tu_path(root, "empty"), 0755);
	assert_int_equal(akk_image_folder_dataset(&d, root, 1, SIDE, SIDE, &e), -1);
	tu_assert_contains(e.msg, "class folder 'empty' holds no .png, .jpg or .jpeg files");
	tu_rm_tree(dir);
}

static void list_dataset(void **state)
{
	const char *dir = tu_tmpdir(), *list = tu_path(dir, "list.txt");
	static const char names[] = "# path label\n"
				    "a b.png  dog\n\n"
				    "  c.jpg\tcat\r\n"
				    "a b.png dog\n";
	static const char numbers[] = "a b.png 3\nc.jpg 0\n";
	struct akk_dataset d;
	struct akk_err e = { 0 };

	(void)state;
	write_sample(tu_path(dir, "a b.png"), 0, 0, 0);
	write_sample(tu_path(dir, "c.jpg"), 1, 0, 0);
	assert_int_equal(tu_write_file(list, names, strlen(names)), 0);
	if (akk_image_list_dataset(&d, list, 1, SIDE, SIDE, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.classes, 2);
	assert_string_equal(d.class_names[0], "cat");
	assert_string_equal(d.class_names[1], "dog");
	assert_int_equal(d.labels[0], 1);
	assert_int_equal(d.labels[1], 0);
	assert_int_equal(d.labels[2], 1);
	akk_dataset_release(&d);
	/* whole numbers are class numbers */
	assert_int_equal(tu_write_file(list, numbers, strlen(numbers)), 0);
	if (akk_image_list_dataset(&d, list, 1, SIDE, SIDE, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(d.classes, 4);
	assert_null(d.class_names);
	assert_int_equal(d.labels[0], 3);
	assert_int_equal(d.labels[1], 0);
	akk_dataset_release(&d);
	/* a line without a label, at its line */
	assert_int_equal(tu_write_file(list, "c.jpg 1\nlonely.png\n", 19), 0);
	assert_int_equal(akk_image_list_dataset(&d, list, 1, SIDE, SIDE, &e), -1);
	assert_int_equal(e.line, 2);
	tu_assert_contains(e.msg, "expected an image path, white space and a label");
	tu_rm_tree(dir);
}

/* --- through the CLI ------------------------------------------------------------- */

/* The predicted class of the only row of predict's output. */
static void assert_predicts(const char *run, const char *file, const char *cls)
{
	char want[64];

	assert_rc(ak("predict", run, file, NULL), 0);
	snprintf(want, sizeof(want), "0,%s,", cls);
	tu_assert_contains(g_out, want);
}

static void train_and_predict(void **state)
{
	char b[5][1024], train[1100], val[1100];
	const char *dir = tu_tmpdir(), *cfg = at(b[0], dir, "c.yaml"), *run = at(b[1], dir, "run");
	const char *tr = at(b[2], dir, "train"), *va = at(b[3], dir, "val"), *one = at(b[4], dir, "one");
	char *csv;
	int rows = 0;

	(void)state;
	write_folder(tr, 48, 0, 3);
	write_folder(va, 12, 100, 2);	/* only "top": numbered as in train */
	snprintf(train, sizeof(train), "{folder: %s}", tr);
	snprintf(val, sizeof(val), "{folder: %s}", va);
	write_config(cfg, train, val, run, 1);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	/* the epochs' validation: "top" scored as "top" */
	assert_non_null(csv = tu_slurp(tu_path(run, "metrics.csv"), NULL));
	tu_assert_contains(csv, "8,validation,12,");
	tu_assert_contains(strstr(csv, "8,validation,12,"), ",1.000000,");
	free(csv);
	assert_rc(ak("inspect", run, NULL), 0);
	tu_assert_contains(g_out, "bottom, top");
	/* the held-out "top" images are found to be "top" */
	assert_rc(ak("eval", run, NULL), 0);
	tu_assert_contains(g_out, "accuracy 100.00%");
	/* single files, PNG and JPEG, grey and colour */
	mkdir(one, 0755);
	write_sample(tu_path(one, "b.png"), 0, 500, 0);
	write_sample(tu_path(one, "t.jpg"), 1, 501, 1);
	write_sample(tu_path(one, "b.jpg"), 0, 502, 0);
	write_sample(tu_path(one, "t.png"), 1, 503, 1);
	assert_predicts(run, tu_path(one, "b.png"), "bottom");
	assert_predicts(run, tu_path(one, "t.jpg"), "top");
	assert_predicts(run, tu_path(one, "b.jpg"), "bottom");
	assert_predicts(run, tu_path(one, "t.png"), "top");
	/* a folder: its files in byte order (b.jpg b.png t.jpg t.png) */
	assert_rc(ak("predict", run, one, NULL), 0);
	tu_assert_line(g_out, "index,predicted,probability");
	for (const char *s = g_out; (s = strchr(s, '\n')) && s[1]; s++)
		rows++;
	assert_int_equal(rows, 4);
	tu_assert_contains(g_out, "\n0,bottom,");
	tu_assert_contains(g_out, "\n1,bottom,");
	tu_assert_contains(g_out, "\n2,top,");
	tu_assert_contains(g_out, "\n3,top,");
	tu_rm_tree(dir);
}

static void train_from_list(void **state)
{
	char b[4][1024], train[1100], line[64];
	const char *dir = tu_tmpdir(), *cfg = at(b[0], dir, "c.yaml"), *run = at(b[1], dir, "run");
	const char *list = at(b[2], dir, "train.txt");
	FILE *f;

	(void)state;
	write_folder(at(b[3], dir, "img"), 32, 0, 3);
	assert_non_null(f = fopen(list, "w"));
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 32; i++) {
			snprintf(line, sizeof(line), "img/%s/%03d.%s %s\n", g_class[k], i,
				 i % 4 < 2 ? "png" : "jpg", g_class[k]);
			fputs(line, f);
		}
	fclose(f);
	snprintf(train, sizeof(train), "{list: %s}", list);
	write_config(cfg, train, NULL, run, 3);	/* grey read as RGB */
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	assert_rc(ak("inspect", run, NULL), 0);
	tu_assert_contains(g_out, "bottom, top");
	write_sample(tu_path(dir, "t.png"), 1, 900, 0);
	assert_predicts(run, tu_path(dir, "t.png"), "top");
	tu_rm_tree(dir);
}

/* A flat network (input [64], trained on IDX images) takes grey images of
 * 64 pixels, colour ones as their luminance; another count is refused. */
static void predict_flat_network(void **state)
{
	char b[3][1024], text[2048];
	const char *dir = tu_tmpdir(), *cfg = at(b[0], dir, "c.yaml"), *run = at(b[1], dir, "run");
	const char *one = at(b[2], dir, "one");
	unsigned char g[9 * 8] = { 0 };

	(void)state;
	tu_write_set(dir, "train", 64, SIDE, 2, 3);
	snprintf(text, sizeof(text),
		 "data:\n  train: {images: %s/train-images, labels: %s/train-labels}\n"
		 "network:\n  input: [%d]\n  gates:\n    - layers: [{dense: 2}]\n"
		 "optimizer: {type: sgd, lr: 0.1}\nschedule: {mode: flip-flop, epochs: 1}\n"
		 "output: {dir: %s}\n", dir, dir, SIDE * SIDE, run);
	assert_int_equal(tu_write_file(cfg, text, strlen(text)), 0);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	mkdir(one, 0755);
	write_sample(tu_path(one, "a.png"), 0, 1, 1);
	write_sample(tu_path(one, "b.jpg"), 1, 2, 0);
	assert_rc(ak("predict", run, one, NULL), 0);
	tu_assert_contains(g_out, "\n1,");
	write_png(tu_path(one, "c.png"), 9, 8, PNG_COLOR_TYPE_GRAY, 8, g, NULL);
	assert_rc(ak("predict", run, tu_path(one, "c.png"), NULL), 2);
	tu_assert_contains(g_err, "c.png: samples have 72 values, but the network takes 64");
	tu_rm_tree(dir);
}

static void hostile_cli(void **state)
{
	char b[4][1024], train[1100], want[2048];
	const char *dir = tu_tmpdir(), *cfg = at(b[0], dir, "c.yaml"), *run = at(b[1], dir, "run");
	const char *tr = at(b[2], dir, "train"), *bad = at(b[3], dir, "bad");

	(void)state;
	write_folder(tr, 8, 0, 3);
	snprintf(train, sizeof(train), "{folder: %s}", tr);
	write_config(cfg, train, NULL, run, 1);
	assert_rc(ak("train", cfg, "--quiet", NULL), 0);
	mkdir(bad, 0755);
	write_hostile(bad);
	for (size_t i = 0; i < sizeof(g_hostile) / sizeof(g_hostile[0]); i++) {
		const char *p = tu_path(bad, g_hostile[i].name);
		assert_rc(ak("predict", run, p, NULL), 2);
		snprintf(want, sizeof(want), "akkctl: %s: %s", p, g_hostile[i].says);
		tu_assert_contains(g_err, want);
	}
	/* a FIFO named like an image: refused, not waited on */
	assert_int_equal(mkfifo(tu_path(bad, "fifo.png"), 0600), 0);
	assert_rc(ak("predict", run, tu_path(bad, "fifo.png"), NULL), 2);
	tu_assert_contains(g_err, "fifo.png: cannot read: not a regular file");
	/* in a class folder, training names the file */
	rename(tu_path(bad, "truncated.png"), tu_path(tu_path(tr, "top"), "zz.png"));
	assert_rc(ak("train", cfg, "--quiet", "--force", NULL), 2);
	snprintf(want, sizeof(want), "akkctl: %s/top/zz.png: not a readable PNG image", tr);
	tu_assert_contains(g_err, want);
	/* the spec: one of folder and list; an input images can take */
	snprintf(train, sizeof(train), "{folder: %s, list: x.txt}", tr);
	write_config(cfg, train, NULL, run, 1);
	assert_rc(ak("check", cfg, NULL), 2);
	tu_assert_contains(g_err, "data.train takes 'folder' (class folders) or 'list' (an image list), not both");
	write_config(cfg, "{}", NULL, run, 1);
	assert_rc(ak("check", cfg, NULL), 2);
	tu_assert_contains(g_err, "data.train needs 'folder' (class folders) or 'list' (an image list)");
	write_config(cfg, "{folder: x}", NULL, run, 2);
	assert_rc(ak("check", cfg, NULL), 2);
	tu_assert_contains(g_err, "data format 'images' needs network.input [C, H, W] with 1 or 3 channels");
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(png_channels),
		cmocka_unit_test(png_palette),
		cmocka_unit_test(jpeg_channels),
		cmocka_unit_test(hostile_decode),
		cmocka_unit_test(folder_dataset),
		cmocka_unit_test(list_dataset),
		cmocka_unit_test(train_and_predict),
		cmocka_unit_test(train_from_list),
		cmocka_unit_test(predict_flat_network),
		cmocka_unit_test(hostile_cli),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
