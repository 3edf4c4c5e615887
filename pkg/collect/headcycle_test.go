package collect

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// TestHeadCycleHeap is a measurement, not a check (docs/performance.md, "Issue 34, fourth
// round"): the live heap a series costs in the store's TSDB over a whole head cycle, 4 h at
// 15 s in fake time (block compaction every 2 h, the head spanning 1–3 h), for the head-chunk
// target INFERSCOPE_HEAD_CYCLE gives (samples per chunk; Prometheus's default is 120). Every
// series is a counter rising by a fractional amount each scrape, as the pages of
// test/asgrafana TestScale do (about 5 bytes a sample in XOR chunks). Two stores, of
// headCycleFew and headCycleMany series, are filled one after the other; the difference of
// their heaps over the difference of their sizes is the cost of a series, the store's fixed
// costs (head stripes, chunk-file write buffers) cancelling out. It logs that cost every 5
// minutes of fake time and its mean and peak from the first block boundary on. Heap bytes
// after forced collections: independent of the machine's load, but minutes of CPU.
func TestHeadCycleHeap(t *testing.T) {
	spc, err := strconv.Atoi(os.Getenv("INFERSCOPE_HEAD_CYCLE"))
	if err != nil {
		t.Skip("a measurement: INFERSCOPE_HEAD_CYCLE=<samples per chunk>")
	}
	const headCycleFew, headCycleMany = 2000, 20000
	few := headCycleFill(t, spc, headCycleFew)
	many := headCycleFill(t, spc, headCycleMany)
	var sum, peak float64
	var points int
	for k := range many {
		per := float64(many[k]-few[k]) / (headCycleMany - headCycleFew)
		at := headCycleStart.Add(time.Duration(k) * 5 * time.Minute)
		t.Logf("head cycle: samples per chunk %d, %s: %.0f B a series", spc, at.Format("15:04"), per)
		if !at.Before(headCycleStart.Add(29 * time.Minute)) {
			sum += per
			peak = max(peak, per)
			points++
		}
	}
	t.Logf("head cycle: samples per chunk %d, from the first block boundary on: mean %.0f B, peak %.0f B a series", spc, sum/float64(points), peak)
}

// headCycleStart is 29 minutes before a 2 h block boundary, as a store started at a random
// time is on average an hour before one.
var headCycleStart = time.Date(2026, 12, 3, 9, 31, 0, 0, time.UTC)

// headCycleFill fills a store of n series for 4 h at 15 s from headCycleStart with spc samples
// per head chunk and returns the live heap it holds, in bytes, every 5 minutes of fake time.
func headCycleFill(t *testing.T, spc, n int) []int64 {
	o := tsdbOptions(15*24*time.Hour, 0)
	o.SamplesPerChunk = spc
	db, err := tsdb.Open(t.TempDir(), nil, nil, o, nil)
	require.NoError(t, err)
	defer db.Close()
	db.DisableCompactions() // compacted below, at the fake time
	heap := func() int64 {
		db.ForceHeadMMap() // as the TSDB's own loop does every minute
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	lsets := make([]labels.Labels, n)
	rates := make([]float64, n)
	for i := range lsets {
		lsets[i] = labels.FromStrings("__name__", "vllm:prompt_tokens_total", "instance", "vllm-0001", "job", "fleet", "i", strconv.Itoa(i))
		rates[i] = 0.3 + 0.0137*float64(i%97+1)
	}
	const step = 15 * time.Second
	base := heap()
	var heaps []int64
	for k := 0; k <= 4*240; k++ {
		ts := headCycleStart.Add(time.Duration(k) * step)
		app := db.Appender(context.Background())
		for i := range lsets {
			_, err := app.Append(0, lsets[i], ts.UnixMilli(), rates[i]*float64(k)*15)
			require.NoError(t, err)
		}
		require.NoError(t, app.Commit())
		if k%4 == 0 { // the TSDB's loop compacts a head spanning 1.5 block ranges, checked every minute
			require.NoError(t, db.Compact(context.Background()))
		}
		if k%20 == 0 {
			heaps = append(heaps, heap()-base)
		}
	}
	return heaps
}
