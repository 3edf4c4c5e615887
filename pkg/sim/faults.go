package sim

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
)

// FaultAppender wraps app so that what FastForward stores carries the
// scrape-level faults f: the vLLM target's samples (job vllmJob) frozen
// from FreezeAt on, its finished_reason="abort" series left out (DropAbortSeries), and the GPU agent's StuckGPU series held at StuckValue
// from StuckAt on. start is the simulation's time 0. The scrape-health
// series (up, scrape_*) are never changed: the page keeps answering.
func FaultAppender(app storage.Appendable, f Faults, start time.Time, vllmJob, gpuJob string) storage.Appendable {
	return &faultAppendable{app: app, f: f, start: start.UnixMilli(), vllm: vllmJob, gpu: gpuJob, held: map[uint64]float64{}}
}

type faultAppendable struct {
	app       storage.Appendable
	f         Faults
	start     int64
	vllm, gpu string
	held      map[uint64]float64
}

func (a *faultAppendable) Appender(ctx context.Context) storage.Appender {
	return &faultAppender{Appender: a.app.Appender(ctx), a: a}
}

type faultAppender struct {
	storage.Appender
	a *faultAppendable
}

var scrapeHealth = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added"}

func (w *faultAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a := w.a
	name := l.Get("__name__")
	if !slices.Contains(scrapeHealth, name) {
		rel := time.Duration(t-a.start) * time.Millisecond
		switch l.Get("job") {
		case a.vllm:
			if a.f.DropAbortSeries && l.Get("finished_reason") == "abort" {
				return ref, nil // this version exports no abort counter
			}
			if a.f.FreezeAt > 0 {
				h := l.Hash()
				if rel < a.f.FreezeAt {
					a.held[h] = v
				} else if x, ok := a.held[h]; ok {
					v = x
				} else {
					return ref, nil // a series born after the freeze is not on the frozen page
				}
			}
		case a.gpu:
			if rel >= a.f.StuckAt && slices.Contains(a.f.StuckGPU, name) {
				v = a.f.StuckValue
			}
		}
	}
	return w.Appender.Append(ref, l, t, v)
}
