/* bench_gemm.h - akkctl bench --gemm: OpenBLAS against libxsmm. */
#ifndef AKK_BENCH_GEMM_H
#define AKK_BENCH_GEMM_H

/* Time every product the shipped configs do, OpenBLAS (akk_sgemm_here's
 * OpenBLAS path) against libxsmm, interleaved, under each OpenBLAS kernel
 * choice the CPU runs (a child process per choice and round), and print
 * per shape the median GFLOP/s of each and their ratio. Returns an exit
 * code. */
int bench_gemm(int rounds);

#endif
