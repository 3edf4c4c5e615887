package sim

import (
	"bytes"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

func newSim(t testing.TB, scenario string, mod func(*Config), opts Options) *Sim {
	t.Helper()
	cfg := DefaultConfig()
	require.NoError(t, ApplyScenario(&cfg, scenario))
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg, opts)
	require.NoError(t, err)
	return s
}

// The identities of engines.md §1.5 hold for every finished request.
func TestIdentitiesPerRequest(t *testing.T) {
	for _, v := range []Version{V06, V011} {
		for _, sc := range []string{"healthy", "kv-pressure", "prefill-heavy"} {
			s := newSim(t, sc, func(c *Config) { c.Version = v }, Options{RecordTruth: true, RecordTokens: true})
			s.AdvanceTo(900)
			n := 0
			for _, r := range s.Finished() {
				tr, ok := r.Truth(v)
				if !ok {
					continue
				}
				n++
				const eps = 1e-9
				assert.InDelta(t, tr.Inference, tr.Prefill+tr.Decode, eps, "inference = prefill + decode")
				assert.GreaterOrEqual(t, tr.Queue, 0.0)
				assert.GreaterOrEqual(t, tr.Prefill, 0.0)
				assert.GreaterOrEqual(t, tr.Decode, 0.0)
				assert.GreaterOrEqual(t, tr.TTFT+eps, tr.Queue+tr.Prefill, "TTFT ≥ queue + prefill")
				if v.V1() {
					// frontend overhead: input processing + output processing > 0
					assert.Greater(t, tr.E2E, tr.Queue+tr.Inference, "V1 E2E > queue + inference")
					over := tr.E2E - tr.Queue - tr.Inference
					want := s.Config().InputOverhead + s.Config().InputOverheadPerToken*float64(r.PromptTokens) + s.Config().OutputOverhead
					assert.InDelta(t, want, over, 1e-9, "frontend overhead")
				} else {
					assert.InDelta(t, tr.E2E, tr.Queue+tr.Prefill+tr.Decode, eps, "V0 E2E = queue + prefill + decode")
					assert.InDelta(t, tr.TTFT, tr.Queue+tr.Prefill, eps, "V0 TTFT = queue + prefill")
				}
				require.Len(t, tr.ITL, r.Generated-1)
				sum := 0.0
				for _, g := range tr.ITL {
					assert.Greater(t, g, 0.0)
					sum += g
				}
				assert.InDelta(t, tr.Decode, sum, 1e-6, "ITL gaps add up to the decode time")
				assert.Equal(t, r.OutputTokens, r.Generated)
			}
			assert.Greater(t, n, 100, "%s %s finished requests", v, sc)
		}
	}
}

// The exposed histograms count exactly the ground truth: for each bound, the
// number of true values ≤ bound, computed here from the requests.
func TestHistogramsMatchTruth(t *testing.T) {
	s := newSim(t, "healthy", func(c *Config) { c.ClientTimeout = 0 }, Options{RecordTruth: true, RecordTokens: true})
	s.AdvanceTo(600)
	var e2e, queue, itl []float64
	for _, r := range s.Finished() {
		tr, ok := r.Truth(V011)
		require.True(t, ok)
		e2e = append(e2e, tr.E2E)
		queue = append(queue, tr.Queue)
		itl = append(itl, tr.ITL...)
	}
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	check := func(name string, truth []float64) {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			h := mf.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(len(truth)), h.GetSampleCount(), name)
			for _, b := range h.GetBucket() {
				n := 0
				for _, v := range truth {
					if v <= b.GetUpperBound() {
						n++
					}
				}
				assert.Equal(t, uint64(n), b.GetCumulativeCount(), "%s le=%v", name, b.GetUpperBound())
			}
			return
		}
		t.Fatalf("family %s missing", name)
	}
	check("vllm:e2e_request_latency_seconds", e2e)
	check("vllm:request_queue_time_seconds", queue)
	// ITL also holds the gaps of requests still running: compare only the
	// finished requests' gaps as a lower bound per bucket
	for _, mf := range mfs {
		if mf.GetName() == "vllm:inter_token_latency_seconds" {
			assert.GreaterOrEqual(t, mf.GetMetric()[0].GetHistogram().GetSampleCount(), uint64(len(itl)))
		}
	}
}

func TestDeterministic(t *testing.T) {
	page := func(seed uint64) []byte {
		s := newSim(t, "kv-pressure", func(c *Config) { c.Seed = seed }, Options{})
		s.AdvanceTo(1800)
		p, err := s.Page()
		require.NoError(t, err)
		g, err := s.GPUPage()
		require.NoError(t, err)
		return append(p, g...)
	}
	a, b := page(7), page(7)
	assert.True(t, bytes.Equal(a, b), "same seed, same pages")
	assert.False(t, bytes.Equal(a, page(8)), "another seed, another page")
}

