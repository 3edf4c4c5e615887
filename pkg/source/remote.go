package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// remote is a Querier over a Prometheus-compatible HTTP API (Prometheus,
// Mimir, Thanos, VictoriaMetrics) through client_golang/api/prometheus/v1.
type remote struct {
	base string
	api  v1.API
}

// NewRemote returns a Querier over the Prometheus HTTP API at baseURL (for
// example http://prometheus:9090, or a Mimir prefix such as
// http://mimir/prometheus). rt carries authentication and TLS; nil uses
// api.DefaultRoundTripper.
//
// Warnings and infos returned by the server (for example "PromQL info: metric
// might not be a counter") are not errors: they are ignored and the data kept,
// so the embedded and remote paths return the same values for the same query.
// HTTP and query errors are returned wrapped with the server address and query.
func NewRemote(baseURL string, rt http.RoundTripper) (Querier, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote Prometheus URL %q is not an http(s) URL such as http://prometheus:9090", baseURL)
	}
	cfg := api.Config{Address: strings.TrimRight(u.String(), "/"), RoundTripper: rt}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("remote Prometheus %s: %w", u.Redacted(), err)
	}
	return &remote{base: u.Redacted(), api: v1.NewAPI(c)}, nil
}

// Query implements Querier.
func (r *remote) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	v, _, _, err := r.api.Query(ctx, query, ts)
	if err != nil {
		return nil, fmt.Errorf("remote Prometheus %s: query %q: %w", r.base, query, err)
	}
	if m, ok := v.(model.Matrix); ok {
		sort.Sort(m)
	}
	return v, nil
}

// QueryRange implements Querier.
func (r *remote) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if step <= 0 {
		return nil, fmt.Errorf("range query %q: step %s must be positive", query, step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("range query %q: end %s is before start %s", query, end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	v, _, _, err := r.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("remote Prometheus %s: range query %q: %w", r.base, query, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("remote Prometheus %s: range query %q returned %s, not a matrix", r.base, query, typeOf(v))
	}
	sort.Sort(m)
	return m, nil
}

// MetricNames implements Querier.
func (r *remote) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return r.LabelValues(ctx, model.MetricNameLabel, matchers, start, end)
}

// LabelValues implements Querier.
func (r *remote) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	if name == "" {
		return nil, errors.New("label values: empty label name")
	}
	var match []string
	if m := strings.TrimSpace(matchers); m != "" && m != "{}" {
		match = []string{m}
	}
	vals, _, _, err := r.api.LabelValues(ctx, name, match, start, end)
	if err != nil {
		return nil, fmt.Errorf("remote Prometheus %s: label values of %q matching %q: %w", r.base, name, matchers, err)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if v != "" {
			out = append(out, string(v))
		}
	}
	sort.Strings(out)
	return out, nil
}

func typeOf(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}
