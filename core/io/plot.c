/* plot.c - the learning-curve chart and the confusion heat map as SVG:
 * layout, 1-2-5 ticks, curves broken at gaps and resumes, thinning of
 * long runs, colours. */
#include "io/plot.h"
#include "io/svg.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- ticks ----------------------------------------------------------- */

/* The 1-2-5 step that cuts range into about target parts. */
static double nice_step(double range, int target, int integer)
{
	double raw = range / (target > 0 ? target : 1), p, m;

	if (!(raw > 0) || !isfinite(raw))
		return 1;
	p = pow(10, floor(log10(raw)));
	m = raw / p;
	m = m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10;
	return integer && m * p < 1 ? 1 : m * p;
}

void akk_plot_ticks(double min, double max, int target, int integer,
		    struct akk_ticks *t)
{
	double step;

	if (!isfinite(min) || !isfinite(max)) {
		min = 0;
		max = 1;
	}
	if (!(max > min)) {	/* one value: widen around it */
		double d = integer || min == 0 ? 1 : fabs(min) * 0.1;
		min -= d;
		max += d;
	}
	step = nice_step(isfinite(max - min) ? max - min : DBL_MAX, target, integer);
	t->step = step;
	t->lo = floor(min / step + 1e-9) * step;
	t->hi = ceil(max / step - 1e-9) * step;
	t->n = (int)llround((t->hi - t->lo) / step) + 1;
	if (!isfinite(t->lo) || !isfinite(t->hi) || t->n < 2 || t->n > 1000) {
		t->lo = min;
		t->hi = max;
		t->step = max - min;
		t->n = 2;
	}
}

void akk_plot_tick_label(char *buf, int size, double v, double step)
{
	int dec = 0;

	/* As many decimals as the step has: 0.25 two, 0.5 one, 5 none. */
	while (dec < 10 && fabs(step * pow(10, dec) - round(step * pow(10, dec))) >
	       1e-6 * step * pow(10, dec))
		dec++;

	if (fabs(v) < step * 1e-6)
		v = 0;		/* not "-0.00" from rounding */
	if (dec > 6 || fabs(v) >= 1e7)
		snprintf(buf, (size_t)size, "%.3g", v);
	else
		snprintf(buf, (size_t)size, "%.*f", dec, v);
}

/* ---- the learning curves --------------------------------------------- */

#define C_TRAIN "#1f77b4"
#define C_VAL "#ff7f0e"
#define C_LR "#7f7f7f"
#define C_BEST "#2ca02c"
#define C_RESUME "#9467bd"
#define C_GRID "#e6e6e6"
#define C_AXIS "#888888"
#define C_TEXT "#222222"

/* The plot area of a panel and its value range. */
struct panel {
	double top, h;
	struct akk_ticks y;
};

struct layout {
	double left, width;	/* plot area, shared by both panels */
	double emin, emax;	/* the epochs drawn */
	double xlo, xhi;	/* the x range: those and a margin */
	struct panel loss, acc;
	struct akk_ticks lr;	/* the loss panel's right-hand axis */
};

#define LEFT 80.0
#define RIGHT 90.0

static double px(const struct layout *l, double epoch)
{
	double x = l->left + (epoch - l->xlo) / (l->xhi - l->xlo) * l->width;
	return isfinite(x) ? x : l->left;
}

static double py(const struct panel *p, const struct akk_ticks *t, double v)
{
	double y = p->top + p->h - (v - t->lo) / (t->hi - t->lo) * p->h;
	return isfinite(y) ? y : p->top + p->h;
}

static void epoch_range(const struct akk_curves *c, struct layout *l)
{
	double *lo = &l->emin, *hi = &l->emax;
	int mn = c->rows[0].epoch, mx = mn;

	for (size_t i = 1; i < c->n; i++) {
		if (c->rows[i].epoch < mn)
			mn = c->rows[i].epoch;
		if (c->rows[i].epoch > mx)
			mx = c->rows[i].epoch;
	}
	*lo = mn;
	*hi = mx;
	if (mn == mx) {		/* one epoch: in the middle */
		*lo = mn - 1;
		*hi = mx + 1;
	}
	l->xlo = *lo - 0.02 * (*hi - *lo);
	l->xhi = *hi + 0.02 * (*hi - *lo);
}

