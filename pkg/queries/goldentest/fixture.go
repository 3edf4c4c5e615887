// Package goldentest holds, for tests only, the stored histories the golden frame files are
// computed over and the comparison of a response with its golden file. The golden cases of
// each query type run from pkg/queries (beside the type's file, through queries.Decode and
// Decoded.Run over a fetch.Env); the few that pin the SDK edge (the dispatcher's routing, the
// resource routes) run from pkg/plugin through Instance.QueryData and CallResource over the
// same histories. No binary links this package (pkg/archtest keeps sim and probe out of the
// plugin's).
package goldentest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/inferscope-llm-datasource/pkg/probe"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Scrape is the fixtures' scrape interval (and the settings' one): 15 s.
const Scrape = 15 * time.Second

// Span is how much simulated history each fixture stores: 30 minutes from sim.DefaultStart.
const Span = 30 * time.Minute

// From and To bound the default range of a golden case, as offsets from the simulation
// start: the last 25 minutes of the stored history, with an end that is not step-aligned
// (Grafana's "now" rarely is) to pin the table formats' real-end evaluation. Interval is
// the default DataQuery interval (1 minute).
const (
	From     = 5 * time.Minute
	To       = Span - 7*time.Second
	Interval = time.Minute
)

// Settings is the data source of the golden fixture: three simulated vLLM targets (one with
// the simulated Inferscope GPU agent, priced per GPU-hour; one priced per hour; one without
// a price), an energy price, one dcgm-exporter agent with a constant page (DCGMLabPage, with
// its throttle bitmask and DCGM blank sentinels) and two SLO profiles (latency objectives on
// and off a bucket bound, and an error-ratio objective). Every URL is fixed text.
const Settings = `{"scrapeInterval":"15s","energyPricePerKWh":0.2,
 "targets":[
  {"name":"vllm-a","url":"http://vllm-a:8000/metrics","agent":"vllm-a-gpu"},
  {"name":"vllm-b","url":"http://vllm-b:8000/metrics","costPerHour":3.6},
  {"name":"vllm-c","url":"http://vllm-c:8000/metrics"}],
 "gpuAgents":[
  {"name":"vllm-a-gpu","url":"http://vllm-a-gpu:9400/metrics","costPerGPUHour":2.5},
  {"name":"dcgm-lab","url":"http://lab-1:9400/metrics","kind":"dcgm"}],
 "sloProfiles":[
  {"name":"chat","objectives":[
   {"name":"ttft-1s","signal":"ttft","threshold":1,"target":0.95},
   {"name":"e2e-1.7s","signal":"e2e","threshold":1.7,"target":0.99},
   {"name":"errors","kind":"error_ratio","target":0.99}]},
  {"name":"batch","objectives":[
   {"name":"e2e-20s","signal":"e2e","threshold":20,"target":0.9,"targets":["vllm-b"]}]}]}`

// targets are the simulated targets of the golden fixture: scenario, seed and served model
// are fixed, so the stored samples are the same on every run.
var targets = []struct {
	name, scenario, model string
	seed                  uint64
	gpu                   bool
}{
	{"vllm-a", "healthy", "meta-llama/Llama-3.1-8B-Instruct", 1, true},
	{"vllm-b", "restart", "Qwen/Qwen3-0.6B", 2, false},
	{"vllm-c", "queue-saturated", "meta-llama/Llama-3.1-8B-Instruct", 3, false},
}

// Fixture is one stored history and the data source over it: the settings (loaded and
// validated), the querier over the embedded TSDB, and the simulation's start and end (the
// instance's clock reads End).
type Fixture struct {
	Settings   settings.Settings
	Querier    source.Querier
	Start, End time.Time
}

var (
	goldenOnce sync.Once
	goldenFx   *Fixture
	goldenErr  error
	probeOnce  sync.Once
	probeFx    *Fixture
	probeErr   error
)

// Golden returns, built once per test binary under dataDir, the golden fixture: Span of
// each target's scenario fast-forwarded at Scrape into one TSDB, plus DCGMLabPage stored
// every scrape interval for the dcgm-lab agent, compacted into one block; Settings with
// baselinesPath set to baselinesDir (made absolute), where the benchmark cases find their
// baselines. Later calls return the first one's fixture whatever their arguments.
func Golden(dataDir, baselinesDir string) (*Fixture, error) {
	goldenOnce.Do(func() { goldenFx, goldenErr = buildGolden(dataDir, baselinesDir) })
	return goldenFx, goldenErr
}

