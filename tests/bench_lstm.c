/* bench_lstm.c - akkctl's lstm layer against PyTorch's nn.LSTM, one
 * thread, CPU seconds: one training step of the layer alone, the forward
 * of a batch and the backward with the weight, bias and input gradients,
 * the last step's hidden state as the output (return_sequences false, as
 * nn.LSTM's h_T). Default shape: sequential MNIST's, B 64 samples of T 28
 * steps of F 28 features into H 128 units.
 *
 * Each round times ITERS steps of akkctl's layer in this process, then
 * runs tests/bench_lstm_torch.py for ITERS steps of torch's (the order
 * alternating from round to round; each side counts its own CPU time).
 * Printed: each side's median ms a step with min-max, and the median of
 * the per-round ratios akkctl / torch with min-max, with OpenBLAS's core.
 *
 * Usage: bench_lstm [ROUNDS [B T F H]]   (7; 64 28 28 128); `make
 * bench-lstm`. torch: /usr/bin/python3 with python3-torch (sh
 * datasets/deps.sh peers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/spec.h"
#include "model/model.h"
#include "nn/layer.h"
#include "tensor/tensor.h"

extern char *openblas_get_corename(void);

#define ITERS 20

struct side {
	struct akk_spec spec;
	struct akk_model model;
	const struct akk_layer *l;
	int B;
	float *p, *dp, *s, *x, *dx, *y, *dy, *aux, *work;
};

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n, unsigned seed)
{
	float *p = akk_alloc(n);

	if (!p) {
		fprintf(stderr, "bench_lstm: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
	}
	return p;
}

/* The layer planned from a one-layer config, as training plans it. */
static void side_open(struct side *a, int B, int T, int F, int H)
{
	char text[512];
	struct akk_err e = { 0 };
	int n = snprintf(text, sizeof(text),
			 "data:\n  train: {images: x, labels: y}\n"
			 "optimizer: {type: sgd, lr: 0.1}\n"
			 "network:\n  input: [%d, %d]\n  gates:\n    - layers: [{lstm: %d}]\n",
			 T, F, H);

	if (akk_spec_parse(&a->spec, text, (size_t)n, "bench.yaml", NULL, NULL, 0, &e) ||
	    akk_model_plan(&a->model, &a->spec, &e)) {
		fprintf(stderr, "bench_lstm: %s\n", e.msg);
		exit(1);
	}
	a->l = &a->model.gates[0].layers[0];
	a->B = B;
	a->p = filled(a->l->nparams, 1);
	a->dp = filled(a->l->nparams, 2);
	a->s = filled(a->l->nstate, 3);
	a->x = filled((size_t)B * akk_shape_size(a->l->in), 4);
	a->dx = filled((size_t)B * akk_shape_size(a->l->in), 5);
	a->y = filled((size_t)B * akk_shape_size(a->l->out), 6);
	a->dy = filled((size_t)B * akk_shape_size(a->l->out), 7);
	a->aux = filled((size_t)B * a->l->aux, 8);
	a->work = filled(a->l->work + (size_t)B * a->l->work_sample, 9);
}

static void side_step(struct side *a)
{
	const struct akk_layer *l = a->l;

	l->ops->forward(l, a->y, a->aux, a->s, a->work, a->x, a->p, a->B, 1, NULL);
	l->ops->backward(l, a->dx, a->dp, a->work, a->dy, a->x, a->y, a->aux, a->p, a->B);
}

/* ms a step of akkctl's layer over ITERS steps. */
static double akk_ms(struct side *a)
{
	double t0;

	side_step(a);
	t0 = cpu_seconds();
	for (int i = 0; i < ITERS; i++)
		side_step(a);
	return 1000 * (cpu_seconds() - t0) / ITERS;
}

/* ms a step of torch's, from its script's line "torch MS". */
static double torch_ms(int B, int T, int F, int H)
{
	char cmd[512], line[128];
	double ms = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 tests/bench_lstm_torch.py %d %d %d %d %d",
		 B, T, F, H, ITERS);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "torch %lf", &ms) == 1)
			break;
	if (pclose(f) != 0)
		return -1;
	return ms;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n, const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%-16s median %8.3f%s  (min %.3f, max %.3f)\n", what, v[n / 2], unit, v[0],
	       v[n - 1]);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	int B = argc > 5 ? atoi(argv[2]) : 64, T = argc > 5 ? atoi(argv[3]) : 28;
	int F = argc > 5 ? atoi(argv[4]) : 28, H = argc > 5 ? atoi(argv[5]) : 128;
	double ak[64], th[64], ratio[64];
	struct side a;

	if (rounds < 1 || rounds > 64 || B < 1 || T < 1 || F < 1 || H < 1) {
		fprintf(stderr, "usage: bench_lstm [ROUNDS (1-64) [B T F H]]\n");
		return 2;
	}
	akk_blas_threads(1);
	akk_float_mode();	/* as akkctl trains */
	side_open(&a, B, T, F, H);
	printf("lstm step (forward + backward with dx), B %d, T %d, F %d, H %d, one thread, "
	       "CPU ms; OpenBLAS core %s\n", B, T, F, H, openblas_get_corename());
	for (int r = 0; r < rounds; r++) {
		if (r % 2) {
			th[r] = torch_ms(B, T, F, H);
			ak[r] = akk_ms(&a);
		} else {
			ak[r] = akk_ms(&a);
			th[r] = torch_ms(B, T, F, H);
		}
		if (th[r] <= 0) {
			fprintf(stderr, "bench_lstm: tests/bench_lstm_torch.py failed "
				"(python3-torch: sh datasets/deps.sh peers)\n");
			return 1;
		}
		ratio[r] = ak[r] / th[r];
		printf("round %d: akkctl %.3f ms, torch %.3f ms, ratio %.3f\n", r + 1, ak[r],
		       th[r], ratio[r]);
	}
	report("akkctl", ak, rounds, " ms");
	report("torch", th, rounds, " ms");
	report("akkctl / torch", ratio, rounds, "");
	return 0;
}
