/* svgplot.c — the SVG writer. One 480x320 cell per panel: the title band on top, tick and
   axis labels in the left and bottom margins, the legend inside the plot area where it
   hides no data. Linear ticks step by 1, 2 or 5 x 10^k; log ticks sit on decades. Bands
   (confidence intervals) are shaded under the lines. Text
   widths are estimated from character counts (no font metrics): long titles and labels
   are cut with an ellipsis rather than run into the next panel. Coordinates are printed
   to 0.1 px, which keeps long series small. */
#include "svgplot.h"

#include "core/atomic_file.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* cell size, overall title band, plot-area margins inside a cell (px) */
enum { CELL_W = 480, CELL_H = 320, TITLE_H = 36, ML = 72, MR = 18, MT = 30, MB = 48 };
enum { MAXTICKS = 256, LEGEND_CH = 40 /* legend labels are cut past this */ };

static const char *const palette[PRT_NCOLORS] = {"#0072B2", "#D55E00", "#009E73", "#E69F00", "#56B4E9", "#CC79A7"};

static const char *color_of(int c) {
    if (c == PRT_BLACK) return "#000000";
    if (c == PRT_GREY) return "#999999";
    return palette[((c % PRT_NCOLORS) + PRT_NCOLORS) % PRT_NCOLORS];
}

/* An axis in its own units: v for a linear axis, log10 v for a log one. step is the tick
   spacing (linear) or how many decades apart the labelled ones are (log). */
typedef struct Axis {
    double lo, hi, step;
    int log;
} Axis;

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static long npoints(const PrtSeries *s) { return s->y && s->n > 0 ? s->n : 0; }

/* Whether (x, y) can be drawn on p's axes. Magnitudes past 1e300 count as infinite so
   that hi - lo below cannot overflow. */
static int drawable(const PrtPanel *p, double x, double y) {
    return fabs(x) < 1e300 && fabs(y) < 1e300 && (!p->logx || x > 0) && (!p->logy || y > 0);
}

/* Point i of s, and whether it can be drawn. */
static int point(const PrtPanel *p, const PrtSeries *s, long i, double *x, double *y) {
    *x = s->x ? s->x[i] : (double)i;
    *y = s->y[i];
    return drawable(p, *x, *y);
}

/* The band of s at point i (lo, hi), and whether both ends can be drawn. */
static int band_point(const PrtPanel *p, const PrtSeries *s, long i, double *x, double *lo, double *hi) {
    if (!s->lo || !s->hi) return 0;
    *x = s->x ? s->x[i] : (double)i;
    *lo = s->lo[i], *hi = s->hi[i];
    return drawable(p, *x, *lo) && drawable(p, *x, *hi);
}

