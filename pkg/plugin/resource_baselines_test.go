package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// editor is the plugin context of an Editor of organisation 1.
var editor = backend.PluginContext{Namespace: "default", User: &backend.User{Login: "ed", Role: "Editor"}}

func callResource(t *testing.T, inst *Instance, method, url string, body []byte) (int, map[string]any) {
	t.Helper()
	return callResourceAs(t, inst, editor, method, url, body)
}

// callResourceAs calls a resource route with pc as the request's plugin context (organisation and user).
func callResourceAs(t *testing.T, inst *Instance, pc backend.PluginContext, method, url string, body []byte) (int, map[string]any) {
	t.Helper()
	var s goldenSender
	path := url
	if i := len("baselines"); len(url) > i {
		path = url[:i]
	}
	require.NoError(t, inst.CallResource(context.Background(), &backend.CallResourceRequest{PluginContext: pc, Method: method, Path: path, URL: url, Body: body}, &s))
	require.Len(t, s.got, 1)
	var out map[string]any
	require.NoError(t, json.Unmarshal(s.got[0].Body, &out), string(s.got[0].Body))
	return s.got[0].Status, out
}

// Uploading a baseline: a valid file is read and saved under its name, a
// malformed one is refused with the sentence naming the field, a second
// upload under the same name needs overwrite, and the list reads it back.
func TestBaselineUploadResource(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vllm-llama7b-rate5.json"))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "baselines")
	s, err := settings.Load([]byte(`{"baselinesPath":`+jsonString(dir)+`}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(s, nil)

	code, out := callResource(t, inst, "POST", "baselines?name=llama7b-a100", vllm)
	require.Equal(t, 200, code, out)
	assert.Equal(t, true, out["saved"])
	read := out["read"].([]any)[0].(map[string]any)
	assert.Equal(t, "vllm", read["tool"])
	assert.Equal(t, "request rate 5 req/s, concurrency ≤ 32", read["load"])
	_, err = os.Stat(filepath.Join(dir, "org-1", "llama7b-a100.json"))
	require.NoError(t, err)

	code, _ = callResource(t, inst, "POST", "baselines?name=llama7b-a100", vllm)
	assert.Equal(t, 409, code)
	code, _ = callResource(t, inst, "POST", "baselines?name=llama7b-a100&overwrite=true", vllm)
	assert.Equal(t, 200, code)

	code, out = callResource(t, inst, "POST", "baselines?name=bad", []byte(`{"request_throughput": 1, "p99_ttft_ms": "slow"}`))
	assert.Equal(t, 400, code)
	assert.Equal(t, `bad: p99_ttft_ms: "slow" is not a number`, out["error"])
	code, out = callResource(t, inst, "POST", "baselines?name=../etc", vllm)
	assert.Equal(t, 400, code)
	assert.Contains(t, out["error"], "name:")
	for _, bad := range []string{"/etc/passwd", "a..b", "..", "%2Fetc"} {
		code, out = callResource(t, inst, "POST", "baselines?name="+bad, vllm)
		assert.Equal(t, 400, code, bad)
		assert.Contains(t, out["error"], "without '..'", bad)
	}

	code, out = callResource(t, inst, "GET", "baselines", nil)
	require.Equal(t, 200, code)
	list := out["baselines"].([]any)
	require.Len(t, list, 1)
	assert.Equal(t, "llama7b-a100", list[0].(map[string]any)["name"])

	// Without baselinesPath the file is validated, not saved.
	inst = newInstanceForTest(settings.Settings{}, nil)
	code, out = callResource(t, inst, "POST", "baselines?name=x", vllm)
	assert.Equal(t, 200, code)
	assert.Equal(t, false, out["saved"])
	assert.Contains(t, out["note"], "set baselinesPath")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Writing files needs the Editor or Admin role: a Viewer, a user without a
// role and a request without a user are refused with a 403 sentence, and
// nothing is written (checked failing before: the upload was saved).
func TestBaselineUploadNeedsEditor(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vllm-llama7b-rate5.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	s, err := settings.Load([]byte(`{"baselinesPath":`+jsonString(dir)+`}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(s, nil)
	for _, pc := range []backend.PluginContext{
		{Namespace: "default", User: &backend.User{Login: "vi", Role: "Viewer"}},
		{Namespace: "default", User: &backend.User{Login: "nobody", Role: "None"}},
		{Namespace: "default", User: &backend.User{Login: "blank"}},
		{Namespace: "default"},
	} {
		code, out := callResourceAs(t, inst, pc, "POST", "baselines?name=base1", vllm)
		assert.Equal(t, 403, code, pc.User)
		assert.Contains(t, out["error"], "uploading a baseline needs the Editor or Admin role", pc.User)
	}
	code, out := callResourceAs(t, inst, backend.PluginContext{Namespace: "default", User: &backend.User{Login: "vi", Role: "Viewer"}}, "POST", "baselines?name=base1", vllm)
	require.Equal(t, 403, code)
	assert.Equal(t, "uploading a baseline needs the Editor or Admin role; vi has the Viewer role", out["error"])
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused upload writes nothing")

	// A Viewer still lists; an Admin uploads.
	code, _ = callResourceAs(t, inst, backend.PluginContext{Namespace: "default", User: &backend.User{Login: "vi", Role: "Viewer"}}, "GET", "baselines", nil)
	assert.Equal(t, 200, code)
	code, _ = callResourceAs(t, inst, backend.PluginContext{Namespace: "default", User: &backend.User{Login: "ad", Role: "Admin"}}, "POST", "baselines?name=base1", vllm)
	assert.Equal(t, 200, code)
}

// Organisations upload into their own folders of one baselinesPath: org 2,
// even with overwrite, cannot replace org 1's base1, and each reads its own
// (checked failing before: org 2's upload replaced the shared base1.json).
func TestBaselineUploadPerOrg(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vllm-llama7b-rate5.json"))
	require.NoError(t, err)
	other := []byte(`{"backend":"vllm","model_id":"org2/model","completed":7,"request_rate":9,"request_throughput":1,"output_throughput":50,"mean_ttft_ms":1,"p99_ttft_ms":2}`)
	dir := t.TempDir()
	s, err := settings.Load([]byte(`{"baselinesPath":`+jsonString(dir)+`}`), nil)
	require.NoError(t, err)
	org1 := newInstanceForTest(s, nil)
	org2 := newInstanceForTest(s, nil) // an org-2 data source naming the same folder
	ed2 := backend.PluginContext{Namespace: "org-2", User: &backend.User{Login: "ed2", Role: "Editor"}}

	code, out := callResource(t, org1, "POST", "baselines?name=base1", vllm)
	require.Equal(t, 200, code, out)
	code, out = callResourceAs(t, org2, ed2, "POST", "baselines?name=base1&overwrite=true", other)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "saved as org-2/base1.json", out["note"])

	got1, err := os.ReadFile(filepath.Join(dir, "org-1", "base1.json"))
	require.NoError(t, err)
	assert.Equal(t, vllm, got1, "org 1's base1 is untouched")
	_, out = callResource(t, org1, "GET", "baselines", nil)
	assert.Equal(t, "meta-llama/Llama-2-7b-chat-hf", out["baselines"].([]any)[0].(map[string]any)["model"])
	_, out = callResourceAs(t, org2, ed2, "GET", "baselines", nil)
	assert.Equal(t, "org2/model", out["baselines"].([]any)[0].(map[string]any)["model"])
}

// The quota: the data source's baselinesMaxFiles and baselinesQuotaMiB bound
// the organisation's folder; the upload past either is refused with a
// sentence naming both limits, and an overwrite of a file in place still fits
// (checked failing before: every upload was saved).
func TestBaselineUploadQuota(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vllm-llama7b-rate5.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	s, err := settings.Load([]byte(`{"baselinesPath":`+jsonString(dir)+`,"baselinesMaxFiles":2,"baselinesQuotaMiB":1}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(s, nil)
	for _, n := range []string{"a", "b"} {
		code, out := callResource(t, inst, "POST", "baselines?name="+n, vllm)
		require.Equal(t, 200, code, out)
	}
	code, out := callResource(t, inst, "POST", "baselines?name=c", vllm)
	assert.Equal(t, 507, code)
	assert.Contains(t, out["error"], "c: not saved: the organisation's baselines folder would hold 3 files")
	assert.Contains(t, out["error"], "quota of 2 files (baselinesMaxFiles) and 1 MiB (baselinesQuotaMiB)")
	code, out = callResource(t, inst, "POST", "baselines?name=a&overwrite=true", vllm)
	assert.Equal(t, 200, code, out)

	// Bytes: a file bigger than the quota is refused while it is read.
	big := append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), 1<<20)...)
	big = append(big, []byte(`"}`)...)
	code, out = callResource(t, inst, "POST", "baselines?name=big", big)
	assert.Equal(t, 413, code)
	assert.Contains(t, out["error"], "big: larger than 1 MiB")

	// Bytes across files: two files under 1 MiB each that together pass it.
	s.BaselinesMaxFiles = 10
	inst = newInstanceForTest(s, nil)
	half := bytes.Replace(vllm, []byte(`{`), []byte(`{"pad":"`+strings.Repeat("y", 600<<10)+`",`), 1)
	code, out = callResource(t, inst, "POST", "baselines?name=h1", half)
	require.Equal(t, 200, code, out)
	code, out = callResource(t, inst, "POST", "baselines?name=h2", half)
	assert.Equal(t, 507, code, out)
	assert.Contains(t, out["error"], "h2: not saved")
	_, err = os.Stat(filepath.Join(dir, "org-1", "h2.json"))
	assert.True(t, os.IsNotExist(err), "nothing written past the quota")
}

// Parsed baselines are cached by file name, size and modification time: a
// second list parses nothing, a changed file is parsed again, and 16
// parallel lists parse each file once (checked failing before: every list
// parsed every file).
func TestBaselineListCached(t *testing.T) {
	vllm, err := os.ReadFile(filepath.Join("..", "bench", "testdata", "vllm-llama7b-rate5.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	s, err := settings.Load([]byte(`{"baselinesPath":`+jsonString(dir)+`}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(s, nil)
	saved := baselineCache
	baselineCache = bench.NewCache(0)
	t.Cleanup(func() { baselineCache = saved })
	for _, n := range []string{"a", "b", "c"} {
		code, out := callResource(t, inst, "POST", "baselines?name="+n, vllm)
		require.Equal(t, 200, code, out)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var snd goldenSender
			_ = inst.CallResource(backend.WithPluginContext(context.Background(), editor),
				&backend.CallResourceRequest{PluginContext: editor, Method: "GET", Path: "baselines", URL: "baselines"}, &snd)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(3), baselineCache.Parses(), "each file parsed once")
	assert.Equal(t, int64(3*15), baselineCache.Hits())

	_, out := callResource(t, inst, "GET", "baselines", nil)
	assert.Len(t, out["baselines"], 3)
	assert.Equal(t, int64(3), baselineCache.Parses())

	// A changed file (another modification time) is parsed again.
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "org-1", "b.json"), later, later))
	_, _ = callResource(t, inst, "GET", "baselines", nil)
	assert.Equal(t, int64(4), baselineCache.Parses())

	// The benchmark query reads through the same cache.
	env := inst.env()
	env.Org = 1
	_, err = env.Baseline("a")
	require.NoError(t, err)
	assert.Equal(t, int64(4), baselineCache.Parses())
}