double akk_plot_epoch_x(const struct akk_curves *c, double epoch)
{
	struct layout l = { .left = LEFT, .width = AKK_PLOT_CURVES_W - LEFT - RIGHT };

	epoch_range(c, &l);
	return px(&l, epoch);
}

enum value { V_LOSS, V_ACC, V_LR };

static double value(const struct akk_curve_row *r, enum value v)
{
	return v == V_LOSS ? r->loss : v == V_ACC ? 100 * r->accuracy : r->lr;
}

/* The range of the finite values of v over the rows of phases in mask
 * (bit per phase); 0 when there is none. */
static int range_of(const struct akk_curves *c, enum value v, int mask,
		    double *mn, double *mx)
{
	int any = 0;

	for (size_t i = 0; i < c->n; i++) {
		double x = value(&c->rows[i], v);
		if (!(mask & 1 << c->rows[i].phase) || !isfinite(x))
			continue;
		if (!any || x < *mn)
			*mn = x;
		if (!any || x > *mx)
			*mx = x;
		any = 1;
	}
	return any;
}

/* A curve being written: open polyline, and the pixel column being
 * thinned (its first point, least and greatest values). */
struct pen {
	struct akk_svg *s;
	const char *cls, *colour, *dash;
	int open, thin;
	long col;
	double ymin_x, ymin, ymax_x, ymax;
	int have;
};

static void pen_flush(struct pen *p)
{
	if (!p->have)
		return;
	if (p->ymin == p->ymax) {
		akk_svg_point(p->s, p->ymin_x, p->ymin);
	} else if (p->ymin_x <= p->ymax_x) {
		akk_svg_point(p->s, p->ymin_x, p->ymin);
		akk_svg_point(p->s, p->ymax_x, p->ymax);
	} else {
		akk_svg_point(p->s, p->ymax_x, p->ymax);
		akk_svg_point(p->s, p->ymin_x, p->ymin);
	}
	p->have = 0;
}

static void pen_up(struct pen *p)
{
	if (!p->open)
		return;
	pen_flush(p);
	akk_svg_polyline_end(p->s);
	p->open = 0;
}

static void pen_to(struct pen *p, double x, double y)
{
	if (!p->open) {
		akk_svg_polyline_begin(p->s, p->cls, p->colour, 2, p->dash);
		p->open = 1;
	}
	if (!p->thin) {
		akk_svg_point(p->s, x, y);
		return;
	}
	/* Keep the column's lowest and highest point, written in x order. */
	if (p->have && (long)floor(x) != p->col)
		pen_flush(p);
	if (!p->have) {
		p->col = (long)floor(x);
		p->ymin_x = p->ymax_x = x;
		p->ymin = p->ymax = y;
		p->have = 1;
		return;
	}
	if (y < p->ymin) {
		p->ymin = y;
		p->ymin_x = x;
	}
	if (y > p->ymax) {
		p->ymax = y;
		p->ymax_x = x;
	}
}

static void draw_curve(struct akk_svg *s, const struct akk_curves *c,
		       const struct layout *l, enum akk_curve_phase ph, enum value v,
		       const char *cls, const char *colour, const char *dash, int thin)
{
	const struct panel *pan = v == V_ACC ? &l->acc : &l->loss;
	const struct akk_ticks *t = v == V_LR ? &l->lr : &pan->y;
	struct pen p = { .s = s, .cls = cls, .colour = colour, .dash = dash, .thin = thin };
	int seg = -1;

	for (size_t i = 0; i < c->n; i++) {
		const struct akk_curve_row *r = &c->rows[i];
		double x = value(r, v);
		if (r->phase != ph)
			continue;
		if (r->segment != seg)
			pen_up(&p);
		seg = r->segment;
		if (!isfinite(x)) {
			pen_up(&p);
			continue;
		}
		pen_to(&p, px(l, r->epoch), py(pan, t, x));
	}
	pen_up(&p);
}

