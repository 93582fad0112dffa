/* cpu.c - the CPU's vendor and usable instruction sets, from cpuid and
 * xgetbv (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E). */
#include "base/cpu.h"

#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

void akk_cpuid_read(struct akk_cpuid *r)
{
	memset(r, 0, sizeof(*r));
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	r->max_leaf = a;
	memcpy(r->vendor, &b, 4);
	memcpy(r->vendor + 4, &d, 4);
	memcpy(r->vendor + 8, &c, 4);
	if (r->max_leaf < 1)
		return;
	__cpuid(1, a, b, c, d);
	r->l1_eax = a;
	r->l1_ecx = c;
	if (c & bit_OSXSAVE) {
		unsigned lo, hi;

		/* xgetbv, ecx = 0: XCR0; legal only when OSXSAVE is set */
		__asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
		r->xcr0 = (unsigned long long)hi << 32 | lo;
	}
	if (r->max_leaf < 7)
		return;
	__cpuid_count(7, 0, a, b, c, d);
	r->l7_eax = a;
	r->l7_ebx = b;
	if (a >= 1) {
		__cpuid_count(7, 1, a, b, c, d);
		r->l7s1_eax = a;
	}
#endif
}

/* The bits, as the manuals number them. */
enum {
	L1C_SSE3 = 1u << 0, L1C_FMA = 1u << 12, L1C_OSXSAVE = 1u << 27,
	L1C_AVX = 1u << 28,
	L7B_AVX2 = 1u << 5, L7B_AVX512F = 1u << 16, L7B_AVX512DQ = 1u << 17,
	L7B_AVX512BW = 1u << 30, L7B_AVX512VL = 1u << 31,
	L7S1A_AVX512_BF16 = 1u << 5,
	/* XCR0: SSE and AVX state (bits 1, 2); opmask, upper halves of
	 * zmm0-15 and zmm16-31 (bits 5, 6, 7) */
	XCR0_AVX = 0x6, XCR0_AVX512 = 0xe6,
};

void akk_cpu_decode(struct akk_cpu *c, const struct akk_cpuid *r)
{
	unsigned f = 0, base_family = (r->l1_eax >> 8) & 0xf;
	int os_avx, os_avx512;

	memset(c, 0, sizeof(*c));
	if (!strcmp(r->vendor, "GenuineIntel"))
		c->vendor = AKK_CPU_INTEL;
	else if (!strcmp(r->vendor, "AuthenticAMD"))
		c->vendor = AKK_CPU_AMD;
	else if (!strcmp(r->vendor, "HygonGenuine"))
		c->vendor = AKK_CPU_HYGON;
	/* the displayed family adds the extended family to 15; the model
	 * takes the extended model bits for families 6 and 15 */
	c->family = (int)base_family;
	c->model = (int)((r->l1_eax >> 4) & 0xf);
	if (base_family == 0xf)
		c->family += (int)((r->l1_eax >> 20) & 0xff);
	if (base_family == 0x6 || base_family == 0xf)
		c->model += (int)(((r->l1_eax >> 16) & 0xf) << 4);
	if (r->l1_ecx & L1C_SSE3)
		f |= AKK_CPU_SSE3;
	/* AVX needs the CPU (AVX), the OS's XSAVE (OSXSAVE) and the OS saving
	 * the ymm state; AVX-512 also the opmask and zmm state */
	os_avx = (r->l1_ecx & L1C_OSXSAVE) && (r->xcr0 & XCR0_AVX) == XCR0_AVX;
	os_avx512 = os_avx && (r->xcr0 & XCR0_AVX512) == XCR0_AVX512;
	if (!os_avx || !(r->l1_ecx & L1C_AVX)) {
		c->features = f;
		return;
	}
	f |= AKK_CPU_AVX;
	if (r->l1_ecx & L1C_FMA)
		f |= AKK_CPU_FMA;
	if (r->max_leaf >= 7) {
		if (r->l7_ebx & L7B_AVX2)
			f |= AKK_CPU_AVX2;
		if (os_avx512) {
			f |= r->l7_ebx & L7B_AVX512F ? AKK_CPU_AVX512F : 0;
			f |= r->l7_ebx & L7B_AVX512DQ ? AKK_CPU_AVX512DQ : 0;
			f |= r->l7_ebx & L7B_AVX512BW ? AKK_CPU_AVX512BW : 0;
			f |= r->l7_ebx & L7B_AVX512VL ? AKK_CPU_AVX512VL : 0;
			if (r->l7_eax >= 1 && (r->l7s1_eax & L7S1A_AVX512_BF16))
				f |= AKK_CPU_AVX512_BF16;
		}
	}
	c->features = f;
}

void akk_cpu_this(struct akk_cpu *c)
{
	struct akk_cpuid r;

	akk_cpuid_read(&r);
	akk_cpu_decode(c, &r);
}
