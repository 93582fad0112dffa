/* clones.h - a function compiled twice, for AVX2 and for the x86-64
 * baseline, the body chosen by the CPU when the program loads (GCC's
 * target_clones, an ifunc).
 *
 * For elementwise loops that GCC vectorises: AVX2 runs 8 lanes at a time
 * where the baseline runs 4. Neither body enables FMA and C11 mode does
 * not contract a multiply and an add, so both give the same bits.
 * Not under ThreadSanitizer (the loader runs the clones' resolver before
 * its runtime is up, and the resolver, instrumented, crashes) nor clang
 * (whose fuzzing builds need no second body).
 *
 * A build with -DAKK_BASELINE has the baseline bodies alone, here and in
 * the hand-dispatched vector code (tensor/smallmm.c, nn/recurrent.c): the
 * way the suite tests them on a CPU with AVX2 (`make test-kernels`). */
#ifndef AKK_CLONES_H
#define AKK_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_THREAD__) && !defined(AKK_BASELINE)
#define AKK_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AKK_CLONES
#endif

#endif
