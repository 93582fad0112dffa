/* svg.c - standalone SVG written element by element, text escaped. */
#include "io/svg.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#define FONT "font-family=\"DejaVu Sans,Liberation Sans,Arial,sans-serif\""

static void out(struct akk_svg *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct akk_svg *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failed)
		return;
	va_start(ap, fmt);
	if (vfprintf(s->f, fmt, ap) < 0) {
		s->failed = 1;
		s->errnum = errno;
	}
	va_end(ap);
}

/* The length of the valid UTF-8 sequence at p (1 to 4), 0 when invalid. */
static int utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	int n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		c >= 0xf0 && c <= 0xf4 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if (n > 1 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
		      (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f)))
		return 0;	/* overlong, surrogate, beyond U+10FFFF */
	return n;
}

int akk_svg_escape(FILE *f, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	int bad = 0;

	while (*p && !bad) {
		int n = utf8_len(p);
		const char *ent = NULL;

		switch (*p) {
		case '&': ent = "&amp;"; break;
		case '<': ent = "&lt;"; break;
		case '>': ent = "&gt;"; break;
		case '"': ent = "&quot;"; break;
		case '\'': ent = "&apos;"; break;
		}
		if (ent)
			bad = fputs(ent, f) == EOF;
		else if (!n || *p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] < 0xa0))
			bad = fputc('?', f) == EOF;	/* C0, DEL, C1 (U+0080-U+009F) */
		else
			bad = fwrite(p, 1, (size_t)n, f) != (size_t)n;
		p += n ? n : 1;
	}
	return bad ? -1 : 0;
}

void akk_svg_begin(struct akk_svg *s, FILE *f, int width, int height,
		   const char *title)
{
	*s = (struct akk_svg){ .f = f };
	out(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
	       "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
	    width, height, width, height);
	if (title) {
		out(s, "<title>");
		if (!s->failed && akk_svg_escape(f, title)) {
			s->failed = 1;
			s->errnum = errno;
		}
		out(s, "</title>\n");
	}
	out(s, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
}

int akk_svg_end(struct akk_svg *s, const char *what, struct akk_err *e)
{
	if (s->in_polyline)
		akk_svg_polyline_end(s);
	while (s->open_groups > 0)
		akk_svg_group_end(s);
	out(s, "</svg>\n");
	if (!s->failed && (fflush(s->f) || ferror(s->f))) {
		s->failed = 1;
		s->errnum = errno;
	}
	if (s->failed)
		return akk_err_set(e, "cannot write '%s': %s", what,
				   s->errnum ? strerror(s->errnum) : "write error");
	return 0;
}

void akk_svg_group_begin(struct akk_svg *s, const char *cls)
{
	if (cls)
		out(s, "<g class=\"%s\">\n", cls);
	else
		out(s, "<g>\n");
	s->open_groups++;
}

void akk_svg_group_end(struct akk_svg *s)
{
	if (s->open_groups <= 0)
		return;
	out(s, "</g>\n");
	s->open_groups--;
}

static void stroke_attrs(struct akk_svg *s, const char *stroke, double width,
			 const char *dash)
{
	out(s, " stroke=\"%s\" stroke-width=\"%.1f\"", stroke, width);
	if (dash)
		out(s, " stroke-dasharray=\"%s\"", dash);
}

void akk_svg_line(struct akk_svg *s, double x1, double y1, double x2, double y2,
		  const char *stroke, double width, const char *dash)
{
	out(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", x1, y1, x2, y2);
	stroke_attrs(s, stroke, width, dash);
	out(s, "/>\n");
}

void akk_svg_rect(struct akk_svg *s, double x, double y, double w, double h,
		  const char *fill, const char *stroke)
{
	out(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"",
	    x, y, w, h, fill);
	if (stroke)
		out(s, " stroke=\"%s\"", stroke);
	out(s, "/>\n");
}

void akk_svg_round_rect(struct akk_svg *s, double x, double y, double w, double h,
			double r, const char *fill, const char *stroke)
{
	out(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"%.1f\" "
	       "fill=\"%s\"", x, y, w, h, r, fill);
	if (stroke)
		out(s, " stroke=\"%s\" stroke-width=\"1.5\"", stroke);
	out(s, "/>\n");
}

void akk_svg_circle(struct akk_svg *s, double cx, double cy, double r,
		    const char *fill, const char *stroke)
{
	out(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"", cx, cy, r, fill);
	if (stroke)
		out(s, " stroke=\"%s\" stroke-width=\"1.5\"", stroke);
	out(s, "/>\n");
}

void akk_svg_polyline_begin(struct akk_svg *s, const char *cls, const char *stroke,
			    double width, const char *dash)
{
	out(s, "<polyline");
	if (cls)
		out(s, " class=\"%s\"", cls);
	out(s, " fill=\"none\" stroke-linejoin=\"round\"");
	stroke_attrs(s, stroke, width, dash);
	out(s, " points=\"");
	s->in_polyline = 1;
	s->points = 0;
}

void akk_svg_point(struct akk_svg *s, double x, double y)
{
	/* A few points per line keep the file readable in an editor. */
	out(s, "%s%.1f,%.1f", !s->points ? "" : s->points % 8 ? " " : "\n", x, y);
	s->points++;
}

void akk_svg_polyline_end(struct akk_svg *s)
{
	out(s, "\"/>\n");
	s->in_polyline = 0;
}

static const char *const anchors[] = { "start", "middle", "end" };

void akk_svg_text(struct akk_svg *s, double x, double y, enum akk_svg_anchor anchor,
		  double size, const char *fill, double rotate, int bold,
		  const char *text)
{
	out(s, "<text x=\"%.1f\" y=\"%.1f\" " FONT " font-size=\"%.1f\" fill=\"%s\"",
	    x, y, size, fill);
	if (anchor != AKK_SVG_START)
		out(s, " text-anchor=\"%s\"", anchors[anchor]);
	if (rotate != 0)
		out(s, " transform=\"rotate(%.1f %.1f %.1f)\"", rotate, x, y);
	if (bold)
		out(s, " font-weight=\"bold\"");
	out(s, ">");
	if (!s->failed && akk_svg_escape(s->f, text)) {
		s->failed = 1;
		s->errnum = errno;
	}
	out(s, "</text>\n");
}

