package fetch

import (
	"context"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// StageVectors is one latency stage's histogram read at one instant: its bucket, _sum and
// _count rates over a window, the series of every partition (HistogramQueries) together.
type StageVectors struct {
	Buckets, Sums, Counts model.Vector
}

// HistogramsAt reads each stage's bucket, _sum and _count rates over window at ts: the
// partitions of HistogramQueries, every distinct query evaluated once, concurrently
// (InstantAll). The _sum and _count rates are for the histogram's sanity verdict
// (sanity.JudgeWindow).
func (r *Run) HistogramsAt(ctx context.Context, stages []catalog.Signal, window time.Duration, ts time.Time) ([]StageVectors, error) {
	buckets := make([][]string, len(stages))
	sums, counts := make([][]string, len(stages)), make([][]string, len(stages))
	var all []string
	for k, s := range stages {
		hqs, err := r.HistogramQueries(ctx, s, window)
		if err != nil {
			return nil, err
		}
		for _, hq := range hqs {
			buckets[k] = append(buckets[k], hq.Buckets)
			sums[k] = append(sums[k], hq.Sum)
			counts[k] = append(counts[k], hq.Count)
		}
		all = append(all, buckets[k]...)
		all = append(append(all, sums[k]...), counts[k]...)
	}
	vs, err := r.InstantAll(ctx, all, ts)
	if err != nil {
		return nil, err
	}
	join := func(qs []string) model.Vector {
		var v model.Vector
		for _, q := range qs {
			v = append(v, vs[q]...)
		}
		return v
	}
	out := make([]StageVectors, len(stages))
	for k := range stages {
		out[k] = StageVectors{Buckets: join(buckets[k]), Sums: join(sums[k]), Counts: join(counts[k])}
	}
	return out, nil
}
