/* test_kernels.c - OpenBLAS's kernels chosen by what the CPU can do.
 *
 * The decision is given simulated CPUs: the raw cpuid and xgetbv words of
 * an Intel family 6 model 207 (Emerald Rapids, AVX-512 with BF16), which
 * OpenBLAS 0.3.21 does not know and gives its SSE3 Prescott kernels, of
 * AVX-512 CPUs without BF16 or whose OS does not save the zmm registers,
 * AMD Zen 3 and Zen 4, AVX2-only and AVX-only and SSE-only CPUs; then
 * the user's OPENBLAS_CORETYPE, AKKCTL_KERNELS=library, an OpenBLAS too
 * old for Cooperlake, one built for a single CPU. The central check: no
 * CPU runs weaker kernels than it can, unless the user asked. Then the
 * switch itself on this machine's OpenBLAS, the bench caveats (a load
 * reading given, not measured), and akkctl's report and error lines. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cpu.h"
#include "base/load.h"
#include "tensor/kernels.h"
#include "tensor/tensor.h"
#include "testutil.h"

static char g_out[1 << 16], g_err[1 << 16];

#define ak(...) tu_ak(g_out, sizeof(g_out), g_err, sizeof(g_err), __VA_ARGS__)

/* ---- simulated CPUs: cpuid words ---------------------------------------- */

enum {
	SSE3 = 1u << 0, FMA = 1u << 12, OSXSAVE = 1u << 27, AVX = 1u << 28,
	AVX2 = 1u << 5, F = 1u << 16, DQ = 1u << 17, BW = 1u << 30, VL = 1u << 31,
	BF16 = 1u << 5,
};
#define AVX512 (F | DQ | BW | VL)
/* XCR0: x87, SSE, AVX state; with opmask and both zmm halves */
#define XCR0_AVX 0x7ULL
#define XCR0_AVX512 0xe7ULL
/* leaf 1 eax signatures */
#define SIG_EMERALD_RAPIDS 0x000c06f2u	/* family 6 model 207 */
#define SIG_SKYLAKE_SP 0x00050654u	/* family 6 model 85 */
#define SIG_ZEN3 0x00a00f11u		/* family 25 model 1 */
#define SIG_ZEN4 0x00a10f11u		/* family 25 model 17 */
#define SIG_HASWELL 0x000306c3u	/* family 6 model 60 */

static struct akk_cpu cpu(const char *vendor, unsigned sig, unsigned l1_ecx,
			  unsigned l7_ebx, unsigned l7s1_eax, unsigned long long xcr0)
{
	struct akk_cpuid r;
	struct akk_cpu c;

	memset(&r, 0, sizeof(r));
	snprintf(r.vendor, sizeof(r.vendor), "%s", vendor);
	r.max_leaf = 0x20;
	r.l1_eax = sig;
	r.l1_ecx = l1_ecx;
	r.l7_eax = 1;
	r.l7_ebx = l7_ebx;
	r.l7s1_eax = l7s1_eax;
	r.xcr0 = l1_ecx & OSXSAVE ? xcr0 : 0;
	akk_cpu_decode(&c, &r);
	return c;
}

static struct akk_cpu emerald_rapids(void)
{
	return cpu("GenuineIntel", SIG_EMERALD_RAPIDS, SSE3 | FMA | OSXSAVE | AVX,
		   AVX2 | AVX512, BF16, XCR0_AVX512);
}

static struct akk_cpu zen3(void)
{
	return cpu("AuthenticAMD", SIG_ZEN3, SSE3 | FMA | OSXSAVE | AVX, AVX2, 0, XCR0_AVX);
}

/* Decide for c with OpenBLAS 0.3.21 (DYNAMIC_ARCH) having picked library. */
static struct akk_kernels decide(struct akk_cpu c, const char *library,
				 const char *coretype, const char *mode)
{
	struct akk_kernels_in in = { c, library, "0.3.21", 1, coretype, mode };
	struct akk_kernels k;
	struct akk_err e;

	assert_int_equal(akk_kernels_decide(&k, &in, &e), 0);
	return k;
}

