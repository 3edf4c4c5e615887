package queries

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/cost"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Cost is the cost query: per target, what serving costs (per hour, per 1M output tokens, per
// 1M tokens, per request, idle, prefill/decode, prefix-cache savings, cost of goodput) and the
// energy per output token, from the prices in the settings (targets[].costPerHour,
// gpuAgents[].costPerGPUHour, currency, energyPricePerKWh). Prices are per target, so it is
// always grouped by target and takes no models filter.
type Cost struct {
	Common
	// Series keeps these series, named by their stat label (cost.Stats, cost.SpikeRatio);
	// empty: all but the spike ratio.
	Series []string `json:"series,omitempty"`
	// Profile names an SLO profile: with it, the cost per 1M tokens of requests meeting
	// every objective of the profile (bounds from the goodput bounds) is added.
	Profile string `json:"profile,omitempty"`
	// Baseline, a duration such as 7d, adds the series cost_spike_ratio: the cost per 1M
	// tokens over the mean of the same cost over the preceding Baseline (the cost-spike
	// alert rule's input). Empty: no ratio.
	Baseline string `json:"baseline,omitempty"`

	baseline time.Duration
}

func (q *Cost) lists() []namedList { return []namedList{{"series", &q.Series}} }

var costEnums = map[string][]string{"series": append(slices.Clone(cost.Stats), cost.SpikeRatio, GatewaySpendPerRequest, GatewaySpendPer1MTokens)}

// The cost query's series of a gateway's own spend (LiteLLM's litellm_spend_metric_total, in
// USD), per gateway target beside the engines' cost from the settings' prices: spend/s ÷
// requests/s, and spend/s ÷ (prompt + generated tokens/s) × 1e6.
const (
	GatewaySpendPerRequest  = "gateway_spend_per_request"
	GatewaySpendPer1MTokens = "gateway_spend_per_1m_tokens"
)

// gatewaySpend returns the two gateway-spend series per gateway target of the plan
// (Plan.Gateways) that exports a spend counter; none without one.
func gatewaySpend(ctx context.Context, r *fetch.Run, p fetch.Plan) ([]analysis.Series, error) {
	if len(p.Gateways) == 0 {
		return nil, nil
	}
	sc := catalog.Scope{Targets: p.Gateways, By: []string{"target"}, Gateway: true, Finite: p.Scope.Finite}
	spend, err := gatewayRates(ctx, r, sc, catalog.GatewaySpend)
	if err != nil || len(spend) == 0 {
		return nil, err
	}
	rates := map[catalog.Signal]map[string][]float64{}
	for _, s := range []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens} {
		if rates[s], err = gatewayRates(ctx, r, sc, s); err != nil {
			return nil, err
		}
	}
	var out []analysis.Series
	for _, t := range slices.Sorted(maps.Keys(spend)) {
		sp := spend[t]
		perReq, perTok := make([]float64, len(sp)), make([]float64, len(sp))
		for i, v := range sp {
			perReq[i], perTok[i] = math.NaN(), math.NaN()
			if rq := valueAt(rates[catalog.RequestsFinished][t], i); rq > 0 {
				perReq[i] = v / rq
			}
			if tk := valueAt(rates[catalog.PromptTokens][t], i) + valueAt(rates[catalog.GenerationTokens][t], i); tk > 0 {
				perTok[i] = v / tk * 1e6
			}
		}
		for _, x := range []struct {
			stat string
			vals []float64
		}{{GatewaySpendPerRequest, perReq}, {GatewaySpendPer1MTokens, perTok}} {
			out = append(out, analysis.Series{Name: x.stat, Labels: map[string]string{"target": t, "stat": x.stat},
				Unit: "currencyUSD", Times: r.Steps, Values: x.vals})
		}
	}
	r.Notes.Add(analysis.Info, "gateway spend: LiteLLM's own cost of its requests (its model price map or the deployment's prices, in USD), shown beside the engines' cost from the settings' prices and not added to it")
	return out, nil
}

