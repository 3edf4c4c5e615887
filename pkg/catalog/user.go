package catalog

// UserMetricPrefix starts the stored names of engine "custom": a service's own metrics that a
// target's settings map to signals (settings Target.Metrics). The collector renames them while
// scraping (llm_ttft_seconds_bucket → inferscope_user:ttft_bucket), so every builder, detection
// and availability read them as an engine's own.
const UserMetricPrefix = "inferscope_user:"

// userSignals are the signals a target's own metrics may carry, with the kind each is read as
// (the same list as settings.UserSignals).
var userSignals = []struct {
	s    Signal
	kind Kind
}{
	{QueueTime, KindHistogram}, {PrefillTime, KindHistogram}, {DecodeTime, KindHistogram}, {InferenceTime, KindHistogram},
	{TTFT, KindHistogram}, {ITL, KindHistogram}, {TPOT, KindHistogram}, {E2E, KindHistogram},
	{PromptTokens, KindCounter}, {GenerationTokens, KindCounter}, {RequestsFinished, KindCounter},
	{RequestsRunning, KindGauge}, {RequestsWaiting, KindGauge},
}

// UserMetricName is the stored name of signal s read from a target's own metric: for a
// histogram the base name (inferscope_user:ttft, samples _bucket, _sum, _count), for a counter
// the sample name (inferscope_user:prompt_tokens_total), for a gauge the sample name. ok is
// false for a signal that cannot be mapped.
func UserMetricName(s Signal) (name string, kind Kind, ok bool) {
	for _, u := range userSignals {
		if u.s == s {
			n := UserMetricPrefix + string(s)
			if u.kind == KindCounter {
				n += "_total"
			}
			return n, u.kind, true
		}
	}
	return "", "", false
}

const noteUser = "Your own metric, mapped to this signal in the target's settings (targets[].metrics); its meaning is what your instrumentation measures."

// addCustomEngine adds engine "custom" to the table: one entry per userSignals signal, read
// from its UserMetricName (called by buildCatalogue).
func addCustomEngine() {
	t := map[Signal]entry{}
	for _, u := range userSignals {
		n, k, _ := UserMetricName(u.s)
		t[u.s] = entry{Exact, noteUser, metricsOf(k, 1, []string{n})}
	}
	table[EngineCustom] = t
	modelLabels[EngineCustom] = []string{"model_name"}
}

// RenameUserMetrics maps a page's sample names through a target's own-metric map (signal →
// name, settings Target.Metrics) to the names the collector stores them under (see
// UserMetricName), as the collector's relabelling does: a histogram's _bucket, _sum and _count
// samples and a counter's or gauge's sample are renamed, other names are kept. The health
// check applies it to a probed page before StoredNames, so Save & test concludes what a query
// over the stored samples concludes.
func RenameUserMetrics(names []string, metrics map[string]string) []string {
	if len(metrics) == 0 {
		return names
	}
	to := map[string]string{}
	for sig, from := range metrics {
		n, kind, ok := UserMetricName(Signal(sig))
		if !ok {
			continue
		}
		if kind == KindHistogram {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				to[from+suf] = n + suf
			}
			continue
		}
		to[from] = n
	}
	out := make([]string, len(names))
	for i, n := range names {
		if r, ok := to[n]; ok {
			n = r
		}
		out[i] = n
	}
	return out
}
