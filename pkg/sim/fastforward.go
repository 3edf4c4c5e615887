package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// Target names one scrape target written by FastForward: its samples get the
// labels job=Job and instance=Instance, as a Prometheus scrape stores them.
type Target struct {
	Job      string
	Instance string
}

// FastForwardOptions configure FastForward.
type FastForwardOptions struct {
	Duration       time.Duration // simulated time to run, from the Sim's current time
	ScrapeInterval time.Duration // scrape every this long (first scrape at the current time + interval)
	VLLM           Target        // the vLLM /metrics target; Job "" skips it
	GPU            Target        // the GPU agent target; Job "" skips it
	// CommitEvery commits the appender after this many scrapes (default 20).
	CommitEvery int
}

// FastForwardStats summarises a FastForward run.
type FastForwardStats struct {
	Scrapes        int // scrape instants
	FailedScrapes  int // vLLM scrapes that failed (restart downtime, flaky)
	Samples        int // samples appended, staleness markers and report series included
	SimulatedUntil float64
}

// FastForward runs the simulator for opts.Duration of simulated time as fast
// as the CPU allows and, at each scrape instant, writes what a Prometheus
// scrape would store: every sample from the registries' Gather() with job
// and instance labels, the report series up, scrape_duration_seconds,
// scrape_samples_scraped, scrape_samples_post_metric_relabeling and
// scrape_series_added, and staleness markers (StaleNaN) for series that
// disappeared or whose scrape failed. Timestamps are Start + simulated time
// in milliseconds; le values are normalised as Prometheus 3 stores them
// (labels.FormatOpenMetricsFloat: "1.0", "+Inf"). Errors from the appender abort the run (after Rollback).
func (s *Sim) FastForward(ctx context.Context, app storage.Appendable, opts FastForwardOptions) (FastForwardStats, error) {
	var st FastForwardStats
	if opts.ScrapeInterval <= 0 || opts.Duration < 0 {
		return st, errors.New("sim: fast-forward needs a positive scrape interval and a non-negative duration")
	}
	if opts.VLLM.Job == "" && opts.GPU.Job == "" {
		return st, errors.New("sim: fast-forward needs at least one target job name")
	}
	if opts.CommitEvery <= 0 {
		opts.CommitEvery = 20
	}
	vw := &scrapeWriter{target: opts.VLLM, last: map[uint64]labels.Labels{}}
	gw := &scrapeWriter{target: opts.GPU, last: map[uint64]labels.Labels{}}
	t0 := s.Now()
	step := opts.ScrapeInterval.Seconds()
	n := int(math.Floor(opts.Duration.Seconds()/step + 1e-9))
	a := app.Appender(ctx)
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			_ = a.Rollback()
			return st, err
		}
		t := t0 + float64(i)*step
		s.AdvanceTo(t)
		ts := s.Start().Add(time.Duration(t * float64(time.Second))).UnixMilli()
		if opts.VLLM.Job != "" {
			ok := !s.Down() && s.ScrapeOutcome() == ScrapeOK
			if !ok {
				st.FailedScrapes++
			}
			k, err := vw.scrape(a, s.reg, ts, ok)
			st.Samples += k
			if err != nil {
				_ = a.Rollback()
				return st, err
			}
		}
		if opts.GPU.Job != "" {
			k, err := gw.scrape(a, s.gpuReg, ts, true)
			st.Samples += k
			if err != nil {
				_ = a.Rollback()
				return st, err
			}
		}
		st.Scrapes++
		if i%opts.CommitEvery == 0 {
			if err := a.Commit(); err != nil {
				return st, fmt.Errorf("sim: commit: %w", err)
			}
			a = app.Appender(ctx)
		}
	}
	if err := a.Commit(); err != nil {
		return st, fmt.Errorf("sim: commit: %w", err)
	}
	st.SimulatedUntil = s.Now()
	return st, nil
}

// scrapeWriter writes one target's scrapes and remembers the series of the
// previous one for staleness markers.
type scrapeWriter struct {
	target Target
	last   map[uint64]labels.Labels
	cur    map[uint64]labels.Labels
	b      labels.ScratchBuilder
}