/* The kernels the process ends up with: the strongest wanted set when
 * akkctl raises (each stronger one is tried first), else what runs. */
static const char *would_run(const struct akk_kernels *k)
{
	return k->why == AKK_KERNELS_RAISED ? k->want[0] : k->running;
}

/* No CPU runs weaker kernels than it can, unless the user said so. */
static void assert_best(const struct akk_kernels *k)
{
	if (!k->best[0])
		return;
	if (akk_kernels_tier(would_run(k)) < akk_kernels_tier(k->best))
		fail_msg("would run %s kernels, the CPU can run %s (%s)", would_run(k),
			 k->best, k->feature);
}

/* ---- decoding ------------------------------------------------------------ */

static void decodes_family_model_and_features(void **state)
{
	struct akk_cpu c = emerald_rapids(), z = cpu("AuthenticAMD", SIG_ZEN4,
		SSE3 | FMA | OSXSAVE | AVX, AVX2 | AVX512, BF16, XCR0_AVX512);

	(void)state;
	assert_int_equal(c.vendor, AKK_CPU_INTEL);
	assert_int_equal(c.family, 6);
	assert_int_equal(c.model, 207);
	assert_int_equal(c.features & AKK_CPU_AVX512, AKK_CPU_AVX512);
	assert_true(c.features & AKK_CPU_AVX512_BF16);
	assert_true(c.features & AKK_CPU_AVX2 && c.features & AKK_CPU_FMA);
	assert_int_equal(z.vendor, AKK_CPU_AMD);
	assert_int_equal(z.family, 25);
	assert_int_equal(z.model, 17);
	assert_int_equal(cpu("HygonGenuine", SIG_ZEN3, 0, 0, 0, 0).vendor, AKK_CPU_HYGON);
}

/* This CPU's reading agrees with the flags Linux shows. */
static void this_cpu_matches_proc_cpuinfo(void **state)
{
	static const struct { const char *flag; unsigned bit; } flags[] = {
		{ "avx", AKK_CPU_AVX }, { "fma", AKK_CPU_FMA }, { "avx2", AKK_CPU_AVX2 },
		{ "avx512f", AKK_CPU_AVX512F }, { "avx512bw", AKK_CPU_AVX512BW },
		{ "avx512vl", AKK_CPU_AVX512VL }, { "avx512dq", AKK_CPU_AVX512DQ },
		{ "avx512_bf16", AKK_CPU_AVX512_BF16 },
	};
	static char line[8192];
	FILE *f = fopen("/proc/cpuinfo", "r");
	char want[32];
	int found = 0;
	struct akk_cpu c;

	(void)state;
	while (f && !found && fgets(line, sizeof(line) - 2, f))
		found = !strncmp(line, "flags", 5);
	if (f)
		fclose(f);
	if (!found)
		skip();	/* not Linux, or not x86 */
	line[strcspn(line, "\n")] = 0;
	strcat(line, " ");
	akk_cpu_this(&c);
	for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++) {
		snprintf(want, sizeof(want), " %s ", flags[i].flag);
		if (!strstr(line, want) != !(c.features & flags[i].bit))
			fail_msg("%s: /proc/cpuinfo %s, cpuid %s", flags[i].flag,
				 strstr(line, want) ? "has it" : "has not",
				 c.features & flags[i].bit ? "has it" : "has not");
	}
}

/* The instruction sets count only when the OS saves their registers. */
static void os_state_gates_avx_and_avx512(void **state)
{
	struct akk_cpu no_zmm = cpu("GenuineIntel", SIG_SKYLAKE_SP, SSE3 | FMA | OSXSAVE | AVX,
				    AVX2 | AVX512, 0, XCR0_AVX);
	struct akk_cpu no_xsave = cpu("GenuineIntel", SIG_HASWELL, SSE3 | FMA | AVX, AVX2, 0,
				      XCR0_AVX);
	struct akk_cpu no_ymm = cpu("GenuineIntel", SIG_HASWELL, SSE3 | FMA | OSXSAVE | AVX,
				    AVX2, 0, 0x3);

	(void)state;
	assert_int_equal(no_zmm.features & AKK_CPU_AVX512F, 0);
	assert_true(no_zmm.features & AKK_CPU_AVX2);
	assert_int_equal(no_xsave.features, AKK_CPU_SSE3);
	assert_int_equal(no_ymm.features, AKK_CPU_SSE3);
}