func buildGolden(dataDir, baselinesDir string) (*Fixture, error) {
	dir, err := os.MkdirTemp(dataDir, "golden-tsdb-")
	if err != nil {
		return nil, err
	}
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, err
	}
	start := sim.DefaultStart
	for _, tg := range targets {
		cfg := sim.DefaultConfig()
		if err := sim.ApplyScenario(&cfg, tg.scenario); err != nil {
			return nil, err
		}
		cfg.Seed = tg.seed
		cfg.Model.Name = tg.model
		s, err := sim.New(cfg, sim.Options{})
		if err != nil {
			return nil, err
		}
		start = s.Start()
		ff := sim.FastForwardOptions{Duration: Span, ScrapeInterval: Scrape,
			VLLM: sim.Target{Job: tg.name, Instance: tg.name + ":8000"}}
		if tg.gpu {
			ff.GPU = sim.Target{Job: tg.name + "-gpu", Instance: tg.name + "-gpu:9400"}
		}
		if _, err := s.FastForward(context.Background(), db, ff); err != nil {
			return nil, err
		}
	}
	var times []int64
	for at := start; !at.After(start.Add(Span)); at = at.Add(Scrape) {
		times = append(times, at.UnixMilli())
	}
	app := db.Appender(context.Background())
	if err := AppendPage(app, "dcgm-lab", []byte(DCGMLabPage), times); err != nil {
		return nil, err
	}
	if err := app.Commit(); err != nil {
		return nil, err
	}
	// The head hands series to the PromQL engine in the order they were created, which the
	// simulators' scrape order does not fix from one run to the next, and float sums (avg,
	// sum) depend on that order in their last bit. A persisted block holds its series sorted
	// by labels: compact the whole head into one.
	head := db.Head()
	mint, maxt := head.MinTime(), head.MaxTime()
	if err := db.CompactHead(tsdb.NewRangeHead(head, mint, maxt)); err != nil {
		return nil, err
	}
	if b := db.Blocks(); len(b) != 1 || b[0].MinTime() > mint || b[0].MaxTime() <= maxt {
		return nil, fmt.Errorf("the golden history was not compacted into one block holding [%d, %d]", mint, maxt)
	}
	st, err := settings.Load([]byte(Settings), nil)
	if err != nil {
		return nil, err
	}
	// Settings require an absolute baselines path.
	if st.BaselinesPath, err = filepath.Abs(baselinesDir); err != nil {
		return nil, err
	}
	return &Fixture{Settings: st, Querier: source.NewEmbedded(db, source.EmbeddedOptions{}), Start: start, End: start.Add(Span)}, nil
}

// AppendPage parses an exposition page with Prometheus's text parser (as the scrape loop
// does) and appends every sample at each of times (Unix ms) with job=<job>,
// instance=<job>:9400. Lines reading "..." (the elision marks of the dcgm-exporter README
// snippet) are removed first. A page without samples is an error.
func AppendPage(app storage.Appender, job string, page []byte, times []int64) error {
	var kept [][]byte
	for _, l := range bytes.Split(page, []byte("\n")) {
		if strings.TrimSpace(string(l)) != "..." {
			kept = append(kept, l)
		}
	}
	page = bytes.Join(kept, []byte("\n"))
	p := textparse.NewPromParser(page, labels.NewSymbolTable(), false)
	n := 0
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s's page: %w", job, err)
		}
		if et != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		b := labels.NewBuilder(lset)
		b.Set("job", job)
		b.Set("instance", job+":9400")
		ls := b.Labels()
		for _, ts := range times {
			if _, err := app.Append(0, ls, ts, v); err != nil {
				return fmt.Errorf("%s: %w", ls.String(), err)
			}
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no samples in %s's page", job)
	}
	return nil
}

// ProbeSettings is the data source of the probe fixture: vllm-a (the healthy simulator, seed
// 1) with probe-a, vllm-b (seed 2, no probe), and the client profile (TTFT ≤ 150 ms at 99 %,
// queue time ≤ 1 s at 90 %, availability 99 %).
const ProbeSettings = `{"scrapeInterval":"15s",
 "targets":[{"name":"vllm-a","url":"http://vllm-a:8000/metrics"},{"name":"vllm-b","url":"http://vllm-b:8000/metrics"}],
 "probes":[{"name":"probe-a","url":"http://probe-a:9401/metrics","target":"vllm-a"}],
 "sloProfiles":[{"name":"client","objectives":[
   {"name":"ttft-150ms","signal":"ttft","threshold":0.15,"target":0.99},
   {"name":"queue-1s","signal":"queue_time","threshold":1,"target":0.9},
   {"name":"availability","kind":"error_ratio","target":0.99}]}]}`