// gatewayRates is the rate of counter s over the plan's window per gateway target of scope
// sc, on r's step grid.
func gatewayRates(ctx context.Context, r *fetch.Run, sc catalog.Scope, s catalog.Signal) (map[string][]float64, error) {
	q, err := catalog.CounterRatePromQL(s, sc, r.Plan.Window)
	if err != nil {
		return nil, err
	}
	m, err := r.Range(ctx, q)
	if err != nil {
		return nil, err
	}
	return ratesByTarget(m, r.Steps), nil
}

// ratesByTarget aligns m on steps (analysis.Align) and keys its series by their target label.
func ratesByTarget(m model.Matrix, steps []time.Time) map[string][]float64 {
	vals, labels := analysis.Align(m, steps)
	out := map[string][]float64{}
	for k, v := range vals {
		out[labels[k]["target"]] = v
	}
	return out
}

// valueAt is v[i], NaN when v is shorter or nil.
func valueAt(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

func (q *Cost) validate(s *settings.Settings) error {
	// "none" is what the editor's new query carries into a cost query, whose editor has no
	// groupBy control: the answer is per target anyway.
	if q.GroupBy != "" && q.GroupBy != "none" && q.GroupBy != "target" {
		return badQueryf("groupBy: %q: prices are per target, so the cost query is grouped by target (leave groupBy empty or none, or set it to target)", q.GroupBy)
	}
	if len(q.Models) > 0 {
		return badQueryf("models: prices are per target, so the cost query cannot be restricted to models (select targets instead)")
	}
	for _, st := range q.Series {
		if !slices.Contains(costEnums["series"], st) {
			return badQueryf("series: %q is not one of %s", st, strings.Join(costEnums["series"], ", "))
		}
	}
	if q.Profile != "" {
		if _, ok := s.Profile(q.Profile); !ok {
			return badQueryf("profile: %q is not an SLO profile of this data source (profiles: %s)", q.Profile, strings.Join(s.ProfileNames(), ", "))
		}
	}
	if q.Baseline != "" {
		d, err := model.ParseDuration(q.Baseline)
		if err != nil || time.Duration(d) < time.Hour || time.Duration(d) > maxWindow {
			return badQueryf("baseline: %q is not a duration from 1h to 31d such as 7d", q.Baseline)
		}
		q.baseline = time.Duration(d)
	}
	if slices.Contains(q.Series, cost.SpikeRatio) && q.Baseline == "" {
		return badQueryf("series: %s needs a baseline such as 7d", cost.SpikeRatio)
	}
	return nil
}

// wants reports whether the query keeps any of the series stats (all when Series is empty).
func (q *Cost) wants(stats ...string) bool {
	if len(q.Series) == 0 {
		return true
	}
	for _, st := range stats {
		if slices.Contains(q.Series, st) {
			return true
		}
	}
	return false
}

// runCost reads, per selected target and over the query's rate window at each step: the
// generated and prompt token rates, the finished-request rate, the prefix-cache hit rate
// (tokens/s), the idle share (catalog.IdleSharePromQL), and from the target's GPU agent the
// energy counters' rate (W) per GPU, or the mean power draw as a fallback, summed over the
// GPUs the target uses (targets[].gpus, every GPU the agent reports when empty; their number
// also multiplies costPerGPUHour). With a profile it adds the goodput bounds, with a baseline
// the spike ratio (costSpikeRatio). cost.Compute turns them into series labelled target and
// stat (plus bound for the cost of goodput).
func runCost(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Cost) (data.Frames, error) {
	p.Scope.By = []string{"target"}
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, []catalog.Signal{catalog.GenerationTokens, catalog.PromptTokens, catalog.RequestsFinished, catalog.RequestsRunning})
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	targets := env.Targets(q.Targets)
	inputs, err := costInputs(ctx, env, r, targets, true)
	if err != nil {
		return nil, err
	}
	if q.Profile != "" {
		if err := costGoodput(ctx, env, r, p, q, inputs); err != nil {
			return nil, err
		}
	}
	var baseline map[string]analysis.Series
	if q.baseline > 0 {
		if baseline, err = costBaseline(ctx, env, p, targets, q.baseline); err != nil {
			return nil, err
		}
	}
	series, anyPriced := costSeries(env, r, q, targets, inputs, baseline)
	if anyPriced && q.wants(cost.PrefillCostPerHour, cost.DecodeCostPerHour, cost.PrefixCacheSavings) {
		r.Notes.Add(analysis.Info, "prefill and decode costs are approximate: the cost is split by token counts (computed prompt tokens vs output tokens), though a decode token costs more GPU time than a prefill token; prefix-cache savings price a cached prompt token like a computed token")
	}
	if q.baseline > 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("cost spike ratio: cost per 1M tokens over its mean over the preceding %s, read at %s resolution (windows without tokens left out of the mean)", model.Duration(q.baseline), model.Duration(baselineStep(p, q.baseline))))
	}
	if q.wants(GatewaySpendPerRequest, GatewaySpendPer1MTokens) {
		gs, err := gatewaySpend(ctx, r, p)
		if err != nil {
			return nil, err
		}
		series = append(series, gs...)
	}
	if len(q.Series) > 0 {
		series = slices.DeleteFunc(series, func(s analysis.Series) bool { return !slices.Contains(q.Series, s.Labels["stat"]) })
	}
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// costGoodput adds to each target's input the goodput bounds of the query's profile: the
// cost of goodput prices the tokens of requests meeting every objective of it.
func costGoodput(ctx context.Context, env *fetch.Env, r *fetch.Run, p fetch.Plan, q *Cost, inputs map[string]*cost.Input) error {
	_, groups, err := goodputGroups(ctx, env, r, p, q.Profile, nil)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if in, ok := inputs[g.Labels["target"]]; ok {
			in.GoodLower, in.GoodUpper, in.GoodRequests = g.Lower, g.Upper, g.Requests
		}
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("cost per 1M good tokens: tokens of requests meeting profile %s are taken as the goodput share of all tokens (good requests assumed of average length); the bounds are those of goodput", q.Profile))
	return nil
}

