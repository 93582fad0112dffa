/* svg.h - a small builder for standalone SVG files.
 *
 * Writes SVG 1.1 elements one by one into a FILE* (a file, or a buffer
 * through open_memstream/fmemopen). Coordinates are user units (pixels at
 * 100%), printed with one decimal. Every attribute is inline, so the file
 * needs no stylesheet, font file or script. Text from outside (a run's name,
 * a class name) is escaped for XML, and bytes XML cannot hold (control
 * characters, invalid UTF-8) become '?'. Write errors are sticky: the
 * functions return nothing and akk_svg_end reports the first failure. */
#ifndef AKK_SVG_H
#define AKK_SVG_H

#include <stdio.h>

#include "base/err.h"

struct akk_svg {
	FILE *f;		/* borrowed: the caller opens and closes it */
	int failed;		/* a write failed */
	int errnum;		/* its errno (0: unknown) */
	int open_groups;	/* <g> begun and not ended */
	int in_polyline;	/* between polyline_begin and polyline_end */
	long points;		/* of the current polyline */
};

/* The XML declaration and the <svg> root of width x height, with a <title>
 * (the tooltip and the accessible name; may be NULL) and a white
 * background. */
void akk_svg_begin(struct akk_svg *s, FILE *f, int width, int height,
		   const char *title);
/* Close the groups left open and the root, flush. 0, or -1 with e filled
 * ("cannot write 'what': reason") when any write failed. */
int akk_svg_end(struct akk_svg *s, const char *what, struct akk_err *e);

/* <g> with an optional class (NULL: none) that tests and stylesheets can
 * find; groups nest. */
void akk_svg_group_begin(struct akk_svg *s, const char *cls);
void akk_svg_group_end(struct akk_svg *s);

/* Colours are SVG colour strings ("#08306b", "none"); dash is a
 * stroke-dasharray ("4 3") or NULL for a solid line. */
void akk_svg_line(struct akk_svg *s, double x1, double y1, double x2, double y2,
		  const char *stroke, double width, const char *dash);
void akk_svg_rect(struct akk_svg *s, double x, double y, double w, double h,
		  const char *fill, const char *stroke);
/* A rectangle with corners rounded to radius r. */
void akk_svg_round_rect(struct akk_svg *s, double x, double y, double w, double h,
			double r, const char *fill, const char *stroke);
void akk_svg_circle(struct akk_svg *s, double cx, double cy, double r,
		    const char *fill, const char *stroke);
/* A polyline drawn point by point; cls may be NULL. */
void akk_svg_polyline_begin(struct akk_svg *s, const char *cls, const char *stroke,
			    double width, const char *dash);
void akk_svg_point(struct akk_svg *s, double x, double y);
void akk_svg_polyline_end(struct akk_svg *s);

enum akk_svg_anchor { AKK_SVG_START, AKK_SVG_MIDDLE, AKK_SVG_END };

/* Text at (x, y) (the baseline), sans-serif of size px; rotate is in
 * degrees about (x, y) (0: none); bold when bold != 0. */
void akk_svg_text(struct akk_svg *s, double x, double y, enum akk_svg_anchor anchor,
		  double size, const char *fill, double rotate, int bold,
		  const char *text);

/* Write text to f escaped for XML character data or an attribute value
 * (&, <, >, ", ' as entities; control bytes and invalid UTF-8 as '?').
 * Returns -1 when a write failed. */
int akk_svg_escape(FILE *f, const char *text);

#endif
