package plugin

import (
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
)

// Query metrics of the plugin, on the process's default registry, which the
// SDK serves to Grafana through CollectMetrics (next to the collector's
// inferscope_scrape* and inferscope_storage_* metrics).
var (
	queryDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "inferscope", Name: "query_duration_seconds",
		Help:    "Time to answer one query of a QueryData request in seconds, per query type and outcome (ok, error).",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"query_type", "outcome"})
	noticesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "inferscope", Name: "notices_total",
		Help: "Notices attached to query frames (partial failures, approximations, clamped quantiles), per query type and severity.",
	}, []string{"query_type", "severity"})
)

func init() {
	prometheus.MustRegister(queryDuration, noticesTotal)
}

// observeQuery records one answered query: its duration and its notices.
func observeQuery(queryType string, start time.Time, dr backend.DataResponse) {
	outcome := "ok"
	if dr.Error != nil {
		outcome = "error"
	}
	queryDuration.WithLabelValues(queryType, outcome).Observe(time.Since(start).Seconds())
	for _, f := range dr.Frames {
		if f == nil || f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			noticesTotal.WithLabelValues(queryType, n.Severity.String()).Inc()
		}
	}
}
