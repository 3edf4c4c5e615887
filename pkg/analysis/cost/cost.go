// Package cost turns a target's prices and its per-second rates (tokens, requests, energy)
// into cost and energy series: cost per hour, per 1M output tokens, per 1M tokens, per
// request, the idle share, energy per output token, the approximate prefill/decode split,
// prefix-cache savings and the cost of goodput. The formulas are in docs/cost.md.
package cost

import (
	"math"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Stat names (the `stat` label of each series, and the cost query's `series` values).
const (
	CostPerHour          = "cost_per_hour"             // currency/h: hardware + measured energy
	EnergyCostPerHour    = "energy_cost_per_hour"      // currency/h: W / 1000 × energyPricePerKWh
	CostPer1MOutput      = "cost_per_1m_output_tokens" // currency per 1e6 generated tokens
	CostPer1MTokens      = "cost_per_1m_tokens"        // #nosec G101 -- a frame field name, not a credential. currency per 1e6 prompt + generated tokens
	CostPerRequest       = "cost_per_request"          // currency per finished request
	IdleShare            = "idle_share"                // ratio 0..1 of time with no request running
	IdleCostPerHour      = "idle_cost_per_hour"        // currency/h: cost per hour × idle share
	EnergyPerOutputToken = "energy_per_output_token"   // #nosec G101 -- a frame field name, not a credential. J per generated token
	PrefillCostPerHour   = "prefill_cost_per_hour"     // currency/h, approximate (token counts)
	DecodeCostPerHour    = "decode_cost_per_hour"      // currency/h, approximate (token counts)
	PrefixCacheSavings   = "prefix_cache_savings_per_hour"
	CostPer1MGoodTokens  = "cost_per_1m_good_tokens" // #nosec G101 -- a frame field name, not a credential. currency per 1e6 tokens of requests meeting the SLO (bounds)
)

// Stats lists every stat in output order.
var Stats = []string{CostPerHour, EnergyCostPerHour, CostPer1MOutput, CostPer1MTokens, CostPerRequest,
	IdleShare, IdleCostPerHour, EnergyPerOutputToken, PrefillCostPerHour, DecodeCostPerHour,
	PrefixCacheSavings, CostPer1MGoodTokens}

// Input is one target's prices and rates on the step grid. Every slice has one value per
// step (NaN where unknown); a nil slice means the signal is absent for the target.
type Input struct {
	// Target is the target's name (the `target` label).
	Target string
	// PerHour is the target's own hardware price per hour; PerGPUHour its agent's price per
	// GPU-hour, used when PerHour is 0 and multiplied by GPUs.
	PerHour, PerGPUHour float64
	// GPUs is the number of GPUs the target uses at each step (needed with PerGPUHour).
	GPUs []float64
	// EnergyPricePerKWh prices the measured energy (0: left out).
	EnergyPricePerKWh float64
	// OutputTokens, PromptTokens and Requests are per-second rates (generated tokens, prompt
	// tokens, finished requests); CachedPromptTokens the prompt tokens/s found in the prefix
	// cache.
	OutputTokens, PromptTokens, Requests, CachedPromptTokens []float64
	// Idle is the share (0..1) of each window with no request running.
	Idle []float64
	// EnergyWatts is the rate of the GPUs' energy counters (J/s), summed over the target's
	// GPUs; PowerWatts their mean power draw (W), used where EnergyWatts is NaN.
	EnergyWatts, PowerWatts []float64
	// GoodLower and GoodUpper are the goodput bounds (requests/s meeting the SLO) and
	// GoodRequests the request rate they are a share of (nil without a profile).
	GoodLower, GoodUpper, GoodRequests []float64
}

// Result is one target's series and what the caller should say about them.
type Result struct {
	Series []analysis.Series
	// Priced is false when the target has no hardware price (no cost series then).
	Priced bool
	// PowerFallback counts steps whose energy came from power × time, not an energy counter.
	PowerFallback int
	// EnergyMissing is true when an energy price is set but no energy or power was read.
	EnergyMissing bool
}

// at returns s[i], NaN when s is nil.
func at(s []float64, i int) float64 {
	if s == nil {
		return math.NaN()
	}
	return s[i]
}

// per returns num/den, NaN when den is not positive or either is NaN.
func per(num, den float64) float64 {
	if !(den > 0) || math.IsNaN(num) {
		return math.NaN()
	}
	return num / den
}

// Compute returns the series of one target over times (the query's steps), with currency
// the Grafana unit of money (CurrencyUnit). Formulas (per step; costs per second are cost per
// hour / 3600):
//
//	hardware/h      = PerHour, else PerGPUHour × GPUs
//	watts           = EnergyWatts (energy counter rate), else PowerWatts (power × time)
//	energy cost/h   = watts / 1000 × EnergyPricePerKWh           (kWh per hour × price)
//	cost/h          = hardware/h + energy cost/h
//	per 1M output   = cost/s / output tokens/s × 1e6
//	per 1M tokens   = cost/s / (prompt + output tokens/s) × 1e6
//	per request     = cost/s / finished requests/s
//	idle cost/h     = cost/h × idle share
//	J/output token  = watts / output tokens/s
//	computed prompt = prompt − cached prompt tokens/s
//	prefill cost/h  = cost/h × computed prompt / (computed prompt + output)   (approximate:
//	decode cost/h   = cost/h × output / (computed prompt + output)             a token is a token)
//	savings/h       = cached tokens/s × cost/s / (computed prompt + output) × 3600
//	per 1M good tokens ∈ [cost/s / (tokens/s × upper/requests), cost/s / (tokens/s × lower/requests)] × 1e6
//
// A window without output tokens (or requests) has no per-token (per-request) cost: NaN,
// never zero or infinity.
func Compute(in Input, times []time.Time, currency string) Result {
	n := len(times)
	res := Result{Priced: in.PerHour > 0 || in.PerGPUHour > 0}
	mk := func(stat, name, unit string) analysis.Series {
		return analysis.Series{Name: name, Labels: map[string]string{"target": in.Target, "stat": stat}, Unit: unit, Times: times, Values: analysis.NaNs(n)}
	}
	perHour := mk(CostPerHour, "cost per hour", currency)
	energyCost := mk(EnergyCostPerHour, "energy cost per hour", currency)
	out1M := mk(CostPer1MOutput, "cost per 1M output tokens", currency)
	all1M := mk(CostPer1MTokens, "cost per 1M tokens", currency)
	perReq := mk(CostPerRequest, "cost per request", currency)
	idle := mk(IdleShare, "idle share", "percentunit")
	idleCost := mk(IdleCostPerHour, "idle cost per hour", currency)
	jPerTok := mk(EnergyPerOutputToken, "energy per output token", "joule")
	prefill := mk(PrefillCostPerHour, "prefill cost per hour (approximate)", currency)
	decode := mk(DecodeCostPerHour, "decode cost per hour (approximate)", currency)
	savings := mk(PrefixCacheSavings, "prefix-cache savings per hour", currency)
	goodLo := mk(CostPer1MGoodTokens, "cost per 1M good tokens lower", currency)
	goodHi := mk(CostPer1MGoodTokens, "cost per 1M good tokens upper", currency)
	goodLo.Labels["bound"], goodHi.Labels["bound"] = "lower", "upper"
	var energyRead bool
	for i := 0; i < n; i++ {
		out, prompt, reqs := at(in.OutputTokens, i), at(in.PromptTokens, i), at(in.Requests, i)
		watts := at(in.EnergyWatts, i)
		if math.IsNaN(watts) {
			if w := at(in.PowerWatts, i); !math.IsNaN(w) {
				watts = w
				res.PowerFallback++
			}
		}
		if !math.IsNaN(watts) {
			energyRead = true
		}
		jPerTok.Values[i] = per(watts, out)
		idle.Values[i] = at(in.Idle, i)
		if !res.Priced {
			continue
		}
		hw := in.PerHour
		if hw == 0 {
			hw = in.PerGPUHour * at(in.GPUs, i)
		}
		c := hw
		if in.EnergyPricePerKWh > 0 && !math.IsNaN(watts) {
			energyCost.Values[i] = watts / 1000 * in.EnergyPricePerKWh
			c += energyCost.Values[i]
		}
		perHour.Values[i] = c
		cs := c / 3600
		out1M.Values[i] = per(cs, out) * 1e6
		all1M.Values[i] = per(cs, prompt+out) * 1e6
		perReq.Values[i] = per(cs, reqs)
		idleCost.Values[i] = c * idle.Values[i]
		cached := at(in.CachedPromptTokens, i)
		computed := prompt
		if !math.IsNaN(cached) {
			computed = math.Max(0, prompt-cached)
		}
		share := per(computed, computed+out)
		prefill.Values[i] = c * share
		decode.Values[i] = c * (1 - share)
		savings.Values[i] = per(cached*cs, computed+out) * 3600
		if in.GoodRequests != nil {
			tok := prompt + out
			share := func(g float64) float64 { return per(g, at(in.GoodRequests, i)) }
			goodLo.Values[i] = per(cs, tok*share(at(in.GoodUpper, i))) * 1e6
			goodHi.Values[i] = per(cs, tok*share(at(in.GoodLower, i))) * 1e6
		}
	}
	res.EnergyMissing = in.EnergyPricePerKWh > 0 && !energyRead
	if res.Priced {
		res.Series = append(res.Series, perHour)
		if in.EnergyPricePerKWh > 0 {
			res.Series = append(res.Series, energyCost)
		}
		res.Series = append(res.Series, out1M, all1M, perReq, idle, idleCost)
	} else {
		res.Series = append(res.Series, idle)
	}
	res.Series = append(res.Series, jPerTok)
	if res.Priced {
		res.Series = append(res.Series, prefill, decode)
		if in.CachedPromptTokens != nil {
			res.Series = append(res.Series, savings)
		}
		if in.GoodRequests != nil {
			res.Series = append(res.Series, goodLo, goodHi)
		}
	}
	return res
}

// currencyUnits are the ISO 4217 codes Grafana has a currency unit for.
var currencyUnits = map[string]bool{"USD": true, "GBP": true, "EUR": true, "JPY": true, "RUB": true,
	"UAH": true, "BRL": true, "DKK": true, "ISK": true, "NOK": true, "SEK": true, "CZK": true,
	"CHF": true, "PLN": true, "ZAR": true, "INR": true, "KRW": true, "IDR": true, "PHP": true, "VND": true}

// CurrencyUnit returns Grafana's unit id for an ISO 4217 code: "currencyUSD" where Grafana
// has one, else a suffix unit ("suffix: CAD").
func CurrencyUnit(code string) string {
	if currencyUnits[code] {
		return "currency" + code
	}
	return "suffix: " + code
}

// SpikeRatio is the stat of the cost-spike series (SpikeRatioSeries); it is not in Stats
// because it needs a baseline.
const SpikeRatio = "cost_spike_ratio"

// SpikeRatioSeries returns the cost-spike ratio of a cost-per-1M-tokens series cur: at each
// step t, cur(t) divided by the mean of base's values (the same cost on a coarser grid) at
// times in (t − baseline, t], NaN values left out (a time mean, as Prometheus's
// avg_over_time). A ratio above 2 is the cost-spike rule's condition. NaN where either is
// unknown.
func SpikeRatioSeries(cur, base analysis.Series, baseline time.Duration) analysis.Series {
	out := analysis.Series{Name: "cost spike ratio", Labels: map[string]string{"target": cur.Labels["target"], "stat": SpikeRatio},
		Unit: "short", Times: cur.Times, Values: make([]float64, len(cur.Times))}
	// Prefix sums over base's finite values.
	sum := make([]float64, len(base.Values)+1)
	cnt := make([]int, len(base.Values)+1)
	for i, v := range base.Values {
		sum[i+1], cnt[i+1] = sum[i], cnt[i]
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			sum[i+1] += v
			cnt[i+1]++
		}
	}
	// upTo returns the number of base points at or before t.
	upTo := func(t time.Time) int {
		lo, hi := 0, len(base.Times)
		for lo < hi {
			m := (lo + hi) / 2
			if base.Times[m].After(t) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		return lo
	}
	for i, t := range cur.Times {
		a, b := upTo(t.Add(-baseline)), upTo(t)
		n := cnt[b] - cnt[a]
		out.Values[i] = math.NaN()
		if n > 0 {
			out.Values[i] = per(cur.Values[i], (sum[b]-sum[a])/float64(n))
		}
	}
	return out
}
