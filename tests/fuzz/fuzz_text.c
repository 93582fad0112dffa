/* fuzz_text.c - the text reader (data/text.h).
 *
 * The input is three option bytes, then the text file: seq_len 1 + b0 %
 * 32, stride 1 + b1 % 16, and the fraction of a validation split b2 / 256.
 * Besides crashes, hangs, leaks and out-of-memory, a finding is: a plain
 * text (not starting with the gzip magic) of at least seq_len + 1 bytes
 * and no NUL refused, or one that breaks those rules accepted; a window
 * count other than (n - T - 1) / S + 1; a vocabulary that is not the
 * text's distinct bytes in increasing order, one byte per name; a window
 * whose input or labels are not the text's bytes at i S + j and i S + j + 1
 * through that vocabulary; renumbering to its own vocabulary changing
 * anything, or to a vocabulary without one of its bytes accepted; and a
 * split whose training windows reach a held-out window's bytes. */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "data/series.h"
#include "data/text.h"

/* The token of byte c, searched in the dataset's names; -1 when absent. */
static int token(const struct akk_dataset *d, uint8_t c)
{
	for (int k = 0; k < d->classes; k++)
		if ((uint8_t)d->class_names[k][0] == c)
			return k;
	return -1;
}

/* The windows of a plain text t of n bytes, as data/text.h defines them. */
static void check_windows(const struct akk_dataset *d, const uint8_t *t, size_t n,
			  const struct akk_text *w)
{
	size_t T = (size_t)w->len, S = (size_t)w->stride;
	int seen[256] = { 0 }, V = 0;

	if (d->n != (n - T - 1) / S + 1 || d->in != T || akk_dataset_steps(d) != (int)T)
		fuzz_violation("%zu windows of %zu from %zu bytes (T %zu, S %zu)", d->n, d->in,
			       n, T, S);
	for (size_t i = 0; i < n; i++)
		V += !seen[t[i]]++;
	if (d->classes != V)
		fuzz_violation("a vocabulary of %d for %d distinct bytes", d->classes, V);
	for (int k = 0; k < d->classes; k++)
		if (!d->class_names[k][0] || d->class_names[k][1] ||
		    !seen[(uint8_t)d->class_names[k][0]] ||
		    (k && (uint8_t)d->class_names[k][0] <= (uint8_t)d->class_names[k - 1][0]))
			fuzz_violation("vocabulary name %d is not the next byte of the text", k);
	for (size_t i = 0; i < d->n; i++)
		for (size_t j = 0; j < T; j++)
			if (d->x8[i * T + j] != token(d, t[i * S + j]) ||
			    d->labels[i * T + j] != token(d, t[i * S + j + 1]))
				fuzz_violation("window %zu step %zu: %d -> %d, the text says %d -> %d",
					       i, j, d->x8[i * T + j], (int)d->labels[i * T + j],
					       token(d, t[i * S + j]), token(d, t[i * S + j + 1]));
}

/* Renumbered to its own vocabulary: nothing changes; to one without its
 * last byte: refused. */
static void check_match(struct akk_dataset *d)
{
	size_t total = d->n * d->in;
	uint8_t *x = malloc(total + 1);
	int32_t *y = malloc(total * sizeof(*y) + 1);
	char **names = calloc((size_t)d->classes + 1, sizeof(*names));
	int V = d->classes;
	struct akk_err e = { 0 };

	if (!x || !y || !names)
		abort();
	memcpy(x, d->x8, total);
	memcpy(y, d->labels, total * sizeof(*y));
	for (int k = 0; k < V; k++)
		if (!(names[k] = strdup(d->class_names[k])))
			abort();
	if (V > 0 && !akk_text_match_vocab(d, names, V - 1, "t", &e))
		fuzz_violation("renumbered to a vocabulary without byte %d",
			       (uint8_t)names[V - 1][0]);
	if (akk_text_match_vocab(d, names, V, "t", &e) || d->classes != V ||
	    memcmp(x, d->x8, total) || memcmp(y, d->labels, total * sizeof(*y)))
		fuzz_violation("renumbering to its own vocabulary changed it: %s", e.msg);
	for (int k = 0; k < V; k++)
		free(names[k]);
	free(names);
	free(x);
	free(y);
}

/* No training window reads or predicts a byte of a held-out window. */
static void check_split(const struct akk_dataset *d, double fraction)
{
	uint32_t *held, *keep;
	size_t nheld, nkeep;
	struct akk_err e = { 0 };
	size_t T = (size_t)d->text_len, S = (size_t)d->text_stride;

	if (akk_windows_split(&held, &nheld, &keep, &nkeep, d->n, d->text_len + 1,
			      d->text_stride, fraction, "text", &e))
		return;
	if (!nheld || !nkeep || held[nheld - 1] != d->n - 1 ||
	    keep[nkeep - 1] * S + T >= held[0] * S)
		fuzz_violation("split of %zu windows: %zu held from %u, %zu kept to %u", d->n,
			       nheld, nheld ? held[0] : 0, nkeep, nkeep ? keep[nkeep - 1] : 0);
	free(held);
	free(keep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct akk_dataset d = { 0 };
	struct akk_err e = { 0 };
	struct akk_text w;
	const uint8_t *t = data + 3;
	size_t n;
	int plain, ok;

	if (size < 3)
		return 0;
	w.len = 1 + data[0] % 32;
	w.stride = 1 + data[1] % 16;
	n = size - 3;
	plain = n < 2 || t[0] != 0x1f || t[1] != 0x8b;
	const char *path = fuzz_write("text", t, n);

	ok = !akk_text_dataset(&d, &path, 1, &w, &e);
	if (plain && ok != (n >= (size_t)w.len + 1 && !memchr(t, 0, n)))
		fuzz_violation("%s a plain text of %zu bytes (T %d): %s", ok ? "accepted" : "refused",
			       n, w.len, ok ? "" : e.msg);
	if (!ok)
		return 0;
	if (plain)
		check_windows(&d, t, n, &w);
	check_split(&d, data[2] / 256.0);
	check_match(&d);
	akk_dataset_release(&d);
	return 0;
}