// costSeries is every target's cost series (costOfTarget), with the spike ratio where a
// baseline was read, and the notices naming the targets without a price and those whose
// energy is estimated from power; anyPriced when some target has a price.
func costSeries(env *fetch.Env, r *fetch.Run, q *Cost, targets []settings.Target, inputs map[string]*cost.Input, baseline map[string]analysis.Series) (series []analysis.Series, anyPriced bool) {
	unit := cost.CurrencyUnit(env.Settings.Currency)
	var unpriced, fallback []string
	for _, t := range targets {
		res := costOfTarget(env, r, t, inputs[t.Name], unit)
		if res.Priced {
			anyPriced = true
		} else {
			unpriced = append(unpriced, t.Name)
		}
		if res.PowerFallback > 0 {
			fallback = append(fallback, t.Name)
		}
		series = append(series, res.Series...)
		if b, ok := baseline[t.Name]; ok && res.Priced {
			for _, s := range res.Series {
				if s.Labels["stat"] == cost.CostPer1MTokens {
					series = append(series, cost.SpikeRatioSeries(s, b, q.baseline))
				}
			}
		}
	}
	if len(unpriced) > 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("no price for %s: set targets[].costPerHour, or costPerGPUHour on its GPU agent, in the data source settings to see its cost", strings.Join(unpriced, ", ")))
	}
	if len(fallback) > 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("energy of %s is the mean power draw × time where no GPU energy counter (NVML total energy, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) is stored: an estimate from sampled power", strings.Join(fallback, ", ")))
	}
	return series, anyPriced
}

// costOfTarget is target t's cost (cost.Compute of its input in, in currency unit), with the
// notices of what it leaves out: no GPU agent (no energy), an unknown GPU count, no energy
// reading.
func costOfTarget(env *fetch.Env, r *fetch.Run, t settings.Target, in *cost.Input, unit string) cost.Result {
	price := env.Settings.PriceOf(t)
	if t.Agent == "" {
		if price.Priced() && env.Settings.EnergyPricePerKWh > 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s has no GPU agent (targets[].agent): no energy per output token, and its cost leaves energy out", t.Name))
		} else {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s has no GPU agent (targets[].agent): no energy per output token", t.Name))
		}
	}
	res := cost.Compute(*in, r.Steps, unit)
	if res.Priced && price.PerHour == 0 && len(t.GPUs) == 0 && allNaN(in.GPUs) {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s is priced per GPU-hour but its agent %s reported no GPU in the range, and targets[].gpus is empty: its GPU count, hence its cost, is unknown", t.Name, t.Agent))
	}
	if res.EnergyMissing && res.Priced && t.Agent != "" {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("energyPricePerKWh is set but no energy counter or power reading of target %s's GPUs is stored in the range: its cost leaves energy out", t.Name))
	}
	return res
}

