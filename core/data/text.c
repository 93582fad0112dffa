/* text.c - a text read as bytes and cut into next-byte windows (text.h). */
#include "data/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "data/gzip.h"

/* A byte as a message shows it: 'c' when printable, else its code. */
static const char *shown(uint8_t c, char *buf, size_t size)
{
	if (c >= 0x20 && c < 0x7f && c != '\'')
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "0x%02x", c);
	return buf;
}

/* The vocabulary of text: its distinct bytes in order, as one-byte names,
 * each with its first offset; tok maps a byte to its token (-1: absent). */
static int vocabulary(struct akk_dataset *d, int16_t tok[256], const uint8_t *text,
		      size_t n, const char *path, struct akk_err *e)
{
	size_t first[256];
	int V = 0;
	char buf[8];

	for (int c = 0; c < 256; c++)
		first[c] = SIZE_MAX;
	for (size_t i = n; i-- > 0;)
		first[text[i]] = i;
	if (first[0] != SIZE_MAX)
		return akk_err_at(e, path, 0, 0, "byte %s at offset %zu: a text holds no NUL byte",
				  shown(0, buf, sizeof(buf)), first[0]);
	for (int c = 0; c < 256; c++)
		tok[c] = first[c] == SIZE_MAX ? -1 : (int16_t)V++;
	d->class_names = calloc((size_t)V, sizeof(char *));
	d->class_at = malloc(2 * (size_t)V * sizeof(int));
	if (!d->class_names || !d->class_at)
		return akk_err_at(e, path, 0, 0, "out of memory for the vocabulary");
	d->classes = V;
	for (int c = 0; c < 256; c++) {
		int k = tok[c];
		if (k < 0)
			continue;
		if (!(d->class_names[k] = malloc(2)))
			return akk_err_at(e, path, 0, 0, "out of memory for the vocabulary");
		d->class_names[k][0] = (char)c;
		d->class_names[k][1] = '\0';
		/* offsets fit: the text is at most AKK_TEXT_MAX_BYTES */
		d->class_at[2 * k] = (int)first[c];
		d->class_at[2 * k + 1] = 0;
	}
	return 0;
}

int akk_text_windows(struct akk_dataset *d, const uint8_t *text, size_t n,
		     const struct akk_text *t, const char *path, struct akk_err *e)
{
	size_t T = (size_t)t->len, S = (size_t)t->stride, m, total;
	int16_t tok[256];

	memset(d, 0, sizeof(*d));
	if (t->len < 1 || t->stride < 1)
		return akk_err_at(e, path, 0, 0, "a text window needs seq_len and stride of at least 1");
	if (n > AKK_TEXT_MAX_BYTES)
		return akk_err_at(e, path, 0, 0, "a text of %zu bytes is more than the %zu bytes a text may have",
				  n, AKK_TEXT_MAX_BYTES);
	/* the labels of a window run one token past its input */
	if (n < T + 1)
		return akk_err_at(e, path, 0, 0,
				  "%zu bytes make no window: a window of seq_len %zu and the byte after it need %zu",
				  n, T, T + 1);
	m = (n - T - 1) / S + 1;
	if (!akk_mul_ok(m, T, &total) || total > AKK_MAX_FLOATS)
		return akk_err_at(e, path, 0, 0, "%zu windows of %zu tokens would pass %zu tokens",
				  m, T, AKK_MAX_FLOATS);
	if (vocabulary(d, tok, text, n, path, e))
		goto fail;
	d->x8 = malloc(total + 1);
	d->labels = malloc(total * sizeof(int32_t) + 1);
	if (!d->x8 || !d->labels) {
		akk_err_at(e, path, 0, 0, "out of memory for %zu windows", m);
		goto fail;
	}
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < T; j++) {
			d->x8[i * T + j] = (uint8_t)tok[text[i * S + j]];
			d->labels[i * T + j] = tok[text[i * S + j + 1]];
		}
	d->n = m;
	d->in = T;
	d->c = 1;
	d->h = 1;
	d->w = (int)T;
	d->xtype = AKK_X_U8;
	d->label_steps = (int)T;
	d->text_len = (int)T;
	d->text_stride = (int)S;
	return 0;
fail:
	akk_dataset_release(d);
	return -1;
}