/* 1, 2 or 5 x 10^k: the nearest to raw, or the least not below it. */
static double nice(double raw, int up) {
    double p = pow(10, floor(log10(raw))), f = raw / p;
    if (up) return (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
}

/* About `target` ticks over [lo, hi], which is kept if tight (x: time should end where the
   data ends) or else widened to the ticks around it. An empty range (no points) becomes
   [0, 1]; one too narrow to tick (all values equal) is widened by 10% of its size, or by 1
   around zero. */
static void lin_axis(Axis *a, double lo, double hi, int target, int tight) {
    if (!(lo <= hi)) lo = 0, hi = 1;
    double mag = fmax(fabs(lo), fabs(hi));
    if (hi - lo <= 1e-9 * mag || hi - lo < 1e-290) {
        double d = mag > 1e-290 ? 0.1 * mag : 1;
        lo -= d, hi += d;
    }
    a->step = nice((hi - lo) / target, 0);
    a->lo = tight ? lo : floor(lo / a->step + 1e-9) * a->step;
    a->hi = tight ? hi : ceil(hi / a->step - 1e-9) * a->step;
    a->log = 0;
}

/* A count's axis (epochs): whole-number ticks, 1, 2 or 5 x 10^k apart, over at least one
   step (a single epoch is a point on [lo, lo + 1], not a sliver) */
static void whole_axis(Axis *a, double lo, double hi) {
    if (!(lo <= hi)) lo = 0, hi = 1;
    lo = floor(lo), hi = fmax(ceil(hi), lo + 1);
    a->step = fmax(1, nice((hi - lo) / 6, 0));
    a->lo = floor(lo / a->step) * a->step, a->hi = ceil(hi / a->step) * a->step;
    a->log = 0;
}

/* Whole decades around [lo, hi] (both > 0), at least two; past 8 decades, only every 2nd,
   5th, 10th, ... decade is ticked, and the ends are ticked ones. */
static void log_axis(Axis *a, double lo, double hi) {
    if (!(lo <= hi)) lo = 0.1, hi = 1;
    a->lo = floor(log10(lo) + 1e-9);
    a->hi = ceil(log10(hi) - 1e-9);
    if (a->hi - a->lo < 1) a->lo -= 1, a->hi += 1;
    a->step = a->hi - a->lo <= 8 ? 1 : nice((a->hi - a->lo) / 8, 1);
    a->lo = floor(a->lo / a->step) * a->step;
    a->hi = ceil(a->hi / a->step) * a->step;
    a->log = 1;
}

/* Tick positions in axis units, and which are labelled (major). Log axes spanning at most
   6 decades also get unlabelled minor ticks at 2..9 x 10^k. */
static int ticks(const Axis *a, double *u, int *major) {
    int n = 0, minors = a->log && a->hi - a->lo <= 6;
    double first = ceil(a->lo / a->step - 1e-9) * a->step;
    long m = lround(floor((a->hi - first) / a->step + 1e-9));
    for (long i = 0; i <= m && n < MAXTICKS - 8; i++) {
        double v = first + (double)i * a->step;
        u[n] = v, major[n++] = 1;
        for (int d = 2; minors && i < m && d <= 9; d++) u[n] = v + log10(d), major[n++] = 0;
    }
    return n;
}

/* Linear ticks with as many decimals as the step needs ("0.5", "1.0", "-2"), or past that
   range "1.2e6" and "5e-7" (not "1.2e+06"); "1e-4" or "1" for decades. */
static void tick_label(char *b, size_t len, const Axis *a, double u) {
    if (a->log) {
        if (u == 0) snprintf(b, len, "1");
        else snprintf(b, len, "1e%d", (int)u);
        return;
    }
    if (fabs(u) < 1e-6 * a->step) u = 0; /* not 1.3e-17 where 0 is meant */
    int k = (int)floor(log10(a->step) + 1e-9);
    if (fmax(fabs(a->lo), fabs(a->hi)) < 1e6 && k >= -4) {
        snprintf(b, len, "%.*f", k < 0 ? -k : 0, u);
        return;
    }
    int p = u == 0 ? 1 : (int)floor(log10(fabs(u)) + 1e-9) - k + 1;
    snprintf(b, len, "%.*g", p < 1 ? 1 : p > 15 ? 15 : p, u);
    char *e = strchr(b, 'e');
    if (!e) return;
    char *d = e + 1, *s = d;
    if (*s == '+') s++;
    else if (*s == '-') d++, s++;
    while (*s == '0' && s[1]) s++;
    memmove(d, s, strlen(s) + 1);
}

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Text escaped for XML, cut to maxch characters with an ellipsis where it would not fit
   (maxch 0: never); control characters, which XML 1.0 forbids, become '?'. */
static void put_text(FILE *f, double x, double y, const char *attrs, const char *s, size_t maxch) {
    size_t keep = maxch && utf8_len(s) > maxch ? maxch - 1 : (size_t)-1, n = 0;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c & 0xC0) != 0x80 && n++ == keep) {
            fputs("\xe2\x80\xa6", f);
            break;
        }
        if (c == '&') fputs("&amp;", f);
        else if (c == '<') fputs("&lt;", f);
        else if (c == '>') fputs("&gt;", f);
        else fputc(c < 0x20 ? '?' : c, f);
    }
    fputs("</text>\n", f);
}

