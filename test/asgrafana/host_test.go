package asgrafana

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/stretchr/testify/require"
)

const pluginID = "inferscope-llm-datasource"

// rpcTimeout bounds one gRPC call to the plugin. It is a safety net against a hung plugin,
// not a speed test: under a load average of 24–42 on two cores (scripts/ci-under-load.sh) a
// 20 s bound expired on alert-rule queries that the plugin answered correctly, and at 41–55
// a 2 min bound still did on the burn-rate rules' queries (about 9 s each at a load of 25)
// (issue 32), and at 23–45 a 5 min bound expired on the SLO page and ticket rules' queries
// (30-day burn-rate subqueries) while every other query answered. CI runs the package with
// -timeout 90m.
const rpcTimeout = 15 * time.Minute

// pluginHost is the Grafana side of one launched plugin process.
type pluginHost struct {
	client *goplugin.Client
	data   pluginv2.DataClient
	diag   pluginv2.DiagnosticsClient
	res    pluginv2.ResourceClient
	stream pluginv2.StreamClient
	logs   *syncBuffer
	// queryTimeout bounds one QueryData call (0: rpcTimeout); the screenshot
	// history's capacity twins calibrate on an hour and take longer.
	queryTimeout time.Duration
}

// syncBuffer collects the plugin's log output (go-plugin forwards its stderr).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPlugin launches the binary the way Grafana's grpcplugin client does:
// go-plugin with the SDK handshake, protocol version 2, gRPC only, and the
// four plugin kinds a data source serves. The process is killed in cleanup,
// and its log is printed when the test failed.
func startPlugin(t *testing.T) *pluginHost {
	t.Helper()
	return startPluginData(t, t.TempDir())
}

// startPluginData is startPlugin with Grafana's data directory (where the
// plugin keeps its stores) at dataDir, so a later process can reopen them.
func startPluginData(t *testing.T, dataDir string) *pluginHost {
	t.Helper()
	return startPluginEnv(t, dataDir)
}

// startPluginEnv is startPluginData with extra environment variables
// (NAME=value) for the plugin process.
func startPluginEnv(t *testing.T, dataDir string, env ...string) *pluginHost {
	t.Helper()
	logs := &syncBuffer{}
	cmd := exec.Command(binPath)
	// GF_PATHS_DATA: the plugin keeps its stores in the test's own directory.
	cmd.Env = append(os.Environ(), "GF_PLUGIN_VERSION=0.0.0-test", "GF_VERSION=13.1.1", "GF_PATHS_DATA="+dataDir)
	cmd.Env = append(cmd.Env, env...)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		Cmd: cmd,
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
				"data":        &grpcplugin.DataGRPCPlugin{},
				"stream":      &grpcplugin.StreamGRPCPlugin{},
			},
		},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logs, Level: hclog.Debug}),
		StartTimeout:     30 * time.Second,
	})
	t.Cleanup(func() {
		client.Kill()
		if t.Failed() {
			t.Logf("plugin log:\n%s", tail(logs.String(), 8000))
		}
	})
	rpc, err := client.Client()
	require.NoError(t, err, "go-plugin handshake with %s", binPath)
	require.Equal(t, grpcplugin.ProtocolVersion, client.NegotiatedVersion())
	h := &pluginHost{client: client, logs: logs}
	dispense := func(name string) any {
		raw, err := rpc.Dispense(name)
		require.NoError(t, err, "dispense %s", name)
		return raw
	}
	h.data = dispense("data").(grpcplugin.DataClient)
	h.diag = dispense("diagnostics").(grpcplugin.DiagnosticsClient)
	h.res = dispense("resource").(grpcplugin.ResourceClient)
	h.stream = dispense("stream").(grpcplugin.StreamClient)
	return h
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// dataSource is one configured Inferscope data source, as Grafana holds it.
type dataSource struct {
	id        int64
	uid       string
	jsonData  []byte
	secure    map[string]string
	updatedMS int64
	// url and basicAuth are the data source's top-level fields (remote mode).
	url       string
	basicAuth bool
	// basicAuthUser is the top-level basic auth user (secure holds basicAuthPassword).
	basicAuthUser string
	// org is the Grafana organisation holding the data source; 0 means 1.
	org int64
}

