/* kernels.h - which OpenBLAS kernels run, and why.
 *
 * OpenBLAS built with DYNAMIC_ARCH carries kernels for many CPUs and picks
 * one set when it loads, by the CPU's model number: a CPU newer than the
 * library (Sapphire Rapids under 0.3.21, family 6 model 207) gets its SSE3
 * "Prescott" kernels, 2-4x slower than its AVX-512 ones. akkctl decides by
 * the CPU's features instead (base/cpu.h), and when the library's pick is
 * weaker than what the CPU and this OpenBLAS can run, switches to the
 * strongest set before anything computes. The user's OPENBLAS_CORETYPE is
 * always honoured; AKKCTL_KERNELS=library keeps the library's pick.
 *
 * The decision (akk_kernels_decide) is a pure function of what it is
 * given, so that tests can give it any CPU; akk_kernels_choose reads this
 * process's and acts on it. */
#ifndef AKK_KERNELS_H
#define AKK_KERNELS_H

#include "base/cpu.h"
#include "base/err.h"

enum akk_kernels_why {
	AKK_KERNELS_LIBRARY,	/* the library's pick, as strong as the CPU allows */
	AKK_KERNELS_RAISED,	/* akkctl chose stronger kernels than the library */
	AKK_KERNELS_USER,	/* OPENBLAS_CORETYPE, set by the user */
	AKK_KERNELS_KEPT,	/* the library's pick, kept by AKKCTL_KERNELS=library */
	AKK_KERNELS_FIXED,	/* an OpenBLAS built for one CPU type: no choice */
	AKK_KERNELS_STUCK,	/* should be raised, but the library cannot
				 * switch in a running process */
};

/* What the decision reads. */
struct akk_kernels_in {
	struct akk_cpu cpu;
	const char *library;	/* the kernels OpenBLAS runs (its core name) */
	const char *version;	/* OpenBLAS's version, "0.3.21" */
	int dynamic;		/* built with DYNAMIC_ARCH: kernels can be chosen */
	const char *coretype;	/* $OPENBLAS_CORETYPE; NULL when unset */
	const char *mode;	/* $AKKCTL_KERNELS: NULL, "auto" or "library" */
};

#define AKK_KERNELS_NAME 32
#define AKK_KERNELS_TRY 4

struct akk_kernels {
	enum akk_kernels_why why;
	char version[16];
	char library[AKK_KERNELS_NAME];	/* the library's pick (or the user's) */
	char best[AKK_KERNELS_NAME];	/* the strongest set this CPU and this
					 * OpenBLAS can run; "" when none
					 * beyond SSE */
	const char *feature;	/* what best needs: "AVX-512", "AVX2 and FMA"... */
	char coretype[AKK_KERNELS_NAME];	/* the user's OPENBLAS_CORETYPE */
	/* RAISED: the sets to try, strongest first, each stronger than the
	 * library's pick (a set an older or trimmed OpenBLAS lacks does not
	 * take, and the next is tried) */
	char want[AKK_KERNELS_TRY][AKK_KERNELS_NAME];
	int nwant;
	char running[AKK_KERNELS_NAME];	/* the kernels that run */
};

/* Decide which kernels should run on in->cpu. Fills k (running = the
 * library's; want = what to switch to when why is RAISED). Returns -1
 * with a message naming AKKCTL_KERNELS when mode is neither auto nor
 * library. */
int akk_kernels_decide(struct akk_kernels *k, const struct akk_kernels_in *in,
		       struct akk_err *e);

/* Strength of a kernel set by OpenBLAS core name (case ignored): 1 SSE,
 * 2 AVX, 3 AVX2 and FMA, 4 AVX-512, 5 AMX; -1 for a name unknown here. */
int akk_kernels_tier(const char *name);

/* 1 when the kernels that run are weaker than k->best. */
int akk_kernels_weak(const struct akk_kernels *k);

/* This process: read the CPU, the library and the environment, decide,
 * and when the decision is RAISED switch OpenBLAS to the strongest of
 * k->want it takes (checked by its core name after the switch), the
 * environment left as it was. Call first thing in main, before any
 * thread computes: OpenBLAS's kernel table is the process's. Returns -1
 * only for a bad AKKCTL_KERNELS. */
int akk_kernels_choose(struct akk_kernels *k, struct akk_err *e);
/* Switch OpenBLAS to the kernel set name in this running process, as its
 * constructor would with OPENBLAS_CORETYPE=name (the environment left as
 * it was). Returns 1 when it took (OpenBLAS's core name is name now), 0
 * when not: an unknown or trimmed-out name (OpenBLAS then runs a fallback
 * set of its own), or a library that cannot switch. Only while no other
 * thread computes, and only to a set the CPU can run (base/cpu.h). */
int akk_kernels_switch(const char *name);
/* The same decision for a process that must not switch (a library inside
 * a host program): k->running is what runs, k->best what to ask for.
 * AKKCTL_KERNELS is not read. */
void akk_kernels_report(struct akk_kernels *k);

/* One line: "OpenBLAS 0.3.21: SkylakeX kernels (chosen by akkctl: the CPU
 * has AVX-512; the library picked Prescott)". */
void akk_kernels_describe(const struct akk_kernels *k, char *buf, int size);
/* When the kernels are weak, what that does to timings and what to do,
 * one line into buf; returns 1, or 0 (buf empty) when they are not. */
int akk_kernels_caveat(const struct akk_kernels *k, char *buf, int size);

#endif
