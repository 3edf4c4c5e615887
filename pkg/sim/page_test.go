package sim

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// referencePage is the real vLLM page (copied from ../shared/corpus into
// testdata/) each simulated version is compared with. V0 0.6 has no complete
// real page under load in the corpus; the V0 0.8 multiprocess page is the
// nearest complete V0 page. 0.13 is compared with the 0.29 page (the newest).
var referencePage = map[Version]string{
	V06:  "testdata/vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom",
	V010: "testdata/vllm-0.10-v1-ngc25.09-qwen3-4b-light-load-created-inline.prom",
	V011: "testdata/vllm-0.11-v1-qwen05b-created-series.prom",
	V013: "testdata/vllm-0.29-v1-qwen2.5-1.5b-t4-after-10req-inferstack.prom",
}

// familiesOf parses a text page and returns family name → type.
func familiesOf(t *testing.T, page []byte) map[string]string {
	t.Helper()
	if !bytes.HasSuffix(page, []byte("\n")) {
		page = append(page, '\n') // some corpus pages lack the final newline
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(page))
	require.NoError(t, err)
	out := map[string]string{}
	for n, mf := range mfs {
		out[n] = strings.ToLower(mf.GetType().String())
	}
	return out
}

func loadedPage(t *testing.T, v Version) []byte {
	t.Helper()
	s := newSim(t, "kv-pressure", func(c *Config) { c.Version = v }, Options{})
	s.AdvanceTo(600)
	p, err := s.Page()
	require.NoError(t, err)
	return p
}

// Every vllm: family the real page of the same version line has (except the
// _created siblings and opt-in/newer families listed here) is exposed with the
// same type, and the simulator exposes no vllm: family the version lacks.
func TestFamiliesMatchRealPages(t *testing.T) {
	// Families in the reference pages that the simulated version does not have,
	// with the reason.
	notSimulated := map[Version][]string{
		// 0.8 V0 page: lora info exists in 0.6 too; the 0.8 page lacks the
		// swap/CPU/hit-rate/throughput families that 0.6 still had.
		V06: {},
		// 0.29 page: families newer than 0.13 or opt-in (MFU counters,
		// KV-connector and multimodal caches, waiting-by-reason).
		V013: {"vllm:estimated_flops_per_gpu_total", "vllm:estimated_read_bytes_per_gpu_total", "vllm:estimated_write_bytes_per_gpu_total",
			"vllm:num_requests_waiting_by_reason", "vllm:external_prefix_cache_queries_total", "vllm:external_prefix_cache_hits_total",
			"vllm:mm_cache_queries_total", "vllm:mm_cache_hits_total", "vllm:request_num_preemptions", "vllm:prompt_tokens_recomputed_total"},
	}
	// Families the simulated version has that its reference page lacks, with the reason.
	extra := map[Version][]string{
		V06: {"vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc", "vllm:gpu_prefix_cache_hit_rate", "vllm:cpu_prefix_cache_hit_rate",
			"vllm:avg_prompt_throughput_toks_per_s", "vllm:avg_generation_throughput_toks_per_s", "vllm:time_in_queue_requests"}, // 0.6-only (engines.md §1.2/1.4)
		V013: {"vllm:prompt_tokens_recomputed_total"}, // engines.md §1.3 lists it for ≥0.13; the 0.29 page omits it
	}
	for _, v := range Versions {
		t.Run(string(v), func(t *testing.T) {
			real, err := os.ReadFile(referencePage[v])
			require.NoError(t, err)
			want := familiesOf(t, real)
			got := familiesOf(t, loadedPage(t, v))
			skip := map[string]bool{}
			for _, n := range notSimulated[v] {
				skip[n] = true
			}
			for _, n := range extra[v] {
				skip[n] = true
			}
			for n, typ := range want {
				if !strings.HasPrefix(n, "vllm:") || strings.HasSuffix(n, "_created") || skip[n] {
					continue
				}
				if assert.Contains(t, got, n, "family of the real page") {
					assert.Equal(t, typ, got[n], n)
				}
			}
			for n := range got {
				if strings.HasPrefix(n, "vllm:") && !skip[n] {
					assert.Contains(t, want, n, "simulated family absent from the real page")
				}
			}
			for _, n := range extra[v] {
				if n != "vllm:prompt_tokens_recomputed_total" || v == V013 {
					assert.Contains(t, got, n)
				}
			}
		})
	}
}

// Bucket bounds of the simulated page equal the real page's, numerically
// (the real page writes le="1.0", client_golang writes le="1").
func TestBucketsMatchRealPages(t *testing.T) {
	for _, v := range []Version{V010, V011, V013} {
		real, err := os.ReadFile(referencePage[v])
		require.NoError(t, err)
		want := bucketBounds(t, real)
		got := bucketBounds(t, loadedPage(t, v))
		for name, bounds := range got {
			if w, ok := want[name]; ok && name != "vllm:request_prompt_tokens" && name != "vllm:request_generation_tokens" &&
				name != "vllm:request_max_num_generation_tokens" && name != "vllm:request_params_max_tokens" &&
				name != "vllm:request_prefill_kv_computed_tokens" { // 1-2-5 up to max_model_len: model dependent
				assert.Equal(t, w, bounds, "%s %s", v, name)
			}
		}
	}
}

