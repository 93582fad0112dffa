/* hugemem.h - large arrays in huge pages.
 *
 * Training reads its samples in a random order: for MNIST, 60,000 reads of
 * 784 bytes at random places in 47 MB. With 4 KiB pages nearly every one
 * also misses the TLB and walks the page tables. In 2 MiB pages the whole
 * array takes 24 TLB entries. Linux gives an anonymous mapping huge pages
 * when transparent huge pages are "madvise" (the setting of the machine
 * this was measured on) and the mapping asks for them, which is what these
 * functions do, or "always" (then malloc's own mapping mostly had them:
 * the move only aligns it). Elsewhere the mapping keeps small pages and
 * works the same. */
#ifndef AKK_HUGEMEM_H
#define AKK_HUGEMEM_H

#include <stddef.h>

/* Arrays below this many bytes stay where they are: two huge pages. */
#define AKK_HUGEMEM_MIN ((size_t)4 << 20)

/* Moves the n bytes at *p (from malloc) into a new mapping that asks for
 * huge pages, frees the old allocation and points *p at the copy. Each
 * piece of the old allocation is given back to the system once it is
 * copied, so the peak memory grows by one huge page, not by n. Returns
 * the mapping's size, to pass to akk_hugemem_free; returns 0 and leaves
 * *p alone when n is below AKK_HUGEMEM_MIN, the system has no huge pages
 * or the mapping cannot be made. */
size_t akk_hugemem_move(void **p, size_t n);

/* Frees p: a mapping of `mapped` bytes from akk_hugemem_move, or with
 * mapped 0 a malloc'd block (or NULL). */
void akk_hugemem_free(void *p, size_t mapped);

#endif
