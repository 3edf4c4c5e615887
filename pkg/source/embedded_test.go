package source

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// base is the timestamp of the first appended sample.
var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// openHead opens a TSDB in a temporary directory and appends, every 15 s for
// 10 minutes (41 samples, t = 0..600 s):
//   - c_total{job="a"} = 10·i and c_total{job="b"} = 20·i  (rates 2/3 and 4/3 per second)
//   - h_bucket{job="a",le=0.1|1|+Inf} growing by 1, 3 and 4 per step
//   - g{job="a",model_name="m1"} = 5
func openHead(t *testing.T) *tsdb.DB {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	app := db.Appender(context.Background())
	for i := 0; i <= 40; i++ {
		ts := base.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
		f := float64(i)
		for _, s := range []struct {
			ls labels.Labels
			v  float64
		}{
			{labels.FromStrings("__name__", "c_total", "job", "a"), 10 * f},
			{labels.FromStrings("__name__", "c_total", "job", "b"), 20 * f},
			{labels.FromStrings("__name__", "h_bucket", "job", "a", "le", "0.1"), 1 * f},
			{labels.FromStrings("__name__", "h_bucket", "job", "a", "le", "1"), 3 * f},
			{labels.FromStrings("__name__", "h_bucket", "job", "a", "le", "+Inf"), 4 * f},
			{labels.FromStrings("__name__", "g", "job", "a", "model_name", "m1"), 5},
		} {
			_, err := app.Append(0, s.ls, ts, s.v)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	return db
}

func TestEmbeddedInstant(t *testing.T) {
	q := NewEmbedded(openHead(t), EmbeddedOptions{})
	ctx := context.Background()
	at := base.Add(300 * time.Second)

	// A counter growing 10 per 15 s has a rate of 10/15 per second.
	v, err := q.Query(ctx, `rate(c_total{job="a"}[1m])`, at)
	require.NoError(t, err)
	vec, ok := v.(model.Vector)
	require.True(t, ok)
	require.Len(t, vec, 1)
	assert.InDelta(t, 10.0/15, float64(vec[0].Value), 1e-12)
	assert.Equal(t, model.LabelValue("a"), vec[0].Metric["job"])
	assert.Equal(t, model.Time(at.UnixMilli()), vec[0].Timestamp)

	// Sum over both jobs: (10+20)/15.
	v, err = q.Query(ctx, `sum(rate(c_total[1m]))`, at)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.InDelta(t, 2.0, float64(v.(model.Vector)[0].Value), 1e-12)

	// Bucket rates 1/15, 3/15, 4/15 per second: median rank 2/15 falls in
	// (0.1, 1] holding 2/15, 1/15 into it → 0.1 + 0.9·(1/2) = 0.55.
	v, err = q.Query(ctx, `histogram_quantile(0.5, sum by (le) (rate(h_bucket[1m])))`, at)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.InDelta(t, 0.55, float64(v.(model.Vector)[0].Value), 1e-12)

	v, err = q.Query(ctx, `1 + 1`, at)
	require.NoError(t, err)
	require.Equal(t, &model.Scalar{Value: 2, Timestamp: model.Time(at.UnixMilli())}, v)

	v, err = q.Query(ctx, `"hello"`, at)
	require.NoError(t, err)
	require.Equal(t, &model.String{Value: "hello", Timestamp: model.Time(at.UnixMilli())}, v)

	// A range selector yields a matrix: 4 samples in (240 s, 300 s].
	v, err = q.Query(ctx, `c_total[1m]`, at)
	require.NoError(t, err)
	m, ok := v.(model.Matrix)
	require.True(t, ok)
	require.Len(t, m, 2)
	assert.Equal(t, model.LabelValue("a"), m[0].Metric["job"])
	require.Len(t, m[0].Values, 4)
	assert.Equal(t, model.SampleValue(170), m[0].Values[0].Value)
}

func TestEmbeddedRange(t *testing.T) {
	q := NewEmbedded(openHead(t), EmbeddedOptions{})
	m, err := q.QueryRange(context.Background(), `rate(c_total[1m])`, base.Add(120*time.Second), base.Add(600*time.Second), 60*time.Second)
	require.NoError(t, err)
	require.Len(t, m, 2)
	// Sorted by labels: job a before job b.
	assert.Equal(t, model.LabelValue("a"), m[0].Metric["job"])
	assert.Equal(t, model.LabelValue("b"), m[1].Metric["job"])
	for i, want := range []float64{10.0 / 15, 20.0 / 15} {
		require.Len(t, m[i].Values, 9) // 120, 180, …, 600 s
		for j, p := range m[i].Values {
			assert.Equal(t, model.Time(base.Add(time.Duration(120+60*j)*time.Second).UnixMilli()), p.Timestamp)
			assert.InDelta(t, want, float64(p.Value), 1e-12)
		}
	}
}

func TestEmbeddedLabels(t *testing.T) {
	q := NewEmbedded(openHead(t), EmbeddedOptions{})
	ctx := context.Background()
	start, end := base, base.Add(10*time.Minute)

	names, err := q.MetricNames(ctx, `{job="a"}`, start, end)
	require.NoError(t, err)
	assert.Equal(t, []string{"c_total", "g", "h_bucket"}, names)

	names, err = q.MetricNames(ctx, `{job="b"}`, start, end)
	require.NoError(t, err)
	assert.Equal(t, []string{"c_total"}, names)

	jobs, err := q.LabelValues(ctx, "job", "", start, end)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, jobs)

	models, err := q.LabelValues(ctx, "model_name", `g{job=~"a|b"}`, start, end)
	require.NoError(t, err)
	assert.Equal(t, []string{"m1"}, models)

	// Outside the data's time range nothing is found.
	none, err := q.LabelValues(ctx, "job", "{}", base.Add(-2*time.Hour*24), base.Add(-time.Hour*24))
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestEmbeddedErrors(t *testing.T) {
	q := NewEmbedded(openHead(t), EmbeddedOptions{})
	ctx := context.Background()

	_, err := q.Query(ctx, `rate(c_total[1m]`, base)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `query "rate(c_total[1m]"`)

	_, err = q.QueryRange(ctx, `c_total`, base, base.Add(time.Minute), 0)
	require.ErrorContains(t, err, "step")
	_, err = q.QueryRange(ctx, `c_total`, base.Add(time.Minute), base, time.Second)
	require.ErrorContains(t, err, "before start")

	_, err = q.MetricNames(ctx, `{job=}`, base, base.Add(time.Minute))
	require.ErrorContains(t, err, `matchers "{job=}"`)
	_, err = q.LabelValues(ctx, "", "", base, base.Add(time.Minute))
	require.ErrorContains(t, err, "empty label name")

	// MaxSamples is enforced.
	small := NewEmbedded(openHead(t), EmbeddedOptions{MaxSamples: 3})
	_, err = small.Query(ctx, `c_total[10m]`, base.Add(10*time.Minute))
	require.ErrorContains(t, err, "too many samples")

	// A cancelled context stops the query.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = q.Query(cctx, `c_total`, base)
	require.Error(t, err)

	nilQ := NewEmbedded(nil, EmbeddedOptions{})
	_, err = nilQ.Query(ctx, "1", base)
	require.Error(t, err)
}

func TestHistogramToModel(t *testing.T) {
	// Schema 0: bucket index 0 is (0.5, 1], index 1 is (1, 2]; zero bucket [-0.001, 0.001].
	h := &histogram.FloatHistogram{
		Schema: 0, Count: 6, Sum: 5, ZeroThreshold: 0.001, ZeroCount: 3,
		PositiveSpans:   []histogram.Span{{Offset: 0, Length: 2}},
		PositiveBuckets: []float64{1, 2},
	}
	got := histogramToModel(h)
	assert.Equal(t, model.FloatString(6), got.Count)
	assert.Equal(t, model.FloatString(5), got.Sum)
	require.Len(t, got.Buckets, 3)
	assert.Equal(t, &model.HistogramBucket{Boundaries: 3, Lower: -0.001, Upper: 0.001, Count: 3}, got.Buckets[0])
	assert.Equal(t, &model.HistogramBucket{Boundaries: 0, Lower: 0.5, Upper: 1, Count: 1}, got.Buckets[1])
	assert.Equal(t, &model.HistogramBucket{Boundaries: 0, Lower: 1, Upper: 2, Count: 2}, got.Buckets[2])
	assert.False(t, math.IsNaN(float64(got.Sum)))
}
