package queries

import (
	"context"
	"fmt"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/client"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Probe is the probe query: what the client-side probes (settings probes[])
// of the selected targets measured, joined to those targets. Series carry
// target (the engine target the probe exercises), probe and source="probe".
//
//   - view jitter (default): per-request inter-token jitter, stat ∈
//     {stddev_mean (s), max_gap (s), variance_max (s²)};
//   - view errors: errors/s by class and code, requests/s and the success
//     ratio (the availability SLI);
//   - view spikes: per window (the query's window ending at each step), the
//     requests, those above Threshold, their max, and spike / sustained (0/1):
//     a spike is at least one request above the threshold in a window that is
//     not a sustained breach (at least SustainedShare of at least 2 requests
//     above it). Alert on sustained only.
type Probe struct {
	Common
	// View is jitter (default), errors or spikes.
	View string `json:"view,omitempty"`
	// Signal is the per-request value of the spikes view: max_gap (default, the
	// request's largest inter-token gap), ttft or e2e.
	Signal string `json:"signal,omitempty"`
	// Threshold (seconds) of the spikes view; one of the probe's bucket bounds
	// (catalog.ProbeGapBounds for max_gap, ProbeLatencyBounds for ttft and e2e),
	// so that the count of requests above it is exact. Default 0.5 s for
	// max_gap, 1 s for ttft and e2e.
	Threshold float64 `json:"threshold,omitempty"`
	// SustainedShare is the share of a window's requests above the threshold
	// that makes it a sustained breach (0 < share ≤ 1, default 0.5).
	SustainedShare float64 `json:"sustainedShare,omitempty"`
	// Format is timeseries (default: every series of the view) or sustained
	// (view spikes only: just the stat="sustained" series, 1 while a window is
	// a sustained breach, for alert rules that must not page on a spike).
	Format string `json:"format,omitempty"`
}

var probeEnums = map[string][]string{"view": {"jitter", "errors", "spikes"}, "signal": {"max_gap", "ttft", "e2e"}, "format": {"timeseries", "sustained"}}

func (q *Probe) validate(*settings.Settings) error {
	if q.View != "" && !slices.Contains(probeEnums["view"], q.View) {
		return badQueryf("view: %q is not one of jitter, errors, spikes", q.View)
	}
	if q.Signal != "" && !slices.Contains(probeEnums["signal"], q.Signal) {
		return badQueryf("signal: %q is not one of max_gap, ttft, e2e", q.Signal)
	}
	switch q.Format {
	case "", "timeseries":
	case "sustained":
		if q.View != "spikes" {
			return badQueryf("format: sustained needs view spikes")
		}
	default:
		return badQueryf("format: %q is neither timeseries nor sustained", q.Format)
	}
	if q.SustainedShare < 0 || q.SustainedShare > 1 {
		return badQueryf("sustainedShare: %v is not between 0 and 1", q.SustainedShare)
	}
	if q.Threshold < 0 {
		return badQueryf("threshold: %v seconds is negative", q.Threshold)
	}
	if q.Threshold > 0 {
		if _, bounds := spikeHistogram(q.Signal); !catalog.IsProbeBound(q.Threshold, bounds) {
			return badQueryf("threshold: %v s is not a bucket bound of the probe's %s histogram, so requests above it cannot be counted exactly; use one of %s",
				q.Threshold, signalOr(q.Signal), catalog.FormatBounds(bounds))
		}
	}
	return nil
}

func signalOr(s string) string {
	if s == "" {
		return "max_gap"
	}
	return s
}

// spikeHistogram is the per-request histogram and its bounds for a spikes signal.
func spikeHistogram(signal string) (string, []float64) {
	switch signal {
	case "ttft":
		return catalog.ProbeTTFT, catalog.ProbeLatencyBounds
	case "e2e":
		return catalog.ProbeE2E, catalog.ProbeLatencyBounds
	}
	return catalog.ProbeRequestMaxITL, catalog.ProbeGapBounds
}

// spikeGauge is the last-request gauge holding a spikes signal's exact value.
func spikeGauge(signal string) string {
	switch signal {
	case "ttft":
		return catalog.ProbeLastTTFT
	case "e2e":
		return catalog.ProbePrefix + "last_e2e_request_latency_seconds"
	}
	return catalog.ProbeLastMaxITL
}

// probeBy is the grouping of probe reads: always by probe (each probe joins
// one target), plus model when asked.
func probeBy(p fetch.Plan) []string {
	by := []string{"target"}
	if slices.Contains(p.Scope.By, "model") {
		by = append(by, "model")
	}
	return by
}

// runProbe reads the asked view's probe series of the targets' probes (probeJitter,
// probeErrors, probeSpikes) and joins them to the targets (client.JoinProbes); with no probe
// for the targets it answers with a notice.
func runProbe(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Probe) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	ps := probesOf(env, p)
	if len(ps.names) == 0 {
		noProbeNotice(r)
		return frames.TimeSeries(nil, meta(r, nil)), nil
	}
	var series []analysis.Series
	var err error
	switch q.View {
	case "", "jitter":
		series, err = probeJitter(ctx, r, ps)
	case "errors":
		series, err = probeErrors(ctx, r, ps)
	case "spikes":
		series, err = probeSpikes(ctx, r, ps, q)
	}
	if err != nil {
		return nil, err
	}
	return frames.TimeSeries(client.JoinProbes(series, ps.target), meta(r, nil)), nil
}

