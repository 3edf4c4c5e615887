package twin

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

var (
	validateN    = flag.Int("twin.n", 2, "hidden configurations in TestTwinAgainstHiddenSimulator")
	validateSeed = flag.Uint64("twin.seed", 1, "first seed of the hidden configurations (tune: 1; fresh: 1001)")
	validateOut  = flag.String("twin.out", "", "write the per-configuration table (TSV) here")
	// issue 35: the hidden simulator's step-time law is that of this world (sim.Worlds)
	validateWorld = flag.String("twin.world", sim.WorldRoofline, "world whose step-time law the hidden configurations use (sim.Worlds)")
)

// chat is the validation profile: TTFT p99 ≤ 3 s and TPOT p99 ≤ 100 ms.
var chat = Profile{Name: "chat", Objectives: []Objective{{"ttft", 3, 0.99}, {"tpot", 0.1, 0.99}}}

// hidden draws a random simulator configuration from seed: workload, step-time
// efficiencies, KV memory, prefix hit ratio and max_num_seqs.
func hidden(seed uint64) sim.Config {
	r := rand.New(rand.NewPCG(seed, 0x7717))
	u := func(a, b float64) float64 { return a + (b-a)*r.Float64() }
	cfg := sim.DefaultConfig()
	cfg.Seed = seed
	cfg.ClientTimeout = 0
	cfg.Prompt = sim.LengthDist{Kind: "lognormal", Mean: u(200, 1500), Sigma: u(0.4, 1.0), Min: 8, Max: 8000}
	cfg.Output = sim.LengthDist{Kind: "lognormal", Mean: u(80, 400), Sigma: u(0.4, 0.9), Min: 1, Max: 2000}
	cfg.GPU.MFU = u(0.3, 0.7)
	cfg.GPU.BWEfficiency = u(0.5, 0.9)
	cfg.PrefixHitRatio = u(0, 0.5)
	cfg.GPUMemoryUtil = u(0.5, 0.9)
	cfg.MaxNumSeqs = []int{64, 128, 256}[r.IntN(3)]
	return cfg
}

// history fast-forwards cfg at rate for span into a fresh TSDB (15 s scrapes, job "vllm")
// and returns a querier over it and the end of the history.
func history(t *testing.T, cfg sim.Config, rate float64, span time.Duration) (source.Querier, time.Time) {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	cfg.Rate = rate
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: span, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "vllm", Instance: "vllm:8000"}})
	require.NoError(t, err)
	return source.NewEmbedded(db, source.EmbeddedOptions{}), s.Start().Add(span)
}

// row is one hidden configuration's comparison.
type row struct {
	seed               uint64
	trueKnee, twinKnee float64
	load               float64
	whatIf             []string
	whatIfErr          []float64 // relative errors of p99 TTFT, TPOT, E2E per change
	law                string    // the twin's chosen step-time law and its held-out errors
}

func relErr(pred, truth float64) float64 { return math.Abs(pred-truth) / truth }

