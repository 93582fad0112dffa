/* kann_mlp.c - peer baseline: the same MLP in kann (attractivechaos/
 * kann, C, its own autodiff), for tests/bench_peers.sh.
 *
 * Same options and CSV as ../shared/peers/numpy_mlp.py: dense layers with
 * the activation between them, softmax cross-entropy, SGD (optionally with
 * momentum) or Adam (torch's form) on kann's flat parameter and gradient
 * blocks, the last partial batch included, inputs x/255. kann's products
 * go through cblas_sgemm (built with -DHAVE_CBLAS against OpenBLAS), so
 * the OpenBLAS kernel choice applies to it as to akkctl and numpy.
 *
 * Build (bench_peers.sh does): cc -O2 -DHAVE_CBLAS -I$KANN tests/peers/kann_mlp.c
 *   $KANN/kann.c $KANN/kautodiff.c $(pkg-config --cflags --libs openblas) -lm
 * with KANN a checkout of kann. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xmmintrin.h>

#include "kann.h"

extern void openblas_set_num_threads(int n);
extern char *openblas_get_corename(void);

static double wall(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *msg, const char *arg)
{
	fprintf(stderr, "kann_mlp: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

/* An IDX file's bytes after its header; *n the first dimension, *per the
 * product of the others. */
static uint8_t *read_idx(const char *dir, const char *name, int *n, int *per)
{
	char path[4096];
	FILE *f;
	uint8_t h[4], d[4];
	long total = 1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "rb")))
		die(strerror(errno), path);
	if (fread(h, 1, 4, f) != 4 || h[2] != 8 || h[3] < 1)
		die("not an IDX file of bytes", path);
	for (int i = 0; i < h[3]; i++) {
		if (fread(d, 1, 4, f) != 4)
			die("truncated IDX header", path);
		long v = (long)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3];
		if (i == 0)
			*n = (int)v;
		total *= v;
	}
	*per = (int)(total / *n);
	uint8_t *b = malloc(total);
	if (!b || fread(b, 1, total, f) != (size_t)total)
		die("truncated IDX data", path);
	fclose(f);
	return b;
}

struct opts {
	const char *data, *arch, *act, *opt;
	float lr, momentum;
	int batch, epochs, threads, seed, ftz;
};

static void parse(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){ NULL, "784,50,20,10", "relu", "sgd", 0.1f, 0, 64,
			    10, 1, 1, 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--ftz")) {
			o->ftz = 1;
			continue;
		}
		if (!v)
			die("option needs a value", a);
		i++;
		if (!strcmp(a, "--data")) o->data = v;
		else if (!strcmp(a, "--arch")) o->arch = v;
		else if (!strcmp(a, "--act")) o->act = v;
		else if (!strcmp(a, "--opt")) o->opt = v;
		else if (!strcmp(a, "--lr")) o->lr = strtof(v, NULL);
		else if (!strcmp(a, "--momentum")) o->momentum = strtof(v, NULL);
		else if (!strcmp(a, "--batch")) o->batch = atoi(v);
		else if (!strcmp(a, "--epochs")) o->epochs = atoi(v);
		else if (!strcmp(a, "--threads")) o->threads = atoi(v);
		else if (!strcmp(a, "--seed")) o->seed = atoi(v);
		else die("unknown option", a);
	}
	if (!o->data)
		die("--data DIR is required", NULL);
	if (o->batch <= 0 || o->epochs <= 0 || o->threads <= 0)
		die("--batch, --epochs and --threads must be positive", NULL);
	if (strcmp(o->opt, "sgd") && strcmp(o->opt, "adam"))
		die("--opt is sgd or adam", o->opt);
}

static kann_t *build(const struct opts *o, int *nin)
{
	char *arch = strdup(o->arch), *save = NULL;
	int sizes[16], n = 0;

	for (char *t = strtok_r(arch, ",", &save); t && n < 16;
	     t = strtok_r(NULL, ",", &save))
		sizes[n++] = atoi(t);
	free(arch);
	if (n < 2)
		die("--arch needs at least input and output sizes", o->arch);
	kad_node_t *t = kann_layer_input(sizes[0]);
	for (int i = 1; i < n - 1; i++) {
		t = kann_layer_dense(t, sizes[i]);
		t = !strcmp(o->act, "tanh") ? kad_tanh(t) :
		    !strcmp(o->act, "sigmoid") ? kad_sigm(t) : kad_relu(t);
	}
	*nin = sizes[0];
	return kann_new(kann_layer_cost(t, sizes[n - 1], KANN_C_CEM), 0);
}

