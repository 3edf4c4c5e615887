package source

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamesOnlyWhereSampled: all in the head: vllm:old sampled every 15 s for the first 10
// minutes, vllm:new from 70 to 80 minutes, vllm:marked until 75 minutes and then a staleness
// marker at 75m15s, model m1 served until 10 minutes and m2 from 70. Over the last five
// minutes (75-80 m) the names are vllm:new alone and the models m2 alone; over the whole
// 80 minutes all of them.
func TestNamesOnlyWhereSampled(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	app := db.Appender(context.Background())
	add := func(name, model string, from, to time.Duration) {
		for d := from; d <= to; d += 15 * time.Second {
			_, err := app.Append(0, labels.FromStrings("__name__", name, "job", "a", "model_name", model), base.Add(d).UnixMilli(), 1)
			require.NoError(t, err)
		}
	}
	add("vllm:old", "m1", 0, 10*time.Minute)
	add("vllm:new", "m2", 70*time.Minute, 80*time.Minute)
	add("vllm:marked", "m2", 60*time.Minute, 75*time.Minute)
	_, err = app.Append(0, labels.FromStrings("__name__", "vllm:marked", "job", "a", "model_name", "m2"), base.Add(75*time.Minute+15*time.Second).UnixMilli(), math.Float64frombits(value.StaleNaN))
	require.NoError(t, err)
	require.NoError(t, app.Commit())

	q := NewEmbedded(db, EmbeddedOptions{})
	ctx := context.Background()
	names, err := q.MetricNames(ctx, `{job="a"}`, base.Add(75*time.Minute+time.Second), base.Add(80*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"vllm:new"}, names)
	models, err := q.LabelValues(ctx, "model_name", `{job="a"}`, base.Add(75*time.Minute+time.Second), base.Add(80*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"m2"}, models)
	names, err = q.MetricNames(ctx, `{job="a"}`, base, base.Add(80*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"vllm:marked", "vllm:new", "vllm:old"}, names)
	models, err = q.LabelValues(ctx, "model_name", "", base, base.Add(80*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"m1", "m2"}, models)
}
