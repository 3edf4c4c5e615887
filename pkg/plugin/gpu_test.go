package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// The dcgm-exporter pages of ../shared/corpus, copied into the catalogue's testdata.
const (
	dcgmSnippetPage = "../catalog/testdata/dcgm-exporter-4.5.3-readme-snippet.prom"
	dcgmMixedPage   = "../catalog/testdata/dcgm-exporter-mixed-datadog-fixture.prom"
)

// agentPage is an Inferscope GPU agent page (labels gpu, uuid, name, hostname).
const agentPage = `# TYPE inferscope_gpu_power_watts gauge
inferscope_gpu_power_watts{gpu="0",hostname="node-a",name="NVIDIA H200",uuid="GPU-node0"} 400
# TYPE inferscope_gpu_throttle_reason gauge
inferscope_gpu_throttle_reason{gpu="0",hostname="node-a",name="NVIDIA H200",uuid="GPU-node0",reason="gpu_idle"} 0
inferscope_gpu_throttle_reason{gpu="0",hostname="node-a",name="NVIDIA H200",uuid="GPU-node0",reason="power_cap"} 1
inferscope_gpu_throttle_reason{gpu="0",hostname="node-a",name="NVIDIA H200",uuid="GPU-node0",reason="hw_thermal"} 1
`

// appendPage appends every sample of an exposition page at each of the given times with
// job=<job>, instance=<job>:9400 (goldentest.AppendPage: Prometheus's text parser, the "..."
// elision marks of the dcgm-exporter README snippet removed first).
func appendPage(t *testing.T, app storage.Appender, job string, page []byte, times []int64) {
	t.Helper()
	require.NoError(t, goldentest.AppendPage(app, job, page, times))
}

func readPage(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Clean(path))
	require.NoError(t, err)
	return b
}

// gpuFixture stores the four pages, one agent each, every 15 s for five minutes, and returns
// an instance over them and the query's time range (the last four minutes, 1-minute steps).
func gpuFixture(t *testing.T) (*Instance, time.Time, time.Time) {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Unix(1_699_999_980, 0) // a whole minute
	var times []int64
	for i := 0; i <= 20; i++ {
		times = append(times, t0.Add(time.Duration(i)*15*time.Second).UnixMilli())
	}
	app := db.Appender(context.Background())
	appendPage(t, app, "dcgm-snippet", readPage(t, dcgmSnippetPage), times)
	appendPage(t, app, "dcgm-mixed", readPage(t, dcgmMixedPage), times)
	appendPage(t, app, "dcgm-lab", []byte(goldentest.DCGMLabPage), times)
	appendPage(t, app, "node-a", []byte(agentPage), times)
	require.NoError(t, app.Commit())

	st, err := settings.Load([]byte(`{"targets":[],"gpuAgents":[
		{"name":"dcgm-snippet","url":"http://gpu-1:9400/metrics","kind":"dcgm"},
		{"name":"dcgm-mixed","url":"http://gpu-2:9400/metrics","kind":"dcgm"},
		{"name":"dcgm-lab","url":"http://lab-1:9400/metrics","kind":"dcgm"},
		{"name":"node-a","url":"http://node-a:9835/metrics"}]}`), nil)
	require.NoError(t, err)
	return newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{})), t0.Add(time.Minute), t0.Add(5 * time.Minute)
}

func runGPUQuery(t *testing.T, inst *Instance, from, to time.Time, q map[string]any) backend.DataResponse {
	t.Helper()
	q["queryType"] = "gpu"
	js, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "gpu", JSON: js, Interval: time.Minute, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	dr := resp.Responses["A"]
	require.NoError(t, dr.Error)
	return dr
}

// gpuKey names a series by signal, agent and GPU: "fb_used dcgm-lab GPU-lab0".
func gpuKey(l data.Labels) string { return l["signal"] + " " + l["target"] + " " + l["uuid"] }

// gpuSeries indexes a gpu query's time series by gpuKey; every step must hold the same value
// (the pages are constant), which is returned.
func gpuSeries(t *testing.T, dr backend.DataResponse) (map[string]float64, map[string]data.Labels) {
	t.Helper()
	vals, lbls := map[string]float64{}, map[string]data.Labels{}
	for _, f := range dr.Frames {
		if len(f.Fields) < 2 || f.Fields[1].Len() == 0 {
			continue
		}
		fld := f.Fields[1]
		k := gpuKey(fld.Labels)
		require.NotContains(t, vals, k, "two series for %s", k)
		require.Equal(t, 5, fld.Len(), k)
		first, ok := fld.ConcreteAt(0)
		require.True(t, ok, "%s has no value at the first step", k)
		for i := 1; i < fld.Len(); i++ {
			v, ok := fld.ConcreteAt(i)
			require.True(t, ok, "%s step %d", k, i)
			require.Equal(t, first, v, "%s step %d", k, i)
		}
		vals[k] = first.(float64)
		lbls[k] = fld.Labels
	}
	return vals, lbls
}