static void stroke_style(FILE *f, const PrtSeries *s) {
    double sw = s->width > 0 ? s->width : 1.5, d = fmax(sw, 1.5);
    fprintf(f, " stroke=\"%s\" stroke-width=\"%.2g\"", color_of(s->color), sw);
    if (s->opacity > 0 && s->opacity < 1) fprintf(f, " stroke-opacity=\"%.2g\"", s->opacity);
    if (s->dashed) fprintf(f, " stroke-dasharray=\"%.1f %.1f\"", 3 * d, 2.5 * d);
}

/* A panel's plot area [x0, x1] x [y0, y1] in px (y0 on top) and its axes. */
typedef struct Frame {
    double x0, x1, y0, y1;
    Axis ax, ay;
} Frame;

/* axis units u to px, lo at from and hi at to */
static double along(const Axis *a, double u, double from, double to) {
    return from + (u - a->lo) / (a->hi - a->lo) * (to - from);
}
static double unit(const Axis *a, double v) { return a->log ? log10(v) : v; }
static double px(const Frame *fr, double x) { return along(&fr->ax, unit(&fr->ax, x), fr->x0, fr->x1); }
static double py(const Frame *fr, double y) { return along(&fr->ay, unit(&fr->ay, y), fr->y1, fr->y0); }

/* The legend: its box at (x, y), entries in ncols columns of colw px, 16 px a row. */
typedef struct Legend {
    double x, y, w, h, colw;
    int n, ncols;
} Legend;

static int in_box(const Frame *fr, const Legend *lg, double x, double y) {
    double X = px(fr, x), Y = py(fr, y);
    return X >= lg->x && X <= lg->x + lg->w && Y >= lg->y && Y <= lg->y + lg->h;
}

/* The points (and band ends) the legend box would hide. */
static long covered(const PrtPanel *p, const Frame *fr, const Legend *lg) {
    long inside = 0;
    double x, y, lo, hi;
    for (int k = 0; k < p->nseries; k++)
        for (long i = 0; i < npoints(&p->series[k]); i++) {
            if (point(p, &p->series[k], i, &x, &y)) inside += in_box(fr, lg, x, y);
            if (band_point(p, &p->series[k], i, &x, &lo, &hi)) inside += in_box(fr, lg, x, lo) + in_box(fr, lg, x, hi);
        }
    return inside;
}

/* Places the legend where it covers no point: in a corner (top-right, top-left,
   bottom-right, bottom-left), as one column or a few; failing that (rollouts fill the
   whole box), across the top, with the y axis raised so that the highest point, ytop,
   stays below it, unless the data would keep less than half the height; failing that,
   over the fewest points. */