static void y_axis(struct akk_svg *s, const struct layout *l, const struct panel *p,
		   const struct akk_ticks *t, int right, const char *name)
{
	double x = right ? l->left + l->width : l->left;
	char lab[64];

	for (int i = 0; i < t->n; i++) {
		double v = t->lo + i * t->step, y = py(p, t, v);
		if (!right)
			akk_svg_line(s, l->left, y, l->left + l->width, y, C_GRID, 1, NULL);
		akk_svg_line(s, x, y, right ? x + 4 : x - 4, y, C_AXIS, 1, NULL);
		akk_plot_tick_label(lab, sizeof(lab), v, t->step);
		akk_svg_text(s, right ? x + 7 : x - 7, y + 4, right ? AKK_SVG_START : AKK_SVG_END,
			     11, C_TEXT, 0, 0, lab);
	}
	akk_svg_text(s, right ? AKK_PLOT_CURVES_W - 14 : 22, p->top + p->h / 2,
		     AKK_SVG_MIDDLE, 13, right ? C_LR : C_TEXT, right ? 90 : -90, 0, name);
}

static void x_grid(struct akk_svg *s, const struct layout *l, const struct panel *p,
		   const struct akk_ticks *t, int labels)
{
	char lab[32];

	for (double v = ceil(l->emin / t->step - 1e-9) * t->step; v <= l->emax + 1e-9;
	     v += t->step) {
		double x = px(l, v);
		akk_svg_line(s, x, p->top, x, p->top + p->h, C_GRID, 1, NULL);
		if (labels) {
			akk_svg_line(s, x, p->top + p->h, x, p->top + p->h + 4, C_AXIS, 1, NULL);
			snprintf(lab, sizeof(lab), "%.0f", v);
			akk_svg_text(s, x, p->top + p->h + 18, AKK_SVG_MIDDLE, 11, C_TEXT, 0, 0, lab);
		}
	}
}

static double legend_entry(struct akk_svg *s, double x, double y, const char *colour,
			   const char *dash, int square, const char *text)
{
	if (square)
		akk_svg_rect(s, x + 6, y - 9, 9, 9, colour, "#444444");
	else
		akk_svg_line(s, x, y - 4, x + 22, y - 4, colour, 2, dash);
	akk_svg_text(s, x + 28, y, AKK_SVG_START, 12, C_TEXT, 0, 0, text);
	return x + 28 + 6.6 * (double)strlen(text) + 16;
}

/* What the rows hold: rows per phase, and the values that are not finite
 * (the first of them, its name). */
struct census {
	long ntrain, nval, nfinal, bad;
	const struct akk_curve_row *firstbad;
	const char *badname;
};

static void count_rows(const struct akk_curves *c, struct census *n)
{
	*n = (struct census){ .badname = "" };
	for (size_t i = 0; i < c->n; i++) {
		const struct akk_curve_row *r = &c->rows[i];
		n->ntrain += r->phase == AKK_CURVE_TRAIN;
		n->nval += r->phase == AKK_CURVE_VALIDATION;
		n->nfinal += r->phase == AKK_CURVE_FINAL;
		for (int v = V_LOSS; v <= V_LR; v++) {
			if (v == V_LR && r->phase != AKK_CURVE_TRAIN)
				continue;
			if (!isfinite(value(r, v)) && !n->bad++) {
				n->firstbad = r;
				n->badname = v == V_LOSS ? "loss" : v == V_ACC ? "accuracy" : "lr";
			}
		}
	}
}

/* Grids, axes and frames. */
static void draw_axes(struct akk_svg *s, const struct layout *l, const struct akk_ticks *xt)
{
	akk_svg_group_begin(s, "axes");
	x_grid(s, l, &l->loss, xt, 0);
	x_grid(s, l, &l->acc, xt, 1);
	y_axis(s, l, &l->loss, &l->loss.y, 0, "loss");
	y_axis(s, l, &l->loss, &l->lr, 1, "learning rate");
	y_axis(s, l, &l->acc, &l->acc.y, 0, "accuracy (%)");
	akk_svg_rect(s, l->left, l->loss.top, l->width, l->loss.h, "none", C_AXIS);
	akk_svg_rect(s, l->left, l->acc.top, l->width, l->acc.h, "none", C_AXIS);
	akk_svg_text(s, l->left + l->width / 2, l->acc.top + l->acc.h + 40, AKK_SVG_MIDDLE, 13,
		     C_TEXT, 0, 0, "epoch");
	akk_svg_group_end(s);
}

