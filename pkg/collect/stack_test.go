package collect

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// TestCommitLeavesScrapeStackSmall: a goroutine that appends a scrape and commits it through
// the collector's appender keeps a small stack afterwards. The head's commit compresses its
// WAL records with Snappy, whose amd64 encoder has a 32 KiB frame, so committing on the
// caller's goroutine left every scrape loop with a 64 KiB stack (issue 34: 64 MiB of stacks
// for 1,000 targets). Collections are off during the measurement, so no stack is shrunk
// behind its back: the figure is the stack bytes the parked goroutines hold, not time.
func TestCommitLeavesScrapeStackSmall(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdbOptions(time.Hour, 0), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	// stacksOf is StackInuse grown by n goroutines parked after doing work.
	const n = 200
	stacksOf := func(work func(k int)) float64 {
		var ready sync.WaitGroup
		release := make(chan struct{})
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.StackInuse
		ready.Add(n)
		for k := 0; k < n; k++ {
			go func() {
				work(k)
				ready.Done()
				<-release
			}()
		}
		ready.Wait()
		runtime.ReadMemStats(&ms)
		close(release)
		return (float64(ms.StackInuse) - float64(before)) / n
	}
	var mu sync.Mutex
	var errs []error
	scrape := func(k int) {
		// No job label: the appender's bookkeeping (which needs a store) is skipped; the
		// TSDB commit, WAL record and Snappy included, is the scrape loop's.
		app := meteredAppendable{db: db}.Appender(context.Background())
		for s := 0; s < 20; s++ {
			_, err := app.Append(0, labels.FromStrings(model.MetricNameLabel, "vllm:num_requests_running", "instance", fmt.Sprintf("vllm-%04d", k), "series", fmt.Sprint(s)), time.Now().UnixMilli(), float64(s))
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
		if err := app.Commit(); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	idle := stacksOf(func(int) {})
	committed := stacksOf(scrape)
	require.Empty(t, errs)
	t.Logf("stack per parked goroutine: %.1f KiB idle, %.1f KiB after a commit", idle/1024, committed/1024)
	// 64 KiB is what a goroutine that ran Snappy's encoder holds; half of it is the bound
	// (Go stacks come in powers of two: 8, 16, 32 KiB).
	require.Less(t, committed, float64(32<<10), "stack bytes a goroutine keeps after committing a scrape")
}
