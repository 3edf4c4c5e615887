package fetch

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/baseline"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// WindowReads are the per-window reads of the benchmark and regression
// query types over one scope (no grouping): the latency stages' bucket rates,
// the finished-request rate, the mean running requests, generated tokens/s,
// and, for the length mix, the mean prompt length (prompt-length histogram
// _sum/_count) and the mean output length (generated tokens / finished requests).
type WindowReads struct {
	Windows []baseline.Window
	// PromptLength and OutputLength are per window (parallel to Windows), in tokens per request; NaN where unknown.
	PromptLength, OutputLength []float64
	// Sum and Count are per window the rates of each stage's histogram _sum (s/s) and _count
	// (requests/s); a stage is absent where not measured.
	Sum, Count []map[string]float64
}

// Windows reads every step of the run's grid over [from, to] (the plan's range
// when both are zero) with rate windows of length window: one range query per
// stage (catalog.HistogramPromQL buckets), plus the request rate, running
// gauge, generated-token rate and prompt-length mean. A stage no engine of
// the scope exports is simply absent from the windows.
func (r *Run) Windows(ctx context.Context, stages []string, sc catalog.Scope, window time.Duration, from, to time.Time) (WindowReads, error) {
	sc.By = nil
	if from.IsZero() && to.IsZero() {
		from, to = r.Plan.Start, r.Plan.End
	}
	rng := func(q string) (model.Matrix, error) {
		return AsMatrix(r.Exec(ctx, Query{PromQL: q, From: AlignToStep(from, r.Plan.Step), To: to, Step: r.Plan.Step}))
	}
	idx := map[int64]int{}
	var out WindowReads
	for t := AlignToStep(from, r.Plan.Step); !t.After(to); t = t.Add(r.Plan.Step) {
		idx[t.UnixMilli()] = len(out.Windows)
		nan := math.NaN()
		out.Windows = append(out.Windows, baseline.Window{At: t, RequestRate: nan, Running: nan, OutputTokens: nan, Buckets: map[string]map[string][]hist.Bucket{}})
		out.PromptLength = append(out.PromptLength, nan)
		out.OutputLength = append(out.OutputLength, nan)
		out.Sum = append(out.Sum, map[string]float64{})
		out.Count = append(out.Count, map[string]float64{})
	}
	scalar := func(m model.Matrix, set func(i int, v float64)) {
		for _, s := range m {
			for _, p := range s.Values {
				if i, ok := idx[int64(p.Timestamp)]; ok {
					set(i, float64(p.Value))
				}
			}
		}
	}
	type read struct {
		q   string
		set func(m model.Matrix)
	}
	var reads []read
	byTarget := sc
	byTarget.By = []string{"target"}
	for _, st := range stages {
		hq, err := catalog.HistogramPromQL(catalog.Signal(st), sc, window)
		if err != nil {
			continue
		}
		// Buckets per target: their layouts may differ, and a sum over targets with
		// different bounds is not a histogram (baseline.Merge keeps them apart).
		hqt, err := catalog.HistogramPromQL(catalog.Signal(st), byTarget, window)
		if err != nil {
			continue
		}
		reads = append(reads,
			read{hq.Sum, func(m model.Matrix) { scalar(m, func(i int, v float64) { out.Sum[i][st] += v }) }},
			read{hq.Count, func(m model.Matrix) { scalar(m, func(i int, v float64) { out.Count[i][st] += v }) }})
		reads = append(reads, read{hqt.Buckets, func(m model.Matrix) {
			for _, s := range m {
				le, err := hist.ParseLe(string(s.Metric["le"]))
				if err != nil {
					continue
				}
				job := string(s.Metric["job"])
				for _, p := range s.Values {
					if i, ok := idx[int64(p.Timestamp)]; ok {
						w := &out.Windows[i]
						if w.Buckets[st] == nil {
							w.Buckets[st] = map[string][]hist.Bucket{}
						}
						w.Buckets[st][job] = append(w.Buckets[st][job], hist.Bucket{UpperBound: le, Count: float64(p.Value)})
					}
				}
			}
		}})
	}
	sum := func(dst func(i int) *float64) func(m model.Matrix) {
		return func(m model.Matrix) {
			scalar(m, func(i int, v float64) {
				p := dst(i)
				if math.IsNaN(*p) {
					*p = 0
				}
				*p += v
			})
		}
	}
	finished, _ := catalog.CounterRatePromQL(catalog.RequestsFinished, sc, window)
	running, _ := catalog.GaugePromQL(catalog.RequestsRunning, sc, "sum")
	gen, _ := catalog.CounterRatePromQL(catalog.GenerationTokens, sc, window)
	prompt, perr := catalog.HistogramPromQL(catalog.PromptLength, sc, window)
	reads = append(reads,
		read{finished, sum(func(i int) *float64 { return &out.Windows[i].RequestRate })},
		read{running, sum(func(i int) *float64 { return &out.Windows[i].Running })},
		read{gen, sum(func(i int) *float64 { return &out.Windows[i].OutputTokens })},
	)
	promptSum, promptCount := make([]float64, len(out.Windows)), make([]float64, len(out.Windows))
	if perr == nil {
		reads = append(reads,
			read{prompt.Sum, func(m model.Matrix) { scalar(m, func(i int, v float64) { promptSum[i] += v }) }},
			read{prompt.Count, func(m model.Matrix) { scalar(m, func(i int, v float64) { promptCount[i] += v }) }})
	}
	ms := make([]model.Matrix, len(reads))
	if err := r.Parallel(len(reads), func(k int) error {
		var err error
		ms[k], err = rng(reads[k].q)
		return err
	}); err != nil {
		return WindowReads{}, err
	}
	for k, rd := range reads {
		rd.set(ms[k])
	}
	for i, w := range out.Windows {
		if promptCount[i] > 0 {
			out.PromptLength[i] = promptSum[i] / promptCount[i]
		}
		if w.RequestRate > 0 && !math.IsNaN(w.OutputTokens) {
			out.OutputLength[i] = w.OutputTokens / w.RequestRate
		}
	}
	return out, nil
}