/* Where the run was resumed: between the two epochs. */
static void draw_resumes(struct akk_svg *s, const struct akk_curves *c, const struct layout *l)
{
	int seg = 0;

	akk_svg_group_begin(s, "resume");
	for (size_t i = 0; i < c->n; i++) {
		const struct akk_curve_row *r = &c->rows[i];
		double x;
		if (r->segment == seg)
			continue;
		seg = r->segment;
		x = px(l, r->epoch - 0.5 < l->emin ? l->emin : r->epoch - 0.5);
		akk_svg_line(s, x, l->loss.top, x, l->acc.top + l->acc.h, C_RESUME, 1.5, "2 3");
		akk_svg_text(s, x + 3, l->loss.top + l->loss.h - 6, AKK_SVG_START, 10, C_RESUME,
			     0, 0, "resumed");
	}
	akk_svg_group_end(s);
}

/* Dots on the epochs while they are 8 pixels apart or more (a lone epoch
 * has no line); squares on the final pass's values. */
static void draw_marks(struct akk_svg *s, const struct akk_curves *c, const struct layout *l,
		       long nfinal)
{
	if (l->emax - l->emin <= l->width / 8) {
		akk_svg_group_begin(s, "points");
		for (size_t i = 0; i < c->n; i++) {
			const struct akk_curve_row *r = &c->rows[i];
			const char *col = r->phase == AKK_CURVE_TRAIN ? C_TRAIN : C_VAL;
			if (r->phase == AKK_CURVE_FINAL)
				continue;
			if (isfinite(r->loss))
				akk_svg_circle(s, px(l, r->epoch), py(&l->loss, &l->loss.y, r->loss), 2.5, col, NULL);
			if (isfinite(r->accuracy))
				akk_svg_circle(s, px(l, r->epoch), py(&l->acc, &l->acc.y, 100 * r->accuracy),
					       2.5, col, NULL);
		}
		akk_svg_group_end(s);
	}
	if (nfinal) {
		akk_svg_group_begin(s, "final-pass");
		for (size_t i = 0; i < c->n; i++) {
			const struct akk_curve_row *r = &c->rows[i];
			double x = px(l, r->epoch);
			if (r->phase != AKK_CURVE_FINAL)
				continue;
			if (isfinite(r->loss))
				akk_svg_rect(s, x - 4.5, py(&l->loss, &l->loss.y, r->loss) - 4.5, 9, 9,
					     C_VAL, "#444444");
			if (isfinite(r->accuracy))
				akk_svg_rect(s, x - 4.5, py(&l->acc, &l->acc.y, 100 * r->accuracy) - 4.5,
					     9, 9, C_VAL, "#444444");
		}
		akk_svg_group_end(s);
	}
}

/* The best epoch's line and label; restored: it is early stopping's
 * epoch, whose weights the run restored. */
static void draw_best(struct akk_svg *s, const struct layout *l, const struct akk_curve_row *best,
		      int restored)
{
	double bestx = px(l, best->epoch);
	char text[256];

	akk_svg_group_begin(s, "best-epoch");
	akk_svg_line(s, bestx, l->loss.top, bestx, l->acc.top + l->acc.h, C_BEST, 1.5, "6 4");
	akk_svg_circle(s, bestx, py(&l->acc, &l->acc.y, 100 * best->accuracy), 6, "none", C_BEST);
	snprintf(text, sizeof(text), "best: epoch %d, %.2f%%%s", best->epoch,
		 100 * best->accuracy, restored ? " (early stopping's, restored)" :
		 best->phase == AKK_CURVE_FINAL ? " (final pass)" :
		 best->phase == AKK_CURVE_TRAIN ? " (training)" : "");
	if (bestx > l->left + 0.6 * l->width)
		akk_svg_text(s, bestx - 6, l->acc.top - 8, AKK_SVG_END, 12, C_BEST, 0, 1, text);
	else
		akk_svg_text(s, bestx + 6, l->acc.top - 8, AKK_SVG_START, 12, C_BEST, 0, 1, text);
	akk_svg_group_end(s);
}

