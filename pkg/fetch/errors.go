package fetch

import (
	"context"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/errclass"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// noteGatewaysOnly is the notice of an errors query over all targets.
const noteGatewaysOnly = "errors: the error classes are counted by gateways (LiteLLM, OpenTelemetry GenAI); with no targets named the query reads every gateway in the settings"

// noteNoGateway is the notice of an errors query whose scope holds no gateway.
const noteNoGateway = "errors: no target in scope counts failed requests by class; the classes come from gateways (a LiteLLM proxy, OpenTelemetry GenAI instruments), engines count no rate limits, content filters or upstream timeouts (see the slo query's error_ratio objectives for an engine's own failures)"

// ErrorsPlan is the plan of an errors query: the gateways of the selection (Plan.Gateways)
// are the source of the error classes, so the scope reads them alone. An all-target query,
// whose gateways GatewayPlan left out, reads them with a notice in place of GatewayPlan's
// (which said the gateways measure the engines' requests again); engines named beside a
// gateway are left out with a notice, since their requests would dilute the shares.
func ErrorsPlan(p Plan) Plan {
	switch {
	case len(p.Gateways) > 0 && !p.Scope.Gateway:
		p.Notes = slices.DeleteFunc(slices.Clone(p.Notes), func(n analysis.Notice) bool {
			return strings.Contains(n.Text, "measures the engines' requests again")
		})
		p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Info, Text: noteGatewaysOnly})
	case len(p.Gateways) > 0:
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
	return p
}

// ErrorClassRates reads into in the guarded rates (GuardedRate) of the failed requests by
// catalog.ErrorLabels and of all requests, only where a target in scope counts failed
// requests (the gateways: an engine's requests with no error series would read as a share of
// 0 in every class); otherwise it says so (noteNoGateway) and leaves in.Requests nil.
func (r *Run) ErrorClassRates(ctx context.Context, in *errclass.Input) error {
	sc, w := r.Plan.Scope, r.Plan.Window
	if on := r.OptionalNotices(ctx, []catalog.Signal{catalog.RequestErrors}); len(on) == 0 {
		r.Notes.Add(analysis.Info, noteNoGateway)
		return nil
	}
	var err error
	if in.Errors, err = r.GuardedRate(ctx, catalog.RequestErrors, sc, w, catalog.ErrorLabels...); err != nil {
		return err
	}
	in.Requests, err = r.GuardedRate(ctx, catalog.RequestsFinished, sc, w)
	return err
}

// ErrorTableReads reads into in what the errors table adds to the rates, where requests were
// read: the gateway's spend and token rates where it exports spend, and the TTFT and ITL
// bucket rates of the stages a target exports (catalog.HistogramPromQL).
func (r *Run) ErrorTableReads(ctx context.Context, in *errclass.Input) error {
	if in.Requests == nil {
		return nil
	}
	sc, w := r.Plan.Scope, r.Plan.Window
	if slices.Contains(r.OptionalNotices(ctx, []catalog.Signal{catalog.GatewaySpend}), catalog.GatewaySpend) {
		var err error
		if in.Spend, err = r.GuardedRate(ctx, catalog.GatewaySpend, sc, w); err != nil {
			return err
		}
		for _, s := range []catalog.Signal{catalog.PromptTokens, catalog.GenerationTokens} {
			m, err := r.GuardedRate(ctx, s, sc, w)
			if err != nil {
				return err
			}
			in.Tokens = append(in.Tokens, m...)
		}
	}
	for _, c := range []struct {
		s   catalog.Signal
		dst *model.Matrix
	}{{catalog.TTFT, &in.TTFT}, {catalog.ITL, &in.ITL}} {
		if !r.Exporting(ctx, c.s) {
			continue
		}
		hq, err := catalog.HistogramPromQL(c.s, sc, w)
		if err != nil {
			return err
		}
		if *c.dst, err = r.Range(ctx, hq.Buckets); err != nil {
			return err
		}
	}
	return nil
}
