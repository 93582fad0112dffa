/* lr_suggest.c - the rate akkctl lr-find suggests (lr_suggest.h). */
#include "lr_suggest.h"

#include <math.h>
#include <stddef.h>

int lr_suggest(const double *lr, const double *smooth, int n,
	       struct lr_suggestion *s)
{
	int from = n / 10, to = n - 5, low = -1, best = -1, start = -1;
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
	for (int i = start; i < low; i++) {
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
	s->lr = s->steep < s->minimum / 10 ? s->steep : s->minimum / 10;
	return 1;
}
