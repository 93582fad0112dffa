/* bench_conv.c - akkctl's convolution layers against oneDNN's, on LeNet's
 * two convolutions (configs/lenet.yaml), one thread, CPU seconds.
 *
 *   conv1  [1, 28, 28] -> 6 filters 5x5, padding 2 -> [6, 28, 28]
 *   conv2  [6, 14, 14] -> 16 filters 5x5           -> [16, 10, 10]
 *
 * One step of a layer is what training does with it: the forward
 * (training), the gradient of the weights and bias, and the gradient of
 * the input for conv2 (conv1 is the first layer of LeNet: nothing needs
 * its dx). oneDNN runs each primitive in the layouts it prefers (its
 * blocked nChw8c on AVX2), which it would keep between layers; the
 * reorders into them are not timed. No activation on either side.
 *
 * Each round times ITERS steps of akkctl's layer, then ITERS of oneDNN's
 * (the order alternating from round to round), in CPU seconds of the
 * process; printed: each side's median ms a step with min-max, and the
 * median of the per-round ratios akkctl / oneDNN with min-max. The
 * kernels are named: akkctl's conv2d kernel and OpenBLAS's core, and the
 * implementation oneDNN chose for each primitive.
 *
 * Usage: bench_conv [ROUNDS [BATCH]]   (7, 64); `make bench-conv`.
 * oneDNN (libdnnl-dev) runs on OpenMP: OMP_NUM_THREADS=1 is set and the
 * program re-executes itself when it was not. */
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nn/layer.h"
#include "tensor/smallmm.h"
#include "tensor/tensor.h"

extern char *openblas_get_corename(void);

