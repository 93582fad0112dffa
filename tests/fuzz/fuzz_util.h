/* fuzz_util.h - what the libFuzzer harnesses share: a private scratch
 * directory for the files made from each input, a checkpoint's length and
 * CRC-32 fixed up (so mutations reach the fields behind them), the bound on
 * the memory a planned network may take, and the invariant check that turns
 * a wrong answer (not only a crash) into a finding. Header-only: each
 * harness is one translation unit. */
#ifndef AKK_FUZZ_UTIL_H
#define AKK_FUZZ_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "model/model.h"
#include "nn/optim.h"
#include "config/spec.h"

/* A directory of our own, made once and removed at exit. */
static char fuzz_dir[64];

static inline void fuzz_dir_remove(void)
{
	char cmd[128];

	if (fuzz_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir);
		if (system(cmd)) {
			/* nothing to do: it is only a temporary directory */
		}
	}
}

static inline const char *fuzz_path(const char *name)
{
	static char path[4][128];
	static int next;
	char *p = path[next++ % 4];

	if (!fuzz_dir[0]) {
		snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/akkfuzz.XXXXXX");
		if (!mkdtemp(fuzz_dir)) {
			perror("mkdtemp");
			abort();
		}
		atexit(fuzz_dir_remove);
	}
	snprintf(p, 128, "%s/%s", fuzz_dir, name);
	return p;
}

/* Write n bytes to the scratch file `name`; returns its path. */
static inline const char *fuzz_write(const char *name, const void *data, size_t n)
{
	const char *path = fuzz_path(name);
	FILE *f = fopen(path, "wb");

	if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
		perror(path);
		abort();
	}
	return path;
}

/* A finding that is not a crash: the code accepted something it must not.
 * Aborting makes libFuzzer save the input like any crash. */
__attribute__((format(printf, 1, 2), noreturn))
static inline void fuzz_violation(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "==fuzz== invariant violated: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* Whether invariant `name` is checked: FUZZ_SKIP="float,gzip-junk" turns
 * some off, to explore past known defects. */
static inline int fuzz_checking(const char *name)
{
	const char *skip = getenv("FUZZ_SKIP");

	return !skip || !strstr(skip, name);
}

/* FUZZ_VERBOSE=1: say why an input was refused (for writing seeds). */
static inline int fuzz_refused(const char *stage, const struct akk_err *e)
{
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "refused at %s: %s:%d:%d: %s\n", stage, e->file,
			e->line, e->col, e->msg);
	return 0;
}

/* A checkpoint ends with a CRC-32 of everything before it, and its header
 * holds the file length at byte 16: fix both, as a forger would, so the
 * reader's field checks are what the fuzzer exercises. */
static inline void fuzz_fix_checkpoint(uint8_t *p, size_t n)
{
	uint32_t crc;

	if (n < 28)
		return;
	for (int i = 0; i < 8; i++)
		p[16 + i] = (uint8_t)((uint64_t)n >> (8 * i));
	crc = (uint32_t)crc32(0L, p, (uInt)(n - 4));
	for (int i = 0; i < 4; i++)
		p[n - 4 + i] = (uint8_t)(crc >> (8 * i));
}

/* Floats a run of this network would allocate, roughly (gates with their
 * tapes, stash and optimizer, batches in flight), for batch bs and
 * `inflight` batches: the harnesses skip networks above a few MB. */
static inline double fuzz_model_floats(const struct akk_model *m, int bs, int inflight)
{
	double total = 0;
	long in = akk_shape_size(m->spec->input);

	for (int i = 0; i < m->ngates; i++) {
		const struct akk_gate_plan *p = &m->gates[i];
		double per = akk_optim_state_per_param(p->optim->kind);
		double wide = (double)akk_shape_size(p->in) + akk_shape_size(p->out);

		total += (double)p->nparams * (3 + per + inflight) + p->nstate +
			 p->work + 2 * wide * bs +
			 (double)(p->act + p->aux + wide) * bs * (inflight + 1);
	}
	return total + (double)(inflight + 2) * bs * (in + m->classes + 1);
}

static inline int bad_float(double v)
{
	return v != v || v > 3.4e38 || v < -3.4e38;
}

/* What a parsed spec must satisfy, whatever the text was: every float key
 * holds, as the float it is stored as, the range the spec documents (a
 * range checked on the double and then rounded to 0 or 1 is a defect). */
