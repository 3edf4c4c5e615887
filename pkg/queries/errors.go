package queries

import (
	"context"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
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

// noteGatewaysOnly is the notice of an errors query over all targets.
const noteGatewaysOnly = "errors: the error classes are counted by gateways (LiteLLM, OpenTelemetry GenAI); with no targets named the query reads every gateway in the settings"

// noteNoGateway is the notice of an errors query whose scope holds no gateway.
const noteNoGateway = "errors: no target in scope counts failed requests by class; the classes come from gateways (a LiteLLM proxy, OpenTelemetry GenAI instruments), engines count no rate limits, content filters or upstream timeouts (see the slo query's error_ratio objectives for an engine's own failures)"

func runErrors(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Errors) (data.Frames, error) {
	switch {
	case len(p.Gateways) > 0 && !p.Scope.Gateway:
		// GatewayPlan left the gateways out of an all-target query; here they are the source.
		p.Notes = slices.DeleteFunc(slices.Clone(p.Notes), func(n analysis.Notice) bool {
			return strings.Contains(n.Text, "measures the engines' requests again")
		})
		p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Info, Text: noteGatewaysOnly})
	case len(p.Gateways) > 0:
		// Engines named beside a gateway would add their requests to the shares' denominators.
		var engines []string
		for _, t := range p.Scope.Targets {
			if !slices.Contains(p.Gateways, t) {
				engines = append(engines, t)
			}
		}
		if len(engines) > 0 {
			p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Info, Text: "errors: " + strings.Join(engines, ", ") +
				" count no gateway errors and are left out, so their requests do not dilute the gateways' shares"})
		}
	}
	if len(p.Gateways) > 0 {
		p.Scope.Targets, p.Scope.Gateway = slices.Clone(p.Gateways), true
	}
	r := fetch.NewRun(ctx, env, p)
	classes, allowed := q.classes()
	var in errclass.Input
	in.Classes, in.Allowed = classes, allowed
	// Only targets that count failed requests (the gateways) are read: an engine's requests
	// with no error series would read as a share of 0 in every class.
	if on := r.OptionalNotices(ctx, []catalog.Signal{catalog.RequestErrors}); len(on) > 0 {
		var err error
		if in.Errors, err = optionalRate(ctx, r, p, catalog.RequestErrors, catalog.ErrorLabels...); err != nil {
			return nil, err
		}
		if in.Requests, err = optionalRate(ctx, r, p, catalog.RequestsFinished); err != nil {
			return nil, err
		}
	} else {
		r.Notes.Add(analysis.Info, noteNoGateway)
	}
	th := map[string]float64{}
	for c, v := range allowed {
		th[frames.ErrorClassThreshold+string(c)] = v
	}
	if q.Format != "table" {
		return frames.TimeSeries(errclass.Series(in, r.Steps), meta(r, th)), nil
	}
	if in.Requests != nil && slices.Contains(r.OptionalNotices(ctx, []catalog.Signal{catalog.GatewaySpend}), catalog.GatewaySpend) {
		var err error
		if in.Spend, err = optionalRate(ctx, r, p, catalog.GatewaySpend); err != nil {
			return nil, err
		}
		for _, s := range []catalog.Signal{catalog.PromptTokens, catalog.GenerationTokens} {
			m, err := optionalRate(ctx, r, p, s)
			if err != nil {
				return nil, err
			}
			in.Tokens = append(in.Tokens, m...)
		}
	}
	if in.Requests != nil {
		for _, c := range []struct {
			s   catalog.Signal
			dst *model.Matrix
		}{{catalog.TTFT, &in.TTFT}, {catalog.ITL, &in.ITL}} {
			if !r.Exporting(ctx, c.s) {
				continue
			}
			hq, err := catalog.HistogramPromQL(c.s, p.Scope, p.Window)
			if err != nil {
				return nil, err
			}
			if *c.dst, err = r.Range(ctx, hq.Buckets); err != nil {
				return nil, err
			}
		}
	}
	return frames.ErrorsTable(errclass.Table(in, r.Steps), classes, allowed, "currencyUSD", meta(r, nil)), nil
}
