/* text.h - a text read as a stream of bytes, cut into windows for a
 * language model that predicts the next byte.
 *
 * With data.format: text and data.text: {seq_len: T, stride: S}, a file
 * is read as bytes (not UTF-8 characters: a character of several bytes is
 * several tokens). The vocabulary is the distinct bytes of the training
 * text, sorted; token k is the k-th of them, and its class name is the
 * byte itself, a string of one character (stored in the checkpoint, so
 * eval and generate map text as training did). Window i reads the tokens
 * i S .. i S + T - 1 as its input [T] (token indices, as floats) and
 * labels each step with the token after it, i S + 1 .. i S + T: n bytes
 * make (n - T - 1) / S + 1 windows. A validation split holds out the end
 * of the text (data/series.h, akk_windows_split: no training window
 * shares a token with a held-out one).
 *
 * Bounded: at most AKK_TEXT_MAX_BYTES bytes (after gzip, which is read as
 * data/gzip.h reads it), and the windows at most AKK_MAX_FLOATS tokens. A
 * NUL byte is refused (a class name cannot hold it; such a file is not
 * text). */
#ifndef AKK_TEXT_H
#define AKK_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "data/dataset.h"

#define AKK_TEXT_MAX_BYTES ((size_t)256 << 20)

struct akk_text {
	int len;		/* T: tokens a window reads */
	int stride;		/* S: tokens between windows */
};

/* The windows of the n bytes at text into d (owned by d): token indices
 * in d->x8 (n windows of T), T labels per window, the vocabulary in
 * d->class_names and, in d->class_at, each byte's first offset in the
 * text (then 0). path names the text in errors (a NUL byte and its
 * offset, too few bytes for a window, too many windows). */
int akk_text_windows(struct akk_dataset *d, const uint8_t *text, size_t n,
		     const struct akk_text *t, const char *path, struct akk_err *e);

/* Read the files at paths (npaths of them, each plain or gzip) one after
 * the other as one text of at most AKK_TEXT_MAX_BYTES bytes, and cut it as
 * akk_text_windows does (its errors name the first file). A NUL byte is
 * an error naming its file and its offset there. */
int akk_text_dataset(struct akk_dataset *d, const char *const *paths, int npaths,
		     const struct akk_text *t, struct akk_err *e);

/* Whether d holds the windows of a text. */
static inline int akk_text_is(const struct akk_dataset *d)
{
	return d->text_len > 0;
}

/* The token of byte c in the vocabulary names (n one-byte names), or -1. */
int akk_text_token(char *const *names, int n, uint8_t c);

/* Renumber the text d (another file, read with its own vocabulary) to the
 * training vocabulary names (n of them): inputs and labels. A byte that is
 * not in it is an error naming path and the byte's first offset. */
int akk_text_match_vocab(struct akk_dataset *d, char *const *names, int n,
			 const char *path, struct akk_err *e);

#endif
