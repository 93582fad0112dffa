/* checkpoint.c - writing and reading checkpoint files.
 *
 * The file is built in memory, then written whole: header, config, position,
 * metrics, gates, CRC-32. Every field goes through put_* / get_*, which fix
 * the byte order; the reader's get_* never read past the end and latch an
 * error instead, so a damaged file can only produce a message. A file that
 * parses is then validated as a whole (validate): every field's range, the
 * fields against each other, and every tensor against the network its
 * stored config plans, before any caller builds anything from it. */
#include "io/checkpoint.h"
#include "base/file.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/batch.h"
#include "model/model.h"
#include "config/spec.h"

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int oom;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		unsigned char *p;
		while (cap < w->len + n)
			cap *= 2;
		if (!(p = realloc(w->p, cap))) {
			w->oom = 1;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4] = { v, v >> 8, v >> 16, v >> 24 };
	put(w, b, 4);
}

static void put_u64(struct wbuf *w, uint64_t v)
{
	put_u32(w, (uint32_t)v);
	put_u32(w, (uint32_t)(v >> 32));
}

static void put_f64(struct wbuf *w, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	put_u64(w, v);
}

static void put_str(struct wbuf *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	put_u32(w, (uint32_t)n);
	put(w, s, n);
}

static uint32_t f32_bits(float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	return v;
}

static void put_tensor(struct wbuf *w, const char *name, int rank,
		       const int *dims, const float *data, size_t count)
{
	put_str(w, name);
	put_u32(w, rank);
	for (int i = 0; i < rank; i++)
		put_u32(w, dims[i]);
	put_u64(w, count);
	for (size_t i = 0; i < count; i++) {
		uint32_t v;
		memcpy(&v, &data[i], 4);
		put_u32(w, v);
	}
}

/* A layer's view in a gate: its checkpoint name ("g1.l1.dense.weight"),
 * its number of values and where they are. */
static float *view_at(const struct akk_gate *g, int li,
		      const struct akk_view *vw, char *name, int size,
		      size_t *count)
{
	const struct akk_layer *l = &g->plan->layers[li];

	*count = 1;
	for (int d = 0; d < vw->rank; d++)
		*count *= vw->dims[d];
	snprintf(name, size, "g%d.l%d.%s.%s", g->plan->index + 1, li + 1,
		 l->ops->name, vw->name);
	return (vw->state ? g->state + l->soff : g->params + l->poff) + vw->off;
}

static void put_gate(struct wbuf *w, const struct akk_gate *g)
{
	const struct akk_gate_plan *p = g->plan;
	size_t nopt = p->nparams * akk_optim_state_per_param(p->optim->kind);
	int ntensors = nopt ? 1 : 0;
	char name[128];

	for (int i = 0; i < p->nlayers; i++)
		ntensors += p->layers[i].nviews;
	put_u64(w, g->step);
	for (int i = 0; i < 4; i++)
		put_u64(w, g->rng.s[i]);
	put_u32(w, ntensors);
	for (int i = 0; i < p->nlayers; i++) {
		const struct akk_layer *l = &p->layers[i];
		for (int v = 0; v < l->nviews; v++) {
			const struct akk_view *vw = &l->views[v];
			size_t count;
			const float *data = view_at(g, i, vw, name, sizeof(name), &count);
			put_tensor(w, name, vw->rank, vw->dims, data, count);
		}
	}
	if (nopt) {
		int dims[1] = { (int)nopt };
		snprintf(name, sizeof(name), "g%d.optimizer.%s", p->index + 1,
			 akk_optim_name(p->optim->kind));
		put_tensor(w, name, 1, dims, g->opt, nopt);
	}
}

/* ---- the watch block: early stopping and the lr plateau ---------------
 * Optional, after the last gate: "WTCH", then early stopping's best (f64),
 * best epoch, wait and stopped epoch (u32 each), the plateau's best (f64),
 * best epoch, wait, cooldown and reductions (u32 each). Written only by
 * runs that watch (akk_spec_watches); a file without it reads as zeros. */
#define WATCH_TAG "WTCH"
#define WATCH_BYTES (4 + 8 + 3 * 4 + 8 + 4 * 4)

static void put_watch(struct wbuf *w, const struct akk_watch *x)
{
	put(w, WATCH_TAG, 4);
	put_f64(w, x->stop.best);
	put_u32(w, x->stop.best_epoch);
	put_u32(w, x->stop.wait);
	put_u32(w, x->stopped_epoch);
	put_f64(w, x->plateau.best);
	put_u32(w, x->plateau.best_epoch);
	put_u32(w, x->plateau.wait);
	put_u32(w, x->cooldown);
	put_u32(w, x->reductions);
}

/* The data section (version 2): task, targets, class names, the input
 * map's two vectors and the held-out indices. */
static void put_data(struct wbuf *w, const struct akk_ckpt_source *src)
{
	size_t in = src->pre ? src->pre->in : 0;
	int reg = src->spec->data.task == AKK_TASK_REGRESSION;
	const struct akk_gate_plan *last = src->gates[src->ngates - 1]->plan;

	put_u32(w, (uint32_t)src->spec->data.task);
	put_u32(w, reg ? (uint32_t)akk_shape_size(last->out) : 0);	/* targets */
	put_u32(w, (uint32_t)src->nclass_names);
	for (int i = 0; i < src->nclass_names; i++)
		put_str(w, src->class_names[i]);
	put_u64(w, in);
	for (size_t k = 0; k < in; k++)
		put_u32(w, f32_bits(src->pre->a[k]));
	for (size_t k = 0; k < in; k++)
		put_u32(w, f32_bits(src->pre->b[k]));
	put_u64(w, src->nheldout);
	for (size_t i = 0; i < src->nheldout; i++)
		put_u32(w, src->heldout[i]);
	put_f64(w, src->metrics.best_val_loss);
	put_f64(w, src->pos.reg.sse);
	put_f64(w, src->pos.reg.sy);
	put_f64(w, src->pos.reg.syy);
	put_u64(w, (uint64_t)src->pos.reg.n);
}

