package fetch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

func TestSanitizeErrorElidesPageContent(t *testing.T) {
	// A page echoing the Authorization header: base64("bob:BASICSECRET").
	in := `expected a valid start token, got "Ym9iOkJBU0lDU0VDUkVU" ("INVALID") while parsing: "Basic Ym9iOkJBU0lDU0VDUkVU"`
	out := SanitizeError(in)
	assert.NotContains(t, out, "Ym9iOkJBU0lDU0VDUkVU\"")
	assert.NotContains(t, out, "Basic Ym9i")
	assert.Contains(t, out, "expected a valid start token")
	long := SanitizeError(strings.Repeat("x", 5000))
	assert.LessOrEqual(t, len(long), maxErrorLen+len("…"))
}

func TestParallelTurnsPanicsIntoErrors(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	r := NewRun(context.Background(), &Env{Settings: &s}, Plan{})
	err = r.Parallel(3, func(k int) error {
		if k == 1 {
			var m map[string]int
			m["boom"]++ //nolint:staticcheck // SA5000: the nil map write is the runtime panic under test
		}
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal error")
}

// countingQuerier counts the queries that reach it.
type countingQuerier struct{ n int }

func (c *countingQuerier) Query(context.Context, string, time.Time) (model.Value, error) {
	c.n++
	return model.Vector{}, nil
}

func (c *countingQuerier) QueryRange(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, error) {
	c.n++
	return model.Matrix{}, nil
}

func (c *countingQuerier) MetricNames(context.Context, string, time.Time, time.Time) ([]string, error) {
	return nil, nil
}

func (c *countingQuerier) LabelValues(context.Context, string, string, time.Time, time.Time) ([]string, error) {
	return nil, nil
}

// TestExecStopsOnceTheRequestEnds: after the request's context ends, no further PromQL
// reaches the store, whether instant, range or a chunked range of many pieces.
func TestExecStopsOnceTheRequestEnds(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	q := &countingQuerier{}
	r := NewRun(context.Background(), &Env{Settings: &s, Querier: q}, Plan{})
	t0 := time.Unix(0, 0)
	chunked := Query{PromQL: "up", From: t0, To: t0.Add(100 * MaxRangePoints * time.Second), Step: time.Second, Chunked: true}
	_, err = r.Exec(context.Background(), chunked)
	require.NoError(t, err)
	assert.Equal(t, 101, q.n, "a live request reads every chunk")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.n = 0
	for _, qq := range []Query{{PromQL: "up", To: t0}, {PromQL: "up", From: t0, To: t0.Add(time.Hour), Step: time.Second}, chunked} {
		_, err = r.Exec(ctx, qq)
		assert.ErrorIs(t, err, context.Canceled)
	}
	assert.Zero(t, q.n)
}