/* Append the bytes of the file at path to *buf (len of cap bytes); a
 * NUL byte is an error at its offset in this file. The total is held to
 * AKK_TEXT_MAX_BYTES: one byte past it tells a text that is too long. */
static int read_text(uint8_t **buf, size_t *len, size_t *cap, const char *path,
		     struct akk_err *e)
{
	struct akk_gz_reader r;
	size_t start = *len, got;
	const uint8_t *nul;
	char shown_nul[8];
	int rc = -1;

	if (akk_gz_open(&r, path, AKK_GZ_DEFLATE_MAX_RATIO, e))
		return -1;
	for (;;) {
		if (*len == *cap) {
			size_t want = *cap ? 2 * *cap : AKK_GZ_CHUNK;
			uint8_t *nb;
			if (want > AKK_TEXT_MAX_BYTES + 1)
				want = AKK_TEXT_MAX_BYTES + 1;
			if (want == *cap)
				break;
			if (!(nb = realloc(*buf, want))) {
				akk_err_at(e, path, 0, 0, "out of memory reading the text");
				goto out;
			}
			*buf = nb;
			*cap = want;
		}
		if (akk_gz_read(&r, *buf + *len, *cap - *len, &got))
			goto out;
		if (!got)
			break;
		*len += got;
	}
	if (*len > AKK_TEXT_MAX_BYTES) {
		akk_err_at(e, path, 0, 0, "a text may have at most %zu bytes; this one has more",
			   AKK_TEXT_MAX_BYTES);
		goto out;
	}
	if ((nul = memchr(*buf + start, 0, *len - start))) {
		akk_err_at(e, path, 0, 0, "byte %s at offset %zu: a text holds no NUL byte",
			   shown(0, shown_nul, sizeof(shown_nul)), (size_t)(nul - (*buf + start)));
		goto out;
	}
	rc = 0;
out:
	akk_gz_close(&r);
	return rc;
}

int akk_text_dataset(struct akk_dataset *d, const char *const *paths, int npaths,
		     const struct akk_text *t, struct akk_err *e)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	if (npaths < 1)
		return akk_err_set(e, "no text file to read");
	for (int i = 0; i < npaths; i++)
		if (read_text(&buf, &len, &cap, paths[i], e))
			goto out;
	rc = akk_text_windows(d, buf, len, t, paths[0], e);
out:
	free(buf);
	return rc;
}

int akk_text_token(char *const *names, int n, uint8_t c)
{
	for (int k = 0; k < n; k++)
		if ((uint8_t)names[k][0] == c && names[k][0] && !names[k][1])
			return k;
	return -1;
}

int akk_text_match_vocab(struct akk_dataset *d, char *const *names, int n,
			 const char *path, struct akk_err *e)
{
	int to[256];
	char **copy;
	char buf[8];
	size_t total = d->n * (size_t)d->text_len;

	if (!akk_text_is(d))
		return 0;
	if (n < 1 || !names)
		return akk_err_at(e, path, 0, 0, "the training data has no vocabulary of bytes");
	for (int k = 0; k < d->classes; k++) {
		uint8_t c = (uint8_t)d->class_names[k][0];
		if ((to[k] = akk_text_token(names, n, c)) < 0)
			return akk_err_at(e, path, 0, 0,
					  "byte %s at offset %d is not in the training text's vocabulary of %d bytes",
					  shown(c, buf, sizeof(buf)),
					  d->class_at ? d->class_at[2 * k] : 0, n);
	}
	if (!(copy = calloc((size_t)n, sizeof(*copy))))
		return akk_err_at(e, path, 0, 0, "out of memory for the vocabulary");
	for (int k = 0; k < n; k++)
		if (!(copy[k] = strdup(names[k]))) {
			while (k-- > 0)
				free(copy[k]);
			free(copy);
			return akk_err_at(e, path, 0, 0, "out of memory for the vocabulary");
		}
	for (size_t i = 0; i < total; i++) {
		d->x8[i] = (uint8_t)to[d->x8[i]];
		d->labels[i] = to[d->labels[i]];
	}
	for (int k = 0; k < d->classes; k++)
		free(d->class_names[k]);
	free(d->class_names);
	free(d->class_at);
	d->class_at = NULL;
	d->class_names = copy;
	d->classes = n;
	return 0;
}