// costInputs reads the rates of cost.Input for each target on r's step grid (r.Plan's
// window): token, request and (all) cache-hit rates and the idle share, and the energy and
// power of the GPUs each target uses. With all false only what the cost per 1M tokens needs
// is read (tokens, energy, power).
func costInputs(ctx context.Context, env *fetch.Env, r *fetch.Run, targets []settings.Target, all bool) (map[string]*cost.Input, error) {
	signals := []catalog.Signal{catalog.GenerationTokens, catalog.PromptTokens}
	if all {
		signals = append(signals, catalog.RequestsFinished, catalog.PrefixCacheHits)
	}
	rates, err := costRates(ctx, r, signals)
	if err != nil {
		return nil, err
	}
	var idle map[string][]float64
	if all {
		if idle, err = costIdle(ctx, env, r); err != nil {
			return nil, err
		}
	}
	energyM, powerM, err := costGPUReads(ctx, r, targets)
	if err != nil {
		return nil, err
	}
	n := len(r.Steps)
	out := map[string]*cost.Input{}
	for _, t := range targets {
		price := env.Settings.PriceOf(t)
		in := &cost.Input{Target: t.Name, PerHour: price.PerHour, PerGPUHour: price.PerGPUHour,
			EnergyPricePerKWh: env.Settings.EnergyPricePerKWh,
			OutputTokens:      orNaN(rates[catalog.GenerationTokens][t.Name], n),
			PromptTokens:      orNaN(rates[catalog.PromptTokens][t.Name], n),
			Requests:          orNaN(rates[catalog.RequestsFinished][t.Name], n),
			Idle:              orNaN(idle[t.Name], n)}
		if all {
			in.CachedPromptTokens = rates[catalog.PrefixCacheHits][t.Name]
		}
		if t.Agent != "" {
			costGPUInput(in, t, energyM, powerM, r.Steps)
		}
		out[t.Name] = in
	}
	return out, nil
}

// costRates is each counter signal's rate per target over r's plan (its scope and window),
// on r's step grid, with the samples of counters going backwards left out.
func costRates(ctx context.Context, r *fetch.Run, signals []catalog.Signal) (map[catalog.Signal]map[string][]float64, error) {
	p := r.Plan
	rates := map[catalog.Signal]map[string][]float64{}
	for _, s := range signals {
		m, sc, err := r.CounterRate(ctx, s, p.Scope, p.Window)
		if err != nil {
			return nil, err
		}
		if err := r.LeaveOutBackwards(ctx, s, sc, p.Window, m); err != nil {
			r.Skipped("the check for "+string(s)+" counters going backwards", err)
		}
		rates[s] = ratesByTarget(m, r.Steps)
	}
	return rates, nil
}

// costIdle is each target's idle share (catalog.IdleSharePromQL) over r's plan.
func costIdle(ctx context.Context, env *fetch.Env, r *fetch.Run) (map[string][]float64, error) {
	q, err := catalog.IdleSharePromQL(r.Plan.Scope, r.Plan.Window, env.Settings.ScrapeInterval)
	if err != nil {
		return nil, err
	}
	m, err := r.Range(ctx, q)
	if err != nil {
		return nil, err
	}
	return ratesByTarget(m, r.Steps), nil
}

