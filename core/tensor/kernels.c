/* kernels.c - OpenBLAS's kernels chosen by what the CPU can do.
 *
 * The switch: OpenBLAS reads OPENBLAS_CORETYPE once, in a constructor that
 * runs before main(). A DYNAMIC_ARCH build exports the two functions that
 * constructor uses to pick its kernel table (gotoblas_dynamic_quit forgets
 * the table, gotoblas_dynamic_init picks one, honouring
 * OPENBLAS_CORETYPE); calling them again with the variable set is what
 * the constructor would have done, with nothing else to redo: the table
 * is read at every call, the work buffers and threads do not depend on
 * it. They are referenced weakly: an OpenBLAS without them leaves the
 * library's pick, reported as STUCK. Re-executing the program with the
 * variable set does the same at the cost of a second start (9 ms here),
 * and loses tools that do not follow exec (valgrind). */
#include "tensor/kernels.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));

static const struct {
	const char *name;
	int tier;
} tiers[] = {
	{ "Prescott", 1 }, { "Core2", 1 }, { "Penryn", 1 }, { "Dunnington", 1 },
	{ "Nehalem", 1 }, { "Atom", 1 }, { "Nano", 1 }, { "Opteron", 1 },
	{ "Opteron_SSE3", 1 }, { "Barcelona", 1 }, { "Bobcat", 1 },
	{ "Katmai", 1 }, { "Coppermine", 1 }, { "Northwood", 1 },
	{ "Banias", 1 }, { "Athlon", 1 },
	{ "Sandybridge", 2 }, { "Bulldozer", 2 }, { "Piledriver", 2 },
	{ "Steamroller", 2 },
	{ "Excavator", 3 },	/* AVX2 and FMA: its own pick stands */
	{ "Haswell", 3 }, { "Zen", 3 },
	{ "SkylakeX", 4 }, { "Cooperlake", 4 },
	{ "SapphireRapids", 5 },
};

int akk_kernels_tier(const char *name)
{
	for (size_t i = 0; name && i < sizeof(tiers) / sizeof(*tiers); i++)
		if (!strcasecmp(name, tiers[i].name))
			return tiers[i].tier;
	return -1;
}

/* "0.3.21" -> 321 (major * 10000 + minor * 100 + patch); 0 if unreadable */
static long version_number(const char *v)
{
	int a, b, c;

	if (!v || sscanf(v, "%d.%d.%d", &a, &b, &c) != 3)
		return 0;
	return a * 10000L + b * 100 + c;
}

/* The kernel sets this CPU can run, strongest first, that this OpenBLAS
 * has (Cooperlake since 0.3.11, SkylakeX since 0.3.0); SSE-only CPUs get
 * none: the library's pick among its SSE sets stands. */
static int candidates(const struct akk_kernels_in *in, const char *out[], const char *why[])
{
	unsigned f = in->cpu.features;
	long v = version_number(in->version);
	int n = 0, amd = in->cpu.vendor == AKK_CPU_AMD || in->cpu.vendor == AKK_CPU_HYGON;

	if ((f & AKK_CPU_AVX512) == AKK_CPU_AVX512) {
		if ((f & AKK_CPU_AVX512_BF16) && v >= 311)
			why[n] = "AVX-512 with BF16", out[n++] = "Cooperlake";
		if (v >= 300)
			why[n] = "AVX-512", out[n++] = "SkylakeX";
	}
	if ((f & (AKK_CPU_AVX2 | AKK_CPU_FMA)) == (AKK_CPU_AVX2 | AKK_CPU_FMA))
		why[n] = "AVX2 and FMA", out[n++] = amd ? "Zen" : "Haswell";
	if (f & AKK_CPU_AVX)
		why[n] = "AVX", out[n++] = "Sandybridge";
	return n;
}

static void copy(char *dst, const char *src)
{
	snprintf(dst, AKK_KERNELS_NAME, "%s", src ? src : "");
}

int akk_kernels_decide(struct akk_kernels *k, const struct akk_kernels_in *in,
		       struct akk_err *e)
{
	const char *names[AKK_KERNELS_TRY], *why[AKK_KERNELS_TRY];
	int n = candidates(in, names, why), lib = akk_kernels_tier(in->library);
	int keep = 0;

	memset(k, 0, sizeof(*k));
	if (in->mode && *in->mode && strcmp(in->mode, "auto")) {
		if (strcmp(in->mode, "library"))
			return akk_err_set(e, "AKKCTL_KERNELS='%s': auto (akkctl chooses) or "
					   "library (OpenBLAS's own choice)", in->mode);
		keep = 1;
	}
	snprintf(k->version, sizeof(k->version), "%s", in->version ? in->version : "?");
	copy(k->library, in->library);
	copy(k->running, in->library);
	if (n) {
		copy(k->best, names[0]);
		k->feature = why[0];
	}
	if (in->coretype && *in->coretype) {
		copy(k->coretype, in->coretype);
		k->why = AKK_KERNELS_USER;
	} else if (!in->dynamic) {
		k->why = AKK_KERNELS_FIXED;
	} else if (!n || lib < 0 || lib >= akk_kernels_tier(names[0])) {
		/* nothing stronger, or a set newer than this table: trust it */
		k->why = AKK_KERNELS_LIBRARY;
	} else if (keep) {
		k->why = AKK_KERNELS_KEPT;
	} else {
		k->why = AKK_KERNELS_RAISED;
		for (int i = 0; i < n && akk_kernels_tier(names[i]) > lib; i++)
			copy(k->want[k->nwant++], names[i]);
	}
	return 0;
}

