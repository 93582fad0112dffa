/* npy.c - reading NumPy .npy files into a dataset.
 *
 * The header is read whole (bounded by AKK_NPY_MAX_HEADER) and its dict
 * parsed by a small recursive-descent reader that knows exactly the three
 * keys NumPy writes; every error gives the byte offset in the file. The
 * declared data size (shape x element size) is checked against
 * AKK_IDX_MAX_BYTES and, for a regular file, against the bytes on disk
 * before it is allocated; other files (pipes) grow the buffer as data
 * arrives and stop one byte past the declared size. */
#include "data/npy.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/checked.h"
#include "data/idx.h"

static const char magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* Read up to len bytes; *got is how many arrived before end of file. */
static int read_some(int fd, const char *path, uint8_t *buf, size_t len,
		     size_t *got, struct akk_err *e)
{
	*got = 0;
	while (*got < len) {
		ssize_t n = read(fd, buf + *got, len - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return akk_err_at(e, path, 0, 0, "read error: %s",
					  strerror(errno));
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* The header dict, parsed from text of len bytes at file offset base. */
struct hdr {
	const char *path;
	const char *t;
	size_t len, pos, base;
	struct akk_err *e;
};

static int hfail(struct hdr *h, const char *what)
{
	return akk_err_at(h->e, h->path, 0, 0, "bad header at byte %zu: %s",
			  h->base + h->pos, what);
}

static void skip_ws(struct hdr *h)
{
	while (h->pos < h->len && isspace((unsigned char)h->t[h->pos]))
		h->pos++;
}

/* Expect character ch (after whitespace). */
static int expect(struct hdr *h, char ch, const char *what)
{
	skip_ws(h);
	if (h->pos >= h->len)
		return hfail(h, "unterminated dict");
	if (h->t[h->pos] != ch)
		return hfail(h, what);
	h->pos++;
	return 0;
}

/* A quoted string into buf (at most size - 1 characters). */
static int str(struct hdr *h, char *buf, size_t size)
{
	size_t n = 0;
	char q;

	skip_ws(h);
	if (h->pos >= h->len)
		return hfail(h, "unterminated dict");
	q = h->t[h->pos];
	if (q != '\'' && q != '"')
		return hfail(h, "expected a quoted string");
	h->pos++;
	while (h->pos < h->len && h->t[h->pos] != q) {
		if (n + 1 >= size)
			return hfail(h, "string too long");
		if (!h->t[h->pos])
			return hfail(h, "a NUL byte in a string");
		buf[n++] = h->t[h->pos++];
	}
	if (h->pos >= h->len)
		return hfail(h, "unterminated string");
	h->pos++;
	buf[n] = '\0';
	return 0;
}

static int word(struct hdr *h, const char *w)
{
	size_t n = strlen(w);

	if (h->len - h->pos >= n && !memcmp(h->t + h->pos, w, n)) {
		h->pos += n;
		return 1;
	}
	return 0;
}

static int parse_descr(struct hdr *h, struct akk_npy *a, const char *d)
{
	char order = d[0], kind = d[0] ? d[1] : 0;
	char msg[160];

	if (!strcmp(d, "|O") || !strcmp(d, "O") || (d[0] && d[1] == 'O')) {
		snprintf(msg, sizeof(msg),
			 "'descr' '%s' is an object array, which cannot be read without Python",
			 d);
		return akk_err_at(h->e, h->path, 0, 0, "%s", msg);
	}
	if ((order != '<' && order != '>' && order != '|' && order != '=') ||
	    (kind != 'u' && kind != 'i' && kind != 'f') ||
	    !d[2] || d[3] ||
	    (d[2] != '1' && d[2] != '2' && d[2] != '4' && d[2] != '8') ||
	    (kind == 'f' && d[2] != '4' && d[2] != '8'))
		return akk_err_at(h->e, h->path, 0, 0,
				  "'descr' '%s' is not supported: expected uint8..64, int8..64, float32 or float64 ('<u1', '<i8', '<f4', ...)",
				  d);
	a->kind = kind;
	a->size = d[2] - '0';
	a->big = order == '>';
	return 0;
}

static int parse_shape(struct hdr *h, struct akk_npy *a)
{
	if (expect(h, '(', "'shape' must be a tuple"))
		return -1;
	a->rank = 0;
	for (;;) {
		size_t v = 0;

		skip_ws(h);
		if (h->pos < h->len && h->t[h->pos] == ')') {
			h->pos++;
			return 0;
		}
		if (h->pos >= h->len)
			return hfail(h, "unterminated dict");
		if (!isdigit((unsigned char)h->t[h->pos]))
			return hfail(h, "'shape' must hold non-negative integers");
		while (h->pos < h->len && isdigit((unsigned char)h->t[h->pos])) {
			if (!akk_mul_ok(v, 10, &v) ||
			    v > SIZE_MAX - (size_t)(h->t[h->pos] - '0'))
				return hfail(h, "'shape' dimension too large");
			v += (size_t)(h->t[h->pos++] - '0');
		}
		if (h->len - h->pos >= 1 && h->t[h->pos] == 'L')
			h->pos++;	/* Python 2 long */
		if (a->rank == AKK_NPY_MAX_RANK)
			return hfail(h, "'shape' has more than 8 dimensions");
		a->dims[a->rank++] = v;
		skip_ws(h);
		if (h->pos < h->len && h->t[h->pos] == ',')
			h->pos++;
		else if (h->pos < h->len && h->t[h->pos] != ')')
			return hfail(h, "expected ',' or ')' in 'shape'");
	}
}

/* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static int parse_header(struct hdr *h, struct akk_npy *a)
{
	int seen[3] = { 0, 0, 0 }, fortran = 0;
	char key[32], descr[32];

	if (expect(h, '{', "expected '{' (the header is a dict)"))
		return -1;
	for (;;) {
		size_t at;

		skip_ws(h);
		if (h->pos >= h->len)
			return hfail(h, "unterminated dict");
		if (h->t[h->pos] == '}') {
			h->pos++;
			break;
		}
		at = h->pos;
		if (str(h, key, sizeof(key)) || expect(h, ':', "expected ':'"))
			return -1;
		skip_ws(h);
		int k = !strcmp(key, "descr") ? 0 :
			!strcmp(key, "fortran_order") ? 1 :
			!strcmp(key, "shape") ? 2 : -1;
		if (k < 0) {
			h->pos = at;
			return hfail(h, "unknown key (expected 'descr', 'fortran_order', 'shape')");
		}
		if (seen[k]) {
			h->pos = at;
			return hfail(h, "duplicate key");
		}
		seen[k] = 1;
		if (k == 0) {
			if (str(h, descr, sizeof(descr)))
				return -1;
		} else if (k == 1) {
			if (word(h, "True"))
				fortran = 1;
			else if (!word(h, "False"))
				return hfail(h, "'fortran_order' must be True or False");
		} else if (parse_shape(h, a)) {
			return -1;
		}
		skip_ws(h);
		if (h->pos >= h->len)
			return hfail(h, "unterminated dict");
		if (h->t[h->pos] == ',')
			h->pos++;
		else if (h->t[h->pos] != '}')
			return hfail(h, "expected ',' or '}'");
	}
	skip_ws(h);
	if (h->pos < h->len)
		return hfail(h, "text after the dict");
	for (int k = 0; k < 3; k++)
		if (!seen[k]) {
			static const char *const names[] = { "descr",
				"fortran_order", "shape" };
			return akk_err_at(h->e, h->path, 0, 0,
					  "bad header: the dict has no '%s'",
					  names[k]);
		}
	if (fortran)
		return akk_err_at(h->e, h->path, 0, 0,
				  "'fortran_order' is True: only C-order arrays are read (save with np.ascontiguousarray)");
	if (a->rank == 0)
		return akk_err_at(h->e, h->path, 0, 0,
				  "'shape' is () (a scalar): expected at least one dimension");
	return parse_descr(h, a, descr);
}

/* The data: declared bytes into a->data (grown as it arrives when the
 * size of the file is not known, fsize < 0), and nothing after them. dims:
 * the shape, for messages. */
static int read_data(struct akk_npy *a, int fd, const char *path, off_t fsize,
		     size_t declared, const char *dims, struct akk_err *e)
{
	size_t got, have = 0, cap;

	cap = fsize >= 0 ? declared : (declared < 65536 ? declared : 65536);
	if (!(a->data = malloc(cap))) {
		akk_err_at(e, path, 0, 0, "out of memory for %zu bytes", cap);
		return -1;
	}
	for (;;) {
		if (read_some(fd, path, a->data + have, cap - have, &got, e))
			return -1;
		have += got;
		if (have < cap) {
			akk_err_at(e, path, 0, 0,
				   "truncated: 'shape' (%s) and 'descr' declare %zu bytes of data, file has %zu",
				   dims, declared, have);
			return -1;
		}
		if (have == declared)
			break;
		size_t ncap = cap > declared / 2 ? declared : cap * 2;
		uint8_t *n = realloc(a->data, ncap);
		if (!n) {
			akk_err_at(e, path, 0, 0, "out of memory for %zu bytes", ncap);
			return -1;
		}
		a->data = n;
		cap = ncap;
	}
	{
		uint8_t extra;
		if (read_some(fd, path, &extra, 1, &got, e))
			return -1;
		if (got) {
			akk_err_at(e, path, 0, 0,
				   "trailing garbage: 'shape' (%s) and 'descr' declare %zu bytes of data, file has more",
				   dims, declared);
			return -1;
		}
	}
	return 0;
}

static int load(struct akk_npy *a, int fd, const char *path, off_t fsize,
		struct akk_err *e)
{
	uint8_t pre[12];
	size_t got, pre_len, hlen, declared;
	char *text = NULL;
	char dims[160];
	int rc = -1;

	if (read_some(fd, path, pre, 10, &got, e))
		return -1;
	if (got == 0)
		return akk_err_at(e, path, 0, 0, "empty file: expected a .npy header");
	if (got < 8 || memcmp(pre, magic, 6))
		return akk_err_at(e, path, 0, 0,
				  "bad magic: not a .npy file (it must start with \\x93NUMPY)");
	if (pre[6] < 1 || pre[6] > 3)
		return akk_err_at(e, path, 0, 0,
				  "unsupported .npy version %d.%d: expected 1.0, 2.0 or 3.0",
				  pre[6], pre[7]);
	pre_len = pre[6] == 1 ? 10 : 12;
	if (got == 10 && pre_len == 12) {
		if (read_some(fd, path, pre + 10, 2, &got, e))
			return -1;
		got += 10;
	}
	if (got < pre_len)
		return akk_err_at(e, path, 0, 0,
				  "truncated: %zu bytes, too short for a .npy header", got);
	hlen = pre_len == 10 ? (size_t)pre[8] | (size_t)pre[9] << 8 :
	       (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
	       (size_t)pre[11] << 24;
	if (hlen > AKK_NPY_MAX_HEADER)
		return akk_err_at(e, path, 0, 0,
				  "header length %zu at byte 8 is more than %d",
				  hlen, AKK_NPY_MAX_HEADER);
	if (!(text = malloc(hlen + 1)))
		return akk_err_at(e, path, 0, 0, "out of memory");
	if (read_some(fd, path, (uint8_t *)text, hlen, &got, e))
		goto out;
	if (got < hlen) {
		akk_err_at(e, path, 0, 0,
			   "truncated: header length at byte 8 says %zu bytes, file has %zu",
			   hlen, got);
		goto out;
	}
	text[hlen] = '\0';
	{
		struct hdr h = { path, text, hlen, 0, pre_len, e };
		if (parse_header(&h, a))
			goto out;
	}
	declared = (size_t)a->size;
	dims[0] = '\0';
	for (int i = 0; i < a->rank; i++) {
		size_t u = strlen(dims);
		snprintf(dims + u, sizeof(dims) - u, "%s%zu", i ? " x " : "",
			 a->dims[i]);
		if (!akk_mul_ok(declared, a->dims[i], &declared)) {
			akk_err_at(e, path, 0, 0,
				   "size overflow: 'shape' %s does not fit in memory",
				   dims);
			goto out;
		}
	}
	if (declared == 0) {
		akk_err_at(e, path, 0, 0, "'shape' (%s) has a zero dimension", dims);
		goto out;
	}
	if (fsize >= 0) {
		size_t has = (size_t)fsize - pre_len - hlen;
		if (has != declared) {
			akk_err_at(e, path, 0, 0,
				   "%s: 'shape' (%s) and 'descr' declare %zu bytes of data, file has %zu",
				   has < declared ? "truncated" : "trailing garbage",
				   dims, declared, has);
			goto out;
		}
	}
	if (declared > AKK_IDX_MAX_BYTES) {
		akk_err_at(e, path, 0, 0,
			   "too large: 'shape' (%s) declares %zu bytes of data, more than %zu",
			   dims, declared, (size_t)AKK_IDX_MAX_BYTES);
		goto out;
	}
	if (read_data(a, fd, path, fsize, declared, dims, e))
		goto out;
	a->count = a->dims[0];
	a->item = declared / a->size / a->count;
	rc = 0;
out:
	free(text);
	return rc;
}

int akk_npy_load(struct akk_npy *a, const char *path, struct akk_err *e)
{
	struct stat st;
	off_t fsize = -1;
	int fd, rc;

	memset(a, 0, sizeof(*a));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
		akk_err_at(e, path, 0, 0, "cannot open: %s",
			   strerror(S_ISDIR(st.st_mode) ? EISDIR : errno));
		close(fd);
		return -1;
	}
	if (S_ISREG(st.st_mode))
		fsize = st.st_size;
	rc = load(a, fd, path, fsize, e);
	close(fd);
	if (rc < 0)
		akk_npy_release(a);
	return rc;
}

void akk_npy_release(struct akk_npy *a)
{
	free(a->data);
	memset(a, 0, sizeof(*a));
}

double akk_npy_get(const struct akk_npy *a, size_t i)
{
	const uint8_t *p = a->data + i * (size_t)a->size;
	uint8_t b[8];
	uint64_t u = 0;

	for (int k = 0; k < a->size; k++)
		b[k] = a->big ? p[a->size - 1 - k] : p[k];
	for (int k = a->size - 1; k >= 0; k--)
		u = u << 8 | b[k];
	if (a->kind == 'f') {
		if (a->size == 4) {
			uint32_t v = (uint32_t)u;
			float f;
			memcpy(&f, &v, 4);
			return f;
		}
		double g;
		memcpy(&g, &u, 8);
		return g;
	}
	if (a->kind == 'i' && a->size < 8 && (u >> (8 * a->size - 1)) & 1)
		u |= ~(uint64_t)0 << (8 * a->size);	/* sign-extend */
	return a->kind == 'i' ? (double)(int64_t)u : (double)u;
}

static void shape_text(char *buf, size_t size, const struct akk_npy *a)
{
	buf[0] = '\0';
	for (int i = 0; i < a->rank; i++) {
		size_t u = strlen(buf);
		snprintf(buf + u, size - u, "%s%zu", i ? " x " : "", a->dims[i]);
	}
}

/* Features into d: bytes or floats, channels first. */
static int features_into(struct akk_dataset *d, struct akk_npy *f,
			 const char *path, int nhwc, struct akk_err *e)
{
	char shape[160];
	size_t total = f->count * f->item;

	shape_text(shape, sizeof(shape), f);
	if (f->rank < 2 || f->rank > 4)
		return akk_err_at(e, path, 0, 0,
				  "features of shape %s: expected 2 to 4 dimensions (N x features, N x H x W, N x C x H x W or N x H x W x C)",
				  shape);
	for (int i = 1; i < f->rank; i++)
		if (f->dims[i] > INT_MAX)
			return akk_err_at(e, path, 0, 0,
					  "features of shape %s: dimension %d is too large",
					  shape, i + 1);
	d->n = f->count;
	d->in = f->item;
	d->c = f->rank == 4 ? (int)f->dims[nhwc ? 3 : 1] : 1;
	d->h = f->rank == 2 ? 1 : (int)f->dims[f->rank == 4 && !nhwc ? 2 : 1];
	d->w = f->rank == 2 ? (int)f->dims[1] :
	       (int)f->dims[f->rank == 4 && !nhwc ? 3 : 2];
	if (f->kind == 'u' && f->size == 1) {
		d->xtype = AKK_X_U8;
		d->x8 = f->data;
		f->data = NULL;
	} else {
		d->xtype = AKK_X_F32;
		if (!(d->xf = malloc(total * sizeof(float))))
			return akk_err_at(e, path, 0, 0,
					  "out of memory for %zu floats", total);
		for (size_t i = 0; i < total; i++) {
			double v = akk_npy_get(f, i);
			if (!isfinite(v) || fabs(v) > 3.0e38)
				return akk_err_at(e, path, 0, 0,
						  "value %zu (sample %zu) is %g: not a finite float32",
						  i % f->item + 1, i / f->item + 1, v);
			d->xf[i] = (float)v;
		}
	}
	if (f->rank == 4 && nhwc && d->c > 1) {
		/* (H, W, C) -> (C, H, W), one sample at a time through a
		 * scratch row. */
		size_t hw = (size_t)d->h * d->w, C = (size_t)d->c;
		size_t bytes = d->xtype == AKK_X_U8 ? 1 : sizeof(float);
		uint8_t *tmp = malloc(d->in * bytes);
		if (!tmp)
			return akk_err_at(e, path, 0, 0, "out of memory");
		for (size_t s = 0; s < d->n; s++) {
			uint8_t *row = (d->xtype == AKK_X_U8 ? d->x8 :
					(uint8_t *)d->xf) + s * d->in * bytes;
			memcpy(tmp, row, d->in * bytes);
			for (size_t p = 0; p < hw; p++)
				for (size_t ch = 0; ch < C; ch++)
					memcpy(row + (ch * hw + p) * bytes,
					       tmp + (p * C + ch) * bytes, bytes);
		}
		free(tmp);
	}
	return 0;
}

/* Labels into d: integer classes or float regression targets. */
static int labels_into(struct akk_dataset *d, const struct akk_npy *l,
		       const char *path, struct akk_err *e)
{
	char shape[160];

	shape_text(shape, sizeof(shape), l);
	if (l->kind != 'f') {
		int max = 0;
		if (l->rank != 1)
			return akk_err_at(e, path, 0, 0,
					  "class labels of shape %s: expected one dimension (N)",
					  shape);
		if (!(d->labels = malloc(l->count * sizeof(*d->labels))))
			return akk_err_at(e, path, 0, 0, "out of memory");
		for (size_t i = 0; i < l->count; i++) {
			double v = akk_npy_get(l, i);
			if (v < 0 || v > AKK_NPY_MAX_CLASS)
				return akk_err_at(e, path, 0, 0,
						  "label %zu is %.0f: class labels must be 0 to %d",
						  i + 1, v, AKK_NPY_MAX_CLASS);
			d->labels[i] = (int32_t)v;
			if ((int)v > max)
				max = (int)v;
		}
		d->classes = max + 1;
		return 0;
	}
	if (l->rank > 2 || l->item > INT_MAX)
		return akk_err_at(e, path, 0, 0,
				  "regression targets of shape %s: expected N or N x targets",
				  shape);
	d->targets = (int)l->item;
	if (!(d->y = malloc(l->count * l->item * sizeof(float))))
		return akk_err_at(e, path, 0, 0, "out of memory");
	for (size_t i = 0; i < l->count * l->item; i++) {
		double v = akk_npy_get(l, i);
		if (!isfinite(v) || fabs(v) > 3.0e38)
			return akk_err_at(e, path, 0, 0,
					  "target %zu is %g: not a finite float32",
					  i + 1, v);
		d->y[i] = (float)v;
	}
	return 0;
}

int akk_npy_dataset(struct akk_dataset *d, const char *features,
		    const char *labels, int nhwc, struct akk_err *e)
{
	struct akk_npy f, l;
	int rc = -1;

	memset(d, 0, sizeof(*d));
	memset(&l, 0, sizeof(l));
	if (akk_npy_load(&f, features, e))
		return -1;
	if (labels && akk_npy_load(&l, labels, e))
		goto out;
	if (labels && f.count != l.count) {
		akk_err_set(e, "'%s' has %zu samples but '%s' has %zu labels",
			    features, f.count, labels, l.count);
		goto out;
	}
	if (features_into(d, &f, features, nhwc, e) ||
	    (labels && labels_into(d, &l, labels, e)))
		goto out;
	rc = 0;
out:
	akk_npy_release(&f);
	akk_npy_release(&l);
	if (rc)
		akk_dataset_release(d);
	return rc;
}
