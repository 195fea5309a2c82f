/* test_metrics.c — the one table of metrics (runtime/train/metrics.h) is consistent: every row has
   its keys, labels and unit; no two figures share a key in metrics.json, comparison.json or
   the CSVs; the columns agree with each other (a series and its summary, a scope and what it
   writes) and fit the tables that print them.

   With --keys [so3] [rigid] [known] it prints instead the metrics.json keys the table gives a
   run (of a system with `state so3` bodies; with rigid bodies, which so3 bodies are; with the
   known terms alone beside the model), one a line,
   derived here from the columns alone: tests/run.sh checks that a run's metrics.json has each
   exactly once. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "train/metrics.h"

/* The metrics.json keys of a run, into keys (each up to 96 characters); their number. */
static int json_keys(bool so3, bool rigid, bool known, char keys[][96]) {
    int n = 0;
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        /* left out where undefined (the others are null there) */
        if ((m->scope == PRT_SCOPE_SO3 && !so3) || (m->scope == PRT_SCOPE_RIGID && !rigid && !so3)) continue;
        snprintf(keys[n++], 96, "%s", m->key);
        if (m->summary != PRT_SUMMARY_ONCE) snprintf(keys[n++], 96, "%s_ci95", m->key);
        if (m->mean_key) snprintf(keys[n++], 96, "%s", m->mean_key);
        if (m->squares) snprintf(keys[n++], 96, "%s_sq", m->key);
        if (known && m->known) snprintf(keys[n++], 96, PRT_METRIC_KNOWN_PREFIX "%s", m->key);
        if (known && m->known && m->squares) snprintf(keys[n++], 96, PRT_METRIC_KNOWN_PREFIX "%s_sq", m->key);
    }
    return n;
}

/* The comparison.json keys: of the figures with a series with their intervals (and their
   series over time, the interval's ends), of the others each kind that compare averages. */
static int compare_keys(char keys[][96]) {
    int n = 0;
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        snprintf(keys[n++], 96, "%s", m->compare_key);
        if (m->csv) {
            snprintf(keys[n++], 96, "%s_ci95", m->compare_key);
            snprintf(keys[n++], 96, "%s_ci95_lo", m->compare_key);
            snprintf(keys[n++], 96, "%s_ci95_hi", m->compare_key);
            continue;
        }
        if (m->squares) snprintf(keys[n++], 96, "%s_sq", m->compare_key);
        if (m->known) snprintf(keys[n++], 96, PRT_METRIC_KNOWN_COMPARE_PREFIX "%s", m->compare_key);
        if (m->known && m->squares) snprintf(keys[n++], 96, PRT_METRIC_KNOWN_COMPARE_PREFIX "%s_sq", m->compare_key);
    }
    return n;
}

static void check_unique(const char *what, char keys[][96], int n) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) CHECK(strcmp(keys[i], keys[j]), "%s: the key %s twice", what, keys[i]);
}

int main(int argc, char **argv) {
    static char keys[8 * PRT_NMETRICS + 8][96];
    if (argc > 1 && !strcmp(argv[1], "--keys")) {
        bool so3 = false, rigid = false, known = false;
        for (int i = 2; i < argc; i++)
            so3 |= !strcmp(argv[i], "so3"), rigid |= !strcmp(argv[i], "rigid"), known |= !strcmp(argv[i], "known");
        int n = json_keys(so3, rigid, known, keys);
        for (int i = 0; i < n; i++) printf("%s\n", keys[i]);
        return 0;
    }
    int rows = 0, ncsv = 0;
#define CHECK_ORDER(mid, ...)                                                                                         \
    CHECK(PRT_METRIC_##mid == rows && !strcmp(prt_metrics[rows].id, #mid), "row %d: PRT_METRIC_%s in order", rows, #mid); \
    rows++;
    PRT_METRICS(CHECK_ORDER)
#undef CHECK_ORDER
    CHECK(rows == PRT_NMETRICS, "%d rows, %d metrics", rows, (int)PRT_NMETRICS);
    for (int id = 0; id < PRT_NMETRICS; id++) {
        const PrtMetricRow *m = &prt_metrics[id];
        const char *name = m->id;
        CHECK(m->key && *m->key && m->compare_key && *m->compare_key, "%s: its keys", name);
        CHECK(m->label && *m->label && m->header && *m->header && m->unit && *m->unit, "%s: its label, header and unit",
              name);
        /* a series is what has a column in the CSVs, a summary over time and an interval */
        CHECK(!m->csv == (m->summary == PRT_SUMMARY_ONCE), "%s: a CSV column if and only if a series", name);
        CHECK(!m->mean_key == (m->summary != PRT_SUMMARY_GEOMEAN), "%s: an arithmetic mean's key beside a geometric mean", name);
        CHECK(!m->squares || m->summary == PRT_SUMMARY_ONCE, "%s: the means of squares are of figures given once", name);
        CHECK(!m->truth || m->csv, "%s: a figure of the truth is a series (a line under compare's table)", name);
        CHECK(m->scope == PRT_SCOPE_ALL || prt_metric_scopes[m->scope].left_out || *prt_metric_scopes[m->scope].why_none,
              "%s: no words for where it is undefined", name);
        /* the widths of the tables that print them */
        CHECK(strlen(m->label) <= 30 && (!m->label_so3 || strlen(m->label_so3) <= 30), "%s: a label over 30 characters",
              name);
        CHECK(!m->csv || m->truth || strlen(m->header) <= 10, "%s: a header over compare's 10 characters", name);
        CHECK(m->source != PRT_SOURCE_LIET2 || strlen(m->header) + 2 * m->squares <= 11,
              "%s: a header over the App. E tables' 11 characters", name);
        ncsv += m->csv != NULL;
        for (int j = 0; j < id; j++) {
            CHECK(!m->csv || !prt_metrics[j].csv || strcmp(m->csv, prt_metrics[j].csv), "%s: the CSV column %s twice", name,
                  m->csv);
            CHECK(strcmp(m->label, prt_metrics[j].label), "%s: the label %s twice", name, m->label);
        }
    }
    CHECK(ncsv > 0 && !prt_metrics[PRT_METRIC_REL_ERROR].truth, "the relative state error, a model's series");
    int n = json_keys(true, true, true, keys);
    check_unique("metrics.json", keys, n);
    for (int i = 0; i < n; i++) /* the members metrics.json writes beside the metrics */
        CHECK(strcmp(keys[i], "geomean_floor") && strcmp(keys[i], PRT_METRIC_KNOWN_PREFIX "rollout_failed"),
              "metrics.json: the key %s is another member's", keys[i]);
    check_unique("comparison.json", keys, compare_keys(keys));
    printf("%s: %s (%d metrics, %d with a series)\n", __FILE__, failures ? "FAILED" : "ok", rows, ncsv);
    return failures != 0;
}