static void place_legend(Legend *lg, const PrtPanel *p, Frame *fr, double ytop) {
    size_t chars = 0;
    lg->n = 0;
    for (int k = 0; k < p->nseries; k++)
        if (p->series[k].label && *p->series[k].label) {
            lg->n++;
            size_t c = utf8_len(p->series[k].label);
            if (c > chars) chars = c > LEGEND_CH ? LEGEND_CH : c;
        }
    if (!lg->n) return;
    lg->colw = 42 + 6.4 * (double)chars;
    int maxcols = (int)((fr->x1 - fr->x0 - 12) / lg->colw);
    maxcols = maxcols < 1 ? 1 : maxcols > lg->n ? lg->n : maxcols;
    Legend best = *lg, c = *lg;
    long least = -1;
    for (c.ncols = 1; c.ncols <= maxcols && least != 0; c.ncols++) {
        c.w = c.ncols * c.colw, c.h = 8 + 16.0 * ((c.n + c.ncols - 1) / c.ncols);
        for (int corner = 0; corner < 4 && least != 0; corner++) {
            c.x = corner & 1 ? fr->x0 + 6 : fr->x1 - 6 - c.w;
            c.y = corner & 2 ? fr->y1 - 6 - c.h : fr->y0 + 6;
            long n = covered(p, fr, &c);
            if (least < 0 || n < least) least = n, best = c;
        }
    }
    *lg = best;
    if (least == 0) return;
    c.ncols = maxcols, c.w = c.ncols * c.colw, c.h = 8 + 16.0 * ((c.n + c.ncols - 1) / c.ncols);
    double keep = 1 - (c.h + 12) / (fr->y1 - fr->y0); /* the part of the height left to the data */
    if (keep < 0.5) return;
    Axis *a = &fr->ay;
    double hi = ceil((a->lo + (unit(a, ytop) - a->lo) / keep) / a->step - 1e-9) * a->step;
    if (p->ymax > 0 && hi > unit(a, p->ymax) + 1e-9 * a->step) return; /* over the fewest points */
    a->hi = hi;
    c.x = fr->x0 + 6, c.y = fr->y0 + 6;
    *lg = c;
}

static void draw_legend(FILE *f, const PrtPanel *p, const Legend *lg) {
    if (!lg->n) return;
    fprintf(f, "<g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"white\" fill-opacity=\"0.85\" "
               "stroke=\"#cccccc\"/>\n",
            lg->x, lg->y, lg->w, lg->h);
    int j = 0;
    for (int k = 0; k < p->nseries; k++) {
        const PrtSeries *s = &p->series[k];
        if (!s->label || !*s->label) continue;
        double x = lg->x + lg->colw * (j % lg->ncols), y = lg->y + 12 + 16.0 * (j / lg->ncols);
        j++;
        if (s->lo && s->hi) /* the band's swatch behind its line */
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"10\" fill=\"%s\" opacity=\"0.2\"/>\n", x + 8,
                    y - 5, color_of(s->color));
        if (s->markers != 2) {
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", x + 8, y, x + 30, y);
            stroke_style(f, s);
            fputs("/>\n", f);
        }
        if (s->markers) fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x + 19, y, color_of(s->color));
        put_text(f, x + 36, y + 4, "font-size=\"11\"", s->label, LEGEND_CH);
    }
    fputs("</g>\n", f);
}

static void line(FILE *f, double xa, double ya, double xb, double yb, const char *color) {
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", xa, ya, xb, yb, color);
}

/* The bands, under every line: one filled outline (along hi, back along lo) per run of
   points whose band can be drawn. */
static void draw_bands(FILE *f, const PrtPanel *p, const Frame *fr) {
    double x, lo, hi;
    for (int k = 0; k < p->nseries; k++) {
        const PrtSeries *s = &p->series[k];
        long n = npoints(s);
        for (long i = 0; i < n;) {
            if (!band_point(p, s, i, &x, &lo, &hi)) {
                i++;
                continue;
            }
            long end = i;
            while (end < n && band_point(p, s, end, &x, &lo, &hi)) end++;
            fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.18\" stroke=\"none\" d=\"", color_of(s->color));
            for (long j = i; j < end; j++) {
                band_point(p, s, j, &x, &lo, &hi);
                fprintf(f, "%s%.1f %.1f", j == i ? "M" : " L", px(fr, x), py(fr, hi));
            }
            for (long j = end - 1; j >= i; j--) {
                band_point(p, s, j, &x, &lo, &hi);
                fprintf(f, " L%.1f %.1f", px(fr, x), py(fr, lo));
            }
            fputs(" Z\"/>\n", f);
            i = end;
        }
    }
}

/* A series' line: one path. A point that cannot be drawn lifts the pen; a lone point is a
   zero-length subpath, which round caps show as a dot. */
