/* lr_suggest.h - the rate akkctl lr-find suggests from its sweep.
 *
 * Over the smoothed losses of a range test (rates rising geometrically),
 * leaving out the first tenth of the points and the last 5: the minimum of
 * the smoothed loss, then the steepest descent against log(lr) on the way
 * down to it, never after (past the minimum the loss rises, or falls back
 * from a divergence that the smoothing spreads over later points: a
 * descent there is no sign of a good rate). The suggestion is the smaller
 * of that point's rate and a tenth of the minimum's (fastai's two rules of
 * thumb): the smoothing lags the raw loss, which has begun to rise before
 * the smoothed minimum. The descent is searched from the last point whose
 * smoothed loss is still within LR_SUGGEST_MIN_DROP of its start: the
 * falls before are the loss wandering from batch to batch. No suggestion
 * when the smoothed loss does not fall by LR_SUGGEST_MIN_DROP of its start
 * before its minimum, or when the raw loss is still falling at the end of
 * the sweep (the last tenth's mean below the tenth before by that drop):
 * then the minimum lies past --max, and a tenth of the last rate can be far
 * too low (a regression whose outputs must travel far to their targets,
 * configs/diabetes.yaml: 7.7e-07 against its own 2); and when the
 * steepest descent lies within LR_SUGGEST_NEAR of the minimum, where the
 * two rules disagree tenfold. */
#ifndef AKK_CLI_LR_SUGGEST_H
#define AKK_CLI_LR_SUGGEST_H

/* The fraction the smoothed loss must fall by to show a working range. */
#define LR_SUGGEST_MIN_DROP 0.02
/* No suggestion when the steepest descent's rate is within this factor
 * of the minimum's: the descent runs into the divergence (the shipped
 * classifiers' are 4 to 30 times below). */
#define LR_SUGGEST_NEAR 2

struct lr_suggestion {
	double lr;		/* the suggestion, when ok */
	double steep;		/* the steepest descent's rate */
	double minimum;		/* the smoothed minimum's rate */
	const char *why;	/* when not ok: why there is none */
};

/* n points lr[i], loss[i] (each batch's own) and smooth[i]. Returns 1
 * with a suggestion, 0 with s->why. */
int lr_suggest(const double *lr, const double *loss, const double *smooth, int n,
	       struct lr_suggestion *s);

#endif
