/* svgplot.h — line plots as standalone SVG 1.1 files, for what `physc run` shows a person:
   rollouts of a learned model against the truth, error curves on a log axis, a grid of
   panels in one file; shaded bands (confidence intervals) and log-log plots for comparing
   models (physc compare). Needs only libc and libm. */
#ifndef PRT_SVGPLOT_H
#define PRT_SVGPLOT_H
#include <stddef.h>

/* Colours: Okabe-Ito (colour-blind safe) without its yellow, which is too pale on white,
   cycled by index; two named ones for reference lines such as a median. */
enum { PRT_NCOLORS = 6, PRT_BLACK = -1, PRT_GREY = -2 };

typedef struct PrtSeries {
    const double *x, *y; /* n points each; x NULL means 0, 1, ..., n-1 */
    long n;
    const char *label;   /* legend text, or NULL for no legend entry */
    int color;           /* index into the palette (mod PRT_NCOLORS), or PRT_BLACK, PRT_GREY */
    int dashed;          /* 0 solid, 1 dashed */
    double width;        /* stroke width in px; 0 means 1.5 */
    const double *lo, *hi; /* NULL, or a band from lo to hi at each x (a confidence interval),
                            shaded in the series' colour under every line */
    int markers;         /* 1: a dot at each point (few points, such as one per data size);
                            2: the dots alone, no line (samples of a curve drawn by another) */
    double opacity;      /* 0: opaque; else the line's opacity (a wide pale line under a sharp one) */
} PrtSeries;

typedef struct PrtPanel {
    const char *title, *xlabel, *ylabel; /* each may be NULL */
    int logy;            /* log10 y axis: points with y <= 0 are skipped like NaN */
    const PrtSeries *series;
    int nseries;
    double ymax;         /* > 0: the y axis ends there at most (a quantity bounded above, such
                            as a relative error): no legend room is made above it */
    int logx;            /* log10 x axis, likewise; decades 1 to 10^4 labelled 1 .. 10000 */
    int xwhole;          /* x counts (epochs): ticks on whole numbers only, at least [lo, lo + 1] */
    int equal;           /* x and y in the same units (an orbit): one scale for both, the shorter
                            range widened about its middle (linear axes) */
} PrtPanel;

/* Writes rows x cols panels (row-major in panels: rows * cols of them), each about 480x320
   px, with title (may be NULL) on top. A panel with no title and no series, such as a
   zeroed one padding the last row, leaves its cell blank. Axes fit the drawable points:
   those with finite x and y (and y > 0 on a log axis); any other point breaks its line.
   Returns 0, or -1 with a message naming path in err (err may be NULL). */
int prt_svg_write(const char *path, const char *title, const PrtPanel *panels, int rows, int cols, char *err,
                  size_t errlen);

#endif