// pluginContext is what Grafana puts on every request for this data source.
func (ds dataSource) pluginContext() *pluginv2.PluginContext {
	org := ds.org
	if org == 0 {
		org = 1
	}
	// Grafana sends the organisation both as OrgId and as Namespace
	// ("default" for organisation 1, "org-<id>" for the others).
	ns := "default"
	if org > 1 {
		ns = "org-" + strconv.FormatInt(org, 10)
	}
	return &pluginv2.PluginContext{
		OrgId:         org,
		Namespace:     ns,
		PluginId:      pluginID,
		PluginVersion: "0.0.0-test",
		User:          &pluginv2.User{Login: "admin", Name: "admin", Role: "Admin"},
		DataSourceInstanceSettings: &pluginv2.DataSourceInstanceSettings{
			Id:                      ds.id, //nolint:staticcheck // SA1019: Grafana still sends the internal ID; the host sends what Grafana does
			Uid:                     ds.uid,
			Name:                    "Inferscope " + ds.uid,
			JsonData:                ds.jsonData,
			DecryptedSecureJsonData: ds.secure,
			LastUpdatedMS:           ds.updatedMS,
			Url:                     ds.url,
			BasicAuthEnabled:        ds.basicAuth,
			BasicAuthUser:           ds.basicAuthUser,
		},
		GrafanaConfig: map[string]string{"GF_APP_URL": "http://localhost:3000/", "GF_CONCURRENT_QUERY_COUNT": "4"},
		UserAgent:     "Grafana/13.1.1 (linux; amd64)",
	}
}

// queryResult is one refId's answer, frames decoded from Arrow.
type queryResult struct {
	frames data.Frames
	err    string
	status int32
	source string
}

// query sends one QueryData request with the given queries (JSON models)
// over [from, to] at a 1 s interval, and decodes every response's frames.
func (h *pluginHost) query(t *testing.T, ds dataSource, from, to time.Time, models map[string]map[string]any) map[string]queryResult {
	t.Helper()
	req := &pluginv2.QueryDataRequest{PluginContext: ds.pluginContext(), Headers: map[string]string{}}
	for refID, m := range models {
		m["refId"] = refID
		b, err := json.Marshal(m)
		require.NoError(t, err)
		qt, _ := m["queryType"].(string)
		req.Queries = append(req.Queries, &pluginv2.DataQuery{
			RefId:         refID,
			QueryType:     qt,
			MaxDataPoints: 1000,
			IntervalMS:    1000,
			TimeRange:     &pluginv2.TimeRange{FromEpochMS: from.UnixMilli(), ToEpochMS: to.UnixMilli()},
			Json:          b,
		})
	}
	timeout := h.queryTimeout
	if timeout == 0 {
		timeout = rpcTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := h.data.QueryData(ctx, req)
	require.NoError(t, err, "QueryData transport error")
	out := map[string]queryResult{}
	for refID := range models {
		r, ok := resp.Responses[refID]
		require.True(t, ok, "no response for refId %s", refID)
		fr, err := data.UnmarshalArrowFrames(r.Frames)
		require.NoError(t, err, "decoding Arrow frames of %s", refID)
		out[refID] = queryResult{frames: fr, err: r.Error, status: r.Status, source: r.ErrorSource}
	}
	return out
}

// checkHealth runs Grafana's "Save & test".
func (h *pluginHost) checkHealth(t *testing.T, ds dataSource) *pluginv2.CheckHealthResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	resp, err := h.diag.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: ds.pluginContext(), Headers: map[string]string{}})
	require.NoError(t, err, "CheckHealth transport error")
	return resp
}

// resource performs GET /<path> through CallResource and returns code and body.
func (h *pluginHost) resource(t *testing.T, ds dataSource, path string) (int32, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := h.res.CallResource(ctx, &pluginv2.CallResourceRequest{
		PluginContext: ds.pluginContext(),
		Path:          path,
		Method:        "GET",
		Url:           path,
		Headers:       map[string]*pluginv2.StringList{"Accept": {Values: []string{"application/json"}}},
	})
	require.NoError(t, err, "CallResource %s", path)
	var code int32
	var body []byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "CallResource %s: receiving", path)
		if r.Code != 0 {
			code = r.Code
		}
		body = append(body, r.Body...)
	}
	return code, body
}