func TestGPUQueryMapsDCGMPagesToCanonicalSignals(t *testing.T) {
	inst, from, to := gpuFixture(t)
	dr := runGPUQuery(t, inst, from, to, map[string]any{})
	vals, lbls := gpuSeries(t, dr)

	const (
		mixA = "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e" // Tesla T4 on HOSTNAME_A
		mixB = "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5" // Tesla T4 on HOSTNAME_B
		mixC = "GPU-abc"                                  // A10G on HOSTNAME_C
		snip = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"
		mib  = 1048576.0
	)
	// Every value read off the page text and converted by hand to SI units.
	want := map[string]float64{
		// README snippet: SM clock 139 MHz. MEMORY_TEMP (a blank, and not the GPU temperature)
		// and MEM_CLOCK are not canonical signals.
		"sm_clock dcgm-snippet " + snip: 139e6,
		// DataDog fixture, first capture (GPU A).
		"sm_clock dcgm-mixed " + mixA:    300e6,
		"temperature dcgm-mixed " + mixA: 25,
		"power dcgm-mixed " + mixA:       8.969,
		"gpu_util dcgm-mixed " + mixA:    0.0 / 100,
		"fb_used dcgm-mixed " + mixA:     0 * mib,
		"saturation dcgm-mixed " + mixA:  0.0 / 100,
		// Second capture (GPU B): power limit 70 W, FB total 15109 MiB.
		"power_limit dcgm-mixed " + mixB: 70,
		"fb_total dcgm-mixed " + mixB:    15109 * mib,
		// Third capture (GPU C): DRAM active is already a ratio.
		"dram_active dcgm-mixed " + mixC: 0.000003,
		// Hand-written HEAD page.
		"gpu_util dcgm-lab GPU-lab0":         0.97,
		"gpu_util dcgm-lab GPU-lab1":         0.88,
		"gpu_util dcgm-lab GPU-lab2":         0.12,
		"sm_active dcgm-lab GPU-lab0":        0.412,
		"gr_engine_active dcgm-lab GPU-lab0": 0.95,
		"gr_engine_active dcgm-lab GPU-lab1": 0.83,
		"dram_active dcgm-lab GPU-lab0":      0.671,
		"tensor_active dcgm-lab GPU-lab0":    0.233,
		"fb_used dcgm-lab GPU-lab0":          74000 * mib,
		"power dcgm-lab GPU-lab0":            612.345,
		"temperature dcgm-lab GPU-lab0":      71,
		"sm_clock dcgm-lab GPU-lab0":         1755e6,
		"saturation dcgm-lab GPU-lab0":       0.412, // SM active
		"saturation dcgm-lab GPU-lab1":       0.83,  // graphics-engine active
		"saturation dcgm-lab GPU-lab2":       0.12,  // GPU utilisation (GR blank)
		// The Inferscope agent.
		"power node-a GPU-node0": 400,
	}
	require.Len(t, vals, len(want), "series: %v", keys(vals))
	for k, w := range want {
		require.Contains(t, vals, k)
		assert.InDelta(t, w, vals[k], 1e-9*max(1, w), k)
	}

	// Labels are the agent's names whatever the source: UUID→uuid, Hostname→hostname,
	// modelName→name; dcgm's other labels (device, driver version, k8s) are gone. No inference
	// target names these agents, so `serving` is the agent's own name.
	assert.Equal(t, data.Labels{"signal": "power", "target": "dcgm-mixed", "serving": "dcgm-mixed", "gpu": "0", "uuid": mixA, "hostname": "HOSTNAME_A", "name": "Tesla T4"}, lbls["power dcgm-mixed "+mixA])
	assert.Equal(t, data.Labels{"signal": "dram_active", "target": "dcgm-mixed", "serving": "dcgm-mixed", "gpu": "0", "uuid": mixC, "hostname": "HOSTNAME_C", "name": "NVIDIA A10G"}, lbls["dram_active dcgm-mixed "+mixC])
	assert.Equal(t, data.Labels{"signal": "sm_clock", "target": "dcgm-snippet", "serving": "dcgm-snippet", "gpu": "0", "uuid": snip}, lbls["sm_clock dcgm-snippet "+snip])
	assert.Equal(t, data.Labels{"signal": "power", "target": "dcgm-lab", "serving": "dcgm-lab", "gpu": "0", "uuid": "GPU-lab0", "hostname": "lab-1", "name": "NVIDIA H100 80GB HBM3"}, lbls["power dcgm-lab GPU-lab0"])
	assert.Equal(t, data.Labels{"signal": "power", "target": "node-a", "serving": "node-a", "gpu": "0", "uuid": "GPU-node0", "hostname": "node-a", "name": "NVIDIA H200"}, lbls["power node-a GPU-node0"])
	assert.Equal(t, "sm_active", lbls["saturation dcgm-lab GPU-lab0"]["source"])
	assert.Equal(t, "gr_engine_active", lbls["saturation dcgm-lab GPU-lab1"]["source"])
	assert.Equal(t, "gpu_util", lbls["saturation dcgm-lab GPU-lab2"]["source"])
	assert.Equal(t, "gpu_util", lbls["saturation dcgm-mixed "+mixA]["source"])

	// Units.
	for _, f := range dr.Frames {
		fld := f.Fields[1]
		wantUnit := map[string]string{"gpu_util": "percentunit", "sm_active": "percentunit", "gr_engine_active": "percentunit",
			"dram_active": "percentunit", "tensor_active": "percentunit", "saturation": "percentunit", "fb_used": "bytes",
			"fb_total": "bytes", "power": "watt", "power_limit": "watt", "temperature": "celsius", "sm_clock": "hertz"}[fld.Labels["signal"]]
		assert.Equal(t, wantUnit, fld.Config.Unit, fld.Labels.String())
	}

	// The fallbacks are said, per source, naming the GPUs.
	var texts []string
	for _, n := range dr.Frames[0].Meta.Notices {
		texts = append(texts, n.Text)
	}
	all := strings.Join(texts, "\n")
	assert.Contains(t, all, "saturation falls back to graphics-engine active")
	assert.Contains(t, all, "dcgm-lab/lab-1/gpu 1")
	assert.Contains(t, all, "saturation falls back to GPU utilisation")
	assert.Contains(t, all, "dcgm-lab/lab-1/gpu 2")
	assert.Contains(t, all, "dcgm-mixed/HOSTNAME_A/gpu 0")
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestGPUQueryFiltersGPUsByIndexOrUUID(t *testing.T) {
	inst, from, to := gpuFixture(t)
	dr := runGPUQuery(t, inst, from, to, map[string]any{"agents": []string{"dcgm-lab"}, "gpus": []string{"1", "GPU-lab2"}, "signals": []string{"gpu_util", "saturation"}})
	vals, _ := gpuSeries(t, dr)
	assert.Equal(t, map[string]float64{
		"gpu_util dcgm-lab GPU-lab1": 0.88, "gpu_util dcgm-lab GPU-lab2": 0.12,
		"saturation dcgm-lab GPU-lab1": 0.83, "saturation dcgm-lab GPU-lab2": 0.12,
	}, roundVals(vals))
}

func roundVals(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(int64(v*1e9+0.5)) / 1e9
	}
	return out
}