func bucketBounds(t *testing.T, page []byte) map[string][]float64 {
	out := map[string][]float64{}
	seen := map[string]map[float64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "_bucket{")
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:i]
		j := strings.Index(line, `le="`)
		require.GreaterOrEqual(t, j, 0, line)
		k := strings.Index(line[j+4:], `"`)
		le, err := strconv.ParseFloat(line[j+4:j+4+k], 64)
		require.NoError(t, err)
		if seen[name] == nil {
			seen[name] = map[float64]bool{}
		}
		if !seen[name][le] {
			seen[name][le] = true
			out[name] = append(out[name], le)
		}
	}
	for _, b := range out {
		sort.Float64s(b)
	}
	return out
}

// promtoolFindings runs `promtool check metrics` on page and returns the kinds
// of finding (the message without the metric name).
func promtoolFindings(t *testing.T, page []byte) map[string]int {
	t.Helper()
	if !bytes.HasSuffix(page, []byte("\n")) {
		page = append(page, '\n')
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 3) {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		if _, msg, ok := strings.Cut(line, " "); ok {
			kinds[msg]++
		} else {
			kinds[line]++
		}
	}
	return kinds
}

// promtoolExtraPages add real pages whose findings also count for a version:
// the V0 0.6 throughput gauges (vllm:avg_*_throughput_toks_per_s, removed in
// 0.7.1) are absent from the 0.8 V0 page but present in the V0 capture of the
// DataDog fixture, where promtool reports their abbreviated units too.
var promtoolExtraPages = map[Version][]string{
	V06: {"testdata/vllm-mixed-v0-0.4-plus-v1-fields-datadog-fixture.prom"},
}

// promtool finds nothing on the simulator's page that it does not also find
// on the real page of the same version line (real vLLM names contain colons).
func TestPromtoolCheckMetrics(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	for _, v := range Versions {
		t.Run(string(v), func(t *testing.T) {
			real, err := os.ReadFile(referencePage[v])
			require.NoError(t, err)
			want := promtoolFindings(t, real)
			for _, extra := range promtoolExtraPages[v] {
				page, err := os.ReadFile(extra)
				require.NoError(t, err)
				for k, n := range promtoolFindings(t, page) {
					want[k] += n
				}
			}
			got := promtoolFindings(t, loadedPage(t, v))
			require.NotEmpty(t, want, "the real page has findings (colons)")
			for k := range got {
				assert.Contains(t, want, k, "finding kind absent from the real page")
			}
			s := newSim(t, "healthy", func(c *Config) { c.Version = v }, Options{})
			g, err := s.GPUPage()
			require.NoError(t, err)
			assert.Empty(t, promtoolFindings(t, g), "GPU page is lint-clean")
		})
	}
}

// The catalogue recognises each simulated page as the vLLM version it claims.
func TestCatalogDetectsVersion(t *testing.T) {
	gens := map[Version]string{V06: "v0", V010: "v1", V011: "v1", V013: "v1"}
	minor := map[Version]int{V06: 6, V010: 10, V011: 11, V013: 13}
	for _, v := range Versions {
		fams := familiesOf(t, loadedPage(t, v))
		var names []string
		for n, typ := range fams {
			switch typ {
			case "histogram":
				names = append(names, n+"_bucket", n+"_sum", n+"_count")
			default:
				names = append(names, n)
			}
		}
		d := catalog.Detect(names)
		assert.Equal(t, catalog.EngineVLLM, d.Engine, v)
		assert.Equal(t, gens[v], d.Generation, "%s: %v", v, d.Evidence)
		lo, hi := versionRange(t, d.Version)
		assert.True(t, lo <= minor[v] && minor[v] <= hi, "%s detected as %q: %v", v, d.Version, d.Evidence)
	}
	s := newSim(t, "healthy", nil, Options{})
	g, err := s.GPUPage()
	require.NoError(t, err)
	var names []string
	for n := range familiesOf(t, g) {
		names = append(names, n)
	}
	assert.Equal(t, catalog.EngineInferscopeGPU, catalog.Detect(names).Engine)
	for _, n := range names {
		assert.Contains(t, catalog.AgentMetricNames, n, "GPU page uses the agent's names")
	}
}

// versionRange parses "0.11-0.12", "0.13+", "0.6" into minor bounds.
func versionRange(t *testing.T, s string) (int, int) {
	t.Helper()
	minor := func(x string) int {
		x = strings.TrimPrefix(x, "0.")
		n, err := strconv.Atoi(x)
		require.NoError(t, err, s)
		return n
	}
	if a, ok := strings.CutSuffix(s, "+"); ok {
		return minor(a), 1 << 30
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		return minor(a), minor(b)
	}
	require.NotEmpty(t, s, "no version detected")
	m := minor(s)
	return m, m
}
