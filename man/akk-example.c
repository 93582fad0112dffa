/* akk-example.c - classify the images of an IDX file with libakk.
 *
 * Build: cc akk-example.c $(pkg-config --cflags --libs akk) -o akk-example
 * Run:   ./akk-example runs/lenet/best.bin t10k-images-idx3-ubyte
 * Prints one line per image: its index, then the probability of every
 * class. */
#include <stdio.h>
#include <stdlib.h>
#include <akk.h>

/* An IDX file of unsigned bytes, rank 3 (count, height, width), as floats. */
static float *read_idx(const char *path, long *n, int *h, int *w)
{
	unsigned char hd[16];
	FILE *f = fopen(path, "rb");
	float *x = NULL;
	size_t size;

	if (!f)
		return NULL;
	if (fread(hd, 1, 16, f) == 16 && hd[2] == 0x08 && hd[3] == 3) {
		*n = (long)hd[4] << 24 | hd[5] << 16 | hd[6] << 8 | hd[7];
		*h = hd[8] << 24 | hd[9] << 16 | hd[10] << 8 | hd[11];
		*w = hd[12] << 24 | hd[13] << 16 | hd[14] << 8 | hd[15];
		size = (size_t)*n * *h * *w;
		x = malloc(size * sizeof(float) + 1);
		for (size_t i = 0; x && i < size; i++) {
			int c = getc(f);
			if (c == EOF) {
				free(x);
				x = NULL;
				break;
			}
			x[i] = (float)c; /* raw pixels: the model scales them */
		}
	}
	fclose(f);
	return x;
}

int main(int argc, char **argv)
{
	char err[1024];
	int dims[4], rank, classes, h, w, rc = 1;
	long n;
	float *x, *prob = NULL;
	akk_model *m;

	if (argc != 3) {
		fprintf(stderr, "usage: %s CHECKPOINT IMAGES.idx\n", argv[0]);
		return 2;
	}
	m = akk_open(argv[1], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "akk_open: %s\n", err);
		return 1;
	}
	rank = akk_input_shape(m, dims);
	classes = akk_outputs(m);
	fprintf(stderr, "libakk %s: input rank %d (%zu values), %d classes\n",
		akk_version(), rank, akk_input_size(m), classes);
	x = read_idx(argv[2], &n, &h, &w);
	if (!x) {
		fprintf(stderr, "%s: not an IDX image file\n", argv[2]);
		goto out;
	}
	prob = malloc((size_t)n * classes * sizeof(float) + 1);
	if (!prob || akk_predict(m, x, (size_t)n * h * w, prob, (size_t)n * classes,
				 err, sizeof(err))) {
		fprintf(stderr, "akk_predict: %s\n", prob ? err : "out of memory");
		goto out;
	}
	for (long i = 0; i < n; i++) {
		printf("%ld", i);
		for (int k = 0; k < classes; k++)
			printf(",%.9g", prob[i * classes + k]);
		printf("\n");
	}
	rc = 0;
out:
	free(x);
	free(prob);
	akk_close(m);
	return rc;
}