func TestGPUQueryThrottleReasonsFromDCGMBitmask(t *testing.T) {
	inst, from, to := gpuFixture(t)
	dr := runGPUQuery(t, inst, from, to, map[string]any{"signals": []string{"throttle_reasons"}})
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	require.Equal(t, data.FrameTypeTimeSeriesWide, f.Meta.Type)
	got := map[string]string{}
	for _, fld := range f.Fields[1:] {
		require.Equal(t, 5, fld.Len())
		k := fld.Labels["target"] + " " + fld.Labels["uuid"]
		first := fld.At(0).(*string)
		require.NotNil(t, first, k)
		for i := 1; i < fld.Len(); i++ {
			v := fld.At(i).(*string)
			require.NotNil(t, v, k)
			require.Equal(t, *first, *v, k)
		}
		got[k] = *first
		assert.NotContains(t, fld.Labels, "reason", k)
	}
	assert.Equal(t, map[string]string{
		// DataDog fixture, GPU B: DCGM_FI_DEV_CLOCK_THROTTLE_REASONS 1 = 0x1, GPU idle.
		"dcgm-mixed GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5": "gpu_idle",
		// 580 = 0x200 + 0x40 + 0x4: board limit, HW thermal slowdown, SW power cap.
		"dcgm-lab GPU-lab0": "board_limit, hw_thermal, power_cap",
		"dcgm-lab GPU-lab1": "none",
		// The agent's per-reason series name the same reasons.
		"node-a GPU-node0": "hw_thermal, power_cap",
	}, got)
}

// TestGPUQueryNamesGPUsThatMatchNothing: a gpus entry that is neither an
// index nor a UUID of the selected agents' GPUs gets a warning (an empty
// panel must say why); entries that match raise none.
func TestGPUQueryNamesGPUsThatMatchNothing(t *testing.T) {
	inst, from, to := gpuFixture(t)
	dr := runGPUQuery(t, inst, from, to, map[string]any{"agents": []string{"dcgm-lab"}, "gpus": []string{"1", "7"}, "signals": []string{"gpu_util"}})
	require.NoError(t, dr.Error)
	var texts []string
	for _, f := range dr.Frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				texts = append(texts, n.Text)
			}
		}
	}
	assert.Contains(t, texts, `gpus: "7" matched no GPU index or UUID of the selected agents in the range`)
	for _, s := range texts {
		assert.NotContains(t, s, `"1" matched`)
	}
}
