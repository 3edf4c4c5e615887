package bench

import (
	"fmt"
	"math"
	"strings"
)

// Expectation is one row of the expected-performance table: for Model on
// GPU (count × kind, e.g. "1xA100", "2xA100"), at least TokensPerSecond
// output tokens/s, P95 TTFT at most TTFTP95 seconds, P95 ITL at most ITLP95
// seconds, and GPU utilisation at least GPUUtilisation (a ratio 0..1).
// It is jsonData key expectedPerformance (a list of these) when set.
type Expectation struct {
	Model           string  `json:"model"`
	GPU             string  `json:"gpu"`
	TokensPerSecond float64 `json:"tokensPerSecond"`
	TTFTP95         float64 `json:"ttftP95"`
	ITLP95          float64 `json:"itlP95"`
	GPUUtilisation  float64 `json:"gpuUtilisation"`
}

// DefaultExpectations is the table the usual deployment guides publish
// (and issue 25 quotes): Llama-2-7B on one A100 > 800 tok/s, P95 TTFT
// < 500 ms, P95 ITL < 50 ms, GPU utilisation > 70 %; Llama-2-13B on one
// A100 > 400 tok/s, < 800 ms, < 80 ms, > 75 %; Llama-2-70B on two A100
// > 200 tok/s, < 1500 ms, < 100 ms, > 80 %; Qwen-2.5-72B on two A100
// > 250 tok/s, < 1200 ms, < 80 ms, > 80 %. Settings replace the whole table.
func DefaultExpectations() []Expectation {
	return []Expectation{
		{Model: "Llama-2-7B", GPU: "1xA100", TokensPerSecond: 800, TTFTP95: 0.5, ITLP95: 0.05, GPUUtilisation: 0.70},
		{Model: "Llama-2-13B", GPU: "1xA100", TokensPerSecond: 400, TTFTP95: 0.8, ITLP95: 0.08, GPUUtilisation: 0.75},
		{Model: "Llama-2-70B", GPU: "2xA100", TokensPerSecond: 200, TTFTP95: 1.5, ITLP95: 0.1, GPUUtilisation: 0.80},
		{Model: "Qwen-2.5-72B", GPU: "2xA100", TokensPerSecond: 250, TTFTP95: 1.2, ITLP95: 0.08, GPUUtilisation: 0.80},
	}
}

// Validate checks one row; field prefixes the error ("expectedPerformance[2]").
func (e Expectation) Validate(field string) error {
	if strings.TrimSpace(e.Model) == "" {
		return fmt.Errorf("%s.model: a model name is needed, such as Llama-2-7B", field)
	}
	if strings.TrimSpace(e.GPU) == "" {
		return fmt.Errorf("%s.gpu: a GPU such as 1xA100 is needed", field)
	}
	pos := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s.%s: %v must be a positive number", field, name, v)
		}
		return nil
	}
	if err := pos("tokensPerSecond", e.TokensPerSecond); err != nil {
		return err
	}
	if err := pos("ttftP95", e.TTFTP95); err != nil {
		return err
	}
	if err := pos("itlP95", e.ITLP95); err != nil {
		return err
	}
	if !(e.GPUUtilisation > 0 && e.GPUUtilisation <= 1) {
		return fmt.Errorf("%s.gpuUtilisation: %v must be a ratio in (0, 1], such as 0.7 for 70 %%", field, e.GPUUtilisation)
	}
	return nil
}

// normModel folds case and the usual separators so that "meta-llama/Llama-2-7b-chat-hf"
// and "Llama-2-7B" compare by their model family and size.
func normModel(s string) string {
	s = strings.ToLower(s)
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("-", "", "_", "", ".", "", " ", "").Replace(s)
}

// Lookup returns the row of table for model on gpu: the GPU must match
// (case-insensitive) and the row's model, with case and separators folded,
// must be a prefix of model's (so "meta-llama/Llama-2-7b-chat-hf" finds
// "Llama-2-7B"); the longest matching row wins.
func Lookup(table []Expectation, model, gpu string) (Expectation, bool) {
	nm := normModel(model)
	best, found := Expectation{}, false
	for _, e := range table {
		if !strings.EqualFold(strings.TrimSpace(e.GPU), strings.TrimSpace(gpu)) {
			continue
		}
		em := normModel(e.Model)
		if em != "" && strings.HasPrefix(nm, em) && (!found || len(em) > len(normModel(best.Model))) {
			best, found = e, true
		}
	}
	return best, found
}

// CheckExpected judges a baseline against an expected-performance row:
// output tokens/s at least TokensPerSecond, and P95 TTFT and P95 ITL at most
// their figures by the bracket rule (CheckLatency with target 0.95). GPU
// utilisation is not in a benchmark result and is not checked here.
func CheckExpected(b Baseline, e Expectation) []Check {
	nan := math.NaN()
	thr := Check{Stage: "output_throughput", Threshold: e.TokensPerSecond, Target: nan, Quantile: nan,
		Value: b.OutputThroughput, PLower: nan, Lower: nan, PUpper: nan, Upper: nan}
	switch {
	case math.IsNaN(b.OutputThroughput):
		thr.Outcome, thr.Reason = Possibly, fmt.Sprintf("the %s result does not report output throughput", b.Tool)
	case b.OutputThroughput >= e.TokensPerSecond:
		thr.Outcome, thr.Reason = Met, fmt.Sprintf("%.4g tok/s ≥ %g expected for %s on %s", b.OutputThroughput, e.TokensPerSecond, e.Model, e.GPU)
	default:
		thr.Outcome, thr.Reason = Breached, fmt.Sprintf("%.4g tok/s < %g expected for %s on %s", b.OutputThroughput, e.TokensPerSecond, e.Model, e.GPU)
	}
	return []Check{thr, CheckLatency(b, "ttft", e.TTFTP95, 0.95), CheckLatency(b, "itl", e.ITLP95, 0.95)}
}
