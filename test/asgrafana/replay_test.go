package asgrafana

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"
)

const (
	pageV1 = "testdata/vllm-0.11-v1-qwen05b-created-series.prom"
	pageV0 = "testdata/vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom"
)

// histSpec is the known distribution behind one replayed histogram: Rate
// observations per second, cumulative bucket rates Rate × F(le) with F the
// log-normal CDF of (Median, Sigma), and _sum growing at Rate × Mean.
type histSpec struct {
	Median, Sigma, Rate, Mean float64
}

// cdf is the log-normal CDF at x (0 at x ≤ 0, 1 at +Inf).
func (h histSpec) cdf(x float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return 1
	case x <= 0:
		return 0
	}
	z := (math.Log(x) - math.Log(h.Median)) / h.Sigma
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}

// lognormal builds a spec whose mean is the log-normal mean m·exp(s²/2).
func lognormal(median, sigma, rate float64) histSpec {
	return histSpec{Median: median, Sigma: sigma, Rate: rate, Mean: median * math.Exp(sigma*sigma/2)}
}

// vllmModel holds the per-second rates the "vllm-v1" replay advances every
// counter and histogram by, and the fixed values of the gauges it sets.
// Everything the test expects is computed from this model, never read back
// from the plugin.
type vllmModel struct {
	reqRate      float64
	hists        map[string]histSpec // histogram base name -> spec
	counters     map[string]float64  // counter sample name -> rate
	reasons      map[string]float64  // request_success_total by finished_reason
	gauges       map[string]float64
	defaultHist  histSpec
	defaultCount float64
}

func newVLLMModel() vllmModel {
	const r = 2.0 // finished requests per second
	queue := lognormal(0.2, 0.8, r)
	prefill := lognormal(0.35, 0.5, r)
	decode := lognormal(3, 0.6, r)
	// inference = prefill + decode per request, so its mean is their sum;
	// E2E adds queue time and 80 ms of frontend overhead.
	inference := histSpec{Median: 3.4, Sigma: 0.55, Rate: r, Mean: prefill.Mean + decode.Mean}
	e2e := histSpec{Median: 3.8, Sigma: 0.55, Rate: r, Mean: queue.Mean + inference.Mean + 0.08}
	return vllmModel{
		reqRate: r,
		hists: map[string]histSpec{
			"vllm:time_to_first_token_seconds":    lognormal(0.3, 0.7, r),
			"vllm:request_queue_time_seconds":     queue,
			"vllm:request_prefill_time_seconds":   prefill,
			"vllm:request_decode_time_seconds":    decode,
			"vllm:request_inference_time_seconds": inference,
			"vllm:e2e_request_latency_seconds":    e2e,
			// 100 output tokens per request. The deprecated per-step name gets a
			// different distribution on purpose: the catalogue must prefer
			// inter_token_latency_seconds and never add the two.
			"vllm:inter_token_latency_seconds":           lognormal(0.03, 0.4, 100*r),
			"vllm:time_per_output_token_seconds":         lognormal(0.06, 0.4, 100*r),
			"vllm:request_time_per_output_token_seconds": lognormal(0.03, 0.25, r),
		},
		counters: map[string]float64{
			"vllm:prompt_tokens_total":        500 * r,
			"vllm:generation_tokens_total":    100 * r,
			"vllm:prefix_cache_queries_total": 1000,
			"vllm:prefix_cache_hits_total":    300,
			"vllm:num_preemptions_total":      0.05,
		},
		reasons: map[string]float64{"stop": 1.5, "length": 0.4, "abort": 0.1},
		gauges: map[string]float64{
			"vllm:num_requests_running": 3,
			"vllm:num_requests_waiting": 1,
			"vllm:kv_cache_usage_perc":  0.42,
		},
		defaultHist:  lognormal(50, 1, r),
		defaultCount: 0.5,
	}
}

func (m vllmModel) hist(base string) histSpec {
	if h, ok := m.hists[base]; ok {
		return h
	}
	return m.defaultHist
}

