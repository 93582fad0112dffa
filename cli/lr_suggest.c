/* lr_suggest.c - the rate akkctl lr-find suggests (lr_suggest.h). */
#include "lr_suggest.h"

#include <math.h>
#include <stddef.h>

/* The mean of the finite values of x[from..to), NAN when none is. */
static double mean_of(const double *x, int from, int to)
{
	double sum = 0;
	int k = 0;

	for (int i = from; i < to; i++)
		if (isfinite(x[i])) {
			sum += x[i];
			k++;
		}
	return k ? sum / k : NAN;
}

/* Whether the last tenth of the n losses (5 at least) is below the tenth
 * before it by drop on average, and below floor (the smoothed minimum):
 * falling to a loss the sweep has not shown, not back from a spike. */
static int still_falling(const double *loss, int n, double drop, double floor)
{
	int k = n / 10 > 5 ? n / 10 : 5;
	double last;

	if (2 * k > n)
		return 0;
	last = mean_of(loss, n - k, n);
	return mean_of(loss, n - 2 * k, n - k) - last >= drop && last < floor;
}

int lr_suggest(const double *lr, const double *loss, const double *smooth, int n,
	       struct lr_suggestion *s)
{
	int from = n / 10, to = n - 5, low = -1, best = -1, start = -1, begin;
	double g, gbest = 0;

	s->lr = s->steep = s->minimum = 0;
	s->why = NULL;
	if (to - from < 2) {
		s->why = "too few steps (the first tenth and the last 5 are left out)";
		return 0;
	}
	for (int i = from; i < to; i++)
		if (isfinite(smooth[i])) {
			if (start < 0)
				start = i;
			if (low < 0 || smooth[i] < smooth[low])
				low = i;
		}
	if (low < 0) {
		s->why = "no finite loss";
		return 0;
	}
	if (!(smooth[start] - smooth[low] >= LR_SUGGEST_MIN_DROP * fabs(smooth[start]))) {
		s->why = "the smoothed loss falls by less than 2% before its minimum: try more --steps, or another --min and --max";
		return 0;
	}
	/* A raw loss still falling over the sweep's last points (the mean of
	 * the last tenth below the tenth before by the drop, and below the
	 * smoothed minimum) is on its way down: its minimum, and the rates that train best, lie past the
	 * sweep, where a tenth of the last rate says nothing. A raw loss at
	 * its floor (the smoothing still lagging down to it) or rising is
	 * not. */
	if (still_falling(loss, n, LR_SUGGEST_MIN_DROP * fabs(smooth[start]), smooth[low])) {
		s->why = "the loss is still falling at the end of the sweep (its minimum is past --max): try a larger --max";
		return 0;
	}
	/* The descent starts at the last step whose smoothed loss is still
	 * within the drop of its start: the loss falls from there to its
	 * minimum for good. The falls before are the loss wandering from
	 * batch to batch (a regression's loss far from its targets, before
	 * the rate is large enough to move them): steep by chance, at rates
	 * that train nothing. */
	begin = start;
	for (int i = start; i < low; i++)
		if (isfinite(smooth[i]) &&
		    smooth[start] - smooth[i] < LR_SUGGEST_MIN_DROP * fabs(smooth[start]))
			begin = i;
	for (int i = begin; i < low; i++) {
		if (!isfinite(smooth[i]) || !isfinite(smooth[i + 1]))
			continue;
		g = (smooth[i + 1] - smooth[i]) / (log(lr[i + 1]) - log(lr[i]));
		if (best < 0 || g < gbest) {
			best = i;
			gbest = g;
		}
	}
	if (best < 0) {
		s->why = "no descent before the smoothed minimum";
		return 0;
	}
	s->steep = lr[best];
	s->minimum = lr[low];
	/* The loss falling hardest right where it turns: the two rules of
	 * thumb disagree tenfold there, and a tenth of the minimum's rate
	 * trains worse than the config's own (configs/fashion-unet.yaml:
	 * 0.00085 against its 0.003, 1.7 points of R^2 below), while the
	 * steep point is the edge of divergence. */
	if (s->steep > s->minimum / LR_SUGGEST_NEAR) {
		s->why = "the loss falls steepest right before its minimum, where it turns: "
			 "no rate stands out (keep the config's rate, or one below the steepest)";
		return 0;
	}
	s->lr = s->steep < s->minimum / 10 ? s->steep : s->minimum / 10;
	return 1;
}
