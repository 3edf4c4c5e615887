package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// Defaults of EmbeddedOptions, chosen to match a stock Prometheus server.
const (
	// DefaultMaxSamples is the most samples one query may hold in memory at once
	// (Prometheus's --query.max-samples default).
	DefaultMaxSamples = 50_000_000
	// DefaultTimeout bounds one query's evaluation (Prometheus's --query.timeout default).
	DefaultTimeout = 2 * time.Minute
	// DefaultLookbackDelta is how far back an instant selector looks for a
	// sample (Prometheus's --query.lookback-delta default).
	DefaultLookbackDelta = 5 * time.Minute
)

// EmbeddedOptions configures the PromQL engine of NewEmbedded. Zero fields take
// the Default* values above.
type EmbeddedOptions struct {
	// MaxSamples caps the samples a single query may load; above it the query
	// fails with "query processing would load too many samples into memory".
	MaxSamples int
	// Timeout caps a single query's evaluation time.
	Timeout time.Duration
	// LookbackDelta is the staleness window of instant vector selectors.
	LookbackDelta time.Duration
	// Logger receives the engine's own log lines; nil discards them.
	Logger *slog.Logger
	// Registerer, when set, receives the engine's prometheus_engine_* metrics.
	// Use a registry owned by the caller: registering twice on one registry fails.
	Registerer prometheus.Registerer
}

// embedded is a Querier that evaluates PromQL with Prometheus's own engine
// over any storage.Queryable (the collector's TSDB head, or a test head).
type embedded struct {
	q      storage.Queryable
	engine *promql.Engine
	parser parser.Parser
	opts   EmbeddedOptions
}

// NewEmbedded returns a Querier running Prometheus's PromQL engine
// (github.com/prometheus/prometheus/promql) over q. Results are converted to
// prometheus/common/model values, the same shapes the remote HTTP API returns.
// PromQL warnings (annotations) are not errors and are dropped; evaluation and
// parse errors are returned wrapped with the query text.
func NewEmbedded(q storage.Queryable, opts EmbeddedOptions) Querier {
	if opts.MaxSamples <= 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LookbackDelta <= 0 {
		opts.LookbackDelta = DefaultLookbackDelta
	}
	p := parser.NewParser(parser.Options{})
	eng := promql.NewEngine(promql.EngineOpts{
		Logger:               opts.Logger,
		Reg:                  opts.Registerer,
		MaxSamples:           opts.MaxSamples,
		Timeout:              opts.Timeout,
		LookbackDelta:        opts.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		Parser:               p,
	})
	return &embedded{q: q, engine: eng, parser: p, opts: opts}
}

// Query implements Querier.
func (e *embedded) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	if e.q == nil {
		return nil, errors.New("embedded query: no storage")
	}
	qry, err := e.engine.NewInstantQuery(ctx, e.q, nil, query, ts)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("query %q at %s: %w", query, ts.UTC().Format(time.RFC3339), res.Err)
	}
	v, err := toModel(res.Value)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	return v, nil
}

// QueryRange implements Querier.
func (e *embedded) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if e.q == nil {
		return nil, errors.New("embedded range query: no storage")
	}
	if step <= 0 {
		return nil, fmt.Errorf("range query %q: step %s must be positive", query, step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("range query %q: end %s is before start %s", query, end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	qry, err := e.engine.NewRangeQuery(ctx, e.q, nil, query, start, end, step)
	if err != nil {
		return nil, fmt.Errorf("range query %q: %w", query, err)
	}
	defer qry.Close()
	res := qry.Exec(ctx)
	if res.Err != nil {
		return nil, fmt.Errorf("range query %q over [%s, %s] step %s: %w", query,
			start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), step, res.Err)
	}
	m, ok := res.Value.(promql.Matrix)
	if !ok {
		return nil, fmt.Errorf("range query %q: result is %s, not a matrix", query, res.Value.Type())
	}
	out := matrixToModel(m)
	sort.Sort(out)
	return out, nil
}

// MetricNames implements Querier: the distinct __name__ values among series matching matchers.
func (e *embedded) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return e.labelValues(ctx, model.MetricNameLabel, matchers, start, end)
}

// LabelValues implements Querier.
func (e *embedded) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	if name == "" {
		return nil, errors.New("label values: empty label name")
	}
	return e.labelValues(ctx, name, matchers, start, end)
}