// stageMetric maps a latency stage to its vLLM V1 histogram.
var stageMetric = map[string]string{
	"ttft":           "vllm:time_to_first_token_seconds",
	"e2e":            "vllm:e2e_request_latency_seconds",
	"itl":            "vllm:inter_token_latency_seconds",
	"tpot":           "vllm:request_time_per_output_token_seconds",
	"queue_time":     "vllm:request_queue_time_seconds",
	"prefill_time":   "vllm:request_prefill_time_seconds",
	"decode_time":    "vllm:request_decode_time_seconds",
	"inference_time": "vllm:request_inference_time_seconds",
}

var (
	leRE     = regexp.MustCompile(`[{,]le="([^"]*)"`)
	reasonRE = regexp.MustCompile(`[{,]finished_reason="([^"]*)"`)
)

// sample is one parsed sample line of a text exposition page.
type sample struct {
	name, labels, value string // labels with braces, or ""
}

func parseSample(line string) (sample, bool) {
	if line == "" || strings.HasPrefix(line, "#") {
		return sample{}, false
	}
	var s sample
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return sample{}, false
		}
		s.name, s.labels = line[:i], line[i:j+1]
		f := strings.Fields(line[j+1:])
		if len(f) == 0 {
			return sample{}, false
		}
		s.value = f[0]
		return s, true
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		return sample{}, false
	}
	s.name, s.value = f[0], f[1]
	return s, true
}

// pageTypes reads the `# TYPE` lines of a page: family name -> type.
func pageTypes(lines []string) map[string]string {
	out := map[string]string{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// family resolves a sample name to its family and type via the TYPE lines.
func family(types map[string]string, name string) (string, string) {
	if t, ok := types[name]; ok {
		return name, t
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			if t, ok := types[base]; ok {
				return base, t
			}
		}
	}
	return name, "untyped"
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

// linearLine is one line of the linear replay: verbatim text, or a sample
// whose value is rate × seconds since the anchor, or a fixed gauge value.
type linearLine struct {
	verbatim string
	name     string
	labels   string
	rate     float64
	linear   bool
	fixed    string
}

// linearPage replays the real vLLM 0.11 page with every counter and
// histogram series growing linearly with wall time at the model's rates.
// Each response carries one explicit timestamp for all its samples, on a
// 1 s grid anchored 400 ms before the first request: value = rate × k at
// anchor + k s. A linear counter sampled on a regular grid makes PromQL's
// rate() exact, so expected rates need no tolerance beyond float rounding.
type linearPage struct {
	model  vllmModel
	lines  []linearLine
	bounds map[string][]float64 // histogram base -> page bucket bounds (page order)

	mu     sync.Mutex
	anchor time.Time
	ks     map[int64]bool
}

func newLinearPage(t testing.TB, m vllmModel) *linearPage {
	lines := readLines(t, pageV1)
	types := pageTypes(lines)
	p := &linearPage{model: m, bounds: map[string][]float64{}, ks: map[int64]bool{}}
	for _, l := range lines {
		s, ok := parseSample(l)
		if !ok {
			p.lines = append(p.lines, linearLine{verbatim: l})
			continue
		}
		fam, typ := family(types, s.name)
		ll := linearLine{name: s.name, labels: s.labels}
		switch typ {
		case "histogram":
			h := m.hist(fam)
			switch {
			case strings.HasSuffix(s.name, "_bucket"):
				mm := leRE.FindStringSubmatch(s.labels)
				require.NotNil(t, mm, "bucket without le: %s", l)
				le, err := strconv.ParseFloat(mm[1], 64)
				require.NoError(t, err)
				p.bounds[fam] = append(p.bounds[fam], le)
				ll.rate = h.Rate * h.cdf(le)
			case strings.HasSuffix(s.name, "_sum"):
				ll.rate = h.Rate * h.Mean
			default:
				ll.rate = h.Rate
			}
			ll.linear = true
		case "counter", "summary":
			ll.linear = true
			ll.rate = m.defaultCount
			if r, ok := m.counters[s.name]; ok {
				ll.rate = r
			}
			if s.name == "vllm:request_success_total" {
				mm := reasonRE.FindStringSubmatch(s.labels)
				require.NotNil(t, mm, "request_success_total without finished_reason: %s", l)
				r, ok := m.reasons[mm[1]]
				require.True(t, ok, "no rate chosen for finished_reason %q", mm[1])
				ll.rate = r
			}
		default:
			ll.fixed = s.value
			if v, ok := m.gauges[s.name]; ok {
				ll.fixed = strconv.FormatFloat(v, 'g', -1, 64)
			}
		}
		p.lines = append(p.lines, ll)
	}
	for base := range m.hists {
		require.NotEmpty(t, p.bounds[base], "page has no buckets for %s", base)
	}
	return p
}

// buckets returns the model's cumulative bucket rates of a histogram over the
// page's own bounds: the oracle's input for quantiles.
func (p *linearPage) buckets(base string) promql.Buckets {
	h := p.model.hist(base)
	var b promql.Buckets
	for _, le := range p.bounds[base] {
		b = append(b, promql.Bucket{UpperBound: le, Count: h.Rate * h.cdf(le)})
	}
	sort.Slice(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	return b
}

// scrapes is the number of distinct grid points served so far.
func (p *linearPage) scrapes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ks)
}

// cleanRun returns the time of the latest grid point L such that the n points L-n+1..L were
// all served and a later one was too (so L's scrape has been stored, scrapes of one target
// being sequential): rate() over windows within that run is exact whatever the machine's
// load, which can make a scrape miss its grid point. ok is false when there is none yet.
func (p *linearPage) cleanRun(n int) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var maxK int64 = -1
	for k := range p.ks {
		maxK = max(maxK, k)
	}
	for l := maxK - 1; l-int64(n)+1 >= 0; l-- {
		clean := true
		for k := l - int64(n) + 1; k <= l; k++ {
			if !p.ks[k] {
				clean = false
				break
			}
		}
		if clean {
			return p.anchor.Add(time.Duration(l) * time.Second), true
		}
	}
	return time.Time{}, false
}