// costGPUReads reads the per-GPU energy (counter rate, W) and mean power of the GPU agents
// the targets use; nothing when none has an agent.
func costGPUReads(ctx context.Context, r *fetch.Run, targets []settings.Target) (energyM, powerM model.Matrix, err error) {
	var agents []string
	for _, t := range targets {
		if t.Agent != "" && !slices.Contains(agents, t.Agent) {
			agents = append(agents, t.Agent)
		}
	}
	if len(agents) == 0 {
		return nil, nil, nil
	}
	slices.Sort(agents)
	eq, err := catalog.CounterRatePromQL(catalog.Energy, catalog.Scope{Targets: agents, By: []string{"target"}}, r.Plan.Window, "gpu")
	if err != nil {
		return nil, nil, err
	}
	if energyM, err = r.Range(ctx, eq); err != nil {
		return nil, nil, err
	}
	pq, err := catalog.GPUPromQL(catalog.Power, agents, "avg")
	if err != nil {
		return nil, nil, err
	}
	if powerM, err = r.Range(ctx, pq); err != nil {
		return nil, nil, err
	}
	return energyM, powerM, nil
}

// costGPUInput sets in's energy, power and GPU count from the series of energyM and powerM
// on t's agent and GPUs: the GPU count is targets[].gpus' length when set, else the most GPUs
// with a sample at each step (NaN where none has one).
func costGPUInput(in *cost.Input, t settings.Target, energyM, powerM model.Matrix, steps []time.Time) {
	var energyGPUs, powerGPUs []float64
	in.EnergyWatts, energyGPUs = gpuSum(energyM, t, steps)
	in.PowerWatts, powerGPUs = gpuSum(powerM, t, steps)
	in.GPUs = make([]float64, len(steps))
	for i := range in.GPUs {
		in.GPUs[i] = math.Max(energyGPUs[i], powerGPUs[i])
		if len(t.GPUs) > 0 {
			in.GPUs[i] = float64(len(t.GPUs))
		} else if in.GPUs[i] == 0 {
			in.GPUs[i] = math.NaN()
		}
	}
}

// gpuSum sums, per step, the series of m on the target's agent and GPUs; NaN where none has a
// sample. count is the number of GPUs with a sample.
func gpuSum(m model.Matrix, t settings.Target, steps []time.Time) (sum, count []float64) {
	n := len(steps)
	sum, count = nanSlice(n), make([]float64, n)
	for _, s := range m {
		if !t.UsesGPU(string(s.Metric["job"]), string(s.Metric["gpu"])) {
			continue
		}
		vals, _ := analysis.Align(model.Matrix{s}, steps)
		for _, v := range vals {
			for i, x := range v {
				if math.IsNaN(x) {
					continue
				}
				if math.IsNaN(sum[i]) {
					sum[i] = 0
				}
				sum[i] += x
				count[i]++
			}
		}
	}
	return sum, count
}

// baselineStep is the resolution of the baseline's reads: the query's step, at least 5
// minutes, and at most 2016 points over the baseline (5 minutes over 7 days).
func baselineStep(p fetch.Plan, baseline time.Duration) time.Duration {
	step := max(p.Step, 5*time.Minute)
	if baseline/step > 2016 {
		step = (baseline / 2016).Truncate(time.Minute)
	}
	return step
}

// costBaseline computes each priced target's cost per 1M tokens over the baseline before the
// query's range and the range itself, at baselineStep resolution with windows of that step
// (at least the query's window), so every moment counts once.
func costBaseline(ctx context.Context, env *fetch.Env, p fetch.Plan, targets []settings.Target, baseline time.Duration) (map[string]analysis.Series, error) {
	bp := p
	bp.Step = baselineStep(p, baseline)
	bp.Window = max(p.Window, bp.Step)
	bp.Start = fetch.AlignToStep(p.Start.Add(-baseline), bp.Step)
	bp.End = fetch.AlignToStep(p.End, bp.Step)
	bp.Notes = nil
	br := fetch.NewRun(ctx, env, bp)
	inputs, err := costInputs(ctx, env, br, targets, false)
	if err != nil {
		return nil, err
	}
	out := map[string]analysis.Series{}
	for name, in := range inputs {
		res := cost.Compute(*in, br.Steps, "")
		for _, s := range res.Series {
			if s.Labels["stat"] == cost.CostPer1MTokens {
				out[name] = s
			}
		}
	}
	return out, nil
}

// nanSlice returns n NaNs.
func nanSlice(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// orNaN returns v, or n NaNs when v is nil (a target without the signal).
func orNaN(v []float64, n int) []float64 {
	if v == nil {
		return nanSlice(n)
	}
	return v
}

// allNaN reports whether every value of v is NaN.
func allNaN(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}