/* ---- the decision --------------------------------------------------------- */

/* The machine OpenBLAS 0.3.21 gets wrong: AVX-512 with BF16, Prescott
 * picked. akkctl raises to Cooperlake, then SkylakeX, Haswell, Sandybridge
 * should one not take. */
static void avx512_bf16_with_prescott_is_raised(void **state)
{
	struct akk_kernels k = decide(emerald_rapids(), "Prescott", NULL, NULL);
	char line[512];

	(void)state;
	assert_int_equal(k.why, AKK_KERNELS_RAISED);
	assert_string_equal(k.best, "Cooperlake");
	assert_int_equal(k.nwant, 4);
	assert_string_equal(k.want[0], "Cooperlake");
	assert_string_equal(k.want[1], "SkylakeX");
	assert_string_equal(k.want[2], "Haswell");
	assert_string_equal(k.want[3], "Sandybridge");
	assert_best(&k);
	/* after the switch */
	snprintf(k.running, sizeof(k.running), "%s", k.want[0]);
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Cooperlake kernels (chosen by akkctl: "
			    "the CPU has AVX-512 with BF16; the library picked Prescott)");
	assert_int_equal(akk_kernels_weak(&k), 0);
}

/* AVX-512 without BF16 (a Skylake-SP whose model the library would not
 * know): SkylakeX; only the sets stronger than the library's are tried. */
static void avx512_without_bf16_is_skylakex(void **state)
{
	struct akk_cpu c = cpu("GenuineIntel", SIG_SKYLAKE_SP, SSE3 | FMA | OSXSAVE | AVX,
			       AVX2 | AVX512, 0, XCR0_AVX512);
	struct akk_kernels k = decide(c, "Prescott", NULL, NULL);
	struct akk_kernels h = decide(c, "Haswell", NULL, NULL);

	(void)state;
	assert_int_equal(k.why, AKK_KERNELS_RAISED);
	assert_string_equal(k.want[0], "SkylakeX");
	assert_best(&k);
	assert_int_equal(h.why, AKK_KERNELS_RAISED);
	assert_int_equal(h.nwant, 1);
	assert_string_equal(h.want[0], "SkylakeX");
	/* the library's SkylakeX on a BF16 CPU is as strong: it stands */
	assert_int_equal(decide(emerald_rapids(), "SkylakeX", NULL, NULL).why,
			 AKK_KERNELS_LIBRARY);
	/* AVX-512 the OS does not save counts as AVX2 */
	c = cpu("GenuineIntel", SIG_SKYLAKE_SP, SSE3 | FMA | OSXSAVE | AVX, AVX2 | AVX512, 0,
		XCR0_AVX);
	k = decide(c, "Prescott", NULL, NULL);
	assert_string_equal(k.want[0], "Haswell");
	assert_best(&k);
	/* AVX-512F without BW/VL/DQ (a Xeon Phi) is not enough for SkylakeX */
	c = cpu("GenuineIntel", SIG_SKYLAKE_SP, SSE3 | FMA | OSXSAVE | AVX, AVX2 | F, 0,
		XCR0_AVX512);
	assert_string_equal(decide(c, "Prescott", NULL, NULL).best, "Haswell");
}

/* AMD: Zen 3 keeps the library's Zen; Zen 4's AVX-512 with BF16 is raised
 * from the Zen the library picks; AVX2 without a known model gets Zen. */