/* torch's Adam and SGD (v = mu v + g; w -= lr v) on the flat blocks. */
static void step(const struct opts *o, int n, float *w, const float *g,
		 float *m, float *v, long t)
{
	if (!strcmp(o->opt, "sgd")) {
		for (int i = 0; i < n; i++) {
			float gi = g[i];
			if (o->momentum)
				gi = m[i] = o->momentum * m[i] + gi;
			w[i] -= o->lr * gi;
		}
		return;
	}
	const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
	float step = (float)(o->lr / (1 - pow(b1, t)));
	float bc2s = (float)sqrt(1 - pow(b2, t));
	for (int i = 0; i < n; i++) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		w[i] -= step * m[i] / (sqrtf(v[i]) / bc2s + eps);
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	int ntr, per, nl, one, nte, nin;

	parse(&o, argc, argv);
	if (o.ftz)
		_mm_setcsr(_mm_getcsr() | 0x8040);
	openblas_set_num_threads(1);
	kann_srand(o.seed);
	srand(o.seed);
	uint8_t *xtr8 = read_idx(o.data, "train-images-idx3-ubyte", &ntr, &per);
	uint8_t *ytr = read_idx(o.data, "train-labels-idx1-ubyte", &nl, &one);
	uint8_t *xte8 = read_idx(o.data, "t10k-images-idx3-ubyte", &nte, &per);
	uint8_t *yte = read_idx(o.data, "t10k-labels-idx1-ubyte", &nl, &one);
	kann_t *ann = build(&o, &nin);
	if (nin != per)
		die("--arch's input size is not the images'", o.arch);
	if (o.threads > 1)
		kann_mt(ann, o.threads, o.batch);
	int nout = kann_dim_out(ann), nvar = kann_size_var(ann);
	float *x = malloc(sizeof(float) * nin * (o.batch > nte ? o.batch : nte));
	float *y = malloc(sizeof(float) * nout * (o.batch > nte ? o.batch : nte));
	float *m = calloc(nvar, sizeof(float)), *v = calloc(nvar, sizeof(float));
	int *perm = malloc(sizeof(int) * ntr);
	if (!x || !y || !m || !v || !perm)
		die("out of memory", NULL);
	for (int i = 0; i < ntr; i++)
		perm[i] = i;
	kann_feed_bind(ann, KANN_F_IN, 0, &x);
	kann_feed_bind(ann, KANN_F_TRUTH, 0, &y);
	printf("# kann threads=%d OPENBLAS_CORETYPE=%s OpenBLAS %s kernels\n",
	       o.threads, getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "None",
	       openblas_get_corename());
	printf("# arch=%s opt=%s lr=%g batch=%d epochs=%d train=%d test=%d\n",
	       o.arch, o.opt, o.lr, o.batch, o.epochs, ntr, nte);
	printf("epoch,train_loss,test_loss,test_acc,train_seconds,eval_seconds,"
	       "samples_per_second,train_cpu_seconds\n");
	fflush(stdout);
	long t = 0;
	for (int ep = 1; ep <= o.epochs; ep++) {
		double t0 = wall(), c0 = cpu(), loss = 0;
		for (int i = ntr - 1; i > 0; i--) {	/* Fisher-Yates */
			int j = rand() % (i + 1), s = perm[i];
			perm[i] = perm[j], perm[j] = s;
		}
		kann_switch(ann, 1);
		for (int s = 0; s < ntr; s += o.batch) {
			int B = ntr - s < o.batch ? ntr - s : o.batch;
			memset(y, 0, sizeof(float) * nout * B);
			for (int b = 0; b < B; b++) {
				const uint8_t *src = xtr8 + (size_t)perm[s + b] * nin;
				for (int k = 0; k < nin; k++)
					x[b * nin + k] = src[k] / 255.0f;
				y[b * nout + ytr[perm[s + b]]] = 1;
			}
			kann_set_batch_size(ann, B);
			loss += kann_cost(ann, 0, 1) * B;
			step(&o, nvar, ann->x, ann->g, m, v, ++t);
		}
		double t1 = wall(), c1 = cpu();
		kann_switch(ann, 0);
		memset(y, 0, sizeof(float) * nout * nte);
		for (int b = 0; b < nte; b++) {
			for (int k = 0; k < nin; k++)
				x[b * nin + k] = xte8[(size_t)b * nin + k] / 255.0f;
			y[b * nout + yte[b]] = 1;
		}
		kann_set_batch_size(ann, nte);
		double tl = kann_cost(ann, 0, 0);
		int base, err = kann_class_error(ann, &base);
		double t2 = wall();
		printf("%d,%.5f,%.5f,%.4f,%.3f,%.3f,%.0f,%.3f\n", ep, loss / ntr,
		       tl, 1.0 - (double)err / base, t1 - t0, t2 - t1,
		       ntr / (t1 - t0), c1 - c0);
		fflush(stdout);
	}
	kann_delete(ann);
	return 0;
}