static void draw_path(FILE *f, const PrtPanel *p, const PrtSeries *s, const Frame *fr) {
    long n = npoints(s), i = 0, run = 0;
    double x, y;
    while (i < n && !point(p, s, i, &x, &y)) i++;
    if (i == n) return;
    fputs("<path", f);
    stroke_style(f, s);
    fputs(" d=\"", f);
    for (int started = 0; i < n; i++) {
        if (!point(p, s, i, &x, &y)) {
            if (run == 1) fputs(" h0", f);
            run = 0;
            continue;
        }
        fprintf(f, "%s%.1f %.1f", !started ? "M" : run ? " L" : " M", px(fr, x), py(fr, y));
        run++, started = 1;
    }
    fputs(run == 1 ? " h0\"/>\n" : "\"/>\n", f);
}

/* Each series: its line (unless dots alone), then its dots */
static void draw_series(FILE *f, const PrtPanel *p, const Frame *fr) {
    fputs("<g fill=\"none\" stroke-linecap=\"round\" stroke-linejoin=\"round\">\n", f);
    for (int k = 0; k < p->nseries; k++) {
        const PrtSeries *s = &p->series[k];
        double x, y;
        if (s->markers != 2) draw_path(f, p, s, fr);
        for (long j = 0; s->markers && j < npoints(s); j++)
            if (point(p, s, j, &x, &y))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\" stroke=\"none\"/>\n", px(fr, x), py(fr, y),
                        color_of(s->color));
    }
    fputs("</g>\n", f);
}

/* One scale for x and y: the axis with more units per pixel kept, the other widened about
   its middle to the same, with ticks of the kept axis's step */
static void equal_scales(Frame *fr) {
    double sx = (fr->ax.hi - fr->ax.lo) / (fr->x1 - fr->x0), sy = (fr->ay.hi - fr->ay.lo) / (fr->y1 - fr->y0);
    Axis *a = sx < sy ? &fr->ax : &fr->ay;
    double s = fmax(sx, sy), mid = 0.5 * (a->lo + a->hi), half = 0.5 * s * (a == &fr->ax ? fr->x1 - fr->x0 : fr->y1 - fr->y0);
    a->lo = mid - half, a->hi = mid + half;
    a->step = (sx < sy ? fr->ay : fr->ax).step;
}

