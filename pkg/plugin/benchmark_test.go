package plugin

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The benchmark query over 20 minutes of the healthy simulator (Poisson
// arrivals at 4 req/s): against a baseline run at 4 req/s every window with
// requests is comparable and production's request throughput is the
// simulator's configured rate within 5 %; against a baseline run at 40 req/s
// no window is, and the table says so instead of comparing unlike loads.
func TestBenchmarkQueryKeepsWindowsAtTheBaselineLoad(t *testing.T) {
	inst, start, cfg := simScenario(t, "healthy", 20*time.Minute)
	dir := t.TempDir()
	write := func(name string, rate float64) {
		body := `{"request_rate": ` + ftoa(rate) + `, "max_concurrency": null, "completed": 100, "request_throughput": ` + ftoa(rate) +
			`, "output_throughput": 500, "p50_ttft_ms": 50, "p90_ttft_ms": 80, "p99_ttft_ms": 120, "p99_itl_ms": 30}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o600))
	}
	write("at-4", cfg.Rate)
	write("at-40", 10*cfg.Rate)
	inst.settings.BaselinesPath = dir

	rows := func(baseline string) (map[string]float64, []data.Notice) {
		dr := runQuery(t, inst, map[string]any{"queryType": "benchmark", "baseline": baseline}, start.Add(2*time.Minute), start.Add(20*time.Minute), time.Minute)
		require.NoError(t, dr.Error)
		f := dr.Frames[0]
		metric, _ := f.FieldByName("metric")
		stat, _ := f.FieldByName("stat")
		prod, _ := f.FieldByName("production")
		out := map[string]float64{}
		for i := 0; i < f.Rows(); i++ {
			if p := prod.At(i).(*float64); p != nil {
				out[metric.At(i).(string)+"/"+stat.At(i).(string)] = *p
			}
		}
		return out, f.Meta.Notices
	}
	got, notes := rows("at-4")
	assert.InEpsilon(t, cfg.Rate, got["request_throughput/mean"], 0.05)
	assert.Contains(t, got, "ttft/p99")
	require.NotEmpty(t, notes)
	assert.Contains(t, notes[0].Text, "within ±25% of the baseline's 4 req/s")

	got, notes = rows("at-40")
	assert.Empty(t, got, "no window ran at 40 req/s")
	var texts []string
	for _, n := range notes {
		texts = append(texts, n.Text)
	}
	assert.Contains(t, texts, "No window of the range ran at the baseline's load: production cannot be compared with this baseline here; widen the range or the tolerance.")
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
