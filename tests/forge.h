/* forge.h - forged checkpoints for tests: every field of a checkpoint by
 * name, editable, with the CRC-32 recomputed after the edit.
 *
 * forge_load reads a checkpoint (any valid one: written by a tiny training
 * run or by akk_checkpoint_write) and walks the layout of
 * akkctl-checkpoint(5), recording each fixed-width field's name, offset and
 * type: "header.version", "config.nsets", "position.id", "metrics.val_acc",
 * "gate1.step", "gate1.rng2", "gate1.ntensors", "g1.l1.dense.weight.rank",
 * ".dim0", ".count", ".value0", ".valueN" (the last value), the string
 * lengths ("config.text.len"), ... forge_set_* change one field, and
 * forge_save writes the file with the CRC fixed, so the reader sees a
 * file whose only damage is the forged value. Header-only (static
 * functions): the Makefile links tests with testutil.o alone. */
#ifndef AKK_TEST_FORGE_H
#define AKK_TEST_FORGE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum forge_type { FORGE_U32, FORGE_U64, FORGE_F64, FORGE_F32 };

struct forge_field {
	char name[96];
	size_t off;
	enum forge_type type;
};

struct forge {
	unsigned char *p;
	size_t len;
	struct forge_field f[512];
	int n;
};

static inline uint64_t forge_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void forge_put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline int forge_width(enum forge_type t)
{
	return t == FORGE_U32 || t == FORGE_F32 ? 4 : 8;
}

/* Record a field at *off and step over it; -1 when it runs past the end. */
static inline int forge_add(struct forge *fg, size_t *off, enum forge_type t,
		     const char *fmt, const char *a)
{
	struct forge_field *f;

	if (fg->n == (int)(sizeof(fg->f) / sizeof(fg->f[0])) ||
	    *off + forge_width(t) > fg->len - 4)
		return -1;
	f = &fg->f[fg->n++];
	snprintf(f->name, sizeof(f->name), fmt, a);
	f->off = *off;
	f->type = t;
	*off += forge_width(t);
	return 0;
}

static inline uint64_t forge_at(const struct forge *fg, size_t off, int bytes)
{
	return forge_le(fg->p + off, bytes);
}

/* A string: its length field, then skip its bytes. */
static inline int forge_str(struct forge *fg, size_t *off, const char *name, char *val,
		     size_t valsz)
{
	uint64_t n;

	if (forge_add(fg, off, FORGE_U32, "%s.len", name))
		return -1;
	n = forge_at(fg, *off - 4, 4);
	if (n > fg->len - 4 - *off)
		return -1;
	if (val) {
		size_t k = n < valsz - 1 ? n : valsz - 1;
		memcpy(val, fg->p + *off, k);
		val[k] = '\0';
	}
	*off += n;
	return 0;
}

/* A run of count values of width 4 from *off: "NAME0" and, when there
 * are more, "NAMEN" (the last); steps over all of them. */
static inline int forge_run(struct forge *fg, size_t *off, enum forge_type t,
			    const char *name, uint64_t count)
{
	char field[96];

	if (!count)
		return 0;
	if (count > (fg->len - 4 - *off) / 4)
		return -1;
	snprintf(field, sizeof(field), "%s0", name);
	if (forge_add(fg, off, t, "%s", field))
		return -1;
	if (count > 1) {
		*off += 4 * (count - 2);
		snprintf(field, sizeof(field), "%sN", name);
		if (forge_add(fg, off, t, "%s", field))
			return -1;
	}
	return 0;
}

/* The data section of a version 2 file: data.task,
 * data.targets, data.nclass_names, data.class_nameI.len,
 * data.input_map.in, data.input_map.a0/aN/b0/bN, data.nheldout,
 * data.heldout0/heldoutN, data.best_val_loss, data.reg.sse/sy/syy/n. */
