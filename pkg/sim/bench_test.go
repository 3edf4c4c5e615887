package sim

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// discardAppendable drops every sample (Append/Commit/Rollback only).
type discardAppendable struct{}

type discardAppender struct{ storage.Appender }

func (discardAppendable) Appender(context.Context) storage.Appender { return discardAppender{} }

func (discardAppender) Append(storage.SeriesRef, labels.Labels, int64, float64) (storage.SeriesRef, error) {
	return 0, nil
}
func (discardAppender) Commit() error   { return nil }
func (discardAppender) Rollback() error { return nil }

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// benchFastForward simulates one hour per iteration at rate req/s, scraping
// every 15 s into a discarding appender, and reports simulated requests per
// CPU-second (process CPU time, all goroutines).
func benchFastForward(b *testing.B, scenario string, rate float64) {
	finished := 0
	cpu0 := cpuSeconds()
	for b.Loop() {
		cfg := DefaultConfig()
		if err := ApplyScenario(&cfg, scenario); err != nil {
			b.Fatal(err)
		}
		cfg.Rate = rate
		s, err := New(cfg, Options{OnFinish: func(*Request) { finished++ }})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.FastForward(context.Background(), discardAppendable{}, FastForwardOptions{
			Duration: time.Hour, ScrapeInterval: 15 * time.Second,
			VLLM: Target{Job: "vllm", Instance: "sim:8000"}, GPU: Target{Job: "gpu", Instance: "sim:9500"},
		}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuSeconds() - cpu0
	if cpu > 0 {
		b.ReportMetric(float64(finished)/cpu, "req/cpu-s")
	}
	b.ReportMetric(float64(finished)/float64(b.N), "req/op")
}

// Target: ≥ 100k simulated requests per CPU-second.
func BenchmarkFastForwardHealthy(b *testing.B)     { benchFastForward(b, "healthy", 20) }
func BenchmarkFastForwardDecodeBound(b *testing.B) { benchFastForward(b, "decode-bound", 8) }