/* The legend, then what the chart does not show as it is. */
static void draw_legend(struct akk_svg *s, const struct akk_curves *c, const struct layout *l,
			const struct census *n, int best, int thin)
{
	double lx, ny = l->acc.top + l->acc.h + 62;
	char text[256];

	akk_svg_group_begin(s, "legend");
	lx = legend_entry(s, l->left, 60, C_TRAIN, NULL, 0, "training");
	if (n->nval)
		lx = legend_entry(s, lx, 60, C_VAL, NULL, 0, "validation");
	if (n->nfinal)
		lx = legend_entry(s, lx, 60, C_VAL, NULL, 1, "final pass");
	lx = legend_entry(s, lx, 60, C_LR, "5 3", 0, "learning rate (right axis)");
	if (best)
		lx = legend_entry(s, lx, 60, C_BEST, "6 4", 0, "best epoch");
	if (c->segments > 1)
		legend_entry(s, lx, 60, C_RESUME, "2 3", 0, "resumed");
	akk_svg_group_end(s);

	akk_svg_group_begin(s, "note");
	if (!n->nval && !n->nfinal) {
		akk_svg_text(s, l->left, ny, AKK_SVG_START, 11, C_AXIS, 0, 0,
			     "no validation rows: the best epoch is the one of the highest training accuracy");
		ny += 15;
	}
	if (n->bad) {
		snprintf(text, sizeof(text), "not drawn: %ld value%s not finite (NaN or inf), the first "
			 "the %s %s of epoch %d (line %d)", n->bad, n->bad == 1 ? "" : "s",
			 n->firstbad->phase == AKK_CURVE_TRAIN ? "training" :
			 n->firstbad->phase == AKK_CURVE_VALIDATION ? "validation" : "final pass",
			 n->badname, n->firstbad->epoch, n->firstbad->line);
		akk_svg_text(s, l->left, ny, AKK_SVG_START, 11, "#b22222", 0, 0, text);
		ny += 15;
	}
	if (thin) {
		snprintf(text, sizeof(text), "%ld epochs: each pixel column shows the least and the "
			 "greatest value of its epochs", n->ntrain);
		akk_svg_text(s, l->left, ny, AKK_SVG_START, 11, C_AXIS, 0, 0, text);
	}
	akk_svg_group_end(s);
}

int akk_plot_curves(FILE *f, const struct akk_curves *c, const char *title,
		    const char *what, struct akk_err *e)
{
	const int TRAIN = 1 << AKK_CURVE_TRAIN, VAL = 1 << AKK_CURVE_VALIDATION,
		  FINAL = 1 << AKK_CURVE_FINAL, ALL = TRAIN | VAL | FINAL;
	struct layout l = { .left = LEFT, .width = AKK_PLOT_CURVES_W - LEFT - RIGHT };
	struct akk_svg s;
	struct akk_ticks xt;
	struct census n;
	double mn = 0, mx = 1;
	const struct akk_curve_row *best = NULL;
	int thin, bestmask;

	if (!c->n)
		return akk_err_set(e, "no rows to plot");
	count_rows(c, &n);
	epoch_range(c, &l);
	l.loss = (struct panel){ .top = 80, .h = 240 };
	l.acc = (struct panel){ .top = 360, .h = 240 };
	mn = 0, mx = 1;
	range_of(c, V_LOSS, ALL, &mn, &mx);
	akk_plot_ticks(mn, mx, 6, 0, &l.loss.y);
	mn = 0, mx = 100;
	range_of(c, V_ACC, ALL, &mn, &mx);
	akk_plot_ticks(mn, mx, 6, 0, &l.acc.y);
	mn = 0, mx = 0;
	range_of(c, V_LR, TRAIN, &mn, &mx);
	akk_plot_ticks(mn < 0 ? mn : 0, mx, 5, 0, &l.lr);
	akk_plot_ticks(l.emin, l.emax, 10, 1, &xt);
	/* A curve with more points than pixels keeps each column's extremes. */
	thin = n.ntrain > AKK_PLOT_MAX_POINTS || n.nval > AKK_PLOT_MAX_POINTS;

	akk_svg_begin(&s, f, AKK_PLOT_CURVES_W, AKK_PLOT_CURVES_H, title);
	akk_svg_text(&s, AKK_PLOT_CURVES_W / 2.0, 30, AKK_SVG_MIDDLE, 18, C_TEXT, 0, 1, title);
	draw_axes(&s, &l, &xt);
	if (c->segments > 1)
		draw_resumes(&s, c, &l);

	/* The best epoch: the highest validation accuracy (the final pass
	 * included), else the highest training accuracy. */
	bestmask = n.nval || n.nfinal ? VAL | FINAL : TRAIN;
	for (size_t i = 0; i < c->n; i++) {
		const struct akk_curve_row *r = &c->rows[i];
		if (c->mark_epoch > 0 ? r->phase == AKK_CURVE_VALIDATION &&
					r->epoch == c->mark_epoch :
		    (bestmask & 1 << r->phase) && isfinite(r->accuracy) &&
		    (!best || r->accuracy > best->accuracy))
			best = r;
	}

	/* The curves: lr behind, then training, then validation. */
	draw_curve(&s, c, &l, AKK_CURVE_TRAIN, V_LR, "lr", C_LR, "5 3", thin);
	draw_curve(&s, c, &l, AKK_CURVE_TRAIN, V_LOSS, "train-loss", C_TRAIN, NULL, thin);
	draw_curve(&s, c, &l, AKK_CURVE_TRAIN, V_ACC, "train-accuracy", C_TRAIN, NULL, thin);
	draw_curve(&s, c, &l, AKK_CURVE_VALIDATION, V_LOSS, "validation-loss", C_VAL, NULL, thin);
	draw_curve(&s, c, &l, AKK_CURVE_VALIDATION, V_ACC, "validation-accuracy", C_VAL, NULL, thin);
	draw_marks(&s, c, &l, n.nfinal);
	if (best)
		draw_best(&s, &l, best, c->mark_epoch > 0);
	draw_legend(&s, c, &l, &n, best != NULL, thin);
	return akk_svg_end(&s, what, e);
}