func (p *linearPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	p.mu.Lock()
	if p.anchor.IsZero() {
		p.anchor = time.UnixMilli(now.UnixMilli() - 400)
	}
	k := int64(now.Sub(p.anchor) / time.Second)
	p.ks[k] = true
	ts := p.anchor.Add(time.Duration(k) * time.Second).UnixMilli()
	p.mu.Unlock()
	var b strings.Builder
	b.Grow(64 << 10)
	for _, l := range p.lines {
		if l.name == "" {
			b.WriteString(l.verbatim)
			b.WriteByte('\n')
			continue
		}
		v := l.fixed
		if l.linear {
			v = strconv.FormatFloat(l.rate*float64(k), 'g', -1, 64)
		}
		fmt.Fprintf(&b, "%s%s %s %d\n", l.name, l.labels, v, ts)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// jumpPage serves a page with every sample value 0 for its first zeroFor
// requests, then the real page: from then on, any rate window covering the
// jump sees increases proportional to the page's own cumulative values.
type jumpPage struct {
	zero, real []byte
	zeroFor    int

	mu     sync.Mutex
	served int
	realAt int // number of requests answered with the real page
}

func newJumpPage(t testing.TB, path string, zeroFor int) *jumpPage {
	lines := readLines(t, path)
	var z, r strings.Builder
	for _, l := range lines {
		r.WriteString(l + "\n")
		s, ok := parseSample(l)
		if !ok {
			z.WriteString(l + "\n")
			continue
		}
		fmt.Fprintf(&z, "%s%s 0\n", s.name, s.labels)
	}
	return &jumpPage{zero: []byte(z.String()), real: []byte(r.String()), zeroFor: zeroFor}
}

func (p *jumpPage) realScrapes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.realAt
}

func (p *jumpPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.served++
	body := p.zero
	if p.served > p.zeroFor {
		body = p.real
		p.realAt++
	}
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(body)
}

// pageHistogram reads one classic histogram of a real page: its buckets
// (cumulative counts by numeric le), _sum and _count, summed over series.
func pageHistogram(t testing.TB, path, base string) (promql.Buckets, float64, float64) {
	byLe := map[float64]float64{}
	var sum, count float64
	for _, l := range readLines(t, path) {
		s, ok := parseSample(l)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(s.value, 64)
		require.NoError(t, err, l)
		switch s.name {
		case base + "_bucket":
			mm := leRE.FindStringSubmatch(s.labels)
			require.NotNil(t, mm, l)
			le, err := strconv.ParseFloat(mm[1], 64)
			require.NoError(t, err)
			byLe[le] += v
		case base + "_sum":
			sum += v
		case base + "_count":
			count += v
		}
	}
	var b promql.Buckets
	for le, c := range byLe {
		b = append(b, promql.Bucket{UpperBound: le, Count: c})
	}
	sort.Slice(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	require.NotEmpty(t, b, "%s has no %s buckets", path, base)
	return b, sum, count
}

// gpuPage is an Inferscope GPU agent page with two GPUs and known values.
type gpuSeries struct {
	name   string
	gpu    string
	reason string
	value  float64
}

var gpuAgentSeries = []gpuSeries{
	{"inferscope_gpu_utilization_ratio", "0", "", 0.75}, {"inferscope_gpu_utilization_ratio", "1", "", 0.5},
	{"inferscope_gpu_sm_active_ratio", "0", "", 0.61}, {"inferscope_gpu_sm_active_ratio", "1", "", 0.33},
	{"inferscope_gpu_power_watts", "0", "", 412.5}, {"inferscope_gpu_power_watts", "1", "", 250},
	{"inferscope_gpu_power_limit_watts", "0", "", 700}, {"inferscope_gpu_power_limit_watts", "1", "", 700},
	{"inferscope_gpu_fb_used_bytes", "0", "", 6.4e10}, {"inferscope_gpu_fb_used_bytes", "1", "", 1.2e10},
	{"inferscope_gpu_fb_total_bytes", "0", "", 8.5e10}, {"inferscope_gpu_fb_total_bytes", "1", "", 8.5e10},
	{"inferscope_gpu_temperature_celsius", "0", "", 64}, {"inferscope_gpu_temperature_celsius", "1", "", 51},
	{"inferscope_gpu_throttle_reason", "0", "power_cap", 1}, {"inferscope_gpu_throttle_reason", "1", "power_cap", 0},
	{"inferscope_gpu_throttle_reason", "0", "gpu_idle", 0}, {"inferscope_gpu_throttle_reason", "1", "gpu_idle", 0},
}

func gpuPage() []byte {
	var b strings.Builder
	typed := map[string]bool{}
	for _, s := range gpuAgentSeries {
		if !typed[s.name] {
			fmt.Fprintf(&b, "# HELP %s Inferscope GPU agent test series.\n# TYPE %s gauge\n", s.name, s.name)
			typed[s.name] = true
		}
		labels := fmt.Sprintf(`gpu="%s",hostname="node-a",name="NVIDIA H100 80GB HBM3",uuid="GPU-0000000%s"`, s.gpu, s.gpu)
		if s.reason != "" {
			labels += fmt.Sprintf(`,reason="%s"`, s.reason)
		}
		fmt.Fprintf(&b, "%s{%s} %s\n", s.name, labels, strconv.FormatFloat(s.value, 'g', -1, 64))
	}
	return []byte(b.String())
}

// garbageHandler answers 200 with random text that is not a Prometheus page.
func garbageHandler() http.HandlerFunc {
	var mu sync.Mutex
	rng := rand.New(rand.NewSource(42))
	const alphabet = "abcdefghij KLMNOP{}<>=\"/#!?;:,.0123456789\n"
	return func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		buf := make([]byte, 2048)
		for i := range buf {
			buf[i] = alphabet[rng.Intn(len(alphabet))]
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(append([]byte("<!DOCTYPE html><html><body>not metrics "), buf...))
	}
}

// stallHandler holds every request longer than the scrape timeout.
func stallHandler(d time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("vllm:num_requests_running 1\n"))
	}
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h) // listens on 127.0.0.1
	t.Cleanup(s.Close)
	return s.URL + "/metrics"
}
