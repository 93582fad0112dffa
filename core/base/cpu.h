/* cpu.h - what the CPU in front of us can do: its vendor and the vector
 * instruction sets the matrix kernels use, read from its features (cpuid)
 * and from the register state the operating system saves (xgetbv), never
 * from its model number. Reading the registers and decoding them are two
 * steps, so that tests can decode the registers of any CPU. */
#ifndef AKK_CPU_H
#define AKK_CPU_H

enum akk_cpu_vendor { AKK_CPU_OTHER, AKK_CPU_INTEL, AKK_CPU_AMD, AKK_CPU_HYGON };

/* Instruction sets the CPU has AND the OS has enabled (the AVX and
 * AVX-512 ones need both). */
enum {
	AKK_CPU_SSE3 = 1 << 0,
	AKK_CPU_AVX = 1 << 1,
	AKK_CPU_FMA = 1 << 2,
	AKK_CPU_AVX2 = 1 << 3,
	AKK_CPU_AVX512F = 1 << 4,
	AKK_CPU_AVX512DQ = 1 << 5,
	AKK_CPU_AVX512BW = 1 << 6,
	AKK_CPU_AVX512VL = 1 << 7,
	AKK_CPU_AVX512_BF16 = 1 << 8,
};
/* What OpenBLAS's SkylakeX kernels need. */
#define AKK_CPU_AVX512 (AKK_CPU_AVX512F | AKK_CPU_AVX512DQ | AKK_CPU_AVX512BW | AKK_CPU_AVX512VL)

/* The raw words the features are read from; zero where the CPU has no
 * such leaf (or is not x86). */
struct akk_cpuid {
	char vendor[13];	/* "GenuineIntel", "AuthenticAMD", ... */
	unsigned max_leaf;	/* leaf 0 eax */
	unsigned l1_eax, l1_ecx;	/* leaf 1: signature, features */
	unsigned l7_eax, l7_ebx;	/* leaf 7 subleaf 0 */
	unsigned l7s1_eax;	/* leaf 7 subleaf 1 (AVX512_BF16: bit 5) */
	unsigned long long xcr0;	/* register state the OS saves; 0
					 * unless OSXSAVE */
};

struct akk_cpu {
	enum akk_cpu_vendor vendor;
	int family, model;	/* as Linux shows them: family 6 model 207 */
	unsigned features;	/* AKK_CPU_* */
};

/* Read this CPU's words (all zero on a CPU that is not x86). */
void akk_cpuid_read(struct akk_cpuid *r);
/* Decode the words: vendor, family, model, usable instruction sets. */
void akk_cpu_decode(struct akk_cpu *c, const struct akk_cpuid *r);
/* Both: this CPU. */
void akk_cpu_this(struct akk_cpu *c);

#endif
