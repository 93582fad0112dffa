/* weights_note.c - which weights each figure of a run was measured on
 * (see weights_note.h). */
#include <string.h>

#include "weights_note.h"
#include "io/curves.h"

struct weights_seen weights_seen_of(const struct akk_epoch_report *rep)
{
	return (struct weights_seen){
		.known = 1, .during = rep->during,
		.final = !strcmp(rep->phase, "final"),
		.vmin = rep->vmin, .vmax = rep->vmax, .stored = rep->steps,
	};
}

int weights_best_takes(const struct akk_spec *s, const struct akk_run *r,
		       const struct akk_epoch_report *rep,
		       const struct akk_metrics_best *best)
{
	int final = !strcmp(rep->phase, "final");

	if (!rep->val_samples)
		return 0;
	/* as ckpt_epoch writes best.bin: early stopping's monitor decides */
	if (s->sched.early.on)
		return !final && akk_run_watch(r)->stop.best_epoch == rep->epoch;
	if (!best->epoch)
		return 1;
	return s->out.best_by == AKK_BEST_LOSS ? rep->val_loss < best->loss :
						 rep->val_acc > best->accuracy;
}

int weights_best_of_epoch(const char *metrics, int epoch,
			  struct akk_metrics_best *best)
{
	struct akk_curves c = { 0 };
	struct akk_err e = { 0 };
	int rc = -1;

	if (akk_curves_load(&c, metrics, &e))
		return -1;
	for (size_t i = 0; i < c.n; i++)
		if (c.rows[i].phase == AKK_CURVE_VALIDATION && c.rows[i].epoch == epoch) {
			*best = (struct akk_metrics_best){ epoch, 0, c.rows[i].accuracy,
							   c.rows[i].loss };
			rc = 0;
		}
	akk_curves_release(&c);
	return rc;
}

static void versions(FILE *f, long a, long b)
{
	if (a == b)
		fprintf(f, "weight version %ld", a);
	else
		fprintf(f, "weight versions %ld-%ld", a, b);
}

void weights_note_epoch(FILE *f, const struct akk_epoch_report *rep)
{
	if (!rep->during)
		return;
	fputs(" (during training, ", f);
	versions(f, rep->vmin, rep->vmax);
	fputs(")", f);
}

void weights_note_best(FILE *f, const struct weights_seen *w)
{
	if (!w->known || !(w->during || w->final))
		return;
	if (w->final) {
		fprintf(f, " on the final weights, version %ld, which best.bin holds",
			w->stored);
		return;
	}
	fputs(" (measured during training on ", f);
	versions(f, w->vmin, w->vmax);
	fprintf(f, "; best.bin holds version %ld, not measured: akkctl eval measures it)",
		w->stored);
}

void weights_note_final(FILE *f, const struct weights_seen *w)
{
	if (!w->known || !(w->during || w->final))
		return;
	if (w->final) {
		fprintf(f, " (final pass on the final weights, version %ld)", w->stored);
		return;
	}
	fputs(" (measured during training on ", f);
	versions(f, w->vmin, w->vmax);
	fputs(")", f);
}