int akk_kernels_weak(const struct akk_kernels *k)
{
	int run = akk_kernels_tier(k->running);

	return k->best[0] && run >= 0 && run < akk_kernels_tier(k->best);
}

/* This process's inputs; the strings point into OpenBLAS and the
 * environment (version into v). */
static void this_process(struct akk_kernels_in *in, char *v, int size, int mode)
{
	const char *config = openblas_get_config();	/* "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
	const char *p = strstr(config, "OpenBLAS ");

	akk_cpu_this(&in->cpu);
	in->library = openblas_get_corename();
	snprintf(v, size, "%s", p ? p + 9 : "?");
	v[strcspn(v, " ")] = 0;
	in->version = v;
	in->dynamic = strstr(config, "DYNAMIC_ARCH") != NULL;
	in->coretype = getenv("OPENBLAS_CORETYPE");
	in->mode = mode ? getenv("AKKCTL_KERNELS") : NULL;
}

int akk_kernels_switch(const char *name)
{
	const char *env = getenv("OPENBLAS_CORETYPE");
	char *saved = env ? strdup(env) : NULL;

	if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || (env && !saved)) {
		free(saved);
		return 0;
	}
	setenv("OPENBLAS_CORETYPE", name, 1);
	gotoblas_dynamic_quit();
	gotoblas_dynamic_init();
	if (saved)
		setenv("OPENBLAS_CORETYPE", saved, 1);
	else
		unsetenv("OPENBLAS_CORETYPE");
	free(saved);
	return !strcasecmp(openblas_get_corename(), name);
}

int akk_kernels_choose(struct akk_kernels *k, struct akk_err *e)
{
	struct akk_kernels_in in;
	char v[16];
	int i;

	this_process(&in, v, sizeof(v), 1);
	if (akk_kernels_decide(k, &in, e))
		return -1;
	if (k->why != AKK_KERNELS_RAISED)
		return 0;
	/* strongest first; a set an older or trimmed OpenBLAS lacks does
	 * not take (its core name says so) */
	for (i = 0; i < k->nwant && !akk_kernels_switch(k->want[i]); i++)
		;
	if (i == k->nwant) {
		akk_kernels_switch(k->library);	/* none took: back to the library's */
		k->why = AKK_KERNELS_STUCK;
	}
	copy(k->running, openblas_get_corename());
	return 0;
}

void akk_kernels_report(struct akk_kernels *k)
{
	struct akk_kernels_in in;
	char v[16];

	this_process(&in, v, sizeof(v), 0);
	akk_kernels_decide(k, &in, NULL);	/* cannot fail without a mode */
}

void akk_kernels_describe(const struct akk_kernels *k, char *buf, int size)
{
	int n = snprintf(buf, size, "OpenBLAS %s: %s kernels (", k->version, k->running);
	int weak = akk_kernels_weak(k);

	if (n < 0 || n >= size)
		return;
	buf += n, size -= n;
	switch (k->why) {
	case AKK_KERNELS_LIBRARY:
		if (k->best[0] && akk_kernels_tier(k->running) >= 0)
			snprintf(buf, size, "the library's choice, the best for the CPU's %s)",
				 k->feature);
		else if (akk_kernels_tier(k->running) >= 0)
			snprintf(buf, size, "the library's choice; the CPU has no AVX)");
		else
			snprintf(buf, size, "the library's choice)");
		break;
	case AKK_KERNELS_RAISED:
		snprintf(buf, size, "chosen by akkctl: the CPU has %s; the library picked %s)",
			 k->feature, k->library);
		break;
	case AKK_KERNELS_USER:
		snprintf(buf, size, "OPENBLAS_CORETYPE=%s, the user's choice%s%s%s%s)",
			 k->coretype, weak ? "; the CPU can run " : "",
			 weak ? k->best : "", weak ? " with " : "", weak ? k->feature : "");
		break;
	case AKK_KERNELS_KEPT:
		snprintf(buf, size, "the library's choice, kept by AKKCTL_KERNELS=library; "
			 "akkctl would choose %s: the CPU has %s)", k->best, k->feature);
		break;
	case AKK_KERNELS_FIXED:
		snprintf(buf, size, "this OpenBLAS is built for one CPU type, its kernels "
			 "cannot be chosen%s%s%s%s)", weak ? "; the CPU can run " : "",
			 weak ? k->best : "", weak ? " with " : "", weak ? k->feature : "");
		break;
	case AKK_KERNELS_STUCK:
		snprintf(buf, size, "the library's choice: this OpenBLAS cannot switch to %s "
			 "in a running program; the CPU has %s: set OPENBLAS_CORETYPE=%s "
			 "before starting)", k->best, k->feature, k->best);
		break;
	}
}

int akk_kernels_caveat(const struct akk_kernels *k, char *buf, int size)
{
	const char *fix;

	buf[0] = 0;
	if (!akk_kernels_weak(k))
		return 0;
	switch (k->why) {
	case AKK_KERNELS_USER:
		fix = "unset OPENBLAS_CORETYPE to let akkctl choose";
		break;
	case AKK_KERNELS_KEPT:
		fix = "unset AKKCTL_KERNELS to let akkctl choose";
		break;
	case AKK_KERNELS_FIXED:
		fix = "an OpenBLAS built with DYNAMIC_ARCH (Debian's) can run them";
		break;
	default:
		fix = "set OPENBLAS_CORETYPE before starting";
		break;
	}
	snprintf(buf, size, "warning: weak kernels: matrix products run on OpenBLAS's %s "
		 "kernels, not the %s kernels this CPU can run (%s), so these figures are "
		 "below what it can do (%s)", k->running, k->best, k->feature, fix);
	return 1;
}