static inline int forge_data(struct forge *fg, size_t *off)
{
	char buf[64];
	uint64_t n;

	if (forge_add(fg, off, FORGE_U32, "%s", "data.task") ||
	    forge_add(fg, off, FORGE_U32, "%s", "data.targets") ||
	    forge_add(fg, off, FORGE_U32, "%s", "data.nclass_names"))
		return -1;
	n = forge_at(fg, *off - 4, 4);
	for (uint64_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "data.class_name%d", (int)i);
		if (i > 64 || forge_str(fg, off, buf, NULL, 0))
			return -1;
	}
	if (forge_add(fg, off, FORGE_U64, "%s", "data.input_map.in"))
		return -1;
	n = forge_at(fg, *off - 8, 8);
	if (forge_run(fg, off, FORGE_F32, "data.input_map.a", n) ||
	    forge_run(fg, off, FORGE_F32, "data.input_map.b", n) ||
	    forge_add(fg, off, FORGE_U64, "%s", "data.nheldout"))
		return -1;
	if (forge_run(fg, off, FORGE_U32, "data.heldout", forge_at(fg, *off - 8, 8)))
		return -1;
	return forge_add(fg, off, FORGE_F64, "%s", "data.best_val_loss") ||
	       forge_add(fg, off, FORGE_F64, "%s", "data.reg.sse") ||
	       forge_add(fg, off, FORGE_F64, "%s", "data.reg.sy") ||
	       forge_add(fg, off, FORGE_F64, "%s", "data.reg.syy") ||
	       forge_add(fg, off, FORGE_U64, "%s", "data.reg.n") ? -1 : 0;
}

/* Load path and index its fields; 0 on success. */
static inline int forge_load(struct forge *fg, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t off = 8;
	long n;
	char buf[32], name[96];

	memset(fg, 0, sizeof(*fg));
	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 28 || fseek(f, 0, SEEK_SET) ||
	    !(fg->p = malloc(n)) || fread(fg->p, 1, n, f) != (size_t)n) {
		fclose(f);
		free(fg->p);
		fg->p = NULL;
		return -1;
	}
	fclose(f);
	fg->len = (size_t)n;
	if (forge_add(fg, &off, FORGE_U32, "header.version", NULL) ||
	    forge_add(fg, &off, FORGE_U32, "header.reserved", NULL) ||
	    forge_add(fg, &off, FORGE_U64, "header.length", NULL) ||
	    forge_str(fg, &off, "config.path", NULL, 0) ||
	    forge_str(fg, &off, "config.base_dir", NULL, 0) ||
	    forge_str(fg, &off, "config.text", NULL, 0) ||
	    forge_add(fg, &off, FORGE_U32, "config.nsets", NULL))
		return -1;
	for (uint64_t i = 0, k = forge_at(fg, off - 4, 4); i < k; i++) {
		snprintf(buf, sizeof(buf), "config.set%d", (int)i);
		if (i > 64 || forge_str(fg, &off, buf, NULL, 0))
			return -1;
	}
	static const struct { const char *name; enum forge_type t; } run[] = {
		{ "mode", FORGE_U32 }, { "position.epoch", FORGE_U32 },
		{ "position.index", FORGE_U64 }, { "position.id", FORGE_U64 },
		{ "position.loss_sum", FORGE_F64 }, { "position.correct", FORGE_U64 },
		{ "position.samples", FORGE_U64 }, { "position.seconds", FORGE_F64 },
		{ "metrics.epoch", FORGE_U32 }, { "metrics.train_loss", FORGE_F64 },
		{ "metrics.train_acc", FORGE_F64 }, { "metrics.val_loss", FORGE_F64 },
		{ "metrics.val_acc", FORGE_F64 }, { "metrics.best_val_acc", FORGE_F64 },
		{ "ngates", FORGE_U32 },
	};
	for (size_t i = 0; i < sizeof(run) / sizeof(run[0]); i++)
		if (forge_add(fg, &off, run[i].t, "%s", run[i].name))
			return -1;
	for (uint64_t g = 0, G = forge_at(fg, off - 4, 4); g < G; g++) {
		snprintf(buf, sizeof(buf), "gate%d", (int)g + 1);
		if (g > 64 || forge_add(fg, &off, FORGE_U64, "%s.step", buf))
			return -1;
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof(name), "%s.rng%d", buf, i);
			if (forge_add(fg, &off, FORGE_U64, "%s", name))
				return -1;
		}
		if (forge_add(fg, &off, FORGE_U32, "%s.ntensors", buf))
			return -1;
		for (uint64_t t = 0, T = forge_at(fg, off - 4, 4); t < T; t++) {
			char tn[64], field[96];
			uint64_t rank, count;
			if (t > 64 || forge_str(fg, &off, "tensor", tn, sizeof(tn)))
				return -1;
			/* name the length field after the tensor */
			snprintf(fg->f[fg->n - 1].name, sizeof(fg->f[0].name), "%s.name.len", tn);
			if (forge_add(fg, &off, FORGE_U32, "%s.rank", tn))
				return -1;
			rank = forge_at(fg, off - 4, 4);
			for (uint64_t d = 0; d < rank && d < 4; d++) {
				snprintf(field, sizeof(field), "%s.dim%d", tn, (int)d);
				if (forge_add(fg, &off, FORGE_U32, "%s", field))
					return -1;
			}
			if (forge_add(fg, &off, FORGE_U64, "%s.count", tn))
				return -1;
			count = forge_at(fg, off - 8, 8);
			if (!count || count > (fg->len - 4 - off) / 4)
				return -1;
			snprintf(field, sizeof(field), "%s.value0", tn);
			if (forge_add(fg, &off, FORGE_F32, "%s", field))
				return -1;
			off += 4 * (count - 1);
			if (count > 1) {
				off -= 4;
				snprintf(field, sizeof(field), "%s.valueN", tn);
				if (forge_add(fg, &off, FORGE_F32, "%s", field))
					return -1;
			}
		}
	}
	if (forge_at(fg, 8, 4) >= 2 && forge_data(fg, &off))
		return -1;
	return off == fg->len - 4 ? 0 : -1;
}

