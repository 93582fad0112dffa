/* plot_steps.c - the per-step training loss (steps.csv) as an SVG chart
 * (plot_steps.h). */
#include "io/plot_steps.h"

#include <math.h>
#include <stdio.h>

#include "io/svg.h"

#define W 900
#define H 420
#define LEFT 80.0
#define RIGHT 30.0
#define TOP 50.0
#define BOTTOM 60.0

/* The least and greatest finite loss of r; 0 when none is finite. */
static int loss_range(const struct akk_step_rows *r, double *lo, double *hi)
{
	int any = 0;

	for (size_t i = 0; i < r->n; i++) {
		double v = r->rows[i].loss;
		if (!isfinite(v))
			continue;
		if (!any || v < *lo)
			*lo = v;
		if (!any || v > *hi)
			*hi = v;
		any = 1;
	}
	if (any && *hi == *lo) {	/* a flat line: in the middle */
		*lo -= 0.5;
		*hi += 0.5;
	}
	return any;
}

static void axes(struct akk_svg *s, long s0, long s1, double lo, double hi)
{
	char t[64];
	double x0 = LEFT, x1 = W - RIGHT, y0 = H - BOTTOM, y1 = TOP;

	akk_svg_group_begin(s, "axes");
	akk_svg_line(s, x0, y0, x1, y0, "#888888", 1, NULL);
	akk_svg_line(s, x0, y0, x0, y1, "#888888", 1, NULL);
	snprintf(t, sizeof(t), "%ld", s0);
	akk_svg_text(s, x0, y0 + 18, AKK_SVG_MIDDLE, 12, "#222222", 0, 0, t);
	snprintf(t, sizeof(t), "%ld", s1);
	akk_svg_text(s, x1, y0 + 18, AKK_SVG_MIDDLE, 12, "#222222", 0, 0, t);
	akk_svg_text(s, (x0 + x1) / 2, H - 18, AKK_SVG_MIDDLE, 13, "#222222", 0, 0,
		     "optimizer step");
	snprintf(t, sizeof(t), "%.4g", lo);
	akk_svg_text(s, x0 - 6, y0 + 4, AKK_SVG_END, 12, "#222222", 0, 0, t);
	snprintf(t, sizeof(t), "%.4g", hi);
	akk_svg_text(s, x0 - 6, y1 + 4, AKK_SVG_END, 12, "#222222", 0, 0, t);
	akk_svg_text(s, 22, (y0 + y1) / 2, AKK_SVG_MIDDLE, 13, "#222222", -90, 0,
		     "training loss");
	akk_svg_group_end(s);
}

int akk_plot_steps(FILE *f, const struct akk_step_rows *r, const char *title,
		   const char *what, struct akk_err *e)
{
	struct akk_svg s;
	double lo = 0, hi = 0;
	long s0, s1;
	int any, open = 0, skipped = 0;

	if (!r->n)
		return akk_err_set(e, "no steps to draw");
	s0 = r->rows[0].step;
	s1 = r->rows[r->n - 1].step;
	any = loss_range(r, &lo, &hi);
	akk_svg_begin(&s, f, W, H, title);
	akk_svg_text(&s, W / 2.0, 28, AKK_SVG_MIDDLE, 16, "#222222", 0, 1, title);
	axes(&s, s0, s1, any ? lo : 0, any ? hi : 1);
	/* one polyline per run of finite losses; a row each, in step order */
	for (size_t i = 0; any && i < r->n; i++) {
		const struct akk_step_row *w = &r->rows[i];
		double x = s1 > s0 ? LEFT + (double)(w->step - s0) / (double)(s1 - s0) *
					   (W - RIGHT - LEFT) : (LEFT + W - RIGHT) / 2;

		if (!isfinite(w->loss)) {
			if (open)
				akk_svg_polyline_end(&s);
			open = 0;
			skipped++;
			continue;
		}
		if (!open)
			akk_svg_polyline_begin(&s, "step-loss", "#1f77b4", 1.5, NULL);
		open = 1;
		akk_svg_point(&s, x, H - BOTTOM - (w->loss - lo) / (hi - lo) * (H - BOTTOM - TOP));
	}
	if (open)
		akk_svg_polyline_end(&s);
	if (skipped || !any) {
		char note[128];

		snprintf(note, sizeof(note), "%d of %zu rows have no finite loss (no samples, or an overflow): not drawn",
			 any ? skipped : (int)r->n, r->n);
		akk_svg_group_begin(&s, "note");
		akk_svg_text(&s, LEFT, H - 4, AKK_SVG_START, 11, "#222222", 0, 0, note);
		akk_svg_group_end(&s);
	}
	return akk_svg_end(&s, what, e);
}
