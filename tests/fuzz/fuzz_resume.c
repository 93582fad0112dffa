/* fuzz_resume.c - resuming a run from a checkpoint: restore it into a run
 * and train from where it stands until the first batch has come back.
 *
 * The input is three bytes, then a checkpoint (length and CRC-32 fixed up
 * as in fuzz_checkpoint.c):
 *   byte 0  bits 0-1: 1 --set schedule.mode=flip-flop, 2 wheels, else the
 *           stored mode; bit 2: --set schedule.batch_size=(byte 1)+1
 *   byte 2  the number of training (and validation) samples, minus one
 * As `akkctl train --resume` does with the stored config: the spec (with
 * --epochs raised past the checkpoint's epoch, as a user resuming a
 * finished run would), the plan, akk_checkpoint_match, and for a network
 * of a few MB with at most 16 gates, akk_run_init on a synthetic dataset
 * of that many samples starting at the checkpoint's position,
 * akk_checkpoint_restore and akk_run_train, stopped (as by Ctrl-C) once
 * the first batch is back. Findings: crashes, hangs, leaks, a resumed run
 * that breaks the sentinel's protocol ("sentinel: ...", which a checkpoint
 * that passed validation must never cause), and one that stops at a
 * position no run can reach (non-finite or negative running totals, which
 * its next checkpoint and metrics would carry on). */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "fuzz_util.h"
#include "runtime/run_internal.h"
#include "data/synthetic.h"

#define MAX_FLOATS (16.0 * 1024 * 1024)	/* 64 MB */
#define MAX_GATES 16			/* one thread each */

/* The first batch is back: stop as Ctrl-C would (drain, then return). */
static void progress(void *ctx, const struct akk_progress *p)
{
	struct akk_run *r = ctx;

	(void)p;
	atomic_store(&r->stop, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_dataset d = { 0 };
	struct akk_run run;
	struct akk_err e = { 0 };
	struct akk_gate *gates[MAX_GATES];
	char mode_set[64], bs_set[64], epochs_set[64];
	const char *extra[3];
	const char *path;
	int nextra = 0, run_ready = 0, flags;
	size_t n;

	if (size < 3)
		return 0;
	flags = data[0];
	n = (size_t)data[2] + 1;
	if (!(copy = malloc(size - 3 + 1)))
		return 0;
	memcpy(copy, data + 3, size - 3);
	fuzz_fix_checkpoint(copy, size - 3);
	path = fuzz_write("resume.bin", copy, size - 3);
	free(copy);
	if (akk_checkpoint_read(&ck, path, &e))
		return fuzz_refused("read", &e);
	if ((flags & 3) == 1 || (flags & 3) == 2) {
		snprintf(mode_set, sizeof(mode_set), "schedule.mode=%s",
			 (flags & 3) == 1 ? "flip-flop" : "wheels");
		extra[nextra++] = mode_set;
	}
	if (flags & 4) {
		snprintf(bs_set, sizeof(bs_set), "schedule.batch_size=%d", data[1] + 1);
		extra[nextra++] = bs_set;
	}
	if (akk_checkpoint_spec(&ck, &s, extra, nextra, &e)) {
		fuzz_refused("spec", &e);
		goto out;
	}
	if (s.sched.epochs <= ck.pos.epoch) {
		/* akkctl train says "already trained"; go on as with --epochs */
		if (ck.pos.epoch >= 1000)
			goto out;
		akk_spec_release(&s);
		snprintf(epochs_set, sizeof(epochs_set), "schedule.epochs=%d",
			 ck.pos.epoch + 1);
		extra[nextra++] = epochs_set;
		if (akk_checkpoint_spec(&ck, &s, extra, nextra, &e)) {
			fuzz_refused("spec", &e);
			goto out;
		}
	}
	if (akk_model_plan(&m, &s, &e)) {
		fuzz_refused("plan", &e);
		goto out;
	}
	if (akk_checkpoint_match(&ck, &m, path, &e)) {
		fuzz_refused("match", &e);
		goto out;
	}
	if (m.ngates > MAX_GATES ||
	    fuzz_model_floats(&m, s.sched.batch_size,
			      s.sched.conc_train + s.sched.conc_val) > MAX_FLOATS ||
	    (double)n * akk_shape_size(s.input) > 4e6)
		goto out;
	if (akk_dataset_synthetic(&d, n, (size_t)akk_shape_size(s.input),
				  m.classes < 256 ? m.classes : 256, 1, &e))
		goto out;
	{
		struct akk_run_config cfg = {
			.mode = s.sched.mode, .epochs = s.sched.epochs,
			.blas_threads = 1, .start = ck.pos,
			.obs = { &run, progress, NULL },
		};
		if (akk_run_init(&run, &m, &d, &d, &cfg, &e)) {
			fuzz_refused("run", &e);
			goto out;
		}
		run_ready = 1;
	}
	for (int i = 0; i < m.ngates; i++)
		gates[i] = &run.gates[i].gate;
	if (akk_checkpoint_restore(&ck, gates, m.ngates, path, &e)) {
		fuzz_refused("restore", &e);
		goto out;
	}
	if (!fuzz_checking("known")) {
		/* FUZZ_SKIP=known: leave out what is already known
		 * (positions and steps out of range), to look further */
		int known = ck.pos.id < 0 || ck.pos.index >= run.per_epoch ||
			    ck.pos.index < 0;
		for (int i = 0; i < m.ngates; i++)
			known |= ck.gates[i].step < 0 || ck.gates[i].step > (1L << 40);
		if (known)
			goto out;
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "resuming %s at epoch %d batch %ld step %ld of %ld per epoch\n",
			akk_mode_name(s.sched.mode), ck.pos.epoch, ck.pos.index,
			ck.pos.id, run.per_epoch);
	if (akk_run_train(&run, &e)) {
		if (!strncmp(e.msg, "sentinel:", 9) && fuzz_checking("protocol"))
			fuzz_violation("the resumed run broke the protocol: %s", e.msg);
		fuzz_refused("train", &e);
	} else {
		const struct akk_position *q = &run.pos;
		if (fuzz_checking("position") && (!isfinite(q->loss_sum) || !isfinite(q->seconds) || q->correct < 0 ||
		    q->correct > q->samples || q->samples < 0 || q->index < 0 || q->id < 0))
			fuzz_violation("the resumed run stands at a position no run can reach: epoch %d, batch %ld, step %ld, loss sum %g over %ld samples (%ld correct), %g s",
				       q->epoch, q->index, q->id, q->loss_sum, q->samples,
				       q->correct, q->seconds);
	}
out:
	if (run_ready)
		akk_run_release(&run);
	akk_dataset_release(&d);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	return 0;
}