static inline void forge_release(struct forge *fg)
{
	free(fg->p);
	fg->p = NULL;
}

/* The field called name, or NULL. */
static inline const struct forge_field *forge_find(const struct forge *fg, const char *name)
{
	for (int i = 0; i < fg->n; i++)
		if (!strcmp(fg->f[i].name, name))
			return &fg->f[i];
	return NULL;
}

/* Set an integer field to v (truncated to its width: -1 is all ones). */
static inline void forge_set_u(struct forge *fg, const struct forge_field *f, uint64_t v)
{
	forge_put_le(fg->p + f->off, v, forge_width(f->type));
}

/* Set a float field to d (f32 or f64 as the field is). */
static inline void forge_set_f(struct forge *fg, const struct forge_field *f, double d)
{
	if (f->type == FORGE_F32) {
		float x = (float)d;
		uint32_t v;
		memcpy(&v, &x, 4);
		forge_put_le(fg->p + f->off, v, 4);
	} else {
		uint64_t v;
		memcpy(&v, &d, 8);
		forge_put_le(fg->p + f->off, v, 8);
	}
}

static inline uint64_t forge_get_u(const struct forge *fg, const struct forge_field *f)
{
	return forge_le(fg->p + f->off, forge_width(f->type));
}

/* Recompute the trailing CRC-32 over everything before it. */
static inline void forge_fix_crc(struct forge *fg)
{
	forge_put_le(fg->p + fg->len - 4,
		     (uint32_t)crc32(0L, fg->p, (uInt)(fg->len - 4)), 4);
}

/* Write the forged bytes, CRC fixed, to path; 0 on success. */
static inline int forge_save(struct forge *fg, const char *path)
{
	FILE *f;
	int rc;

	forge_fix_crc(fg);
	unlink(path);
	if (!(f = fopen(path, "wb")))
		return -1;
	rc = fwrite(fg->p, 1, fg->len, f) != fg->len;
	return fclose(f) || rc ? -1 : 0;
}

#endif
