/* metrics.c — the table of metrics as data (see metrics.h). */
#include "metrics.h"

const PrtMetricRow prt_metrics[PRT_NMETRICS] = {
#define PRT_METRIC_ROW(mid, ...) [PRT_METRIC_##mid] = {.id = #mid, __VA_ARGS__},
    PRT_METRICS(PRT_METRIC_ROW)
#undef PRT_METRIC_ROW
};

const PrtMetricScopeRow prt_metric_scopes[PRT_NSCOPES] = {
#define PRT_SCOPE_ROW(sid, left, why) [PRT_SCOPE_##sid] = {#sid, left, why},
    PRT_METRIC_SCOPES(PRT_SCOPE_ROW)
#undef PRT_SCOPE_ROW
};