static void amd_branches(void **state)
{
	struct akk_cpu z4 = cpu("AuthenticAMD", SIG_ZEN4, SSE3 | FMA | OSXSAVE | AVX,
				AVX2 | AVX512, BF16, XCR0_AVX512);
	struct akk_kernels k = decide(zen3(), "Zen", NULL, NULL);
	char line[512];

	(void)state;
	assert_int_equal(k.why, AKK_KERNELS_LIBRARY);
	assert_int_equal(k.nwant, 0);
	assert_string_equal(k.best, "Zen");
	assert_best(&k);
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Zen kernels (the library's choice, "
			    "the best for the CPU's AVX2 and FMA)");
	k = decide(z4, "Zen", NULL, NULL);
	assert_int_equal(k.why, AKK_KERNELS_RAISED);
	assert_string_equal(k.want[0], "Cooperlake");
	assert_int_equal(k.nwant, 2);	/* Cooperlake, SkylakeX: not Zen again */
	assert_best(&k);
	k = decide(zen3(), "Prescott", NULL, NULL);
	assert_string_equal(k.want[0], "Zen");
	assert_best(&k);
	k = decide(cpu("HygonGenuine", SIG_ZEN3, SSE3 | FMA | OSXSAVE | AVX, AVX2, 0, XCR0_AVX),
		   "Prescott", NULL, NULL);
	assert_string_equal(k.want[0], "Zen");
}

/* AVX2 and FMA on Intel: Haswell; AVX alone (a hypervisor hiding AVX2):
 * Sandybridge; SSE alone: the library's pick stands. */
static void avx2_avx_and_sse_only(void **state)
{
	struct akk_kernels k;

	(void)state;
	k = decide(cpu("GenuineIntel", SIG_HASWELL, SSE3 | FMA | OSXSAVE | AVX, AVX2, 0,
		       XCR0_AVX), "Prescott", NULL, NULL);
	assert_int_equal(k.why, AKK_KERNELS_RAISED);
	assert_string_equal(k.want[0], "Haswell");
	assert_best(&k);
	k = decide(cpu("GenuineIntel", SIG_HASWELL, SSE3 | OSXSAVE | AVX, 0, 0, XCR0_AVX),
		   "Nehalem", NULL, NULL);
	assert_int_equal(k.why, AKK_KERNELS_RAISED);
	assert_string_equal(k.want[0], "Sandybridge");
	assert_int_equal(k.nwant, 1);
	k = decide(cpu("GenuineIntel", SIG_HASWELL, SSE3, 0, 0, 0), "Prescott", NULL, NULL);
	assert_int_equal(k.why, AKK_KERNELS_LIBRARY);
	assert_string_equal(k.best, "");
	assert_string_equal(k.running, "Prescott");
	/* AVX2 without FMA is not Haswell's */
	k = decide(cpu("GenuineIntel", SIG_HASWELL, SSE3 | OSXSAVE | AVX, AVX2, 0, XCR0_AVX),
		   "Prescott", NULL, NULL);
	assert_string_equal(k.want[0], "Sandybridge");
}

/* The user's OPENBLAS_CORETYPE is honoured, weak or not, and said. */
static void user_choice_is_honoured(void **state)
{
	struct akk_kernels k = decide(emerald_rapids(), "Prescott", "Prescott", NULL);
	char line[512];

	(void)state;
	assert_int_equal(k.why, AKK_KERNELS_USER);
	assert_int_equal(k.nwant, 0);
	assert_string_equal(k.running, "Prescott");
	assert_true(akk_kernels_weak(&k));
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Prescott kernels (OPENBLAS_CORETYPE=Prescott, "
			    "the user's choice; the CPU can run Cooperlake with AVX-512 with BF16)");
	assert_int_equal(akk_kernels_caveat(&k, line, sizeof(line)), 1);
	assert_string_equal(line, "warning: weak kernels: matrix products run on OpenBLAS's "
			    "Prescott kernels, not the Cooperlake kernels this CPU can run "
			    "(AVX-512 with BF16), so these figures are below what it can do "
			    "(unset OPENBLAS_CORETYPE to let akkctl choose)");
	/* set even with AKKCTL_KERNELS=library; a strong choice is no caveat */
	k = decide(emerald_rapids(), "SkylakeX", "SkylakeX", "library");
	assert_int_equal(k.why, AKK_KERNELS_USER);
	assert_int_equal(akk_kernels_caveat(&k, line, sizeof(line)), 0);
	assert_string_equal(line, "");
}

