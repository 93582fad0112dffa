/* bench_gemm.c - akkctl bench --gemm: small products, OpenBLAS vs libxsmm.
 *
 * The products are those the shipped configs do per batch (the layers'
 * akk_sgemm calls: dense forward NT, weight gradient TN, input gradient NN;
 * conv forward NN per sample, weight gradient NT, input gradient TN), and
 * one square product of 1024 (the rate the kernels reach on a large one). Each
 * round runs one child process per OpenBLAS kernel choice, the library's
 * own (AKKCTL_KERNELS=library) and akkctl's (tensor/kernels.h), the
 * choices one after the other;
 * inside a child the two libraries alternate shape by shape, the first of
 * the pair swapped every round. The parent prints the median over rounds. */
#include "bench_gemm.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "cli.h"
#include "tensor/gemm_xsmm.h"
#include "tensor/tensor.h"

#define SQUARE 1024

struct shape {
	const char *net, *what;
	int ta, tb, M, N, K;
	float beta;
};

/* akkordeon.yaml (and bench's built-in net): 784-50-20-10, batch 64;
 * tinynn.yaml: 784-400-100-10, batch 128; lenet.yaml: conv 1->6 k5 pad 2
 * on 28x28, conv 6->16 k5 on 14x14, dense 400-120-84-10, batch 64. The
 * first layer computes no input gradient. */
static const struct shape shapes[] = {
	{ "akkordeon", "dense1 fwd", 0, 1, 64, 50, 784, 0 },
	{ "akkordeon", "dense1 dW", 1, 0, 50, 784, 64, 1 },
	{ "akkordeon", "dense2 fwd", 0, 1, 64, 20, 50, 1 },
	{ "akkordeon", "dense2 dW", 1, 0, 20, 50, 64, 1 },
	{ "akkordeon", "dense2 dx", 0, 0, 64, 50, 20, 0 },
	{ "akkordeon", "dense3 fwd", 0, 1, 64, 10, 20, 1 },
	{ "akkordeon", "dense3 dW", 1, 0, 10, 20, 64, 1 },
	{ "akkordeon", "dense3 dx", 0, 0, 64, 20, 10, 0 },
	{ "tinynn", "dense1 fwd", 0, 1, 128, 400, 784, 1 },
	{ "tinynn", "dense1 dW", 1, 0, 400, 784, 128, 1 },
	{ "tinynn", "dense2 fwd", 0, 1, 128, 100, 400, 1 },
	{ "tinynn", "dense2 dW", 1, 0, 100, 400, 128, 1 },
	{ "tinynn", "dense2 dx", 0, 0, 128, 400, 100, 0 },
	{ "tinynn", "dense3 fwd", 0, 1, 128, 10, 100, 1 },
	{ "tinynn", "dense3 dW", 1, 0, 10, 100, 128, 1 },
	{ "tinynn", "dense3 dx", 0, 0, 128, 100, 10, 0 },
	{ "lenet", "conv1 fwd", 0, 0, 6, 784, 25, 1 },
	{ "lenet", "conv1 dW", 0, 1, 6, 25, 784, 1 },
	{ "lenet", "conv2 fwd", 0, 0, 16, 100, 150, 1 },
	{ "lenet", "conv2 dW", 0, 1, 16, 150, 100, 1 },
	{ "lenet", "conv2 dx", 1, 0, 150, 100, 16, 0 },
	{ "lenet", "dense1 fwd", 0, 1, 64, 120, 400, 1 },
	{ "lenet", "dense1 dW", 1, 0, 120, 400, 64, 1 },
	{ "lenet", "dense1 dx", 0, 0, 64, 400, 120, 0 },
	{ "lenet", "dense2 fwd", 0, 1, 64, 84, 120, 1 },
	{ "lenet", "dense2 dW", 1, 0, 84, 120, 64, 1 },
	{ "lenet", "dense2 dx", 0, 0, 64, 120, 84, 0 },
	{ "lenet", "dense3 fwd", 0, 1, 64, 10, 84, 1 },
	{ "lenet", "dense3 dW", 1, 0, 10, 84, 64, 1 },
	{ "lenet", "dense3 dx", 0, 0, 64, 84, 10, 0 },
	{ "square", "sgemm", 0, 0, SQUARE, SQUARE, SQUARE, 0 },
};
#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))
#define MAX_ROUNDS 51
/* A timing repeats the product for about SLICE seconds; the best of
 * SLICES timings per library and round counts. */
#define SLICE 0.004
#define SLICES 5

/* The environment of each choice's child: the library's kernels, then
 * akkctl's (the same set when the library's pick is the best already). */
static const char *const kernels[] = { "AKKCTL_KERNELS=library", "-u AKKCTL_KERNELS" };
#define NKERNELS 2

struct buffers {
	float *A, *B, *C;
};

/* One product of s through library lib (0 OpenBLAS, 1 libxsmm); 0 when
 * libxsmm cannot do it. */
static int product(const struct shape *s, const struct buffers *b, int lib)
{
	int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;

	if (lib)
		return akk_xsmm_sgemm(0, s->ta, s->tb, s->M, s->N, s->K, 1.0f,
				      b->A, lda, b->B, ldb, s->beta, b->C, s->N);
	akk_sgemm_openblas(s->ta, s->tb, s->M, s->N, s->K, 1.0f, b->A, lda,
			   b->B, ldb, s->beta, b->C, s->N);
	return 1;
}

/* Seconds of `reps` products of s through lib. */
static double slice(const struct shape *s, const struct buffers *b, int lib,
		    long reps)
{
	double t0 = akk_now();

	for (long i = 0; i < reps; i++)
		product(s, b, lib);
	return akk_now() - t0;
}

