// Package source is the one query path of Inferscope: analysis asks PromQL of
// a Querier, whether samples live in the embedded TSDB (collect) or in a
// remote Prometheus-compatible server. It knows nothing of engines or SLOs.
package source

import (
	"context"
	"time"

	"github.com/prometheus/common/model"
)

// Querier runs PromQL. Results use the prometheus/common model types so the
// embedded engine and the remote HTTP API return the same shapes.
type Querier interface {
	// Query evaluates an instant query at ts. The result is a model.Vector
	// (or model.Scalar/String for such expressions).
	Query(ctx context.Context, query string, ts time.Time) (model.Value, error)
	// QueryRange evaluates query at every step in [start, end] and returns a
	// model.Matrix whose series are sorted by labels.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error)
	// MetricNames returns the distinct __name__ values of series matching the
	// PromQL selector matchers (e.g. `{job="vllm-a"}`) in [start, end], sorted.
	MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error)
	// LabelValues returns the distinct values of label name among series matching matchers in [start, end], sorted.
	LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error)
}
