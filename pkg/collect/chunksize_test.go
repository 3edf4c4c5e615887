package collect

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeadChunksOfAQuarterHour checks that the store cuts a series scraped every 15 s into
// head chunks of 60 samples (15 min), not Prometheus's 120 (30 min): a fleet's open chunks
// fill and are cut together, so their size sets the heap's peak (docs/performance.md,
// "Issue 34, fourth round"). By Prometheus's rule (tsdb memSeries.appendPreprocessor), at a
// quarter of the target (15 samples, 3.5 min after the first) a chunk's end is set so that
// the 2 h block range splits evenly: 7,200 s / (4 × 210 s) = 8.57, rounded down to 8 chunks of
// 15 min, so one hour from a block boundary is 4 chunks of 60 samples. The samples read back
// are the ones written, whatever the chunking.
func TestHeadChunksOfAQuarterHour(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdbOptions(15*24*time.Hour, 0), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC) // a 2 h block boundary
	lset := labels.FromStrings("__name__", "vllm:prompt_tokens_total", "instance", "a")
	const n = 240 // one hour at 15 s
	for k := 0; k < n; k++ {
		app := db.Appender(context.Background())
		_, err := app.Append(0, lset, start.Add(time.Duration(k)*15*time.Second).UnixMilli(), 0.37*float64(k))
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}

	cq, err := db.ChunkQuerier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cq.Close() })
	ss := cq.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "instance", "a"))
	require.True(t, ss.Next())
	var perChunk []int
	it := ss.At().Iterator(nil)
	for it.Next() {
		perChunk = append(perChunk, it.At().Chunk.NumSamples())
	}
	require.NoError(t, it.Err())
	assert.False(t, ss.Next())
	assert.Equal(t, []int{60, 60, 60, 60}, perChunk)

	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	s := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "instance", "a"))
	require.True(t, s.Next())
	vi := s.At().Iterator(nil)
	k := 0
	for vi.Next() != 0 {
		ts, v := vi.At()
		assert.Equal(t, start.Add(time.Duration(k)*15*time.Second).UnixMilli(), ts)
		assert.Equal(t, 0.37*float64(k), v)
		k++
	}
	assert.Equal(t, n, k)
}