#define DNN(call)                                                          \
	do {                                                               \
		dnnl_status_t st_ = (call);                                \
		if (st_ != dnnl_success) {                                 \
			fprintf(stderr, "bench_conv: %s failed (%d)\n",   \
				#call, (int)st_);                          \
			exit(1);                                           \
		}                                                          \
	} while (0)

struct shape {
	const char *name;
	int C, H, W, F, k, p, need_dx;
};

static const struct shape shapes[] = {
	{ "conv1", 1, 28, 28, 6, 5, 2, 0 },
	{ "conv2", 6, 14, 14, 16, 5, 0, 1 },
};
#define NSHAPES (int)(sizeof(shapes) / sizeof(shapes[0]))

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *filled(size_t n, unsigned seed)
{
	float *p = akk_alloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "bench_conv: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
	return p;
}

/* akkctl's side: the layer as a gate plans it. */
struct akk_side {
	struct akk_layer_spec sp;
	struct akk_layer l;
	float *x, *y, *aux, *work, *p, *dp, *dy, *dx;
	int B, need_dx;
};

static void akk_open(struct akk_side *a, const struct shape *s, int B)
{
	struct akk_err e = { 0 };

	memset(a, 0, sizeof(*a));
	a->sp = (struct akk_layer_spec){ .ops = &akk_layer_conv2d,
		.filters = s->F, .kernel = s->k, .stride = 1, .padding = s->p,
		.bias = 1, .init = AKK_INIT_DEFAULT };
	a->l.ops = a->sp.ops;
	a->l.spec = &a->sp;
	a->l.in = (struct akk_shape){ 3, { s->C, s->H, s->W } };
	if (a->l.ops->plan(&a->l, &e)) {
		fprintf(stderr, "bench_conv: %s: %s\n", s->name, e.msg);
		exit(1);
	}
	size_t nin = (size_t)akk_shape_size(a->l.in) * B;
	size_t nout = (size_t)akk_shape_size(a->l.out) * B;
	a->B = B;
	a->need_dx = s->need_dx;
	a->x = filled(nin, 1);
	a->dx = filled(nin, 2);
	a->y = filled(nout, 3);
	a->dy = filled(nout, 4);
	a->aux = filled(a->l.aux * B, 5);
	a->work = filled(a->l.work, 6);
	a->p = filled(a->l.nparams, 7);
	a->dp = filled(a->l.nparams, 8);
}

static void akk_step(struct akk_side *a)
{
	a->l.ops->forward(&a->l, a->y, a->aux, NULL, a->work, a->x, a->p, a->B,
			  1, NULL);
	memset(a->dp, 0, a->l.nparams * sizeof(float));
	a->l.ops->backward(&a->l, a->need_dx ? a->dx : NULL, a->dp, a->work,
			   a->dy, a->x, a->y, a->aux, a->p, a->B);
}

/* oneDNN's side: three primitives in their preferred layouts. */
struct dnn_side {
	dnnl_engine_t eng;
	dnnl_stream_t st;
	dnnl_primitive_t fwd, bwd_w, bwd_d;
	dnnl_memory_t src, w, b, dst, ddst, dw, db, dsrc;
	const char *impl[3];
	int need_dx;
};

static dnnl_memory_t mem_of(dnnl_engine_t eng, const_dnnl_primitive_desc_t pd,
			    dnnl_query_t q, int index, unsigned seed)
{
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, q, index);
	dnnl_memory_t m;
	void *h;

	DNN(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
	DNN(dnnl_memory_get_data_handle(m, &h));
	size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
	float *f = filled(n, seed);
	memcpy(h, f, n * sizeof(float));
	akk_free(f);
	return m;
}

static const char *impl_of(const_dnnl_primitive_desc_t pd)
{
	const char *s = NULL;

	DNN(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
	return s;
}

static void dnn_open(struct dnn_side *d, const struct shape *s, int B)
{
	int Ho = s->H + 2 * s->p - s->k + 1, Wo = s->W + 2 * s->p - s->k + 1;
	dnnl_dims_t src = { B, s->C, s->H, s->W }, wt = { s->F, s->C, s->k, s->k };
	dnnl_dims_t bias = { s->F }, dst = { B, s->F, Ho, Wo };
	dnnl_dims_t strides = { 1, 1 }, pad = { s->p, s->p };
	dnnl_memory_desc_t src_md, w_md, b_md, dst_md;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t fpd, wpd, dpd = NULL;

	memset(d, 0, sizeof(*d));
	d->need_dx = s->need_dx;
	DNN(dnnl_engine_create(&d->eng, dnnl_cpu, 0));
	DNN(dnnl_stream_create(&d->st, d->eng, dnnl_stream_default_flags));
	DNN(dnnl_memory_desc_init_by_tag(&src_md, 4, src, dnnl_f32, dnnl_format_tag_any));
	DNN(dnnl_memory_desc_init_by_tag(&w_md, 4, wt, dnnl_f32, dnnl_format_tag_any));
	DNN(dnnl_memory_desc_init_by_tag(&b_md, 1, bias, dnnl_f32, dnnl_x));
	DNN(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst, dnnl_f32, dnnl_format_tag_any));
	DNN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
		dnnl_convolution_direct, &src_md, &w_md, &b_md, &dst_md,
		strides, pad, pad));
	DNN(dnnl_primitive_desc_create(&fpd, &cd, NULL, d->eng, NULL));
	DNN(dnnl_convolution_backward_weights_desc_init(&cd,
		dnnl_convolution_direct, &src_md, &w_md, &b_md, &dst_md,
		strides, pad, pad));
	DNN(dnnl_primitive_desc_create(&wpd, &cd, NULL, d->eng, fpd));
	if (s->need_dx) {
		DNN(dnnl_convolution_backward_data_desc_init(&cd,
			dnnl_convolution_direct, &src_md, &w_md, &dst_md,
			strides, pad, pad));
		DNN(dnnl_primitive_desc_create(&dpd, &cd, NULL, d->eng, fpd));
	}
	/* the bias is the second weights memory of each */
	d->src = mem_of(d->eng, fpd, dnnl_query_src_md, 0, 1);
	d->w = mem_of(d->eng, fpd, dnnl_query_weights_md, 0, 7);
	d->b = mem_of(d->eng, fpd, dnnl_query_weights_md, 1, 9);
	d->dst = mem_of(d->eng, fpd, dnnl_query_dst_md, 0, 3);
	d->ddst = mem_of(d->eng, wpd, dnnl_query_diff_dst_md, 0, 4);
	d->dw = mem_of(d->eng, wpd, dnnl_query_diff_weights_md, 0, 8);
	d->db = mem_of(d->eng, wpd, dnnl_query_diff_weights_md, 1, 10);
	DNN(dnnl_primitive_create(&d->fwd, fpd));
	DNN(dnnl_primitive_create(&d->bwd_w, wpd));
	d->impl[0] = impl_of(fpd);
	d->impl[1] = impl_of(wpd);
	d->impl[2] = "-";
	if (dpd) {
		d->dsrc = mem_of(d->eng, dpd, dnnl_query_diff_src_md, 0, 2);
		DNN(dnnl_primitive_create(&d->bwd_d, dpd));
		d->impl[2] = impl_of(dpd);
	}
}

