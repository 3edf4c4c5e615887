package sanity

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windowOf reads a page served with every counter growing by its page value per 15 s scrape
// and returns family's per-second rates over a window, as the queries fetch them grouped by
// target: buckets by le, _sum and _count.
func windowOf(t *testing.T, path, family string, at time.Time) (buckets, sum, count model.Vector) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	require.NoError(t, err)
	mf := fams[family]
	require.NotNil(t, mf, family)
	ts := model.TimeFromUnixNano(at.UnixNano())
	job := model.Metric{"job": "a"}
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			l := job.Clone()
			l["le"] = model.LabelValue(strings.TrimSuffix(model.SampleValue(b.GetUpperBound()).String(), ".0"))
			buckets = append(buckets, &model.Sample{Metric: l, Value: model.SampleValue(float64(b.GetCumulativeCount()) / 15), Timestamp: ts})
		}
		// The parser keeps the page's +Inf bucket among the buckets.
		sum = append(sum, &model.Sample{Metric: job.Clone(), Value: model.SampleValue(h.GetSampleSum() / 15), Timestamp: ts})
		count = append(count, &model.Sample{Metric: job.Clone(), Value: model.SampleValue(float64(h.GetSampleCount()) / 15), Timestamp: ts})
	}
	return buckets, sum, count
}

// TestVerdictOneHistogramOneWindow: on the page, TTFT has all 50 observations per scrape in the
// lowest bucket (≤ 0.001 s) and a _sum of 23 per scrape: mean 23 / 50 = 0.46 s, 460× the only
// bound the buckets allow. The verdict disproves the window, for every query type that reads
// it, with one sentence. E2E on the same page is consistent: mean 18.5 / 50 = 0.37 s within
// [(20·0 + 20·0.25 + 10·0.5) / 50, (20·0.25 + 20·0.5 + 10·1) / 50] = [0.2, 0.5].
func TestVerdictOneHistogramOneWindow(t *testing.T) {
	const page = "testdata/vllm-ttft-lowest-bucket-mean-0.46.prom"
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b, s, c := windowOf(t, page, "vllm:time_to_first_token_seconds", at)
	vs := JudgeWindow("ttft", b, s, c, at)
	require.Len(t, vs, 1)
	v := vs[0]
	assert.True(t, v.Contradicted())
	assert.True(t, v.Disproved(0))
	assert.True(t, vs.Disproved(map[string]string{"target": "a"}, 0))
	require.Len(t, v.Findings, 1)
	assert.Equal(t, "lowest-bucket", v.Findings[0].Kind)
	assert.InDelta(t, 460, v.Findings[0].Off, 1e-9)
	assert.Equal(t, `ttft {target="a"}: the histogram contradicts itself from 2026-12-01 12:00:00 UTC: every observation is in the lowest bucket (≤ 0.001) but the mean is 0.46, 460× that bound. No quantile, bound, SLO attainment, burn rate, goodput or bucket advice is drawn from it there; its mean (_sum/_count) is shown as it is`, v.Sentence())
	assert.Equal(t, []string{v.Sentence()}, vs.Sentences())

	b, s, c = windowOf(t, page, "vllm:e2e_request_latency_seconds", at)
	vs = JudgeWindow("e2e", b, s, c, at)
	require.Len(t, vs, 1)
	assert.False(t, vs[0].Contradicted())
	assert.False(t, vs.Disproved(map[string]string{"target": "a"}, 0))
	assert.Empty(t, vs.Sentences())

	// A range: the same window judged at three steps, the middle one consistent.
	steps := []time.Time{at, at.Add(time.Minute), at.Add(2 * time.Minute)}
	tb, ts, tc := windowOf(t, page, "vllm:time_to_first_token_seconds", at)
	stream := func(per ...model.Vector) model.Matrix {
		var m model.Matrix
		for i := range per[0] {
			ss := &model.SampleStream{Metric: per[0][i].Metric}
			for k, v := range per {
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(steps[k].UnixNano()), Value: v[i].Value})
			}
			m = append(m, ss)
		}
		return m
	}
	// The middle step keeps ttft's buckets with a _sum of 0.04 per scrape: mean 0.04 / 50 =
	// 0.0008 s, inside [0, 0.001], so consistent.
	mid := make(model.Vector, len(ts))
	for i, x := range ts {
		mid[i] = &model.Sample{Metric: x.Metric, Value: 0.04 / 15, Timestamp: x.Timestamp}
	}
	rv := JudgeHistogram("ttft", stream(tb, tb, tb), stream(ts, mid, ts), stream(tc, tc, tc), steps)
	require.Len(t, rv, 1)
	assert.Equal(t, []bool{true, false, true}, rv[0].Bad)
	assert.Contains(t, rv[0].Sentence(), "(2 steps)")
}
