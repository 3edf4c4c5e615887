package collect

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floatSample is a chunks.Sample of a float value.
type floatSample struct {
	t int64
	f float64
}

func (s floatSample) T() int64                      { return s.t }
func (s floatSample) ST() int64                     { return 0 }
func (s floatSample) F() float64                    { return s.f }
func (s floatSample) H() *histogram.Histogram       { return nil }
func (s floatSample) FH() *histogram.FloatHistogram { return nil }
func (s floatSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s floatSample) Copy() chunks.Sample           { return s }

// TestStoreScrambledChunkQuarantined: a block whose chunk data is scrambled opens (the
// index is fine) and a query over its range fails on the chunk's checksum. The store then
// moves the block to its quarantine directory, the query's error says so and to retry, the
// health check names what is missing, and within the TSDB's block reload (10 s) the same
// query answers from what is left.
func TestStoreScrambledChunkQuarantined(t *testing.T) {
	ignoreFailedOpen(t)
	dir := filepath.Join(t.TempDir(), "ds")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	end := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	start := end.Add(-time.Hour)
	var samples []chunks.Sample
	for ts := start; ts.Before(end); ts = ts.Add(15 * time.Second) {
		samples = append(samples, floatSample{t: ts.UnixMilli(), f: 1})
	}
	s := storage.NewListSeries(labels.FromStrings("__name__", "vllm:num_requests_running", "job", "a"), samples)
	bdir, err := tsdb.CreateBlock([]storage.Series{s}, dir, 0, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	id := filepath.Base(bdir)
	seg := filepath.Join(bdir, "chunks", "000001")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	for k := 16; k < len(b)-4; k++ { // past the segment header and the chunk's length
		b[k] ^= 0x5a
	}
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	good, _ := counterServer(t, "x")
	js := counterSettings(t, map[string]string{"a": good.URL})
	js["retention"] = "2d"
	cfg := loadSettings(t, js, map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	q := `vllm:num_requests_running{job="a"}`
	_, err = c.Querier().QueryRange(context.Background(), q, start, end, time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot populate chunk")
	assert.Contains(t, err.Error(), "it was moved to "+filepath.Join(dir+".quarantine", id)+" and leaves the store within 10s")
	assert.Contains(t, err.Error(), "retry the query")
	notice, missing := c.StoreHealth()
	assert.True(t, missing)
	assert.Contains(t, notice, "Block "+id+" had unreadable chunks")
	assert.Contains(t, notice, "240 samples of 1 series") // one every 15 s over one hour
	assert.DirExists(t, filepath.Join(dir+".quarantine", id))
	require.Eventually(t, func() bool {
		m, err := c.Querier().QueryRange(context.Background(), q, start, end, time.Minute)
		return err == nil && len(m) == 0
	}, 20*time.Second, 200*time.Millisecond, "the block leaves the store at the next reload")
}