func (e *embedded) labelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	if e.q == nil {
		return nil, errors.New("label values: no storage")
	}
	var ms []*labels.Matcher
	if m := strings.TrimSpace(matchers); m != "" && m != "{}" {
		var err error
		ms, err = e.parser.ParseMetricSelector(matchers)
		if err != nil {
			return nil, fmt.Errorf("label values of %q: matchers %q: %w", name, matchers, err)
		}
	}
	if end.Before(start) {
		return nil, fmt.Errorf("label values of %q: end %s is before start %s", name, end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	qr, err := e.q.Querier(start.UnixMilli(), end.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("label values of %q: open querier: %w", name, err)
	}
	defer qr.Close()
	vals, _, err := qr.LabelValues(ctx, name, nil, ms...)
	if err != nil {
		return nil, fmt.Errorf("label values of %q matching %q: %w", name, matchers, err)
	}
	vals, err = sampledIn(ctx, qr, name, vals, ms, start, end)
	if err != nil {
		return nil, fmt.Errorf("label values of %q matching %q: %w", name, matchers, err)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if v != "" {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out, nil
}

// toModel converts a promql result value into the prometheus/common/model value
// of the same type (Vector, Matrix, Scalar, String).
func toModel(v parser.Value) (model.Value, error) {
	switch r := v.(type) {
	case promql.Vector:
		out := make(model.Vector, 0, len(r))
		for _, s := range r {
			ms := &model.Sample{Metric: metricOf(s.Metric), Timestamp: model.Time(s.T)}
			if s.H != nil {
				ms.Histogram = histogramToModel(s.H)
			} else {
				ms.Value = model.SampleValue(s.F)
			}
			out = append(out, ms)
		}
		return out, nil
	case promql.Matrix:
		m := matrixToModel(r)
		sort.Sort(m)
		return m, nil
	case promql.Scalar:
		return &model.Scalar{Value: model.SampleValue(r.V), Timestamp: model.Time(r.T)}, nil
	case promql.String:
		return &model.String{Value: r.V, Timestamp: model.Time(r.T)}, nil
	case nil:
		return nil, errors.New("empty result")
	default:
		return nil, fmt.Errorf("unsupported result type %s", v.Type())
	}
}

func matrixToModel(m promql.Matrix) model.Matrix {
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		ss := &model.SampleStream{Metric: metricOf(s.Metric)}
		if len(s.Floats) > 0 {
			ss.Values = make([]model.SamplePair, len(s.Floats))
			for i, p := range s.Floats {
				ss.Values[i] = model.SamplePair{Timestamp: model.Time(p.T), Value: model.SampleValue(p.F)}
			}
		}
		if len(s.Histograms) > 0 {
			ss.Histograms = make([]model.SampleHistogramPair, len(s.Histograms))
			for i, p := range s.Histograms {
				ss.Histograms[i] = model.SampleHistogramPair{Timestamp: model.Time(p.T), Histogram: histogramToModel(p.H)}
			}
		}
		out = append(out, ss)
	}
	return out
}

func metricOf(ls labels.Labels) model.Metric {
	m := make(model.Metric, ls.Len())
	ls.Range(func(l labels.Label) {
		m[model.LabelName(l.Name)] = model.LabelValue(l.Value)
	})
	return m
}

// histogramToModel converts a native histogram the way Prometheus's HTTP API
// encodes it: Boundaries 0 = (lower, upper], 1 = [lower, upper), 2 = (lower,
// upper), 3 = [lower, upper]. Empty buckets are skipped.
func histogramToModel(h *histogram.FloatHistogram) *model.SampleHistogram {
	out := &model.SampleHistogram{Count: model.FloatString(h.Count), Sum: model.FloatString(h.Sum)}
	it := h.AllBucketIterator()
	for it.Next() {
		b := it.At()
		if b.Count == 0 || math.IsNaN(b.Count) {
			continue
		}
		var bound int32
		switch {
		case b.LowerInclusive && b.UpperInclusive:
			bound = 3
		case b.LowerInclusive:
			bound = 1
		case b.UpperInclusive:
			bound = 0
		default:
			bound = 2
		}
		out.Buckets = append(out.Buckets, &model.HistogramBucket{
			Boundaries: bound,
			Lower:      model.FloatString(b.Lower),
			Upper:      model.FloatString(b.Upper),
			Count:      model.FloatString(b.Count),
		})
	}
	return out
}