int akk_checkpoint_write(const char *path, const struct akk_ckpt_source *src,
			 struct akk_err *e)
{
	const struct akk_spec *s = src->spec;
	struct wbuf w = { 0 };
	int rc = -1;
	uint32_t crc;

	if (src->ngates < 1 || src->ngates > AKK_MAX_GATES) {
		akk_err_set(e, "cannot checkpoint %d gates to '%s' (1 to %d)",
			    src->ngates, path, AKK_MAX_GATES);
		goto out;
	}

	put(&w, AKK_CKPT_MAGIC, 8);
	put_u32(&w, AKK_CKPT_VERSION);
	put_u32(&w, 0);
	put_u64(&w, 0);				/* file length, patched below */
	put_str(&w, s->path);
	put_str(&w, src->base_dir);
	put_str(&w, s->text);
	put_u32(&w, s->nsets);
	for (int i = 0; i < s->nsets; i++)
		put_str(&w, s->sets[i]);
	put_u32(&w, src->mode);
	put_u32(&w, src->pos.epoch);
	put_u64(&w, src->pos.index);
	put_u64(&w, src->pos.id);
	put_f64(&w, src->pos.loss_sum);
	put_u64(&w, src->pos.correct);
	put_u64(&w, src->pos.samples);
	put_f64(&w, src->pos.seconds);
	put_u32(&w, src->metrics.epoch);
	put_f64(&w, src->metrics.train_loss);
	put_f64(&w, src->metrics.train_acc);
	put_f64(&w, src->metrics.val_loss);
	put_f64(&w, src->metrics.val_acc);
	put_f64(&w, src->metrics.best_val_acc);
	put_u32(&w, src->ngates);
	for (int i = 0; i < src->ngates; i++)
		put_gate(&w, src->gates[i]);
	put_data(&w, src);
	if (src->watch)
		put_watch(&w, src->watch);
	if (!w.oom) {
		uint64_t total = w.len + 4;
		for (int i = 0; i < 8; i++)
			w.p[16 + i] = (unsigned char)(total >> (8 * i));
	}
	crc = (uint32_t)crc32(0L, w.p, (uInt)w.len);
	put_u32(&w, crc);
	if (w.oom) {
		akk_err_set(e, "out of memory writing checkpoint '%s'", path);
		goto out;
	}
	if (akk_file_replace(path, w.p, w.len, e))
		goto out;
	rc = 0;
out:
	free(w.p);
	return rc;
}

struct rbuf {
	const unsigned char *p;
	size_t len, off;
	const char *bad;	/* what was wrong: a field, or why[] */
	char why[240];
};

/* Latch the first problem, with a formatted description. */
static void bad(struct rbuf *r, const char *fmt, ...)
{
	va_list ap;

	if (r->bad)
		return;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	r->bad = r->why;
}

static size_t left(const struct rbuf *r)
{
	return r->len - r->off;
}

static const unsigned char *take(struct rbuf *r, size_t n, const char *what)
{
	const unsigned char *p;

	if (r->bad)
		return NULL;
	if (n > r->len - r->off) {
		r->bad = what;
		return NULL;
	}
	p = r->p + r->off;
	r->off += n;
	return p;
}

static uint32_t get_u32(struct rbuf *r, const char *what)
{
	const unsigned char *b = take(r, 4, what);
	return b ? b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}

static uint64_t get_u64(struct rbuf *r, const char *what)
{
	uint64_t lo = get_u32(r, what);
	return lo | (uint64_t)get_u32(r, what) << 32;
}

static double get_f64(struct rbuf *r, const char *what)
{
	uint64_t v = get_u64(r, what);
	double d;
	memcpy(&d, &v, 8);
	return d;
}