static void panel(FILE *f, const PrtPanel *p, double cx, double cy) {
    Frame fr = {.x0 = cx + ML, .x1 = cx + CELL_W - MR, .y0 = cy + MT, .y1 = cy + CELL_H - MB};
    /* the axes fit the points that will be drawn, and only those */
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY, x, y, blo, bhi;
    for (int k = 0; k < p->nseries; k++)
        for (long i = 0; i < npoints(&p->series[k]); i++) {
            if (point(p, &p->series[k], i, &x, &y))
                xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, y), yhi = fmax(yhi, y);
            if (band_point(p, &p->series[k], i, &x, &blo, &bhi))
                xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, blo), yhi = fmax(yhi, bhi);
        }
    if (p->logx) log_axis(&fr.ax, xlo, xhi);
    else if (p->xwhole) whole_axis(&fr.ax, xlo, xhi);
    else lin_axis(&fr.ax, xlo, xhi, 6, 1);
    if (p->logy) log_axis(&fr.ay, ylo, yhi);
    else lin_axis(&fr.ay, ylo, yhi, 5, 0);
    if (p->ymax > 0 && yhi <= p->ymax && fr.ay.hi > unit(&fr.ay, p->ymax)) fr.ay.hi = unit(&fr.ay, p->ymax);
    if (p->equal && !p->logx && !p->logy) equal_scales(&fr);
    Legend lg;
    place_legend(&lg, p, &fr, yhi);

    fputs("<g>\n", f);
    if (p->title)
        put_text(f, (fr.x0 + fr.x1) / 2, cy + 19, "text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\"",
                 p->title, (CELL_W - 20) / 8);
    double u[MAXTICKS];
    int major[MAXTICKS];
    char lab[64];
    /* grid first so the data lies on top of it; tick marks point outwards; minor grid
       lines only where there are few decades, else they crowd */
    fputs("<g stroke-width=\"1\">\n", f);
    int nt = ticks(&fr.ax, u, major);
    for (int i = 0; i < nt; i++) {
        double X = along(&fr.ax, u[i], fr.x0, fr.x1);
        line(f, X, fr.y0, X, fr.y1, major[i] ? "#e6e6e6" : "#f4f4f4");
        line(f, X, fr.y1, X, fr.y1 + (major[i] ? 4 : 2.5), "#333333");
        if (!major[i]) continue;
        if (fr.ax.log && u[i] >= 0 && u[i] <= 4) snprintf(lab, sizeof lab, "%.0f", pow(10, u[i])); /* counts: 100, not 1e2 */
        else tick_label(lab, sizeof lab, &fr.ax, u[i]);
        put_text(f, X, fr.y1 + 17, "text-anchor=\"middle\" font-size=\"11\"", lab, 0);
    }
    nt = ticks(&fr.ay, u, major);
    for (int i = 0; i < nt; i++) {
        double Y = along(&fr.ay, u[i], fr.y1, fr.y0);
        if (major[i] || fr.ay.hi - fr.ay.lo <= 3) line(f, fr.x0, Y, fr.x1, Y, major[i] ? "#e6e6e6" : "#f4f4f4");
        line(f, fr.x0 - (major[i] ? 4 : 2.5), Y, fr.x0, Y, "#333333");
        if (!major[i]) continue;
        tick_label(lab, sizeof lab, &fr.ay, u[i]);
        put_text(f, fr.x0 - 7, Y + 4, "text-anchor=\"end\" font-size=\"11\"", lab, 0);
    }
    fputs("</g>\n", f);
    draw_bands(f, p, &fr);
    draw_series(f, p, &fr);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333333\"/>\n", fr.x0,
            fr.y0, fr.x1 - fr.x0, fr.y1 - fr.y0);
    if (p->xlabel)
        put_text(f, (fr.x0 + fr.x1) / 2, fr.y1 + 36, "text-anchor=\"middle\" font-size=\"12\"", p->xlabel,
                 (size_t)(fr.x1 - fr.x0) / 7);
    if (p->ylabel) {
        char attrs[128];
        double lx = cx + 16, ly = (fr.y0 + fr.y1) / 2;
        snprintf(attrs, sizeof attrs, "text-anchor=\"middle\" font-size=\"12\" transform=\"rotate(-90 %.1f %.1f)\"", lx,
                 ly);
        put_text(f, lx, ly, attrs, p->ylabel, (size_t)(fr.y1 - fr.y0) / 7);
    }
    draw_legend(f, p, &lg);
    fputs("</g>\n", f);
}

int prt_svg_write(const char *path, const char *title, const PrtPanel *panels, int rows, int cols, char *err,
                  size_t errlen) {
    if (!panels || rows < 1 || cols < 1) {
        set_err(err, errlen, "%s: nothing to plot (%d x %d panels)", path, rows, cols);
        return -1;
    }
    PrtAtomicFile af;
    if (prt_atomic_open(&af, path, err, errlen) != 0) return -1;
    FILE *f = af.f;
    int top = title ? TITLE_H : 0, w = cols * CELL_W, h = top + rows * CELL_H;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" fill=\"#222222\">\n"
               "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
            w, h, w, h, w, h);
    if (title)
        put_text(f, w / 2.0, 24, "text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\"", title,
                 (size_t)(w - 20) / 10);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const PrtPanel *pn = &panels[r * cols + c];
            if (pn->title || pn->nseries > 0) panel(f, pn, c * CELL_W, top + r * CELL_H); /* else a blank cell */
        }
    fputs("</svg>\n", f);
    return prt_atomic_commit(&af, err, errlen);
}