// probeRead is one range read of a probe view into its input field.
type probeRead struct {
	q   string
	dst *model.Matrix
}

// rangeInto evaluates each read in order into its field.
func rangeInto(ctx context.Context, r *fetch.Run, reads []probeRead) error {
	for _, rd := range reads {
		m, err := r.Range(ctx, rd.q)
		if err != nil {
			return err
		}
		*rd.dst = m
	}
	return nil
}

// probeJitter is the jitter view: per-request inter-token jitter (client.Jitter).
func probeJitter(ctx context.Context, r *fetch.Run, ps probeScope) ([]analysis.Series, error) {
	p := r.Plan
	by, models, w := probeBy(p), p.Scope.Models, p.Window
	h := catalog.ProbeHistogramPromQL(catalog.ProbeRequestITLStddev, ps.names, models, by, w)
	var in client.JitterInput
	if err := rangeInto(ctx, r, []probeRead{{h.Sum, &in.StddevSum}, {h.Count, &in.StddevCount},
		{catalog.ProbeMaxPromQL(catalog.ProbeLastMaxITL, ps.names, models, by, w), &in.MaxGap},
		{catalog.ProbeMaxPromQL(catalog.ProbeLastITLVariance, ps.names, models, by, w), &in.MaxVariance}}); err != nil {
		return nil, err
	}
	series := client.Jitter(in, r.Steps)
	r.Notes.Add(analysis.Info, "jitter: stddev_mean is the mean over the window's probe requests of each request's inter-token gap standard deviation; max_gap and variance_max are the largest per-request values scraped in the window (exact when the scrape interval is at most the probe's interval)")
	return series, nil
}

// probeErrors is the errors view: errors/s by class and code, requests/s and the success
// ratio (client.Errors).
func probeErrors(ctx context.Context, r *fetch.Run, ps probeScope) ([]analysis.Series, error) {
	p := r.Plan
	by, models, w := probeBy(p), p.Scope.Models, p.Window
	var in client.ErrorsInput
	if err := rangeInto(ctx, r, []probeRead{
		{catalog.ProbeCounterRatePromQL(catalog.ProbeErrorsTotal, ps.names, models, by, w, "class", "code"), &in.Errors},
		{catalog.ProbeCounterRatePromQL(catalog.ProbeRequestsTotal, ps.names, models, by, w), &in.Requests}}); err != nil {
		return nil, err
	}
	return client.Errors(in, r.Steps), nil
}

// probeSpikes is the spikes view: per window, the requests above the threshold, their max,
// and spike / sustained (client.Spikes); format sustained keeps only the sustained series.
func probeSpikes(ctx context.Context, r *fetch.Run, ps probeScope, q *Probe) ([]analysis.Series, error) {
	p := r.Plan
	by, models, w := probeBy(p), p.Scope.Models, p.Window
	h, _ := spikeHistogram(q.Signal)
	th := q.Threshold
	if th == 0 {
		th = 0.5
		if q.Signal == "ttft" || q.Signal == "e2e" {
			th = 1
		}
	}
	share := q.SustainedShare
	if share == 0 {
		share = 0.5
	}
	in := client.SpikeInput{SustainedShare: share, MinRequests: 2}
	if err := rangeInto(ctx, r, []probeRead{{catalog.ProbeIncreasePromQL(h, ps.names, models, by, w), &in.Total},
		{catalog.ProbeOverPromQL(h, ps.names, models, by, th, w), &in.Over},
		{catalog.ProbeMaxPromQL(spikeGauge(q.Signal), ps.names, models, by, w), &in.Max}}); err != nil {
		return nil, err
	}
	series := client.Spikes(in, r.Steps)
	if q.Format == "sustained" {
		series = slices.DeleteFunc(series, func(s analysis.Series) bool { return s.Labels["stat"] != "sustained" })
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("spikes: %s above %g s per %s window; sustained = at least %g%% of at least 2 probe requests above it, spike = at least one above it otherwise; counts are exact (the threshold is a bucket bound), rounded to whole requests",
		signalOr(q.Signal), th, model.Duration(p.Window), 100*share))
	return series, nil
}
