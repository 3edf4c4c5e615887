package queries

import (
	"context"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/errclass"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Errors is the errors query: a gateway's failed requests in the five error classes
// (catalog.ErrorClasses: api_timeout, rate_limit, content_filter, model_error, client_error,
// mapped by catalog.ClassifyError from LiteLLM's exception classes and statuses and
// OpenTelemetry's error_type), each as a share of the gateway's requests beside its allowed
// share (docs/gateways.md). Without targets it reads every gateway (LiteLLM, OpenTelemetry
// GenAI) in the settings: engines count no gateway errors.
type Errors struct {
	Common
	// ErrorClasses keeps these classes (default all five).
	ErrorClasses []string `json:"errorClasses,omitempty"`
	// Format is timeseries (default: "<class> share" per group and class at each step, with
	// the allowed share drawn as a threshold) or table (one row per group at the end of the
	// range: requests/s, errors/s, TTFT and ITL medians, each class's share, the worst burn,
	// spend per request and per 1M tokens: the per-model table of the Models and providers
	// dashboard).
	Format string `json:"format,omitempty"`
	// AllowedShares overrides a class's allowed share (0..1) of requests; the defaults are
	// catalog.DefaultAllowedShare (API timeout 1 %, rate limit 0.5 %, content filter 1 %,
	// model error 0.1 %, client error 0.5 %).
	AllowedShares map[string]float64 `json:"allowedShares,omitempty"`
}

var errorsEnums = map[string][]string{"errorClasses": errorClassNames(), "format": {"timeseries", "table"}}

func errorClassNames() []string {
	out := make([]string, len(catalog.ErrorClasses))
	for i, c := range catalog.ErrorClasses {
		out[i] = string(c)
	}
	return out
}

func (q *Errors) lists() []namedList { return []namedList{{"errorClasses", &q.ErrorClasses}} }

func (q *Errors) validate(*settings.Settings) error {
	if q.Format != "" && q.Format != "timeseries" && q.Format != "table" {
		return badQueryf("format: %q is neither timeseries nor table", q.Format)
	}
	for _, c := range q.ErrorClasses {
		if err := catalog.CheckErrorClass(c); err != nil {
			return badQueryf("errorClasses: %s", err)
		}
	}
	for c, v := range q.AllowedShares {
		if err := catalog.CheckErrorClass(c); err != nil {
			return badQueryf("allowedShares: %s", err)
		}
		if !(v > 0 && v < 1) {
			return badQueryf("allowedShares.%s: %v is not a share between 0 and 1 (exclusive)", c, v)
		}
	}
	return nil
}

// classes returns the asked classes in catalog order and their allowed shares.
func (q *Errors) classes() ([]catalog.ErrorClass, map[catalog.ErrorClass]float64) {
	var out []catalog.ErrorClass
	for _, c := range catalog.ErrorClasses {
		if len(q.ErrorClasses) == 0 || slices.Contains(q.ErrorClasses, string(c)) {
			out = append(out, c)
		}
	}
	allowed := map[catalog.ErrorClass]float64{}
	for _, c := range out {
		allowed[c] = catalog.DefaultAllowedShare[c]
		if v, ok := q.AllowedShares[string(c)]; ok {
			allowed[c] = v
		}
	}
	return out, allowed
}

// runErrors reads the gateways' failed and all requests (fetch.ErrorsPlan,
// fetch.Run.ErrorClassRates) and returns each class's share per group and step beside its
// allowed share (errclass.Series), or with format table one row per group at the range's end
// with the rates, medians and spend (fetch.Run.ErrorTableReads, errclass.Table).
func runErrors(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Errors) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, fetch.ErrorsPlan(p))
	classes, allowed := q.classes()
	in := errclass.Input{Classes: classes, Allowed: allowed}
	if err := r.ErrorClassRates(ctx, &in); err != nil {
		return nil, err
	}
	th := map[string]float64{}
	for c, v := range allowed {
		th[frames.ErrorClassThreshold+string(c)] = v
	}
	if q.Format != "table" {
		return frames.TimeSeries(errclass.Series(in, r.Steps), meta(r, th)), nil
	}
	if err := r.ErrorTableReads(ctx, &in); err != nil {
		return nil, err
	}
	return frames.ErrorsTable(errclass.Table(in, r.Steps), classes, allowed, "currencyUSD", meta(r, nil)), nil
}