static inline void fuzz_check_optim(const struct akk_optim_spec *o, const char *where)
{
	if (!(o->lr > 0) || bad_float(o->lr))
		fuzz_violation("%s: lr %g accepted, must be > 0", where, o->lr);
	if (!(o->momentum >= 0 && o->momentum < 1))
		fuzz_violation("%s: momentum %.9g accepted, must be in [0, 1)", where, o->momentum);
	if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
		fuzz_violation("%s: beta1 %.9g / beta2 %.9g accepted, must be in [0, 1)",
			       where, o->beta1, o->beta2);
	if (!(o->rho >= 0 && o->rho < 1))
		fuzz_violation("%s: rho %.9g accepted, must be in [0, 1)", where, o->rho);
	if (!(o->eps > 0))
		fuzz_violation("%s: eps %g accepted, must be > 0", where, o->eps);
	if (!(o->weight_decay >= 0) || bad_float(o->weight_decay) ||
	    !(o->clip_norm >= 0) || bad_float(o->clip_norm))
		fuzz_violation("%s: weight_decay %g / clip_norm %g accepted", where,
			       o->weight_decay, o->clip_norm);
	if ((o->sched.kind == AKK_LR_STEP || o->sched.kind == AKK_LR_EXPONENTIAL) &&
	    !(o->sched.gamma > 0 && o->sched.gamma <= 1))
		fuzz_violation("%s: lr schedule gamma %g accepted, must be in (0, 1]",
			       where, o->sched.gamma);
	if (o->sched.kind == AKK_LR_STEP && !(o->sched.step_epochs > 0))
		fuzz_violation("%s: step_epochs %g accepted, must be > 0", where,
			       o->sched.step_epochs);
}

static inline void fuzz_check_spec(const struct akk_spec *s)
{
	char where[64];

	if (!fuzz_checking("float"))
		return;
	fuzz_check_optim(&s->optim, "optimizer");
	if (s->data.normalize && (!(s->data.std > 0) || bad_float(s->data.std)))
		fuzz_violation("data.normalize.std %g accepted, must be > 0", s->data.std);
	if (!(s->data.scale > 0) || bad_float(s->data.scale))
		fuzz_violation("data.scale %g accepted, must be > 0", s->data.scale);
	if (s->loss == AKK_LOSS_HUBER && !(s->huber_delta > 0))
		fuzz_violation("network.loss.delta %g accepted, must be > 0", s->huber_delta);
	for (int g = 0; g < s->ngates; g++) {
		const struct akk_gate_spec *gs = &s->gates[g];
		snprintf(where, sizeof(where), "gate %d optimizer", g + 1);
		fuzz_check_optim(&gs->optim, where);
		for (int l = 0; l < gs->nlayers; l++) {
			const struct akk_layer_spec *ls = &gs->layers[l];
			const char *kind = ls->ops ? ls->ops->name : "?";
			if (!strcmp(kind, "dropout") && !(ls->rate >= 0 && ls->rate < 1))
				fuzz_violation("gate %d layer %d: dropout rate %.9g accepted",
					       g + 1, l + 1, ls->rate);
			if (!strcmp(kind, "batchnorm") &&
			    (!(ls->momentum > 0 && ls->momentum <= 1) || !(ls->eps > 0)))
				fuzz_violation("gate %d layer %d: batchnorm momentum %.9g eps %g accepted",
					       g + 1, l + 1, ls->momentum, ls->eps);
		}
	}
}

/* What a successful plan must satisfy: positive shapes, sizes that did not
 * wrap around (below 2^60 floats, so their bytes, times the few blocks a
 * gate keeps, still fit in 64 bits). */
static inline void fuzz_check_model(const struct akk_model *m)
{
	double sum = 0;

	if (!fuzz_checking("plan"))
		return;
	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *p = &m->gates[g];
		double gsum = 0;
		for (int l = 0; l < p->nlayers; l++) {
			const struct akk_layer *ly = &p->layers[l];
			for (int d = 0; d < ly->out.rank; d++)
				if (ly->out.d[d] < 1)
					fuzz_violation("gate %d layer %d: planned output dimension %d is %d",
						       g + 1, l + 1, d, ly->out.d[d]);
			if (akk_shape_size(ly->out) < 1 || ly->nparams > ((size_t)1 << 60) ||
			    ly->aux > ((size_t)1 << 60) || ly->work > ((size_t)1 << 60))
				fuzz_violation("gate %d layer %d: planned sizes wrapped around or too large for 64-bit byte counts (out %ld, params %zu, aux %zu, work %zu)",
					       g + 1, l + 1, akk_shape_size(ly->out),
					       ly->nparams, ly->aux, ly->work);
			gsum += (double)ly->nparams;
		}
		if (gsum != (double)p->nparams)
			fuzz_violation("gate %d: %zu parameters planned, its layers have %.0f",
				       g + 1, p->nparams, gsum);
		sum += gsum;
	}
	if (sum != (double)m->nparams)
		fuzz_violation("%zu parameters planned, the gates have %.0f", m->nparams, sum);
}

#endif