static void dnn_step(struct dnn_side *d)
{
	dnnl_exec_arg_t f[] = { { DNNL_ARG_SRC, d->src }, { DNNL_ARG_WEIGHTS, d->w },
				{ DNNL_ARG_BIAS, d->b }, { DNNL_ARG_DST, d->dst } };
	dnnl_exec_arg_t w[] = { { DNNL_ARG_SRC, d->src },
				{ DNNL_ARG_DIFF_DST, d->ddst },
				{ DNNL_ARG_DIFF_WEIGHTS, d->dw },
				{ DNNL_ARG_DIFF_BIAS, d->db } };
	dnnl_exec_arg_t x[] = { { DNNL_ARG_DIFF_DST, d->ddst },
				{ DNNL_ARG_WEIGHTS, d->w },
				{ DNNL_ARG_DIFF_SRC, d->dsrc } };

	DNN(dnnl_primitive_execute(d->fwd, d->st, 4, f));
	DNN(dnnl_primitive_execute(d->bwd_w, d->st, 4, w));
	if (d->need_dx)
		DNN(dnnl_primitive_execute(d->bwd_d, d->st, 3, x));
	DNN(dnnl_stream_wait(d->st));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median, min and max of v[0..n) (sorts v). */
static void stats(double *v, int n, double *med, double *lo, double *hi)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*lo = v[0];
	*hi = v[n - 1];
}

static int iters_for(void (*step)(void *), void *arg)
{
	double t0 = cpu_seconds();
	int n = 0;

	while (cpu_seconds() - t0 < 0.05)
		step(arg), n++;
	return n;
}

static void akk_step_v(void *a) { akk_step(a); }
static void dnn_step_v(void *d) { dnn_step(d); }

static double timed(void (*step)(void *), void *arg, int iters)
{
	double t0 = cpu_seconds();

	for (int i = 0; i < iters; i++)
		step(arg);
	return (cpu_seconds() - t0) / iters;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	int B = argc > 2 ? atoi(argv[2]) : 64;
	const char *omp = getenv("OMP_NUM_THREADS");

	if (argc > 3 || rounds <= 0 || B <= 0) {
		fprintf(stderr, "usage: bench_conv [ROUNDS [BATCH]]\n");
		return 2;
	}
	if (!omp || strcmp(omp, "1")) {
		setenv("OMP_NUM_THREADS", "1", 1);
		execv("/proc/self/exe", argv);
		perror("bench_conv: re-executing with OMP_NUM_THREADS=1");
		return 1;
	}
	akk_float_mode();
	akk_blas_threads(1);
	/* OpenBLAS's server threads spin for a while after it loads: CPU
	 * seconds of this process that neither side spent */
	akk_blas_stop_idle();
	printf("# LeNet's convolutions, batch %d, 1 thread, %d interleaved rounds, "
	       "CPU ms a step (forward + dW + db%s)\n", B, rounds,
	       " + dx for conv2");
	printf("# akkctl: conv2d by gathered small products (%s); OpenBLAS %s kernels; "
	       "oneDNN %d.%d.%d\n", akk_smm_isa(), openblas_get_corename(), dnnl_version()->major,
	       dnnl_version()->minor, dnnl_version()->patch);
	double tot_a[64], tot_d[64];
	if (rounds > 64)
		rounds = 64;
	memset(tot_a, 0, sizeof(tot_a));
	memset(tot_d, 0, sizeof(tot_d));
	for (int s = 0; s < NSHAPES; s++) {
		struct akk_side a;
		struct dnn_side d;
		double ta[64], td[64], r[64], m, lo, hi;
		akk_open(&a, &shapes[s], B);
		dnn_open(&d, &shapes[s], B);
		printf("# %s oneDNN: fwd %s, bwd_w %s, bwd_d %s\n", shapes[s].name,
		       d.impl[0], d.impl[1], d.impl[2]);
		int ia = iters_for(akk_step_v, &a), id = iters_for(dnn_step_v, &d);
		for (int i = 0; i < rounds; i++) {
			if (i % 2) {
				td[i] = timed(dnn_step_v, &d, id);
				ta[i] = timed(akk_step_v, &a, ia);
			} else {
				ta[i] = timed(akk_step_v, &a, ia);
				td[i] = timed(dnn_step_v, &d, id);
			}
			r[i] = ta[i] / td[i];
			tot_a[i] += ta[i];
			tot_d[i] += td[i];
		}
		stats(ta, rounds, &m, &lo, &hi);
		printf("%-6s akkctl %.3f ms (%.3f-%.3f)", shapes[s].name, m * 1e3,
		       lo * 1e3, hi * 1e3);
		stats(td, rounds, &m, &lo, &hi);
		printf("  oneDNN %.3f ms (%.3f-%.3f)", m * 1e3, lo * 1e3, hi * 1e3);
		stats(r, rounds, &m, &lo, &hi);
		printf("  akkctl/oneDNN %.2fx (%.2f-%.2f)\n", m, lo, hi);
	}
	{
		double r[64], m, lo, hi;
		for (int i = 0; i < rounds; i++)
			r[i] = tot_a[i] / tot_d[i];
		stats(r, rounds, &m, &lo, &hi);
		printf("both   akkctl/oneDNN %.2fx (%.2f-%.2f)\n", m, lo, hi);
	}
	return 0;
}