/* AKKCTL_KERNELS=library keeps the library's pick and says what akkctl
 * would have chosen; auto is the default; anything else is an error. */
static void keep_library_mode(void **state)
{
	struct akk_kernels_in in = { emerald_rapids(), "Prescott", "0.3.21", 1, NULL, "fast" };
	struct akk_kernels k = decide(emerald_rapids(), "Prescott", NULL, "library");
	struct akk_err e;
	char line[512];

	(void)state;
	assert_int_equal(k.why, AKK_KERNELS_KEPT);
	assert_int_equal(k.nwant, 0);
	assert_string_equal(k.running, "Prescott");
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Prescott kernels (the library's choice, kept "
			    "by AKKCTL_KERNELS=library; akkctl would choose Cooperlake: the CPU "
			    "has AVX-512 with BF16)");
	assert_int_equal(akk_kernels_caveat(&k, line, sizeof(line)), 1);
	assert_non_null(strstr(line, "(unset AKKCTL_KERNELS to let akkctl choose)"));
	assert_int_equal(decide(emerald_rapids(), "Prescott", NULL, "auto").why,
			 AKK_KERNELS_RAISED);
	assert_int_equal(decide(emerald_rapids(), "Prescott", NULL, "").why, AKK_KERNELS_RAISED);
	assert_int_equal(akk_kernels_decide(&k, &in, &e), -1);
	assert_string_equal(e.msg, "AKKCTL_KERNELS='fast': auto (akkctl chooses) or library "
			    "(OpenBLAS's own choice)");
}

/* What this OpenBLAS has: Cooperlake only from 0.3.11; a build for one
 * CPU type cannot switch; a set newer than akkctl knows is trusted. */
static void library_limits(void **state)
{
	struct akk_kernels_in in = { emerald_rapids(), "Prescott", "0.3.10", 1, NULL, NULL };
	struct akk_kernels k;
	struct akk_err e;
	char line[512];

	(void)state;
	assert_int_equal(akk_kernels_decide(&k, &in, &e), 0);
	assert_string_equal(k.best, "SkylakeX");
	assert_string_equal(k.want[0], "SkylakeX");
	in.version = "0.3.21";
	in.dynamic = 0;
	in.library = "Haswell";
	assert_int_equal(akk_kernels_decide(&k, &in, &e), 0);
	assert_int_equal(k.why, AKK_KERNELS_FIXED);
	assert_true(akk_kernels_weak(&k));
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Haswell kernels (this OpenBLAS is built for one "
			    "CPU type, its kernels cannot be chosen; the CPU can run Cooperlake "
			    "with AVX-512 with BF16)");
	assert_int_equal(decide(emerald_rapids(), "SapphireRapids", NULL, NULL).why,
			 AKK_KERNELS_LIBRARY);
	assert_int_equal(decide(emerald_rapids(), "Zen5", NULL, NULL).why, AKK_KERNELS_LIBRARY);
	assert_int_equal(akk_kernels_tier("skylakex"), 4);
	assert_int_equal(akk_kernels_tier("Zen5"), -1);
}

/* A library that could not switch: the report and bench say what to set
 * before starting. */
static void stuck_says_what_to_set(void **state)
{
	struct akk_kernels k = decide(emerald_rapids(), "Prescott", NULL, NULL);
	char line[512];

	(void)state;
	k.why = AKK_KERNELS_STUCK;	/* as akk_kernels_choose leaves it */
	akk_kernels_describe(&k, line, sizeof(line));
	assert_string_equal(line, "OpenBLAS 0.3.21: Prescott kernels (the library's choice: this "
			    "OpenBLAS cannot switch to Cooperlake in a running program; the CPU "
			    "has AVX-512 with BF16: set OPENBLAS_CORETYPE=Cooperlake before "
			    "starting)");
	assert_int_equal(akk_kernels_caveat(&k, line, sizeof(line)), 1);
	assert_non_null(strstr(line, "(set OPENBLAS_CORETYPE before starting)"));
}

