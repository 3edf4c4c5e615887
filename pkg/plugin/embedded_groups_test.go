package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedTargetGroupHealthAndMembers: an embedded-mode target group fed
// by file discovery on loopback: Save & test probes the target it found
// (engine detected from the page) and counts the discovered targets, GET
// /members lists it by instance, and a query of the group reads its series.
func TestEmbeddedTargetGroupHealthAndMembers(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4\n" +
			"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"))
	}))
	defer page.Close()
	u, _ := url.Parse(page.URL)
	sd := filepath.Join(t.TempDir(), "targets.json")
	b, _ := json.Marshal([]map[string]any{{"targets": []string{u.Host}}})
	require.NoError(t, os.WriteFile(sd, b, 0o600))
	i := newLiveInstance(t, "egroups", map[string]any{"storagePath": t.TempDir(), "scrapeInterval": "1s", "scrapeTimeout": "500ms",
		"targetGroups": []map[string]any{{"name": "fleet", "discovery": map[string]any{"file": map[string]any{"files": []string{sd}}}}}})
	defer i.Dispose()

	var msg string
	require.Eventually(t, func() bool {
		h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		require.NoError(t, err)
		msg = h.Message
		return h.Status == backend.HealthStatusOk
	}, 60*time.Second, 100*time.Millisecond, "health: %s", msg)
	assert.Contains(t, msg, "fleet: vllm")
	assert.Contains(t, msg, "Target group fleet: 1 discovered targets.")

	ms, err := i.members(context.Background(), "fleet")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, []GroupMember{{Labels: map[string]string{"instance": u.Host}}}, ms[0].Members)

	require.Eventually(t, func() bool {
		frames := queryAt(t, i, time.Now().Add(-time.Minute), time.Now(), map[string]any{"queryType": "saturation", "groupBy": "instance"})
		for _, f := range frames {
			for _, fl := range f.Fields {
				if strings.Contains(fl.Labels.String(), "instance="+u.Host) && strings.Contains(fl.Labels.String(), "requests_running") {
					return true
				}
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "saturation of the group, per discovered instance")
}

// lastByFieldLabels returns, per series of the frames (field name and labels), its
// last non-null value.
func lastByFieldLabels(frames []*data.Frame) map[string]float64 {
	out := map[string]float64{}
	for _, f := range frames {
		for _, fl := range f.Fields {
			if fl.Type() == data.FieldTypeTime {
				continue
			}
			for k := fl.Len() - 1; k >= 0; k-- {
				if v, ok := fl.ConcreteAt(k); ok {
					if x, ok := v.(float64); ok {
						out[fl.Name+" "+fl.Labels.String()] = x
						break
					}
				}
			}
		}
	}
	return out
}

// TestEmbeddedTargetGroupKeepsAlertWhenAPodIsReplaced: an embedded-mode
// target group fed by file discovery whose only target is replaced by one
// at a new address (a pod rescheduled under a new name): the group's own
// series (groupBy target, what an alert rule on the group reads) answers
// the old page's running requests (3) before and the new page's (7) after,
// under the same labels, so the alert rule keeps its one alert instance;
// the old target's history stays in the store (a groupBy instance over the
// last two minutes has both; GET /members lists what discovery names now).
func TestEmbeddedTargetGroupKeepsAlertWhenAPodIsReplaced(t *testing.T) {
	page := func(v string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} " + v + "\n"))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	oldPod, newPod := page("3"), page("7")
	hostOf := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	sd := filepath.Join(t.TempDir(), "targets.json")
	write := func(host string) {
		b, _ := json.Marshal([]map[string]any{{"targets": []string{host}}})
		require.NoError(t, os.WriteFile(sd+".tmp", b, 0o600))
		require.NoError(t, os.Rename(sd+".tmp", sd))
	}
	write(hostOf(oldPod))
	i := newLiveInstance(t, "ereplaced", map[string]any{"storagePath": t.TempDir(), "scrapeInterval": "200ms", "scrapeTimeout": "150ms",
		"targetGroups": []map[string]any{{"name": "fleet", "engine": "vllm", "discovery": map[string]any{"file": map[string]any{"files": []string{sd}, "refreshInterval": "1s"}}}}})
	defer i.Dispose()

	started := time.Now()
	// The alert rule's query: running requests of the group over the last minute
	// at a 1 s step (queryAt's 1 min step would put the last point up to a minute back).
	running := func() map[string]float64 {
		got := map[string]float64{}
		frames := queryStep(t, i, time.Now().Add(-time.Minute), time.Now(), time.Second, map[string]any{"queryType": "saturation", "groupBy": "target"})
		for k, v := range lastByFieldLabels(frames) {
			if strings.Contains(k, "running") {
				got[k] = v
			}
		}
		return got
	}
	var before map[string]float64
	require.Eventually(t, func() bool {
		before = running()
		return len(before) == 1 && before[firstKey(before)] == 3
	}, 60*time.Second, 100*time.Millisecond, "the old pod's running requests: %v", before)

	t.Logf("old pod's value after %s", time.Since(started))
	write(hostOf(newPod))
	switched := time.Now()
	var after map[string]float64
	require.Eventually(t, func() bool {
		after = running()
		return len(after) == 1 && after[firstKey(after)] == 7
	}, 60*time.Second, 100*time.Millisecond, "the new pod's running requests: %v", after)
	assert.Equal(t, firstKey(before), firstKey(after), "one series, the same labels (the alert's instance) across the replacement")

	t.Logf("new pod's value under the old labels after %s", time.Since(switched))

	// GET /members lists what discovery names now; the store keeps the old pod's history.
	ms, err := i.members(context.Background(), "fleet")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Len(t, ms[0].Members, 1)
	assert.Equal(t, hostOf(newPod), ms[0].Members[0].Labels["instance"])
	perPod := map[string]bool{}
	frames := queryStep(t, i, time.Now().Add(-2*time.Minute), time.Now(), time.Second, map[string]any{"queryType": "saturation", "groupBy": "instance"})
	for _, f := range frames {
		for _, fl := range f.Fields {
			if strings.Contains(fl.Name+fl.Labels.String(), "running") && fl.Labels["instance"] != "" {
				perPod[fl.Labels["instance"]] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{hostOf(oldPod): true, hostOf(newPod): true}, perPod, "both pods' series in the group's last two minutes")
}

// queryStep is queryAt with the given step (the request's interval).
func queryStep(t *testing.T, i *Instance, from, to time.Time, step time.Duration, q map[string]any) data.Frames {
	t.Helper()
	js, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := i.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
		QueryType: q["queryType"].(string), JSON: js, Interval: step, MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: from, To: to}}}})
	require.NoError(t, err)
	r := resp.Responses["A"]
	require.NoError(t, r.Error)
	return r.Frames
}

func firstKey(m map[string]float64) string {
	for k := range m {
		return k
	}
	return ""
}