func (w *scrapeWriter) scrape(a storage.Appender, g prometheus.Gatherer, ts int64, ok bool) (int, error) {
	w.cur = make(map[uint64]labels.Labels, len(w.last))
	n := 0
	scraped := 0
	added := 0
	if ok {
		mfs, err := g.Gather()
		if err != nil {
			return n, fmt.Errorf("sim: gather: %w", err)
		}
		for _, mf := range mfs {
			k, err := w.writeFamily(a, mf, ts)
			n += k
			scraped += k
			if err != nil {
				return n, err
			}
		}
		for key := range w.cur {
			if _, seen := w.last[key]; !seen {
				added++
			}
		}
	}
	// staleness: series of the previous scrape not in this one
	for key, l := range w.last {
		if _, still := w.cur[key]; !still {
			if _, err := a.Append(0, l, ts, math.Float64frombits(value.StaleNaN)); err != nil {
				return n, fmt.Errorf("sim: append stale marker: %w", err)
			}
			n++
		}
	}
	w.last = w.cur
	up := 0.0
	dur := 0.0
	if ok {
		up = 1
		dur = 0.004 + 2e-6*float64(scraped)
	} else {
		dur = 10 // the scrape timeout a failed scrape waited for
	}
	report := []struct {
		name string
		v    float64
	}{
		{"up", up},
		{"scrape_duration_seconds", dur},
		{"scrape_samples_scraped", float64(scraped)},
		{"scrape_samples_post_metric_relabeling", float64(scraped)},
		{"scrape_series_added", float64(added)},
	}
	for _, r := range report {
		l := labels.FromStrings("__name__", r.name, "instance", w.target.Instance, "job", w.target.Job)
		if _, err := a.Append(0, l, ts, r.v); err != nil {
			return n, fmt.Errorf("sim: append %s: %w", r.name, err)
		}
		n++
	}
	return n, nil
}

func (w *scrapeWriter) add(a storage.Appender, name string, lps []*dto.LabelPair, extraName, extraValue string, ts int64, v float64) error {
	w.b.Reset()
	w.b.Add("__name__", name)
	for _, lp := range lps {
		w.b.Add(lp.GetName(), lp.GetValue())
	}
	if extraName != "" {
		w.b.Add(extraName, extraValue)
	}
	w.b.Add("job", w.target.Job)
	w.b.Add("instance", w.target.Instance)
	w.b.Sort()
	l := w.b.Labels()
	w.cur[l.Hash()] = l
	if _, err := a.Append(0, l, ts, v); err != nil {
		return fmt.Errorf("sim: append %s: %w", name, err)
	}
	return nil
}

func (w *scrapeWriter) writeFamily(a storage.Appender, mf *dto.MetricFamily, ts int64) (int, error) {
	n := 0
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		lps := m.GetLabel()
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			if err := w.add(a, name, lps, "", "", ts, m.GetCounter().GetValue()); err != nil {
				return n, err
			}
			n++
		case dto.MetricType_GAUGE:
			if err := w.add(a, name, lps, "", "", ts, m.GetGauge().GetValue()); err != nil {
				return n, err
			}
			n++
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				if err := w.add(a, name+"_bucket", lps, "le", labels.FormatOpenMetricsFloat(b.GetUpperBound()), ts, float64(b.GetCumulativeCount())); err != nil {
					return n, err
				}
				n++
			}
			if err := w.add(a, name+"_bucket", lps, "le", "+Inf", ts, float64(h.GetSampleCount())); err != nil {
				return n, err
			}
			if err := w.add(a, name+"_sum", lps, "", "", ts, h.GetSampleSum()); err != nil {
				return n, err
			}
			if err := w.add(a, name+"_count", lps, "", "", ts, float64(h.GetSampleCount())); err != nil {
				return n, err
			}
			n += 3
		default:
			return n, fmt.Errorf("sim: unsupported metric type %v for %s", mf.GetType(), name)
		}
	}
	return n, nil
}