/* Every simulated CPU, with every pick the library could make, ends on
 * kernels as strong as the CPU allows. */
static void no_cpu_runs_weaker_kernels_than_it_can(void **state)
{
	const char *picks[] = { "Prescott", "Core2", "Nehalem", "Barcelona", "Sandybridge",
				"Bulldozer", "Haswell", "Zen", "SkylakeX", "Cooperlake" };
	struct akk_cpu cpus[] = {
		emerald_rapids(), zen3(),
		cpu("AuthenticAMD", SIG_ZEN4, SSE3 | FMA | OSXSAVE | AVX, AVX2 | AVX512, BF16,
		    XCR0_AVX512),
		cpu("GenuineIntel", SIG_SKYLAKE_SP, SSE3 | FMA | OSXSAVE | AVX, AVX2 | AVX512, 0,
		    XCR0_AVX512),
		cpu("GenuineIntel", SIG_HASWELL, SSE3 | FMA | OSXSAVE | AVX, AVX2, 0, XCR0_AVX),
		cpu("GenuineIntel", SIG_HASWELL, SSE3 | OSXSAVE | AVX, 0, 0, XCR0_AVX),
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cpus) / sizeof(*cpus); c++)
		for (size_t p = 0; p < sizeof(picks) / sizeof(*picks); p++) {
			struct akk_kernels k = decide(cpus[c], picks[p], NULL, NULL);

			/* a library's pick the CPU cannot run is never
			 * made (OpenBLAS checks); skip those pairs */
			if (akk_kernels_tier(picks[p]) > akk_kernels_tier(k.best))
				continue;
			assert_best(&k);
		}
}

/* ---- this machine --------------------------------------------------------- */

/* The switch on this process's OpenBLAS: to a set this CPU can run and
 * back, a name it does not have is refused, products stay right. */
static void switch_in_process(void **state)
{
	struct akk_cpu c;
	struct akk_kernels k;
	char start[AKK_KERNELS_NAME];
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 }, y[4];
	const char *target, *env = getenv("OPENBLAS_CORETYPE");

	(void)state;
	akk_cpu_this(&c);
	akk_kernels_report(&k);
	snprintf(start, sizeof(start), "%s", openblas_get_corename());
	assert_string_equal(k.running, start);
	if (!strstr(openblas_get_config(), "DYNAMIC_ARCH"))
		skip();
	target = c.features & AKK_CPU_AVX ? "Sandybridge" : "Nehalem";
	assert_int_equal(akk_kernels_switch(target), 1);
	assert_string_equal(openblas_get_corename(), target);
	/* the environment is as it was (make test-kernels may set it) */
	assert_true(!env == !getenv("OPENBLAS_CORETYPE"));
	if (env)
		assert_string_equal(getenv("OPENBLAS_CORETYPE"), env);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1, a, 2, b, 2, 0, y, 2);
	assert_true(y[0] == 19 && y[1] == 22 && y[2] == 43 && y[3] == 50);
	assert_int_equal(akk_kernels_switch("NoSuchKernels"), 0);
	assert_int_equal(akk_kernels_switch(start), 1);
	assert_string_equal(openblas_get_corename(), start);
}

/* The bench caveat for a busy machine, from a load reading given. */
static void load_caveat(void **state)
{
	char line[512];

	(void)state;
	assert_int_equal(akk_load_caveat(5.25, 2, line, sizeof(line)), 1);
	assert_string_equal(line, "warning: busy machine: load average 5.25 on 2 cores: other "
			    "processes take CPU time from this run, so its times are longer and "
			    "vary more than on an idle machine (compare CPU seconds, or "
			    "interleaved runs)");
	assert_int_equal(akk_load_caveat(2.0, 2, line, sizeof(line)), 0);
	assert_string_equal(line, "");
	assert_int_equal(akk_load_caveat(1.5, 1, line, sizeof(line)), 1);
	assert_non_null(strstr(line, "on 1 core:"));
	assert_int_equal(akk_load_caveat(-1, 2, line, sizeof(line)), 0);
}

