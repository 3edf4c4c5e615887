package latency

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Heatmap is a latency histogram over time, one row per bucket: Bounds are
// the buckets' upper bounds in seconds (ascending, +Inf last when present),
// Rates[i][k] the requests per second whose value fell in bucket i — in
// (Bounds[i-1], Bounds[i]] — over the window ending at Steps[k]; NaN where
// no histogram had a sample at that step. Layouts is the number of distinct
// bucket layouts merged (more than one: see HeatmapRows).
type Heatmap struct {
	Bounds  []float64
	Rates   [][]float64
	Steps   []time.Time
	Layouts int
}

// HeatmapRows turns per-second rates of cumulative histogram buckets into
// the requests per second of each bucket, for Grafana's heatmap panel.
// parts holds one PromQL result per bucket layout (each the rate of the
// _bucket series summed by le, as catalog.HistogramQueries.Buckets
// computes; the series' other labels, if any, are summed too). Within a
// layout, bucket i holds c(le_i) − c(le_(i−1)), with the cumulative rates
// first made monotonic as Prometheus's histogram_quantile does (a bucket
// scraped a moment after its neighbour can read lower); the first bucket
// holds c(le_0). Layouts are merged by adding each bucket's rate into the
// row of the same upper bound: exact when the layouts agree, and with
// different layouts a coarse layout's bucket is counted in the row of its
// own upper bound (the caller says so with a notice).
func HeatmapRows(parts []model.Matrix, steps []time.Time) Heatmap {
	h := Heatmap{Steps: steps}
	rows := map[float64][]float64{}
	for _, m := range parts {
		cum := map[float64][]float64{} // le -> cumulative rate per step
		for _, s := range m {
			le, err := strconv.ParseFloat(string(s.Metric[model.BucketLabel]), 64)
			if err != nil {
				continue
			}
			one := model.Matrix{s}
			vals, _ := analysis.Align(one, steps)
			for _, v := range vals {
				acc := cum[le]
				if acc == nil {
					acc = analysis.NaNs(len(steps))
					cum[le] = acc
				}
				for k, x := range v {
					switch {
					case math.IsNaN(x):
					case math.IsNaN(acc[k]):
						acc[k] = x
					default:
						acc[k] += x
					}
				}
			}
		}
		if len(cum) == 0 {
			continue
		}
		h.Layouts++
		bounds := make([]float64, 0, len(cum))
		for le := range cum {
			bounds = append(bounds, le)
		}
		slices.Sort(bounds)
		for k := range steps {
			prev := 0.0
			for _, le := range bounds {
				c := cum[le][k]
				if math.IsNaN(c) {
					continue
				}
				c = math.Max(c, prev) // monotonic, as histogram_quantile
				row := rows[le]
				if row == nil {
					row = analysis.NaNs(len(steps))
					rows[le] = row
				}
				if math.IsNaN(row[k]) {
					row[k] = 0
				}
				row[k] += c - prev
				prev = c
			}
		}
	}
	for le := range rows {
		h.Bounds = append(h.Bounds, le)
	}
	slices.Sort(h.Bounds)
	for _, le := range h.Bounds {
		h.Rates = append(h.Rates, rows[le])
	}
	return h
}
