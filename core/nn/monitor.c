/* monitor.c - early stopping and reduce-on-plateau decisions. */
#include "nn/monitor.h"

#include <stddef.h>

const char *const akk_monitor_names[] = { "val_loss", "val_accuracy", NULL };

double akk_monitor_value(int metric, double val_loss, double val_acc)
{
	return metric == AKK_MON_VAL_ACCURACY ? val_acc : val_loss;
}

int akk_monitor_improves(const struct akk_monitor *m, int metric,
			 double min_delta, double v)
{
	if (!m->best_epoch)
		return 1;
	if (metric == AKK_MON_VAL_ACCURACY)
		return v > m->best + min_delta;
	return v < m->best - min_delta;
}

int akk_early_stop_update(struct akk_watch *w, const struct akk_early_stop_spec *s,
			  int epoch, double v)
{
	struct akk_monitor *m = &w->stop;

	if (akk_monitor_improves(m, s->monitor, s->min_delta, v)) {
		m->best = v;
		m->best_epoch = epoch;
		m->wait = 0;
		return 0;
	}
	if (++m->wait < s->patience)
		return 0;
	w->stopped_epoch = epoch;
	return 1;
}

int akk_plateau_update(struct akk_watch *w, int metric, double min_delta,
		       int patience, int cooldown, int at_floor, int epoch,
		       double v)
{
	struct akk_monitor *m = &w->plateau;

	if (w->cooldown > 0) {
		w->cooldown--;
		m->wait = 0;
	}
	if (akk_monitor_improves(m, metric, min_delta, v)) {
		m->best = v;
		m->best_epoch = epoch;
		m->wait = 0;
		return 0;
	}
	if (w->cooldown > 0)
		return 0;
	if (++m->wait < patience || at_floor)
		return 0;
	w->reductions++;
	w->cooldown = cooldown;
	m->wait = 0;
	return 1;
}