// validateOne runs the whole loop for one hidden configuration: its true knee, a 30-minute
// history at 30..80 % of it, the twin calibrated on that history only, the twin's knee, and
// four what-ifs at the history's load against the hidden simulator's answers.
func validateOne(t *testing.T, seed uint64) row {
	cfg := hidden(seed)
	sim.ApplyWorldLaw(&cfg, seed, *validateWorld)
	trueKnee, err := Knee(context.Background(), cfg, chat, 4)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(seed, 1))
	load := trueKnee * (0.3 + 0.5*r.Float64())
	q, end := history(t, cfg, load, 30*time.Minute)
	obs, err := Observe(context.Background(), q, "vllm", end, 30*time.Minute)
	require.NoError(t, err)
	tw, err := Calibrate(context.Background(), obs, Known{MaxNumSeqs: cfg.MaxNumSeqs})
	require.NoError(t, err)
	twinKnee, err := Knee(context.Background(), tw.Config, chat, 4)
	require.NoError(t, err)
	out := row{seed: seed, trueKnee: trueKnee, twinKnee: twinKnee, load: load,
		law: fmt.Sprintf("%s:db=%.2f:s=%.0fus:f=%.0f:roof=%.4f:lin=%.4f:floor=%.4f:n=%d:hidden=%s/s=%.0fus/f=%.0f", tw.Law.Law.Kind, tw.Law.Debias, 1e6*tw.Law.Law.PerSeqDecode, tw.Law.Law.FloorBatch,
			tw.Law.Errors[""], tw.Law.Errors["per-sequence"], tw.Law.Errors["memory-floor"], tw.Law.Windows, cfg.StepLaw.Kind, 1e6*cfg.StepLaw.PerSeqDecode, cfg.StepLaw.FloorBatch)}
	if tw.Law.Undecided {
		out.law += ":undecided"
	}
	if tw.Law.RefErrors != nil {
		out.law += fmt.Sprintf(":ref=%.4f/%.4f/%.4f", tw.Law.RefErrors[""], tw.Law.RefErrors["per-sequence"], tw.Law.RefErrors["memory-floor"])
	}
	changes := []Change{
		{Name: fmt.Sprintf("max-num-seqs %d", cfg.MaxNumSeqs/2), MaxNumSeqs: cfg.MaxNumSeqs / 2},
		{Name: "+1 replica", AddReplicas: 1},
		{Name: "prompts x2", PromptScale: 2},
		{Name: "prefix caching 60%", PrefixHitRatio: 0.6},
		// issue 35: load ×k up to 90 % of the true knee (k 1.125..3): the load what-if's band
		// and the queueing tails near the knee
		{Name: "load to 90% of the knee", LoadScale: 0.9 * trueKnee / load},
	}
	for _, c := range changes {
		pred, err := WhatIf(context.Background(), tw, obs.Rate, c, chat)
		require.NoError(t, err)
		hcfg, hrate := c.Apply(cfg, load)
		truth, err := Evaluate(context.Background(), hcfg, hrate, chat)
		require.NoError(t, err)
		out.whatIf = append(out.whatIf, c.Name)
		for _, sig := range []string{"ttft", "tpot", "e2e"} {
			out.whatIfErr = append(out.whatIfErr, relErr(pred.P99[sig], truth.P99[sig]))
		}
	}
	return out
}

// TestTwinAgainstHiddenSimulator calibrates the twin on the scraped history of simulators
// with hidden random parameters and compares its knee and what-if p99s with the hidden
// simulator's. The reduced run (2 configurations) checks that the loop works and that the
// errors stay within twice the goals (knee 15 %, what-if p99 20 %); scripts/twin-validate.sh
// runs the full sets whose figures are in docs/capacity.md.
func TestTwinAgainstHiddenSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load per configuration")
	}
	n := *validateN
	rows := make([]row, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rows[i] = validateOne(t, *validateSeed+uint64(i))
		}(i)
	}
	wg.Wait()
	var kneeErrs, wiErrs []float64
	var b strings.Builder
	b.WriteString("seed\ttrue_knee\ttwin_knee\tknee_err\tload\twhatif_p99_errs(ttft,tpot,e2e per change)\tlaw\n")
	for _, r := range rows {
		ke := relErr(r.twinKnee, r.trueKnee)
		kneeErrs = append(kneeErrs, ke)
		wiErrs = append(wiErrs, r.whatIfErr...)
		fmt.Fprintf(&b, "%d\t%.2f\t%.2f\t%.3f\t%.2f\t%s\t%s\n", r.seed, r.trueKnee, r.twinKnee, (r.twinKnee-r.trueKnee)/r.trueKnee, r.load, fmtErrs(r.whatIfErr), r.law)
	}
	summary := fmt.Sprintf("configs %d: knee error median %.3f, p90 %.3f, within 15%%: %d/%d; what-if p99 error median %.3f, p90 %.3f, within 20%%: %d/%d",
		n, q(kneeErrs, 0.5), q(kneeErrs, 0.9), within(kneeErrs, 0.15), len(kneeErrs), q(wiErrs, 0.5), q(wiErrs, 0.9), within(wiErrs, 0.2), len(wiErrs))
	t.Log("\n" + b.String() + summary)
	if *validateOut != "" {
		require.NoError(t, os.WriteFile(*validateOut, []byte(b.String()+summary+"\n"), 0o644))
	}
	if *validateOut == "" {
		require.Less(t, q(kneeErrs, 0.5), 0.30, "median knee error above twice the 15 %% goal")
		require.Less(t, q(wiErrs, 0.5), 0.40, "median what-if p99 error above twice the 20 %% goal")
	}
}

