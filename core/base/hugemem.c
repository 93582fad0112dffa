/* hugemem.c - large arrays in huge pages (see hugemem.h). */
#include "base/hugemem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* Whether the kernel gives huge pages to a mapping that asks: its setting
 * reads "[always]" or "[madvise]". */
static int thp_offered(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, "[always]") || strstr(buf, "[madvise]");
}

size_t akk_hugemem_move(void **p, size_t n)
{
	size_t mapped = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), src = (uintptr_t)*p;
	uintptr_t kept = (src + page - 1) & ~(page - 1);
	char *raw, *dst;

	if (n < AKK_HUGEMEM_MIN || !*p || !thp_offered())
		return 0;
	/* mapped bytes at a huge page's boundary: map one huge page more and
	 * unmap what lies outside the aligned span (after it, always: dst is
	 * less than a huge page past raw) */
	raw = mmap(NULL, mapped + HUGE_PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return 0;
	dst = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (dst > raw)
		munmap(raw, (size_t)(dst - raw));
	munmap(dst + mapped, (size_t)(raw + HUGE_PAGE - dst));
	madvise(dst, mapped, MADV_HUGEPAGE);

	/* one huge page at a time, and the source's whole pages copied so
	 * far given back to the system before the next (they read as zeros
	 * afterwards, and nothing reads them; kept is the first page still
	 * held, never the one holding malloc's header below the block) */
	for (size_t off = 0; off < n; off += HUGE_PAGE) {
		size_t len = n - off < HUGE_PAGE ? n - off : HUGE_PAGE;
		uintptr_t done = (src + off + len) & ~(page - 1);

		memcpy(dst + off, (char *)*p + off, len);
		if (done > kept) {
			madvise((void *)kept, done - kept, MADV_DONTNEED);
			kept = done;
		}
	}
	free(*p);
	*p = dst;
	return mapped;
}

void akk_hugemem_free(void *p, size_t mapped)
{
	if (mapped)
		munmap(p, mapped);
	else
		free(p);
}
