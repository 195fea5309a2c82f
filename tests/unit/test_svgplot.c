/* test_svgplot.c — the SVG plots: well-formed enough for any viewer (balanced groups, one
   path per drawn series, escaped text), nice linear ticks and decade ticks on log axes,
   NaN and non-positive log values breaking the line, degenerate data giving no "nan" or
   "inf" in the file, bands and log-log axes, and an unwritable path reported. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/svgplot.h"

static char *slurp(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    size_t got = fread(s, 1, (size_t)len, fp);
    s[got] = 0;
    fclose(fp);
    return s;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Whether some text element reads like 0.30000000000000004 or 0.49999999999. */
static int noisy_label(const char *s) {
    for (const char *e = strstr(s, "</text>"); e; e = strstr(e + 1, "</text>")) {
        const char *b = e;
        while (b > s && b[-1] != '>') b--;
        for (const char *c = b; c + 4 <= e; c++)
            if (!strncmp(c, "0000", 4) || !strncmp(c, "9999", 4)) return 1;
    }
    return 0;
}

/* How many path vertices lie under a legend box (every panel's box against every path;
   panels do not overlap, so other panels' points never count). */
static int hidden_points(const char *s) {
    int hidden = 0;
    for (const char *r = strstr(s, "<rect "); r; r = strstr(r + 1, "<rect ")) {
        double x, y, w, h;
        if (!strstr(r, "fill-opacity") || strstr(r, "fill-opacity") > strchr(r, '>')) continue;
        if (sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &x, &y, &w, &h) != 4) continue;
        for (const char *d = strstr(s, " d=\""); d; d = strstr(d + 1, " d=\"")) {
            const char *e = strchr(d + 4, '"');
            for (const char *c = d + 4; c < e; c++) {
                double px, py;
                int used;
                if ((*c == 'M' || *c == 'L') && sscanf(c + 1, "%lf %lf%n", &px, &py, &used) == 2)
                    hidden += px >= x && px <= x + w && py >= y && py <= y + h;
            }
        }
    }
    return hidden;
}

/* Writes the plot, reads it back and checks what every file must satisfy; the text is
   the caller's to free (NULL if writing failed). */
static char *plot(const char *dir, const char *name, const char *title, const PrtPanel *pn, int rows, int cols,
                  int want_paths) {
    char path[256], err[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = prt_svg_write(path, title, pn, rows, cols, err, sizeof err);
    CHECK(rc == 0, "%s: rc %d: %s", name, rc, err);
    char *s = slurp(path);
    CHECK(s != NULL, "%s: cannot read back", name);
    if (!s) return NULL;
    size_t len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == ' ')) len--;
    CHECK(strncmp(s, "<?xml", 5) == 0 || strncmp(s, "<svg", 4) == 0, "%s: does not start as SVG", name);
    CHECK(len >= 6 && strncmp(s + len - 6, "</svg>", 6) == 0, "%s: does not end with </svg>", name);
    CHECK(count(s, "<svg") == 1, "%s: %d <svg elements", name, count(s, "<svg"));
    int open = count(s, "<g>") + count(s, "<g "), close = count(s, "</g>");
    CHECK(open == close, "%s: %d <g> but %d </g>", name, open, close);
    CHECK(count(s, "<text") == count(s, "</text>"), "%s: unbalanced <text>", name);
    CHECK(count(s, "<path") == want_paths, "%s: %d paths, want %d", name, count(s, "<path"), want_paths);
    CHECK(!strstr(s, "nan") && !strstr(s, "inf"), "%s: nan or inf in the file", name);
    unlink(path);
    return s;
}