static char *get_str(struct rbuf *r, const char *what)
{
	uint32_t n = get_u32(r, what);
	const unsigned char *p = take(r, n, what);
	char *s;

	if (!p)
		return NULL;
	if (memchr(p, '\0', n)) {
		r->bad = what;
		return NULL;
	}
	if (!(s = malloc(n + 1))) {
		r->bad = "memory";
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* The smallest tensor on disk: name length, rank, one dim, count, one
 * value. */
#define MIN_TENSOR_BYTES (4 + 4 + 4 + 8 + 4)
/* The smallest gate: step, RNG, tensor count. */
#define MIN_GATE_BYTES (8 + 32 + 4)

/* The data section (version 2); its values are checked in check_data. */
static void get_data(struct rbuf *r, struct akk_checkpoint *c)
{
	uint64_t in, nh;

	c->task = (int)get_u32(r, "the data section's task");
	c->targets = (int)get_u32(r, "the data section's targets");
	c->nclass_names = (int)get_u32(r, "the data section's class names");
	if (!r->bad && (c->nclass_names < 0 || c->nclass_names > AKK_CKPT_MAX_CLASSES ||
			(size_t)c->nclass_names > left(r) / 4))
		r->bad = "the data section's class name count";
	if (!r->bad && !(c->class_names = calloc(c->nclass_names + 1, sizeof(char *))))
		r->bad = "memory";
	for (int i = 0; !r->bad && i < c->nclass_names; i++)
		c->class_names[i] = get_str(r, "the data section's class names");
	in = get_u64(r, "the data section's input map");
	if (!r->bad && in > left(r) / 8)
		r->bad = "the data section's input map size";
	if (!r->bad && in) {
		float *v = malloc((size_t)in * 2 * sizeof(float));
		if (!v) {
			r->bad = "memory";
			return;
		}
		for (size_t k = 0; k < 2 * (size_t)in; k++) {
			uint32_t u = get_u32(r, "the data section's input map");
			memcpy(&v[k], &u, 4);
		}
		if (!r->bad && akk_preprocess_set(&c->pre, (size_t)in, v, v + in, NULL))
			r->bad = "memory";
		free(v);
	}
	nh = get_u64(r, "the data section's held-out indices");
	if (!r->bad && nh > left(r) / 4)
		r->bad = "the data section's held-out index count";
	if (!r->bad && nh && !(c->heldout = malloc((size_t)nh * sizeof(uint32_t))))
		r->bad = "memory";
	for (size_t i = 0; !r->bad && i < nh; i++)
		c->heldout[i] = get_u32(r, "the data section's held-out indices");
	if (!r->bad)
		c->nheldout = (size_t)nh;
	c->metrics.best_val_loss = get_f64(r, "the data section's metrics");
	c->pos.reg.sse = get_f64(r, "the data section's running sums");
	c->pos.reg.sy = get_f64(r, "the data section's running sums");
	c->pos.reg.syy = get_f64(r, "the data section's running sums");
	c->pos.reg.n = (long)get_u64(r, "the data section's running sums");
}

static int get_tensor(struct rbuf *r, struct akk_ckpt_tensor *t)
{
	uint64_t product = 1;
	const unsigned char *b;

	if (!(t->name = get_str(r, "a tensor name")))
		return -1;
	t->rank = (int)get_u32(r, "a tensor rank");
	if (t->rank < 1 || t->rank > 4) {
		r->bad = r->bad ? r->bad : "a tensor rank";
		return -1;
	}
	for (int i = 0; i < t->rank; i++) {
		t->dims[i] = get_u32(r, "a tensor shape");
		if (!r->bad && (!t->dims[i] || product > (1ull << 34) / t->dims[i])) {
			r->bad = "a tensor shape";
			return -1;
		}
		product *= t->dims[i];
	}
	t->count = get_u64(r, "a tensor size");
	if (!r->bad && t->count != product)
		r->bad = "a tensor size";
	/* take() bounds the allocation by the bytes the file holds */
	if (r->bad || !(b = take(r, t->count * 4, "tensor data")))
		return -1;
	if (!(t->data = akk_alloc(t->count))) {
		r->bad = "memory";
		return -1;
	}
	for (uint64_t i = 0; i < t->count; i++) {
		uint32_t v = b[4 * i] | b[4 * i + 1] << 8 | b[4 * i + 2] << 16 |
			     (uint32_t)b[4 * i + 3] << 24;
		/* inf and NaN: every exponent bit set */
		if ((v & 0x7f800000u) == 0x7f800000u) {
			bad(r, "tensor '%s' holds a non-finite value (%s) at index %llu",
			    t->name, v & 0x007fffffu ? "NaN" : "Inf",
			    (unsigned long long)i);
			return -1;
		}
		memcpy(&t->data[i], &v, 4);
	}
	return 0;
}

/* Read all of f into *out, at most max bytes (more is reported as
 * *len = max + 1 would be: the caller compares with what it expects). The
 * buffer grows with what is actually read, so a short stream never costs
 * more than twice its size, whatever max says. */
static int read_rest(FILE *f, unsigned char *head, size_t nhead, uint64_t max,
		     unsigned char **out, size_t *len)
{
	unsigned char *p = NULL;
	size_t n = nhead, cap = 0;

	for (;;) {
		if (n >= cap) {
			unsigned char *q;
			size_t want = cap ? cap * 2 : 1 << 16;
			if (want > max + 1)
				want = (size_t)max + 1;
			if (want <= cap)
				break;
			if (!(q = realloc(p, want))) {
				free(p);
				return -1;
			}
			if (!p)
				memcpy(q, head, nhead);
			p = q;
			cap = want;
		}
		size_t k = fread(p + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	*out = p;
	*len = n;
	return 0;
}

static uint64_t le64(const unsigned char *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* Read path whole after checking its header: magic, version and the
 * declared length, which must equal the file's size before the rest is
 * read (a regular file) or bounds what is read (a pipe or device). */
static int read_file(const char *path, unsigned char **out, size_t *len,
		     uint32_t *versionp, struct akk_err *e)
{
	FILE *f = fopen(path, "rb");
	unsigned char head[24];
	size_t n;
	uint64_t total, size;
	struct stat st;
	uint32_t version;
	int regular, rc = -1;

	*out = NULL;
	if (!f)
		return akk_err_at(e, path, 0, 0, "cannot open: %s", strerror(errno));
	regular = !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
	n = fread(head, 1, sizeof(head), f);
	if (ferror(f)) {
		akk_err_at(e, path, 0, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (n < 8 || memcmp(head, AKK_CKPT_MAGIC, 7)) {
		akk_err_at(e, path, 0, 0, "not an akkctl checkpoint (bad magic)");
		goto out;
	}
	if (head[7] != (unsigned char)AKK_CKPT_MAGIC[7]) {
		int c = head[7] >= 32 && head[7] < 127 ? head[7] : '?';
		akk_err_at(e, path, 0, 0,
			   "unsupported checkpoint format version: magic 'AKKCKPT%c' (this akkctl reads '%s')",
			   c, AKK_CKPT_MAGIC);
		goto out;
	}
	size = regular ? (uint64_t)st.st_size : n;
	if (size < 28 && (regular || n < 24)) {
		akk_err_at(e, path, 0, 0, "truncated checkpoint: %zu bytes, too short for the header",
			   (size_t)size);
		goto out;
	}
	version = head[8] | head[9] << 8 | head[10] << 16 | (uint32_t)head[11] << 24;
	if (version < AKK_CKPT_VERSION_MIN || version > AKK_CKPT_VERSION) {
		akk_err_at(e, path, 0, 0,
			   "checkpoint format version %u is not supported (this akkctl reads versions %d to %d)",
			   version, AKK_CKPT_VERSION_MIN, AKK_CKPT_VERSION);
		goto out;
	}
	if (versionp)
		*versionp = version;
	if (head[12] | head[13] | head[14] | head[15]) {
		akk_err_at(e, path, 0, 0, "corrupt checkpoint: header.reserved is not 0");
		goto out;
	}
	total = le64(head + 16);
	if (regular && total != size) {
		akk_err_at(e, path, 0, 0,
			   "%s checkpoint: the header says %llu bytes, the file has %llu",
			   total > size ? "truncated" : "corrupt",
			   (unsigned long long)total, (unsigned long long)size);
		goto out;
	}
	if (total > SIZE_MAX / 2 || (!regular && total > AKK_CKPT_MAX_STREAM)) {
		akk_err_at(e, path, 0, 0,
			   "%s: the header says %llu bytes, more than %llu",
			   regular ? "corrupt checkpoint" : "checkpoint stream too long",
			   (unsigned long long)total,
			   (unsigned long long)AKK_CKPT_MAX_STREAM);
		goto out;
	}
	if (read_rest(f, head, n, total, out, len)) {
		akk_err_at(e, path, 0, 0, "out of memory");
		goto out;
	}
	if (ferror(f)) {
		akk_err_at(e, path, 0, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (*len < 28) {
		akk_err_at(e, path, 0, 0, "truncated checkpoint: %zu bytes, too short for the header", *len);
		goto out;
	}
	if (*len != total) {
		akk_err_at(e, path, 0, 0,
			   "%s checkpoint: the header says %llu bytes, the file has %s%zu",
			   total > *len ? "truncated" : "corrupt",
			   (unsigned long long)total, total > *len ? "" : "more than ",
			   *len > total ? (size_t)total : *len);
		goto out;
	}
	rc = 0;
out:
	fclose(f);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- validation as a whole ------------------------------------------ */

static int match_gate(const struct akk_ckpt_gate *cg, const struct akk_gate_plan *p,
		      struct akk_gate *gate, const char *path, struct akk_err *e);

#define BAD(...) akk_err_at(e, path, 0, 0, "corrupt checkpoint: " __VA_ARGS__)

static int finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

/* Every field against the format and against each other. */
static int check_fields(const struct akk_checkpoint *c, const char *path,
			struct akk_err *e)
{
	const struct akk_position *p = &c->pos;
	const struct akk_ckpt_metrics *m = &c->metrics;
	const double acc[3] = { m->train_acc, m->val_acc, m->best_val_acc };
	static const char *const acc_names[3] = { "metrics.train_acc",
		"metrics.val_acc", "metrics.best_val_acc" };

	if (!akk_mode_name(c->mode)) {
		char modes[160] = "";
		size_t len = 0;

		for (int i = 0; akk_mode_name((enum akk_mode)i) && len < sizeof(modes); i++)
			len += (size_t)snprintf(modes + len, sizeof(modes) - len, "%s%d %s",
						!i ? "" : akk_mode_name((enum akk_mode)(i + 1)) ?
						", " : " or ", i, akk_mode_name((enum akk_mode)i));
		return BAD("mode is %d (%s)", c->mode, modes);
	}
	if (p->id < 0 || p->id > AKK_CKPT_MAX_STEPS)
		return BAD("position.id is %ld (0 to %ld)", p->id, AKK_CKPT_MAX_STEPS);
	if (p->epoch < 0 || p->epoch > p->id)
		return BAD("position.epoch is %d with position.id %ld (every epoch trains at least one batch)",
			   p->epoch, p->id);
	if (p->index < 0)	/* its bound, with the config: validate() */
		return BAD("position.index is %ld with position.epoch %d and position.id %ld",
			   p->index, p->epoch, p->id);
	if (!finite_nonneg(p->loss_sum))
		return BAD("position.loss_sum is %g (finite, at least 0)", p->loss_sum);
	/* correct counts steps: at most samples x the network's steps
	 * (validate, with the network) */
	if (p->samples < 0 || p->correct < 0)
		return BAD("position.correct is %ld of position.samples %ld",
			   p->correct, p->samples);
	if (!finite_nonneg(p->seconds) || p->seconds > 1e9)
		return BAD("position.seconds is %g (0 to 1e9)", p->seconds);
	if (!p->index && (p->loss_sum || p->samples))
		return BAD("position.index is 0 (an epoch boundary) but the epoch's running sums are not");
	if (!p->samples && p->loss_sum)
		return BAD("position.loss_sum is %g over 0 samples", p->loss_sum);
	if (m->epoch < 0 || m->epoch > p->epoch)
		return BAD("metrics.epoch is %d with position.epoch %d", m->epoch, p->epoch);
	if (!finite_nonneg(m->train_loss))
		return BAD("metrics.train_loss is %g (finite, at least 0)", m->train_loss);
	if (!finite_nonneg(m->val_loss))
		return BAD("metrics.val_loss is %g (finite, at least 0)", m->val_loss);
	/* with task regression they hold R^2: at most 1, finite */
	for (int i = 0; i < 3; i++)
		if (c->task == AKK_TASK_REGRESSION ? !(isfinite(acc[i]) && acc[i] <= 1)
						   : !(acc[i] >= 0 && acc[i] <= 1))
			return BAD("%s is %g (%s)", acc_names[i], acc[i],
				   c->task == AKK_TASK_REGRESSION ? "R^2: finite, at most 1"
								  : "0 to 1");
	for (int g = 0; g < c->ngates; g++)
		if (c->gates[g].step != p->id)
			return BAD("gate %d's step is %ld, but position.id is %ld (every gate steps once per training batch)",
				   g + 1, c->gates[g].step, p->id);
	return 0;
}

/* Values a tensor's meaning bounds: variances and second moments are
 * never negative (their square roots are taken). */
static int check_values(const struct akk_checkpoint *c, const struct akk_model *m,
			const char *path, struct akk_err *e)
{
	for (int g = 0; g < c->ngates; g++) {
		const struct akk_ckpt_gate *cg = &c->gates[g];
		int kind = m->gates[g].optim->kind;
		for (int t = 0; t < cg->ntensors; t++) {
			const struct akk_ckpt_tensor *x = &cg->tensors[t];
			size_t n = strlen(x->name), from = x->count;
			if (n > 12 && !strcmp(x->name + n - 12, ".running_var"))
				from = 0;
			else if (strstr(x->name, ".optimizer.") && kind == AKK_OPT_RMSPROP)
				from = 0;
			else if (strstr(x->name, ".optimizer.") &&
				 akk_optim_state_per_param(kind) == 2)
				from = x->count / 2;
			for (size_t i = from; i < x->count; i++)
				if (x->data[i] < 0)
					return BAD("tensor '%s' holds %g at index %zu (a variance, at least 0)",
						   x->name, x->data[i], i);
		}
	}
	return 0;
}

/* The data section against the format and the network: a known task,
 * at most one name per class, each non-empty and different, an input map
 * of network.input's size with finite values, held-out indices
 * increasing. */
static int check_data(const struct akk_checkpoint *c, const struct akk_model *m,
		      const char *path, struct akk_err *e)
{
	long in = akk_shape_size(m->spec->input);

	const struct akk_reg_sums *rs = &c->pos.reg;

	if (c->task != (int)m->spec->data.task)
		return BAD("data.task is %d, but its stored config's is %d (0 classification, 1 regression)",
			   c->task, (int)m->spec->data.task);
	if (c->task == AKK_TASK_CLASSIFICATION && c->targets != 0)
		return BAD("data.targets is %d with task classification (0)", c->targets);
	if (c->task == AKK_TASK_REGRESSION && c->targets != m->classes)
		return BAD("data.targets is %d, but the network outputs %d", c->targets,
			   m->classes);
	if (c->task == AKK_TASK_REGRESSION && c->nclass_names)
		return BAD("data.class_names has %d names with task regression (0)",
			   c->nclass_names);
	if (!(c->metrics.best_val_loss == -1 || finite_nonneg(c->metrics.best_val_loss)))
		return BAD("metrics.best_val_loss is %g (-1 for none, or finite and at least 0)",
			   c->metrics.best_val_loss);
	if (!finite_nonneg(rs->sse) || !isfinite(rs->sy) || !finite_nonneg(rs->syy) ||
	    rs->n < 0 || rs->n > c->pos.samples * (long)(c->targets ? c->targets : 1) ||
	    ((!c->pos.samples || c->task != AKK_TASK_REGRESSION) &&
	     (rs->n || rs->sse || rs->sy || rs->syy)))
		return BAD("position.reg is sse %g, sy %g, syy %g over %ld values after %ld samples",
			   rs->sse, rs->sy, rs->syy, rs->n, c->pos.samples);
	if (c->nclass_names > m->classes)
		return BAD("data.class_names has %d names, but the network outputs %d classes",
			   c->nclass_names, m->classes);
	for (int i = 0; i < c->nclass_names; i++) {
		if (!c->class_names[i][0])
			return BAD("data.class_names[%d] is empty", i);
		for (int j = 0; j < i; j++)
			if (!strcmp(c->class_names[i], c->class_names[j]))
				return BAD("data.class_names[%d] repeats '%s'", i,
					   c->class_names[i]);
	}
	if (c->pre.in && (long)c->pre.in != in)
		return BAD("data.input_map has %zu values, but network.input needs %ld",
			   c->pre.in, in);
	for (size_t k = 0; k < c->pre.in; k++)
		if (!isfinite(c->pre.a[k]) || !isfinite(c->pre.b[k]) || c->pre.a[k] == 0)
			return BAD("data.input_map of feature %zu is x * %g + %g (finite, a non-zero multiplier)",
				   k + 1, (double)c->pre.a[k], (double)c->pre.b[k]);
	for (size_t i = 1; i < c->nheldout; i++)
		if (c->heldout[i] <= c->heldout[i - 1])
			return BAD("data.heldout[%zu] is %u after %u (increasing)", i,
				   c->heldout[i], c->heldout[i - 1]);
	return 0;
}

/* The stored config must parse and plan, and the checkpoint must be
 * what that config describes: mode, epochs, batch size and every
 * tensor's name and shape. Nothing big is allocated: a plan is shapes. */
static int validate(struct akk_checkpoint *c, const char *path, struct akk_err *e)
{
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	int rc = -1;

	if (check_fields(c, path, e))
		return -1;
	if (akk_checkpoint_spec(c, &s, NULL, 0, e) || akk_model_plan(&m, &s, e)) {
		char msg[1000];
		akk_err_format(e, msg, sizeof(msg));
		akk_err_at(e, path, 0, 0, "the stored config no longer parses: %s", msg);
		goto out;
	}
	if (c->pos.epoch > s.sched.epochs ||
	    (c->pos.epoch == s.sched.epochs && c->pos.index)) {
		BAD("position.epoch %d, batch %ld is past the %d epochs of its stored config",
		    c->pos.epoch, c->pos.index, s.sched.epochs);
		goto out;
	}
	/* position.id counts optimizer steps: one per schedule.accumulate
	 * batches */
	if (c->pos.index > (c->pos.id - c->pos.epoch) * (long)s.sched.accumulate) {
		BAD("position.index is %ld with position.epoch %d and position.id %ld",
		    c->pos.index, c->pos.epoch, c->pos.id);
		goto out;
	}
	if (c->pos.samples > c->pos.index * s.sched.batch_size) {
		BAD("position.samples is %ld after %ld batches of at most %d",
		    c->pos.samples, c->pos.index, s.sched.batch_size);
		goto out;
	}
	/* a sequence output's accuracy counts its steps */
	if (c->pos.correct > c->pos.samples * (long)m.steps) {
		if (m.steps > 1)
			BAD("position.correct is %ld of position.samples %ld of %d steps each",
			    c->pos.correct, c->pos.samples, m.steps);
		else
			BAD("position.correct is %ld of position.samples %ld",
			    c->pos.correct, c->pos.samples);
		goto out;
	}
	if (akk_checkpoint_match(c, &m, path, e) || check_values(c, &m, path, e) ||
	    check_data(c, &m, path, e))
		goto out;
	c->batch_size = s.sched.batch_size;
	c->epochs = s.sched.epochs;
	rc = 0;
out:
	akk_model_release(&m);
	akk_spec_release(&s);
	return rc;
}

/* The watch block (see put_watch): counts fit an int, bests are finite. */
static void get_watch(struct rbuf *r, struct akk_checkpoint *c)
{
	struct akk_watch *x = &c->watch;
	uint32_t v[7];

	take(r, 4, "the watch block");
	x->stop.best = get_f64(r, "the watch block");
	v[0] = get_u32(r, "the watch block");
	v[1] = get_u32(r, "the watch block");
	v[2] = get_u32(r, "the watch block");
	x->plateau.best = get_f64(r, "the watch block");
	for (int i = 3; i < 7; i++)
		v[i] = get_u32(r, "the watch block");
	for (int i = 0; i < 7; i++)
		if (v[i] > (uint32_t)INT32_MAX)
			bad(r, "the watch block holds %u (0 to %d)", v[i], INT32_MAX);
	if (!isfinite(x->stop.best) || !isfinite(x->plateau.best))
		bad(r, "the watch block holds a non-finite best value");
	x->stop.best_epoch = (int)v[0];
	x->stop.wait = (int)v[1];
	x->stopped_epoch = (int)v[2];
	x->plateau.best_epoch = (int)v[3];
	x->plateau.wait = (int)v[4];
	x->cooldown = (int)v[5];
	x->reductions = (int)v[6];
	c->has_watch = !r->bad;
}

/* A base directory stored relative to the checkpoint's own directory (as
 * akkctl train writes it, so that a run moved with its config still finds
 * the data) becomes the path from the checkpoint's directory; an absolute
 * one (older files) is kept. */
static int resolve_base_dir(struct akk_checkpoint *c, const char *path,
			    struct akk_err *e)
{
	const char *slash = strrchr(path, '/');
	int dl = slash ? (int)(slash - path) : 1;
	size_t n;
	char *joined;

	if (!c->base_dir || c->base_dir[0] == '/' || !c->base_dir[0])
		return 0;
	n = (size_t)dl + strlen(c->base_dir) + 2;
	if (!(joined = malloc(n)))
		return akk_err_set(e, "out of memory");
	snprintf(joined, n, "%.*s/%s", dl, slash ? (slash == path ? "/" : path) : ".",
		 c->base_dir);
	free(c->base_dir);
	c->base_dir = joined;
	return 0;
}

int akk_checkpoint_read(struct akk_checkpoint *c, const char *path,
			struct akk_err *e)
{
	unsigned char *data = NULL;
	size_t len = 0;
	struct rbuf r;
	uint32_t crc, want;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (read_file(path, &data, &len, &c->version, e))
		goto out;
	crc = (uint32_t)crc32(0L, data, (uInt)(len - 4));
	want = data[len - 4] | data[len - 3] << 8 | data[len - 2] << 16 |
	       (uint32_t)data[len - 1] << 24;
	if (crc != want) {
		akk_err_at(e, path, 0, 0,
			   "corrupt checkpoint: CRC-32 mismatch (stored %08x, computed %08x)",
			   want, crc);
		goto out;
	}
	memset(&r, 0, sizeof(r));
	r.p = data;
	r.len = len - 4;
	r.off = 24;
	c->config_name = get_str(&r, "the config");
	c->base_dir = get_str(&r, "the config");
	c->config = get_str(&r, "the config");
	c->nsets = (int)get_u32(&r, "the config");
	/* every count is bounded by the bytes that could hold its items */
	if (!r.bad && (c->nsets < 0 || c->nsets > 4096 || (size_t)c->nsets > left(&r) / 4))
		r.bad = "the config overrides";
	if (!r.bad && !(c->sets = calloc(c->nsets + 1, sizeof(char *))))
		r.bad = "memory";
	for (int i = 0; !r.bad && i < c->nsets; i++)
		c->sets[i] = get_str(&r, "the config overrides");
	c->mode = (int)get_u32(&r, "the run state");
	c->pos.epoch = (int)get_u32(&r, "the run state");
	c->pos.index = (long)get_u64(&r, "the run state");
	c->pos.id = (long)get_u64(&r, "the run state");
	c->pos.loss_sum = get_f64(&r, "the run state");
	c->pos.correct = (long)get_u64(&r, "the run state");
	c->pos.samples = (long)get_u64(&r, "the run state");
	c->pos.seconds = get_f64(&r, "the run state");
	c->metrics.epoch = (int)get_u32(&r, "the metrics");
	c->metrics.train_loss = get_f64(&r, "the metrics");
	c->metrics.train_acc = get_f64(&r, "the metrics");
	c->metrics.val_loss = get_f64(&r, "the metrics");
	c->metrics.val_acc = get_f64(&r, "the metrics");
	c->metrics.best_val_acc = get_f64(&r, "the metrics");
	c->ngates = (int)get_u32(&r, "the gates");
	if (!r.bad && (c->ngates < 1 || c->ngates > AKK_MAX_GATES ||
		       (size_t)c->ngates > left(&r) / MIN_GATE_BYTES))
		r.bad = "the gate count";
	if (!r.bad && !(c->gates = calloc(c->ngates, sizeof(*c->gates))))
		r.bad = "memory";
	for (int g = 0; !r.bad && g < c->ngates; g++) {
		struct akk_ckpt_gate *cg = &c->gates[g];
		cg->step = (long)get_u64(&r, "a gate");
		for (int i = 0; i < 4; i++)
			cg->rng.s[i] = get_u64(&r, "a gate");
		cg->ntensors = (int)get_u32(&r, "a gate");
		if (!r.bad && (cg->ntensors < 0 || cg->ntensors > 4096 ||
			       (size_t)cg->ntensors > left(&r) / MIN_TENSOR_BYTES))
			r.bad = "a gate's tensor count";
		if (!r.bad && !(cg->tensors = calloc(cg->ntensors + 1, sizeof(*cg->tensors))))
			r.bad = "memory";
		for (int t = 0; !r.bad && t < cg->ntensors; t++)
			get_tensor(&r, &cg->tensors[t]);
	}
	if (c->version >= 2)
		get_data(&r, c);
	else
		c->metrics.best_val_loss = -1;	/* none recorded */
	if (!r.bad && r.len - r.off == WATCH_BYTES &&
	    !memcmp(r.p + r.off, WATCH_TAG, 4))
		get_watch(&r, c);
	if (!r.bad && r.off != r.len)
		r.bad = c->version >= 2 ? "the end (extra bytes after the data section)"
					: "the end (extra bytes after the last gate)";
	/* the bytes are parsed: free them before validating */
	free(data);
	data = NULL;
	if (r.bad) {
		if (r.bad == r.why)
			akk_err_at(e, path, 0, 0, "corrupt checkpoint: %s", r.why);
		else
			akk_err_at(e, path, 0, 0, "corrupt checkpoint: bad data in %s", r.bad);
		goto out;
	}
	if (validate(c, path, e) || resolve_base_dir(c, path, e))
		goto out;
	rc = 0;
out:
	free(data);
	if (rc)
		akk_checkpoint_release(c);
	return rc;
}

void akk_checkpoint_release(struct akk_checkpoint *c)
{
	free(c->config);
	free(c->config_name);
	free(c->base_dir);
	for (int i = 0; c->sets && i < c->nsets; i++)
		free(c->sets[i]);
	free(c->sets);
	for (int g = 0; c->gates && g < c->ngates; g++) {
		for (int t = 0; c->gates[g].tensors && t < c->gates[g].ntensors; t++) {
			free(c->gates[g].tensors[t].name);
			akk_free(c->gates[g].tensors[t].data);
		}
		free(c->gates[g].tensors);
	}
	free(c->gates);
	for (int i = 0; c->class_names && i < c->nclass_names; i++)
		free(c->class_names[i]);
	free(c->class_names);
	akk_preprocess_release(&c->pre);
	free(c->heldout);
	memset(c, 0, sizeof(*c));
}

int akk_checkpoint_spec(const struct akk_checkpoint *c, struct akk_spec *s,
			const char *const *extra, int nextra, struct akk_err *e)
{
	const char **sets = calloc(c->nsets + nextra + 1, sizeof(*sets));
	int rc;

	if (!sets)
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < c->nsets; i++)
		sets[i] = c->sets[i];
	for (int i = 0; i < nextra; i++)
		sets[c->nsets + i] = extra[i];
	rc = akk_spec_parse(s, c->config, strlen(c->config), c->config_name,
			    c->base_dir, sets, c->nsets + nextra, e);
	free(sets);
	return rc;
}

/* Find tensor `name` of a gate, check its shape, copy it to dst. */
static void format_dims(char *buf, int size, int rank, const uint32_t *dims)
{
	int n = 0;

	buf[0] = '\0';
	for (int i = 0; i < rank && n < size; i++)
		n += snprintf(buf + n, size - n, "%s%u", i ? "x" : "", dims[i]);
}

/* The next stored tensor of cg, which must be called name and have the
 * shape rank x dims (count floats). */
static const struct akk_ckpt_tensor *
match_tensor(const struct akk_ckpt_gate *cg, int *next, const char *name,
	     int rank, const int *dims, size_t count, const char *path,
	     struct akk_err *e)
{
	const struct akk_ckpt_tensor *t;
	uint32_t want[4];
	int same;

	if (*next >= cg->ntensors) {
		akk_err_at(e, path, 0, 0,
			   "checkpoint does not match the network: no tensor '%s'", name);
		return NULL;
	}
	t = &cg->tensors[(*next)++];
	if (strcmp(t->name, name)) {
		akk_err_at(e, path, 0, 0,
			   "checkpoint does not match the network: found '%s' where '%s' belongs",
			   t->name, name);
		return NULL;
	}
	for (int i = 0; i < rank; i++)
		want[i] = (uint32_t)dims[i];
	same = t->rank == rank && t->count == count;
	for (int i = 0; same && i < rank; i++)
		same = t->dims[i] == want[i];
	if (!same) {
		char have[64], need[64];
		format_dims(have, sizeof(have), t->rank, t->dims);
		format_dims(need, sizeof(need), rank, want);
		akk_err_at(e, path, 0, 0,
			   "checkpoint does not match the network: '%s' has shape %s, the network needs %s",
			   name, have, need);
		return NULL;
	}
	return t;
}

/* Walk gate g's stored tensors against its plan p in the order the writer
 * put them; with gate non-NULL, copy each into it. */
static int match_gate(const struct akk_ckpt_gate *cg, const struct akk_gate_plan *p,
		      struct akk_gate *gate, const char *path, struct akk_err *e)
{
	size_t nopt = p->nparams * akk_optim_state_per_param(p->optim->kind);
	const struct akk_ckpt_tensor *t;
	char name[128];
	int next = 0;

	for (int i = 0; i < p->nlayers; i++) {
		const struct akk_layer *l = &p->layers[i];
		for (int v = 0; v < l->nviews; v++) {
			const struct akk_view *vw = &l->views[v];
			size_t count = 1;
			for (int d = 0; d < vw->rank; d++)
				count *= vw->dims[d];
			snprintf(name, sizeof(name), "g%d.l%d.%s.%s", p->index + 1,
				 i + 1, l->ops->name, vw->name);
			if (!(t = match_tensor(cg, &next, name, vw->rank, vw->dims,
					       count, path, e)))
				return -1;
			if (gate) {
				size_t c2;
				float *dst = view_at(gate, i, vw, name, sizeof(name), &c2);
				memcpy(dst, t->data, count * sizeof(float));
			}
		}
	}
	if (nopt) {
		int dims[1] = { (int)nopt };
		snprintf(name, sizeof(name), "g%d.optimizer.%s", p->index + 1,
			 akk_optim_name(p->optim->kind));
		if (!(t = match_tensor(cg, &next, name, 1, dims, nopt, path, e)))
			return -1;
		if (gate)
			memcpy(gate->opt, t->data, nopt * sizeof(float));
	}
	if (next != cg->ntensors)
		return akk_err_at(e, path, 0, 0,
				  "checkpoint does not match the network: gate %d has %d tensors, the network %d",
				  p->index + 1, cg->ntensors, next);
	return 0;
}

int akk_checkpoint_match_wiring(const struct akk_checkpoint *c, const struct akk_model *m,
				const char *path, struct akk_err *e)
{
	struct akk_spec s;
	struct akk_model stored;
	char what[256];
	int rc;

	if (akk_checkpoint_spec(c, &s, NULL, 0, e))
		return -1;
	if (akk_model_plan(&stored, &s, e)) {
		akk_spec_release(&s);
		return -1;
	}
	rc = akk_model_same_wiring(&stored, m, what, sizeof(what));
	akk_model_release(&stored);
	akk_spec_release(&s);
	if (rc)
		return akk_err_at(e, path, 0, 0, "checkpoint does not match the network: "
				  "its layers are wired otherwise: %s", what);
	return 0;
}

int akk_checkpoint_match(const struct akk_checkpoint *c, const struct akk_model *m,
			 const char *path, struct akk_err *e)
{
	if (c->ngates != m->ngates)
		return akk_err_at(e, path, 0, 0,
				  "checkpoint does not match the network: it has %d gates, the network %d",
				  c->ngates, m->ngates);
	for (int g = 0; g < m->ngates; g++)
		if (match_gate(&c->gates[g], &m->gates[g], NULL, path, e))
			return -1;
	return 0;
}

int akk_checkpoint_restore(const struct akk_checkpoint *c,
			   struct akk_gate *const *gates, int ngates,
			   const char *path, struct akk_err *e)
{
	if (c->ngates != ngates)
		return akk_err_at(e, path, 0, 0,
				  "checkpoint does not match the network: it has %d gates, the network %d",
				  c->ngates, ngates);
	for (int g = 0; g < ngates; g++) {
		if (!gates[g])
			continue;
		if (match_gate(&c->gates[g], gates[g]->plan, gates[g], path, e))
			return -1;
		gates[g]->step = c->gates[g].step;
		gates[g]->rng = c->gates[g].rng;
	}
	return 0;
}

int akk_checkpoint_position(struct akk_checkpoint *c, int batch_size, int shards,
			    size_t n, const char *path, struct akk_err *e)
{
	struct akk_position *p = &c->pos;
	long span = (long)batch_size * (shards > 1 ? shards : 1);
	long old_span = (long)c->batch_size * (shards > 1 ? shards : 1);
	long per_epoch = akk_batches_per_epoch(n, (int)span);
	long old_per_epoch = akk_batches_per_epoch(n, (int)old_span);

	if (!p->index)
		return 0;
	if (p->index > old_per_epoch)
		return akk_err_at(e, path, 0, 0,
				  "cannot resume: position.index %ld is past the %ld batches of an epoch of %zu samples at the checkpoint's batch size %d",
				  p->index, old_per_epoch, n, c->batch_size);
	if (span == old_span)
		return 0;
	if (p->index == old_per_epoch) {
		/* the epoch's training is done, its validation is not */
		p->index = per_epoch;
		return 0;
	}
	/* Mid-epoch at another batch size: go on from the same sample when
	 * it starts a batch of the new size. */
	if ((p->index * old_span) % span)
		return akk_err_at(e, path, 0, 0,
				  "cannot resume mid-epoch with schedule.batch_size %d: the checkpoint stopped after %ld samples of epoch %d at batch size %d, not a multiple of %d; resume with schedule.batch_size %d, or from a checkpoint at an epoch boundary",
				  batch_size, p->index * old_span, p->epoch + 1, c->batch_size,
				  batch_size, c->batch_size);
	p->index = p->index * old_span / span;
	return 0;
}

int akk_checkpoint_input_map(const struct akk_checkpoint *c,
			     const struct akk_spec *s,
			     struct akk_preprocess *pre, struct akk_err *e)
{
	size_t in = (size_t)akk_shape_size(s->input);

	if (c->pre.in)
		return akk_preprocess_set(pre, c->pre.in, c->pre.a, c->pre.b, e);
	return akk_preprocess_init(pre, &s->data, in, akk_shape_channels(s->input), NULL, e);
}