func TestScenarioSymptoms(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		s := newSim(t, "healthy", nil, Options{})
		maxWait := 0
		for x := 60.0; x <= 1800; x += 15 {
			s.AdvanceTo(x)
			maxWait = max(maxWait, s.State().Waiting)
		}
		st := s.State()
		assert.Zero(t, st.Preemptions)
		assert.Less(t, st.KVUsage, 0.5)
		assert.LessOrEqual(t, maxWait, 5)
		assert.Equal(t, uint64(0), st.Throttle&(enginemodel.ThrottleSWThermal|enginemodel.ThrottleHWThermal|enginemodel.ThrottlePowerCap))
	})
	t.Run("queue-saturated", func(t *testing.T) {
		s := newSim(t, "queue-saturated", nil, Options{})
		s.AdvanceTo(900)
		st := s.State()
		assert.Greater(t, st.Waiting, 0)
		assert.Equal(t, s.Config().MaxNumSeqs, st.Running, "running = max_num_seqs")
		assert.Less(t, st.KVUsage, 0.5, "the limit is max_num_seqs, not KV")
	})
	t.Run("kv-pressure", func(t *testing.T) {
		s := newSim(t, "kv-pressure", nil, Options{})
		maxKV := 0.0
		for x := 30.0; x <= 1800; x += 15 {
			s.AdvanceTo(x)
			maxKV = max(maxKV, s.State().KVUsage)
		}
		assert.Greater(t, s.State().Preemptions, 0.0)
		assert.GreaterOrEqual(t, maxKV, 0.9)
	})
	t.Run("prefill-heavy vs decode-bound", func(t *testing.T) {
		type res struct{ prefill, ttft, decode, e2e, sm, dram float64 }
		run := func(sc string) res {
			s := newSim(t, sc, nil, Options{RecordTruth: true})
			var r res
			k := 0
			for x := 15.0; x <= 900; x += 15 {
				s.AdvanceTo(x)
				if x > 120 {
					s.Inspect(func(sn *enginemodel.Snapshot) {
						r.sm += sn.GPU.SM
						r.dram += sn.GPU.DRAM
					})
					k++
				}
			}
			r.sm /= float64(k)
			r.dram /= float64(k)
			n := 0.0
			for _, q := range s.Finished() {
				if tr, ok := q.Truth(V011); ok {
					r.prefill += tr.Prefill
					r.ttft += tr.TTFT
					r.decode += tr.Decode
					r.e2e += tr.E2E
					n++
				}
			}
			r.prefill, r.ttft, r.decode, r.e2e = r.prefill/n, r.ttft/n, r.decode/n, r.e2e/n
			return r
		}
		p := run("prefill-heavy")
		d := run("decode-bound")
		assert.Greater(t, p.prefill/p.ttft, 0.3, "prefill is a large share of TTFT in prefill-heavy")
		assert.Greater(t, p.prefill, 5*d.prefill, "prefill time much longer than in decode-bound")
		assert.Greater(t, d.decode/d.e2e, 0.9, "decode dominates E2E in decode-bound")
		assert.Greater(t, p.sm, p.dram, "prefill-heavy: SM-bound")
		assert.Greater(t, d.dram, d.sm, "decode-bound: DRAM-bound")
		assert.Greater(t, d.dram, 0.6)
	})
	t.Run("thermal-throttled", func(t *testing.T) {
		s := newSim(t, "thermal-throttled", nil, Options{})
		s.AdvanceTo(900)
		st := s.State()
		assert.NotZero(t, st.Throttle&enginemodel.ThrottleSWThermal, "sw_thermal active")
		assert.Less(t, st.SMClockHz, 0.95*s.Config().GPU.SMClockMaxHz)
		assert.GreaterOrEqual(t, st.TempC, s.Config().GPU.SlowdownTempC-2)
	})
	t.Run("restart", func(t *testing.T) {
		s := newSim(t, "restart", nil, Options{})
		s.AdvanceTo(590)
		before := counter(t, s, "vllm:generation_tokens_total")
		require.Greater(t, before, 1000.0)
		s.AdvanceTo(600 + 5)
		assert.True(t, s.Down(), "down during the restart")
		s.AdvanceTo(600 + 60)
		after := counter(t, s, "vllm:generation_tokens_total")
		assert.Less(t, after, before, "counter reset")
		assert.Greater(t, after, 0.0, "counting again after the restart")
		assert.Equal(t, float64(DefaultStart.Unix())+620, gauge(t, s, "process_start_time_seconds"))
	})
	t.Run("stalled", func(t *testing.T) {
		s := newSim(t, "stalled", nil, Options{})
		s.AdvanceTo(310)
		gen := counter(t, s, "vllm:generation_tokens_total")
		w1 := s.State().Waiting
		s.AdvanceTo(600)
		assert.Equal(t, gen, counter(t, s, "vllm:generation_tokens_total"), "progress counters freeze")
		assert.Greater(t, s.State().Waiting, w1+500, "requests pile up")
		assert.Equal(t, 0.0, gauge(t, s, "vllm:num_requests_running"), "running gauge drops to 0")
		assert.False(t, s.Down(), "/health and /metrics keep answering")
	})
	t.Run("flaky", func(t *testing.T) {
		s := newSim(t, "flaky", nil, Options{})
		var fails int
		for i := 0; i < 1000; i++ {
			if s.ScrapeOutcome() != ScrapeOK {
				fails++
			}
		}
		assert.InDelta(t, 250, fails, 50, "≈25 % of scrapes fail")
	})
}