/* ---- the confusion matrix -------------------------------------------- */

/* ColorBrewer's Blues, white to dark blue. */
static const unsigned char blues[9][3] = {
	{ 0xf7, 0xfb, 0xff }, { 0xde, 0xeb, 0xf7 }, { 0xc6, 0xdb, 0xef },
	{ 0x9e, 0xca, 0xe1 }, { 0x6b, 0xae, 0xd6 }, { 0x42, 0x92, 0xc6 },
	{ 0x21, 0x71, 0xb5 }, { 0x08, 0x51, 0x9c }, { 0x08, 0x30, 0x6b },
};

static void blue(char out[8], double share)
{
	double t = (share < 0 ? 0 : share > 1 ? 1 : share) * 8;
	int i = t >= 8 ? 7 : (int)t;
	double f = t - i;
	int rgb[3];

	for (int k = 0; k < 3; k++)
		rgb[k] = (int)lround(blues[i][k] + f * (blues[i + 1][k] - blues[i][k]));
	snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

int akk_plot_confusion(FILE *f, const long *counts, int classes,
		       const char *const *names, const char *title,
		       const char *what, struct akk_err *e)
{
	const int C = classes;
	struct akk_svg s;
	long total = 0, diag = 0, maxc = 0;
	int cell, every_row, every_col, slanted, digits = 1, namelen = 1, W, H;
	double left, top = 78, grid, fs, lfs, tw, below, sx;
	char text[256], col[8];

	if (C < 1 || C > AKK_PLOT_MAX_CLASSES)
		return akk_err_set(e, "cannot draw a confusion matrix of %d classes (1 to %d)",
				   C, AKK_PLOT_MAX_CLASSES);
	for (int i = 0; i < C; i++) {
		int n = (int)strlen(names[i]);
		namelen = n > namelen ? n : namelen;
		diag += counts[(size_t)i * C + i];
		for (int j = 0; j < C; j++) {
			long v = counts[(size_t)i * C + j];
			total += v;
			maxc = v > maxc ? v : maxc;
		}
	}
	for (long m = maxc; m >= 10; m /= 10)
		digits++;
	if (namelen > 16)
		namelen = 16;
	cell = 560 / C;
	cell = cell > 56 ? 56 : cell < 2 ? 2 : cell;
	grid = (double)cell * C;
	/* Labels: one in every few cells when they do not fit in one; column
	 * labels wider than their cell and longer than three characters are
	 * slanted. tw estimates the widest label's width. */
	lfs = cell * 0.8 > 12 ? 12 : cell * 0.8 < 8 ? 8 : cell * 0.8;
	tw = 0.62 * lfs * namelen;
	every_row = (int)ceil(lfs * 1.2 / cell);
	slanted = tw + 4 > cell && namelen > 3;
	every_col = (int)ceil((slanted ? lfs * 1.3 : tw + 4) / cell);
	below = slanted ? tw * 0.71 + lfs + 8 : lfs + 8;
	left = 50 + namelen * 7.0;
	W = (int)(left + grid + 130);
	W = W < 460 ? 460 : W;
	H = (int)(top + grid + below + 40);
	/* Counts in the cells when they fit in them. */
	fs = (cell - 6) / (0.62 * digits);
	fs = fs > 13 ? 13 : fs;

	akk_svg_begin(&s, f, W, H, title);
	akk_svg_text(&s, W / 2.0, 28, AKK_SVG_MIDDLE, 18, C_TEXT, 0, 1, title);
	snprintf(text, sizeof(text), "%ld samples, accuracy %.2f%%; colour: share of the true class%s",
		 total, total ? 100.0 * diag / total : 0.0, fs >= 7 ? "" : " (cells too small for counts)");
	akk_svg_text(&s, W / 2.0, 50, AKK_SVG_MIDDLE, 12, C_AXIS, 0, 0, text);

	akk_svg_group_begin(&s, "cells");
	for (int i = 0; i < C; i++) {
		long row = 0;
		for (int j = 0; j < C; j++)
			row += counts[(size_t)i * C + j];
		for (int j = 0; j < C; j++) {
			long v = counts[(size_t)i * C + j];
			double share = row ? (double)v / row : 0, x = left + j * cell, y = top + i * cell;
			if (v) {
				blue(col, share);
				akk_svg_rect(&s, x, y, cell, cell, col, NULL);
			}
			if (fs >= 7) {
				snprintf(text, sizeof(text), "%ld", v);
				akk_svg_text(&s, x + cell / 2.0, y + cell / 2.0 + fs * 0.35, AKK_SVG_MIDDLE,
					     fs, !v ? "#bbbbbb" : share > 0.5 ? "#ffffff" : C_TEXT,
					     0, i == j, text);
			}
		}
	}
	akk_svg_rect(&s, left, top, grid, grid, "none", C_AXIS);
	akk_svg_group_end(&s);

	akk_svg_group_begin(&s, "row-labels");
	for (int i = 0; i < C; i += every_row) {
		snprintf(text, sizeof(text), "%.*s", namelen, names[i]);
		akk_svg_text(&s, left - 6, top + (i + 0.5) * cell + lfs * 0.35, AKK_SVG_END, lfs,
			     C_TEXT, 0, 0, text);
	}
	akk_svg_text(&s, 18, top + grid / 2, AKK_SVG_MIDDLE, 13, C_TEXT, -90, 0, "true class");
	akk_svg_group_end(&s);

	akk_svg_group_begin(&s, "column-labels");
	for (int j = 0; j < C; j += every_col) {
		double x = left + (j + 0.5) * cell, y = top + grid + 6 + lfs;
		snprintf(text, sizeof(text), "%.*s", namelen, names[j]);
		if (slanted)
			akk_svg_text(&s, x, y, AKK_SVG_END, lfs, C_TEXT, -45, 0, text);
		else
			akk_svg_text(&s, x, y, AKK_SVG_MIDDLE, lfs, C_TEXT, 0, 0, text);
	}
	akk_svg_text(&s, left + grid / 2, top + grid + below + 22, AKK_SVG_MIDDLE, 13, C_TEXT, 0, 0,
		     "predicted class");
	akk_svg_group_end(&s);

	/* The colour scale: 100% at the top. */
	akk_svg_group_begin(&s, "scale");
	sx = left + grid + 28;
	for (int k = 0; k < 50; k++) {
		blue(col, 1 - (k + 0.5) / 50);
		akk_svg_rect(&s, sx, top + k * grid / 50, 16, grid / 50 + 0.5, col, NULL);
	}
	akk_svg_rect(&s, sx, top, 16, grid, "none", C_AXIS);
	for (int k = 0; k <= 4; k++) {
		double y = top + grid - k * grid / 4;
		akk_svg_line(&s, sx + 16, y, sx + 20, y, C_AXIS, 1, NULL);
		snprintf(text, sizeof(text), "%d%%", 25 * k);
		akk_svg_text(&s, sx + 23, y + 4, AKK_SVG_START, 11, C_TEXT, 0, 0, text);
	}
	akk_svg_text(&s, sx + 70, top + grid / 2, AKK_SVG_MIDDLE, 12, C_TEXT, 90, 0,
		     "share of the true class");
	akk_svg_group_end(&s);
	return akk_svg_end(&s, what, e);
}
