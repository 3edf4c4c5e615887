package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UIDCost is the uid of the "Cost & capacity" dashboard (the cost-spike alert rule links to
// its first panel).
const UIDCost = "inferscope-cost"

// unitMoney is the panels' unit for money: the settings' default currency (USD). The data
// source sets each cost field's unit from the settings' currency (currencyUSD, currencyEUR, …
// or "suffix: CAD"), and a field's own unit wins over the panel default, so another currency
// shows as itself.
const unitMoney = "currencyUSD"

// costQuery is a cost query of the selected targets keeping the series of the given stats (prices are per
// target: the cost query takes no models filter).
func costQuery(stats ...string) queryBuilder {
	return query("queryType", "cost", "targets", []string{"$target"}, "series", stats)
}

// costTS is a cost time series: one series per target and stat, a table legend with mean,
// max and last (the numbers are the point of the panel).
func costTS(title, desc, unit string, w, h uint32, q queryBuilder) *timeseries.PanelBuilder {
	return ts(title, desc, unit, w, h, q).Legend(legendTable()).Min(0)
}

// Cost is the cost dashboard: what serving costs per target, per token and per request, how
// much of it is idle, the energy per token and what the prefix cache saves. Prices come from
// the data source settings (docs/cost.md).
func Cost() *dashboard.DashboardBuilder {
	b := shell(UIDCost, "Inferscope — cost & capacity",
		"What a token and a request cost per target, how much is spent idle, the energy per output token and what the prefix cache saves, from the prices in the data source settings (targets[].costPerHour, gpuAgents[].costPerGPUHour, currency, energyPricePerKWh).",
		targetVar()).
		Annotation(eventsAnnotation())
	b.WithPanel(costTS("Cost per 1M tokens", "Price per hour / 3600 / (prompt + generated tokens per second) × 1e6, and per 1M output tokens, per target over the rate window, in the settings' currency; energy included when energyPricePerKWh is set. The cost-spike alert fires when the first stays above twice its 7-day mean for 30 minutes.",
		unitMoney, 12, 8, costQuery("cost_per_1m_tokens", "cost_per_1m_output_tokens")).
		Id(1)) // the cost-spike alert rule links here
	b.WithPanel(costTS("Cost per request", "Price per second / finished requests per second, per target, in the settings' currency.",
		unitMoney, 12, 8, costQuery("cost_per_request")))
	b.WithPanel(costTS("Energy per output token", "Joules per generated token: the rate of the GPUs' energy counters (NVML total energy, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) over the generated tokens per second; mean power × time where no counter is stored (a notice says so).",
		"joule", 12, 8, costQuery("energy_per_output_token")))
	b.WithPanel(costTS("Idle share", "Share of each window with no request running (running-requests gauge at 0, each scrape counted once): hardware paid for and not serving.",
		unitRatio, 12, 8, costQuery("idle_share")).Max(1))
	b.WithPanel(costTS("Cost per hour: idle, prefill, decode", "Cost per hour, the part spent idle, and the approximate prefill/decode split by token counts (computed prompt tokens vs output tokens; a decode token really costs more GPU time than a prefill token), in the settings' currency.",
		unitMoney, 12, 8, costQuery("cost_per_hour", "idle_cost_per_hour", "prefill_cost_per_hour", "decode_cost_per_hour")))
	b.WithPanel(costTS("Prefix-cache savings per hour", "Prompt tokens served from the prefix cache per second × the cost of a computed token, per hour, in the settings' currency.",
		unitMoney, 12, 8, costQuery("prefix_cache_savings_per_hour")))
	b.WithPanel(statPanel("Cost per 1M tokens over the range", "Mean over the dashboard's range of the cost per 1M tokens per target (windows without tokens left out), in the settings' currency.",
		unitMoney, 24, 5, neutral(), costQuery("cost_per_1m_tokens")).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"mean"})))
	return b
}