func TestScenarioTable(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range Scenarios {
		assert.False(t, seen[sc.Name], "unique name")
		seen[sc.Name] = true
		assert.NotEmpty(t, sc.Description)
		assert.NotEmpty(t, sc.Bottleneck)
		cfg := DefaultConfig()
		require.NoError(t, ApplyScenario(&cfg, sc.Name))
		require.NoError(t, cfg.Validate(), sc.Name)
	}
	for _, n := range []string{"healthy", "queue-saturated", "kv-pressure", "prefill-heavy", "decode-bound", "thermal-throttled", "restart", "flaky", "stalled"} {
		assert.True(t, seen[n], n)
	}
	_, err := LookupScenario("nope")
	assert.ErrorContains(t, err, "unknown scenario")
}

func TestConfigErrors(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Version = "0.7" },
		func(c *Config) { c.Rate = -1 },
		func(c *Config) { c.Rate = math.NaN() },
		func(c *Config) { c.MaxNumSeqs = 0 },
		func(c *Config) { c.MaxNumBatchedTokens = 10 },
		func(c *Config) { c.NumGPUBlocks = 10 },
		func(c *Config) { c.Prompt.Kind = "zipf" },
		func(c *Config) { c.Prompt.Max = 40000 },
		func(c *Config) { c.PrefixHitRatio = 2 },
		func(c *Config) { c.FlakyErrorRatio = 0.8; c.FlakyStallRatio = 0.5 },
		func(c *Config) { c.RestartEvery = time.Second; c.RestartDowntime = 2 * time.Second },
		func(c *Config) {
			c.Trace = []TraceEntry{{At: 2, PromptTokens: 1, OutputTokens: 1}, {At: 1, PromptTokens: 1, OutputTokens: 1}}
		},
		func(c *Config) { c.ChunkedPrefill = false; c.MaxNumBatchedTokens = 2048 },
		func(c *Config) { c.Model.Params = 1e12 },
	}
	for i, m := range bad {
		cfg := DefaultConfig()
		m(&cfg)
		_, err := New(cfg, Options{})
		assert.Error(t, err, "case %d", i)
	}
	v, err := ParseVersion("0.11.2")
	require.NoError(t, err)
	assert.Equal(t, V011, v)
}

func TestTraceArrivals(t *testing.T) {
	tr := []TraceEntry{{At: 0.5, PromptTokens: 100, OutputTokens: 10}, {At: 0.5, PromptTokens: 200, OutputTokens: 1}, {At: 3, PromptTokens: 50, OutputTokens: 20}}
	s := newSim(t, "healthy", func(c *Config) { c.Trace = tr; c.PrefixCaching = false }, Options{RecordTruth: true})
	s.AdvanceTo(60)
	fin := s.Finished()
	require.Len(t, fin, 3)
	sort.Slice(fin, func(i, j int) bool { return fin[i].ID < fin[j].ID })
	for i, r := range fin {
		assert.Equal(t, tr[i].At, r.Arrival)
		assert.Equal(t, tr[i].PromptTokens, r.PromptTokens)
		assert.Equal(t, tr[i].OutputTokens, r.Generated)
	}
	assert.Equal(t, 31.0, counter(t, s, "vllm:generation_tokens_total"), "10 + 1 + 20 generated tokens")
	assert.Equal(t, 350.0, counter(t, s, "vllm:prompt_tokens_total"), "100 + 200 + 50 prompt tokens")
}

// counter / gauge read one unlabeled-by-extra sample of a family.
func counter(t testing.TB, s *Sim, name string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no family %s", name)
	return 0
}

func gauge(t testing.TB, s *Sim, name string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no family %s", name)
	return 0
}