// ProbeEvery is the probe fixture's request interval (one request per scrape), ProbeModel
// and ProbeEndpoint what its requests name.
const (
	ProbeEvery    = 15 * time.Second
	ProbeModel    = "meta-llama/Llama-3.1-8B-Instruct"
	ProbeEndpoint = "vllm-a:8000/v1/chat/completions"
)

// ProbeSchedule returns request k of the probe fixture's probe, started at at. Its requests
// are written by hand:
//
//   - every successful request: TTFT 0.120 s, 16 tokens, 15 gaps of 0.020 s (max gap
//     0.020 s, variance 0), E2E 0.420 s;
//   - request 48 (t = 12:01): a one-token stall, one gap of 0.800 s;
//   - requests 80…111 (t = 20:01 … 27:46): every one has a gap of 0.600 s;
//   - requests 60 and 64 answer 429, request 70 answers 503, request 72 is cut.
func ProbeSchedule(k int, at time.Time) probe.Result {
	r := probe.Result{Endpoint: ProbeEndpoint, Model: ProbeModel, Start: at}
	switch k {
	case 60, 64:
		r.Status, r.Class = 429, probe.ClassHTTP429
		return r
	case 70:
		r.Status, r.Class = 503, probe.ClassHTTP5xx
		return r
	case 72:
		r.Status, r.Class = 200, probe.ClassStreamCut
		return r
	}
	gaps := make([]float64, 15)
	for i := range gaps {
		gaps[i] = 0.020
	}
	switch {
	case k == 48:
		gaps[7] = 0.800
	case k >= 80 && k <= 111:
		gaps[3] = 0.600
	}
	sum, maxGap := 0.0, 0.0
	for _, g := range gaps {
		sum += g
		maxGap = math.Max(maxGap, g)
	}
	mean := sum / 15
	variance := 0.0
	for _, g := range gaps {
		variance += (g - mean) * (g - mean)
	}
	r.Status, r.TTFB, r.TTFT, r.Gaps, r.OutputTokens = 200, 0.100, 0.120, gaps, 16
	r.E2E, r.TPOT, r.GapMax, r.GapVariance = 0.120+sum, sum/15, maxGap, variance/15
	return r
}

// Probe returns, built once per test binary under dataDir, the probe fixture: vllm-a and
// vllm-b scraped every Scrape for Span, and probe-a exercising vllm-a with one request every
// ProbeEvery (ProbeSchedule), made 1 s after each scrape, so every request is scraped
// exactly once.
func Probe(dataDir string) (*Fixture, error) {
	probeOnce.Do(func() { probeFx, probeErr = buildProbe(dataDir) })
	return probeFx, probeErr
}

func buildProbe(dataDir string) (*Fixture, error) {
	dir, err := os.MkdirTemp(dataDir, "probe-tsdb-")
	if err != nil {
		return nil, err
	}
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return nil, err
	}
	for _, tg := range []struct {
		job  string
		seed uint64
	}{{"vllm-a", 1}, {"vllm-b", 2}} {
		cfg := sim.DefaultConfig()
		cfg.Seed = tg.seed
		s, err := sim.New(cfg, sim.Options{})
		if err != nil {
			return nil, err
		}
		if _, err := s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: Span, ScrapeInterval: Scrape,
			VLLM: sim.Target{Job: tg.job, Instance: tg.job + ":8000"}}); err != nil {
			return nil, err
		}
	}
	start := sim.DefaultStart
	m := probe.NewMetrics()
	m.Init(ProbeEndpoint, ProbeModel, ProbeEvery.Seconds(), 16)
	app := db.Appender(context.Background())
	for k := 0; k <= int(Span/ProbeEvery); k++ {
		scrape := start.Add(time.Duration(k) * ProbeEvery)
		if k > 0 {
			m.Observe(ProbeSchedule(k-1, scrape.Add(-ProbeEvery+time.Second)))
		}
		fams, err := m.Registry.Gather()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				return nil, err
			}
		}
		if err := AppendPage(app, "probe-a", buf.Bytes(), []int64{scrape.UnixMilli()}); err != nil {
			return nil, err
		}
	}
	if err := app.Commit(); err != nil {
		return nil, err
	}
	st, err := settings.Load([]byte(ProbeSettings), nil)
	if err != nil {
		return nil, err
	}
	return &Fixture{Settings: st, Querier: source.NewEmbedded(db, source.EmbeddedOptions{}), Start: start, End: start.Add(Span)}, nil
}