/* akkctl: check says which kernels run and why; a bad AKKCTL_KERNELS is a
 * usage error; bench warns about the user's weak choice. */
static void akkctl_reports(void **state)
{
	const char *dir = tu_tmpdir(), *cfg = tu_path(dir, "c.yaml");
	const char *yaml = "data: {train: {images: nope, labels: nope}}\n"
			   "network: {input: [16], gates: [{layers: [{dense: 4}]}]}\n"
			   "optimizer: {type: sgd, lr: 0.1}\n"
			   "schedule: {mode: flip-flop, epochs: 1, batch_size: 8}\n";
	const char *env = getenv("OPENBLAS_CORETYPE");
	char want[512], saved[64] = "";
	struct akk_kernels k;
	struct akk_cpu c;

	(void)state;
	assert_int_equal(tu_write_file(cfg, yaml, strlen(yaml)), 0);
	/* check looks for the data files: an empty one does */
	assert_int_equal(tu_write_file(tu_path(dir, "nope"), "", 0), 0);
	unsetenv("AKKCTL_KERNELS");
	akk_kernels_report(&k);
	assert_int_equal(ak("check", cfg, NULL), 0);
	if (env)	/* make test-kernels: the user's choice */
		snprintf(want, sizeof(want), "matrix products: OpenBLAS %s: %s kernels "
			 "(OPENBLAS_CORETYPE=%s, the user's choice", k.version, k.running, env);
	else	/* this process runs the library's pick: akkctl raises from it */
		snprintf(want, sizeof(want), "matrix products: OpenBLAS %s: %s kernels (", k.version,
			 k.why == AKK_KERNELS_RAISED ? k.want[0] : k.running);
	tu_assert_contains(g_out, want);

	setenv("AKKCTL_KERNELS", "fastest", 1);
	assert_int_equal(ak("check", cfg, NULL), 2);
	assert_string_equal(g_err, "akkctl: AKKCTL_KERNELS='fastest': auto (akkctl chooses) or "
			    "library (OpenBLAS's own choice)\n");
	unsetenv("AKKCTL_KERNELS");
	/* bench takes synthetic data when the files are missing */
	assert_int_equal(unlink(tu_path(dir, "nope")), 0);

	akk_cpu_this(&c);
	if (c.features & AKK_CPU_AVX) {	/* Prescott is weaker than this CPU's best */
		if (env)
			snprintf(saved, sizeof(saved), "%s", env);
		setenv("OPENBLAS_CORETYPE", "Prescott", 1);
		assert_int_equal(ak("bench", "--config", cfg, "--steps", "2", "--mode",
				    "flip-flop", NULL), 0);
		tu_assert_contains(g_out, "\nwarning: weak kernels: matrix products run on "
				   "OpenBLAS's Prescott kernels, not the ");
		if (saved[0])
			setenv("OPENBLAS_CORETYPE", saved, 1);
		else
			unsetenv("OPENBLAS_CORETYPE");
	}
	tu_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decodes_family_model_and_features),
		cmocka_unit_test(this_cpu_matches_proc_cpuinfo),
		cmocka_unit_test(os_state_gates_avx_and_avx512),
		cmocka_unit_test(avx512_bf16_with_prescott_is_raised),
		cmocka_unit_test(avx512_without_bf16_is_skylakex),
		cmocka_unit_test(amd_branches),
		cmocka_unit_test(avx2_avx_and_sse_only),
		cmocka_unit_test(user_choice_is_honoured),
		cmocka_unit_test(keep_library_mode),
		cmocka_unit_test(library_limits),
		cmocka_unit_test(stuck_says_what_to_set),
		cmocka_unit_test(no_cpu_runs_weaker_kernels_than_it_can),
		cmocka_unit_test(switch_in_process),
		cmocka_unit_test(load_caveat),
		cmocka_unit_test(akkctl_reports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