/* GFLOP/s of each library on s: the best of SLICES slices of about SLICE
 * seconds each, the libraries alternating slice by slice, `first` first
 * (the best slice is the one the other engineers' processes on the machine
 * disturbed least). 0 for libxsmm when it cannot. */
static void rates(const struct shape *s, const struct buffers *b, int first,
		  double r[2])
{
	double flops = 2.0 * s->M * s->N * s->K, best[2] = { 1e30, 1e30 };
	long reps = (long)(SLICE * 2e10 / flops) + 1;
	int can = product(s, b, 1);

	for (int i = 0; i < 3; i++)	/* warm: JIT, caches */
		product(s, b, 0), product(s, b, 1);
	for (int i = 0; i < 2 * SLICES; i++) {
		int lib = (i + first) & 1;
		double t;

		if (lib && !can)
			continue;
		t = slice(s, b, lib, reps);
		if (t < best[lib])
			best[lib] = t;
	}
	r[0] = flops * reps / best[0] / 1e9;
	r[1] = can ? flops * reps / best[1] / 1e9 : 0;
}

/* The child: one round under this process's OpenBLAS kernels, one line
 * "i blas xsmm" per shape. */
static int child_round(int round)
{
	struct buffers b;
	char lib[768];

	/* one thread, as the header says: OpenBLAS's own default is a
	 * thread per core */
	akk_float_mode();
	akk_blas_threads(1);
	b.A = akk_alloc(SQUARE * SQUARE);
	b.B = akk_alloc(SQUARE * SQUARE);
	b.C = akk_alloc(SQUARE * SQUARE);
	if (!b.A || !b.B || !b.C)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	for (long i = 0; i < SQUARE * SQUARE; i++) {
		b.A[i] = (float)(i * 7919 % 97) / 97 - 0.5f;
		b.B[i] = (float)(i * 104729 % 89) / 89 - 0.5f;
	}
	akk_gemm_library(lib, sizeof(lib), &cli_kernels);
	printf("library %s\n", lib);
	for (int i = 0; i < NSHAPES; i++) {
		double r[2];

		rates(&shapes[i], &b, (round + i) & 1, r);
		printf("%d %.6f %.6f\n", i, r[0], r[1]);
	}
	akk_free(b.A);
	akk_free(b.B);
	akk_free(b.C);
	return EXIT_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_gemm(int rounds)
{
	static double res[NKERNELS][NSHAPES][2][MAX_ROUNDS];
	char exe[PATH_MAX], cmd[PATH_MAX + 128], line[1024];
	char libname[NKERNELS][1024] = { "", "" };
	const char *child = getenv("AKK_BENCH_GEMM_ROUND");
	ssize_t n;

	if (child)
		return child_round(atoi(child));
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || memchr(exe, '\'', n))
		return cli_errorf(EXIT_RUNTIME, "cannot find akkctl's own path to rerun it");
	exe[n] = 0;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < NKERNELS; k++) {
			FILE *f;
			int got = 0;

			snprintf(cmd, sizeof(cmd), "env -u OPENBLAS_CORETYPE %s AKK_BENCH_GEMM_ROUND=%d "
				 "'%s' bench --gemm", kernels[k], r, exe);
			fflush(stdout);
			if (!(f = popen(cmd, "r")))
				return cli_errorf(EXIT_RUNTIME, "cannot run '%s'", cmd);
			while (fgets(line, sizeof(line), f)) {
				int i;
				double x, y;

				if (!strncmp(line, "library ", 8)) {
					line[strcspn(line, "\n")] = 0;
					snprintf(libname[k], sizeof(libname[k]), "%s", line + 8);
				} else if (sscanf(line, "%d %lf %lf", &i, &x, &y) == 3 &&
					   i >= 0 && i < NSHAPES) {
					res[k][i][0][r] = x;
					res[k][i][1][r] = y;
					got++;
				}
			}
			if (pclose(f) != 0 || got != NSHAPES)
				return cli_errorf(EXIT_RUNTIME, "'%s' failed", cmd);
		}
	printf("GEMM products of the shipped configs, GFLOP/s, median of %d interleaved round%s\n",
	       rounds, rounds == 1 ? "" : "s");
	for (int k = 0; k < NKERNELS; k++)
		printf("kernels %d: %s\n", k + 1, libname[k]);
	printf("%-10s %-11s %-2s %5s %5s %5s  %8s %8s %6s  %8s %8s %6s\n", "config",
	       "product", "op", "M", "N", "K", "blas1", "xsmm1", "x/b1", "blas2",
	       "xsmm2", "x/b2");
	for (int i = 0; i < NSHAPES; i++) {
		const struct shape *s = &shapes[i];

		printf("%-10s %-11s %c%c %5d %5d %5d", s->net, s->what,
		       s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->M, s->N, s->K);
		for (int k = 0; k < NKERNELS; k++) {
			double b = median(res[k][i][0], rounds);
			double x = median(res[k][i][1], rounds);

			if (x > 0)
				printf("  %8.2f %8.2f %6.2f", b, x, x / b);
			else
				printf("  %8.2f %8s %6s", b, "-", "-");
		}
		printf("\n");
	}
	if (!strstr(libname[0], "libxsmm"))
		printf("(this akkctl is built without libxsmm: OpenBLAS alone; make XSMM=1 builds it with)\n");
	else
		printf("(- : libxsmm 1.17 cannot: a row-major op(B) = B^T is its column-major TRANS_A)\n");
	return EXIT_OK;
}