int main(void) {
    char dir[] = "/tmp/physc-test-svgplot-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));

    /* 2x2 rollouts, 2 coordinates per panel, truth solid and model dashed: 16 paths */
    enum { N = 101 };
    static double t[N], q[4][2][2][N]; /* panel, coordinate, truth/model */
    for (int i = 0; i < N; i++) t[i] = 0.1 * i;
    PrtSeries rs[4][4];
    PrtPanel rp[4];
    static const char *const labels[4] = {"q truth", "q model", "p truth", "p model"};
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < N; i++)
            for (int m = 0; m < 2; m++) {
                q[k][0][m][i] = cos(t[i] + 0.3 * k) * (1 - 0.01 * m * t[i]);
                q[k][1][m][i] = -sin(t[i] + 0.3 * k) * (1 - 0.01 * m * t[i]);
            }
        for (int j = 0; j < 4; j++)
            rs[k][j] = (PrtSeries){t, q[k][j / 2][j % 2], N, labels[j], j / 2, j % 2, 0, NULL, NULL, 0, 0};
        rp[k] = (PrtPanel){"trajectory <k> & co", "t", "q, p", 0, rs[k], 4, 0, 0, 0, 0};
    }
    char *s = plot(dir, "rollout.svg", "Rollout: q & p <truth> vs \"model\"", rp, 2, 2, 16);
    if (s) {
        CHECK(strstr(s, "Rollout: q &amp; p &lt;truth&gt; vs \"model\"</text>"), "title not escaped");
        CHECK(count(s, "trajectory &lt;k&gt; &amp; co</text>") == 4, "panel titles not escaped");
        CHECK(count(s, ">p model</text>") == 4, "legend entries missing");
        CHECK(count(s, "stroke-dasharray") == 16, "dashed model lines and their legend swatches: %d",
              count(s, "stroke-dasharray"));
        /* t in [0, 10] ticks by 2; values in [-1, 1] by 0.5 */
        CHECK(strstr(s, ">0</text>") && strstr(s, ">2</text>") && strstr(s, ">10</text>"), "x ticks 0, 2, ..., 10");
        CHECK(strstr(s, ">-1.0</text>") && strstr(s, ">-0.5</text>") && strstr(s, ">0.0</text>") &&
                  strstr(s, ">1.0</text>"),
              "y ticks by 0.5");
        /* the curves fill every corner, so the legend goes on top, above the raised y axis */
        CHECK(hidden_points(s) == 0, "legends hide %d points", hidden_points(s));
        CHECK(!noisy_label(s), "a tick label shows rounding noise");
        free(s);
    }

    /* log y: errors from 1e-6 to 1e-1 for 5 trajectories and a thick median: decades labelled */
    static double err[5][N], med[N];
    PrtSeries es[6];
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < N; i++) err[k][i] = 1e-6 * pow(1e5, pow(i / (N - 1.0), 1 + 0.2 * k));
        es[k] = (PrtSeries){t, err[k], N, NULL, k, 0, 1, NULL, NULL, 0, 0};
    }
    for (int i = 0; i < N; i++) med[i] = err[2][i];
    es[5] = (PrtSeries){t, med, N, "median", PRT_BLACK, 0, 3, NULL, NULL, 0, 0};
    PrtPanel ep = {"Err(t)", "t", "relative error", 1, es, 6, 0, 0, 0, 0};
    s = plot(dir, "err.svg", NULL, &ep, 1, 1, 6);
    if (s) {
        char want[32];
        for (int k = -6; k <= -1; k++) {
            snprintf(want, sizeof want, ">1e%d</text>", k);
            CHECK(strstr(s, want), "log axis lacks %s", want);
        }
        CHECK(!strstr(s, ">1e-7</text>") && !strstr(s, ">1</text>"), "log axis wider than the data's decades");
        CHECK(strstr(s, "stroke-width=\"3\""), "median not drawn thick");
        CHECK(count(s, ">median</text>") == 1, "legend has the median only");
        free(s);
    }

    /* a bounded quantity (a relative error, at most 1) filling the box up to 0.5: the legend
       would raise the axis past 1; with ymax 1 it stops at 1 */
    static double full[5][N];
    PrtSeries fs[6];
    for (int k = 0; k < 5; k++) {
        for (int i = 0; i < N; i++) full[k][i] = 1e-4 * pow(5e3, (k + 1) / 5.0 * (0.5 + 0.5 * sin(0.3 * i + k)));
        fs[k] = (PrtSeries){t, full[k], N, k ? NULL : "test trajectories", PRT_GREY, 0, 0.7, NULL, NULL, 0, 0};
    }
    fs[5] = (PrtSeries){t, full[4], N, "median", 0, 0, 2.5, NULL, NULL, 0, 0};
    for (int capped = 0; capped < 2; capped++) {
        PrtPanel fp = {"Err(t)", "t", "relative error", 1, fs, 6, capped ? 1.0 : 0, 0, 0, 0};
        s = plot(dir, "bounded.svg", NULL, &fp, 1, 1, 6);
        if (!s) continue;
        CHECK(strstr(s, ">1</text>"), "bounded: the axis does not reach 1");
        if (capped) CHECK(!strstr(s, ">1e1</text>") && !strstr(s, ">1e2</text>"), "ymax 1: the axis goes past 1");
        else CHECK(strstr(s, ">1e1</text>") || strstr(s, ">1e2</text>"), "the test's data no longer raise the axis for the legend");
        free(s);
    }

    /* NaN, Inf and (on the log axis) non-positive values break the line: 4 runs, the 2nd and
       the last lone points drawn as dots (zero-length subpaths) */
    double bx[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, by[9] = {1, 2, NAN, 4, -NAN, 6, 7, INFINITY, 9},
           ly[9] = {1, 2, 0, 4, -1, 6, 7, -INFINITY, 9};
    PrtSeries bs = {bx, by, 9, "broken", 0, 0, 0, NULL, NULL, 0, 0}, ls = {bx, ly, 9, NULL, 1, 1, 0, NULL, NULL, 0, 0};
    PrtPanel bp[2] = {{"gaps", NULL, NULL, 0, &bs, 1, 0, 0, 0, 0}, {NULL, NULL, NULL, 1, &ls, 1, 0, 0, 0, 0}};
    s = plot(dir, "gaps.svg", "gaps", bp, 1, 2, 2);
    if (s) {
        for (const char *d = strstr(s, " d=\""); d; d = strstr(d + 1, " d=\"")) {
            const char *e = strchr(d + 4, '"');
            int moves = 0, lines = 0;
            for (const char *c = d + 4; c < e; c++) moves += *c == 'M', lines += *c == 'L';
            CHECK(moves == 4 && lines == 2, "gaps: %d moves, %d lines, want 4 and 2", moves, lines);
            CHECK(e - d > 4 && strncmp(e - 3, " h0", 3) == 0, "gaps: lone last point not drawn");
            int dots = 0;
            for (const char *h = strstr(d, " h0"); h && h < e; h = strstr(h + 1, " h0")) dots++;
            CHECK(dots == 2, "gaps: %d dots, want 2", dots);
        }
        free(s);
    }

    /* degenerate inputs: nothing drawn in panels 0-1 and 4, one point, a constant, a constant
       on a log axis, one x for every point */
    double one = 3, zero[3] = {0, 0, 0}, nan3[3] = {NAN, NAN, NAN}, c3[3] = {2e-5, 2e-5, 2e-5}, x3[3] = {1, 1, 1};
    PrtSeries d0 = {NULL, NULL, 0, "empty", 0, 0, 0, NULL, NULL, 0, 0}, d1 = {NULL, nan3, 3, "all NaN", 1, 0, 0, NULL, NULL, 0, 0},
              d2 = {NULL, &one, 1, "one point", 2, 0, 0, NULL, NULL, 0, 0}, d3 = {NULL, zero, 3, NULL, 3, 1, 0, NULL, NULL, 0, 0},
              d4 = {NULL, c3, 3, NULL, 4, 0, 0, NULL, NULL, 0, 0}, d5 = {x3, zero, 3, NULL, 5, 0, 0, NULL, NULL, 0, 0},
              d6 = {x3, c3, 3, NULL, 0, 0, 0, NULL, NULL, 0, 0};
    PrtPanel dp[6] = {{"empty", "x", "y", 0, &d0, 1, 0, 0, 0, 0},          {"all NaN", NULL, NULL, 1, &d1, 1, 0, 0, 0, 0},
                      {"one", NULL, NULL, 0, &d2, 1, 0, 0, 0, 0},          {"zeros", NULL, NULL, 0, &d3, 1, 0, 0, 0, 0},
                      {"zeros on log", NULL, NULL, 1, &d3, 1, 0, 0, 0, 0}, {"constant", NULL, NULL, 1, &d4, 1, 0, 0, 0, 0}};
    s = plot(dir, "degenerate.svg", "", dp, 2, 3, 3);
    free(s);
    PrtPanel vp[2] = {{"vertical", NULL, NULL, 0, &d5, 1, 0, 0, 0, 0}, {"point", NULL, NULL, 1, &d6, 1, 0, 0, 0, 0}};
    s = plot(dir, "vertical.svg", NULL, vp, 1, 2, 2);
    free(s);
    /* 300 decades: labelled every 50, ends included; a title too long for its cell is cut */
    double wide[N];
    for (int i = 0; i < N; i++) wide[i] = pow(10, -300 + 3.0 * i);
    PrtSeries ws = {NULL, wide, N, NULL, 0, 0, 0, NULL, NULL, 0, 0};
    PrtPanel wp = {"a title far too long for one panel of 480 px, which goes on and on and on to THE END", NULL, NULL,
                   1, &ws, 1, 0, 0, 0, 0};
    s = plot(dir, "wide.svg", NULL, &wp, 1, 1, 1);
    if (s) {
        CHECK(strstr(s, ">1e-300</text>") && strstr(s, ">1e-250</text>") && strstr(s, ">1</text>") &&
                  !strstr(s, ">1e-299</text>"),
              "300 decades not labelled every 50");
        CHECK(strstr(s, "\xe2\x80\xa6</text>") && !strstr(s, "THE END"), "long title not cut");
        free(s);
    }
    /* a titled panel with no series gets axes over [0, 1]; a zeroed one, a blank cell */
    PrtPanel np[3] = {{.title = "no data"}, {0}, {0}};
    s = plot(dir, "blank.svg", NULL, np, 1, 3, 0);
    CHECK(s && count(s, ">0.0</text>") == 2 && count(s, ">1.0</text>") == 2, "empty panel: axes not [0, 1]");
    CHECK(s && count(s, "<g>") == 1, "zeroed panels drawn"); /* one panel group, no legend */
    free(s);

    /* log-log with bands and dots (physc compare's data efficiency): x from 10 to 1000
       labelled as counts; each band a filled outline of 2n vertices, broken where a bound is
       missing; the axes reach the band's ends, not only the line's */
    double nx[4] = {10, 30, 100, 1000}, gy[4] = {1e-2, 5e-3, 2e-3, 1e-3}, glo[4] = {5e-3, 2e-3, 1e-3, 5e-4},
           ghi[4] = {2e-2, 1e-2, 5e-3, 2e-3}, hlo[4] = {1e-2, NAN, 4e-3, 2e-3}, hhi[4] = {4e-2, 2e-2, 8e-3, 1.5e-1},
           hy[4] = {2e-2, 1e-2, 6e-3, 3e-3};
    PrtSeries cs[2] = {{.x = nx, .y = gy, .n = 4, .label = "chnn", .color = 0, .lo = glo, .hi = ghi, .markers = 1},
                       {.x = nx, .y = hy, .n = 4, .label = "hnn", .color = 1, .lo = hlo, .hi = hhi, .markers = 1}};
    PrtPanel cp = {.title = "data efficiency", .xlabel = "training trajectories", .ylabel = "error", .logy = 1,
                   .logx = 1, .series = cs, .nseries = 2};
    s = plot(dir, "loglog.svg", NULL, &cp, 1, 1, 2 + 3); /* two lines, three band outlines */
    if (s) {
        CHECK(strstr(s, ">10</text>") && strstr(s, ">100</text>") && strstr(s, ">1000</text>") && !strstr(s, ">1e2</text>"),
              "log x axis not labelled 10, 100, 1000");
        CHECK(strstr(s, ">1e-4</text>") && strstr(s, ">1</text>"), "y axis does not reach the bands' ends (5e-4, 0.15)");
        CHECK(count(s, "fill-opacity=\"0.18\"") == 3, "bands: %d outlines, want 3 (one broken by a NaN)",
              count(s, "fill-opacity=\"0.18\""));
        const char *band = strstr(s, "fill-opacity=\"0.18\"");
        int vertices = 0;
        for (const char *c = band; c && *c != '/'; c++) vertices += *c == 'M' || *c == 'L';
        CHECK(vertices == 8, "the first band has %d vertices, want 8", vertices);
        CHECK(count(s, "<circle ") == 8 + 2, "dots: %d, want 8 and 2 in the legend", count(s, "<circle "));
        CHECK(strstr(s, "</svg>") && strstr(s, "opacity=\"0.2\""), "legend swatch for a band missing");
        free(s);
    }

    /* counts (epochs): whole-number ticks only; a single epoch is a point on [1, 2] */
    {
        static const double ex[3] = {1, 2, 3}, ey[3] = {0.5, 0.2, 0.1};
        PrtSeries epochs = {.x = ex, .y = ey, .n = 3, .label = "loss", .markers = 1};
        PrtPanel epanel = {.title = "epochs", .xlabel = "epoch", .ylabel = "loss", .logy = 1, .series = &epochs, .nseries = 1, .xwhole = 1};
        char *txt = plot(dir, "whole.svg", "whole", &epanel, 1, 1, 1);
        CHECK(txt && strstr(txt, ">1</text>") && strstr(txt, ">3</text>") && !strstr(txt, ">1.5</text>") && !strstr(txt, ">2.5</text>"),
              "epoch ticks are not whole numbers");
        free(txt);
        epochs.n = 1;
        txt = plot(dir, "one.svg", "one epoch", &epanel, 1, 1, 1);
        CHECK(txt && strstr(txt, ">1</text>") && strstr(txt, ">2</text>") && !strstr(txt, ">1.1</text>"), "one epoch: not on [1, 2]");
        free(txt);
    }

    /* equal scales: an ellipse 8 wide and 2 tall is drawn 4 times as wide as tall */
    {
        enum { M = 65 };
        static double ox[M], oy[M];
        for (int i = 0; i < M; i++) ox[i] = 4 * cos(2 * M_PI * i / (M - 1)), oy[i] = sin(2 * M_PI * i / (M - 1));
        PrtSeries os = {.x = ox, .y = oy, .n = M};
        PrtPanel op = {.title = "orbit", .xlabel = "x", .ylabel = "y", .series = &os, .nseries = 1, .equal = 1};
        char *txt = plot(dir, "equal.svg", "equal", &op, 1, 1, 1);
        double xmin = 1e9, xmax = -1e9, ymin = 1e9, ymax = -1e9;
        const char *d = txt ? strstr(txt, " d=\"") : NULL;
        for (const char *c = d ? d + 4 : NULL; c && *c != '"'; c++) {
            double px, py;
            if ((*c == 'M' || *c == 'L') && sscanf(c + 1, "%lf %lf", &px, &py) == 2)
                xmin = fmin(xmin, px), xmax = fmax(xmax, px), ymin = fmin(ymin, py), ymax = fmax(ymax, py);
        }
        double ratio = (xmax - xmin) / (ymax - ymin);
        CHECK(fabs(ratio - 4) < 0.1, "equal scales: the 8 x 2 ellipse is drawn %.3g times as wide as tall, not 4", ratio);
        free(txt);
    }

    /* dots alone (markers 2): samples on a curve drawn by another series, a dot each and no path
       (an orbit's observations on its line: a path through them drew a polygon) */
    {
        static double cx[9], cy[9], dx[3], dy[3];
        for (int i = 0; i < 9; i++) cx[i] = cos(2 * M_PI * i / 8), cy[i] = sin(2 * M_PI * i / 8);
        for (int i = 0; i < 3; i++) dx[i] = cx[3 * i], dy[i] = cy[3 * i];
        PrtSeries two[2] = {{.x = cx, .y = cy, .n = 9, .label = "curve"}, {.x = dx, .y = dy, .n = 3, .label = "samples", .markers = 2}};
        PrtPanel dots = {.title = "dots", .series = two, .nseries = 2, .equal = 1};
        char *txt = plot(dir, "dots.svg", "dots", &dots, 1, 1, 1);
        CHECK(txt && count(txt, "<circle") == 4, "dots alone: %d circles, want 3 and the legend's", txt ? count(txt, "<circle") : -1);
        free(txt);
    }

    /* failures name the path */
    char path[256], msg[256] = "";
    snprintf(path, sizeof path, "%s/no/such/dir/x.svg", dir);
    CHECK(prt_svg_write(path, "t", &ep, 1, 1, msg, sizeof msg) == -1, "unwritable path accepted");
    CHECK(strstr(msg, path) != NULL, "message does not name the path: %s", msg);
    msg[0] = 0;
    CHECK(prt_svg_write(path, "t", &ep, 0, 1, msg, sizeof msg) == -1 && strstr(msg, path), "0 rows accepted: %s", msg);
    CHECK(prt_svg_write(path, "t", &ep, 1, 1, NULL, 0) == -1, "NULL err");

    CHECK(rmdir(dir) == 0, "rmdir %s: %s", dir, strerror(errno));
    printf("%s: %s\n", __FILE__, failures ? "FAILED" : "ok");
    return failures != 0;
}