func fmtErrs(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, ",")
}

func q(v []float64, p float64) float64 {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return quantile(c, p)
}

func within(v []float64, lim float64) int {
	n := 0
	for _, x := range v {
		if x <= lim {
			n++
		}
	}
	return n
}

// TestTwinAgainstPerSequenceWorld is the CI check of a non-roofline world (issue 35): two
// hidden configurations (tune seeds 3 and 5) whose step time carries a per-sequence decode
// cost and context-quadratic prefill (sim.WorldPerSequence), the twin calibrated on each
// one's scraped history. The twin must choose a law with a per-sequence cost on both and find
// each knee within 10 % of the hidden simulator's (measured: −2.1 % and −2.4 % before the
// shape's refit, +2.9 % and −1.6 % with it, −3.1 % and 0.0 % with the evaluation's drain, so
// the floor is over three times the error). Seed 5006 (issue 35's fourth-round fresh set,
// spent since) is a history that cannot tell the per-sequence law from the roofline (held-out
// errors 0.92 % and 1.14 %, 0.83 % and 1.08 % on the roofline's own windows): the roofline
// kept there put the knee +16.8 % high; the conservative choice (LawFit.Undecided) keeps the
// per-sequence law. Seed 5015 (spent, issue 35's sixth round) is a history whose richer laws
// beat the roofline by 7 % only, under the old 10 % margin: the roofline kept there put the
// knee +21.1 % high; with any improvement enough (chooseMargin) the per-sequence law is
// chosen (+2.3 %). The runs are seeded, so the floors do not depend on the machine's speed;
// about 45 CPU-seconds.
func TestTwinAgainstPerSequenceWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load per configuration")
	}
	world := *validateWorld
	*validateWorld = sim.WorldPerSequence
	defer func() { *validateWorld = world }()
	for _, seed := range []uint64{3, 5, 5006, 5015} {
		r := validateOne(t, seed)
		assert.NotEqual(t, "", strings.SplitN(r.law, ":", 2)[0], "seed %d: the roofline kept (%s)", seed, r.law)
		assert.Less(t, relErr(r.twinKnee, r.trueKnee), 0.10, "seed %d: twin knee %.2f, true %.2f", seed, r.twinKnee, r.trueKnee)
	}
}

// TestTwinAgainstMemoryFloorWorld is the CI check of the memory-floor world (issue 35): tune
// seed 1003, whose weight-read floor doubles at 72 sequences; before the shape's refit on the
// twin's own windows (debiasShape) the twin fitted a floor at 40 sequences and its knee was
// 17.2 % low. The twin must choose the memory-floor law and find the knee within 10 %
// (measured −2.5 %, floor at 64 sequences; +0.6 %, floor at 85, with the evaluation's
// drain). Seeded; about 10 CPU-seconds.
func TestTwinAgainstMemoryFloorWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load per configuration")
	}
	world := *validateWorld
	*validateWorld = sim.WorldMemoryFloor
	defer func() { *validateWorld = world }()
	r := validateOne(t, 1003)
	assert.Equal(t, "memory-floor", strings.SplitN(r.law, ":", 2)[0], "the law chosen (%s)", r.law)
	assert.Less(t, relErr(r.twinKnee, r.trueKnee), 0.10, "twin knee %.2f, true %.2f", r.twinKnee, r.trueKnee)
}
