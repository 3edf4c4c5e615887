package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

func callResource(t *testing.T, inst *Instance, method, url string, body []byte) (int, map[string]any) {
	t.Helper()
	var s goldenSender
	path := url
	if i := len("baselines"); len(url) > i {
		path = url[:i]
	}
	require.NoError(t, inst.CallResource(context.Background(), &backend.CallResourceRequest{Method: method, Path: path, URL: url, Body: body}, &s))
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
	_, err = os.Stat(filepath.Join(dir, "llama7b-a100.json"))
	require.NoError(t, err)

	code, out = callResource(t, inst, "POST", "baselines?name=llama7b-a100", vllm)
	assert.Equal(t, 409, code)
	code, _ = callResource(t, inst, "POST", "baselines?name=llama7b-a100&overwrite=true", vllm)
	assert.Equal(t, 200, code)

	code, out = callResource(t, inst, "POST", "baselines?name=bad", []byte(`{"request_throughput": 1, "p99_ttft_ms": "slow"}`))
	assert.Equal(t, 400, code)
	assert.Equal(t, `bad: p99_ttft_ms: "slow" is not a number`, out["error"])
	code, out = callResource(t, inst, "POST", "baselines?name=../etc", vllm)
	assert.Equal(t, 400, code)
	assert.Contains(t, out["error"], "name:")

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
