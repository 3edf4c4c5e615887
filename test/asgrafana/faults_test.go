package asgrafana

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fault is one misbehaving target of the fault matrix.
type fault struct {
	name string
	url  string
	// want is a phrase its targets row's last_error must hold (lower case).
	want []string
}

// seriesPage serves n distinct series of a family the catalogue keeps
// (about 40 bytes each), streamed in 1 MiB writes.
func seriesPage(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		var b bytes.Buffer
		for k := 0; k < n && r.Context().Err() == nil; k++ {
			fmt.Fprintf(&b, "vllm:num_requests_running{s=\"%d\"} 1\n", k)
			if b.Len() > 1<<20 {
				if _, err := w.Write(b.Bytes()); err != nil {
					return
				}
				b.Reset()
			}
		}
		_, _ = w.Write(b.Bytes())
	}
}

// TestFaultMatrix runs one good vLLM target next to ten misbehaving ones
// through the built plugin: each fault gets its own targets row and "down"
// notice, the good target's throughput is still exact in the same query,
// the plugin's memory stays bounded (limits hold), a redirect to another
// host is not followed, the plugin's own metrics count every failure, and
// no configured secret appears in any response, health message, resource
// answer, metrics page or log line.
func TestFaultMatrix(t *testing.T) {
	if _, err := os.Stat(pageV1); err != nil {
		t.Skipf("testdata page missing: %v", err)
	}
	m := newVLLMModel()
	good := newLinearPage(t, m)

	// Secrets: every target has one, the 5xx target echoes its request
	// headers into its error body, the redirect target points at a URL
	// carrying a password.
	secrets := map[string]string{}
	secret := func(name string) string {
		v := "S3CR3T-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		secrets[name+".bearerToken"] = v
		return v
	}

	var canaryHits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		canaryHits.Add(1)
		_, _ = w.Write([]byte("vllm:num_requests_running 1\n"))
	}))
	t.Cleanup(canary.Close)
	canaryOtherHost := strings.Replace(canary.URL, "127.0.0.1", "localhost", 1)

	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("vllm:num_requests_running 1\n"))
	}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed handshakes are the point
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	faults := []fault{
		{"garbage", serve(t, garbageHandler()), nil},
		{"http-5xx", serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			_ = r.Header.Write(&b)
			http.Error(w, "engine failed; request was:\n"+b.String(), http.StatusServiceUnavailable)
		})), []string{"503"}},
		{"stall", serve(t, stallHandler(30*time.Second)), []string{"deadline"}},
		{"body-100mb", serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			line := []byte("vllm:num_requests_running{model_name=\"m\"} 1\n")
			chunk := bytes.Repeat(line, (1<<20)/len(line))
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			for sent := 0; sent < 100<<20 && r.Context().Err() == nil; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})), []string{"body size limit"}},
		{"series-1m", serve(t, seriesPage(1_000_000)), []string{"body size limit"}},
		// Stopped while parsing at the 5,001st sample (the sample limit is lowered to 5,000,
		// a 240 kB page, so a loaded machine stores it well within the scrape timeout; the
		// timeout's sentence would say "exceeded" and "parsing stopped there" too).
		{"series-6k", serve(t, seriesPage(6_000)), []string{"exceeded", "parsing stopped there"}},
		{"trickle", serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fl, _ := w.(http.Flusher)
			for _, c := range []byte("vllm:num_requests_running{model_name=\"m\"} 1\n") {
				if _, err := w.Write([]byte{c}); err != nil || r.Context().Err() != nil {
					return
				}
				if fl != nil {
					fl.Flush()
				}
				time.Sleep(100 * time.Millisecond)
			}
		})), []string{"deadline"}},
		{"tls-untrusted", tlsSrv.URL + "/metrics", []string{"certificate"}},
		{"dns-failure", "http://inferscope-does-not-exist.invalid:8000/metrics", []string{"inferscope-does-not-exist.invalid"}},
		{"redirect", serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(canaryOtherHost, "http://", "http://admin:"+secrets["redirect.bearerToken"]+"@", 1)+"/metrics", http.StatusFound)
		})), []string{"302"}},
	}
	targets := []map[string]any{{"name": "good", "url": serve(t, good)}}
	secret("good")
	for _, f := range faults {
		secret(f.name)
		targets = append(targets, map[string]any{"name": f.name, "url": f.url})
	}
	// Byte and sample budgets, not the machine's speed, stop the large pages: 1 MiB per page
	// (the 100 MB body and the 1 M series page are cut after 1 MiB, which a loaded machine
	// reads well within the scrape timeout) and 5,000 stored samples per scrape. The stall and
	// trickle targets take 30 s and 4.5 s, past any scrape timeout here.
	jd, err := json.Marshal(map[string]any{
		"scrapeInterval": "1s",
		"scrapeTimeout":  "900ms",
		"bodySizeLimit":  1 << 20,
		"sampleLimit":    5_000,
		"targets":        targets,
	})
	require.NoError(t, err)
	ds := dataSource{id: 7, uid: "faults", jsonData: jd, secure: secrets, updatedMS: time.Now().UnixMilli()}

	h := startPlugin(t)
	start := time.Now()
	var outputs []string // every answer the plugin gave, for the secret scan
	record := func(v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		outputs = append(outputs, string(b))
	}

	// Wait until every target has been scraped at least three times.
	var rows map[string]map[string]string
	require.Eventually(t, func() bool {
		r := h.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})["T"]
		if r.err != "" || len(r.frames) != 1 {
			return false
		}
		record(map[string]any{"err": r.err, "frames": r.frames})
		fr := r.frames[0]
		rows = map[string]map[string]string{}
		for i := 0; i < fr.Rows(); i++ {
			row := map[string]string{}
			for _, f := range []string{"target", "up", "last_error", "last_scrape"} {
				row[f] = cellString(t, fr, f, i)
			}
			rows[row["target"]] = row
		}
		for _, row := range rows {
			if row["last_scrape"] == "" {
				return false
			}
		}
		return good.scrapes() >= 12
	}, 3*time.Minute, 500*time.Millisecond, "targets never all scraped")

	// Each fault: its own row, down, with its own error. The good target is judged by what
	// the store holds below (a loaded machine may fail one of its scrapes).
	require.Len(t, rows, len(faults)+1)
	for _, f := range faults {
		row := rows[f.name]
		require.NotNil(t, row, f.name)
		assert.Equal(t, "false", row["up"], f.name)
		require.NotEmpty(t, row["last_error"], f.name)
		for _, w := range f.want {
			assert.Contains(t, strings.ToLower(row["last_error"]), w, "%s last_error", f.name)
		}
		t.Logf("%-14s %s", f.name, row["last_error"])
	}
	assert.Zero(t, canaryHits.Load(), "the redirect to another host was followed")

	// The good target's data arrive in the same query as every fault's notice, exact over a
	// stretch of ten consecutive grid points the good page served (a loaded machine can make
	// a scrape miss its grid point, and rate() over a window with a gap is not the page's
	// rate): the last three steps' 4 s windows lie within it.
	var clean time.Time
	require.Eventually(t, func() bool {
		var ok bool
		clean, ok = good.cleanRun(10)
		return ok
	}, 3*time.Minute, 500*time.Millisecond, "the good page never served ten grid points in a row")
	r := h.query(t, ds, start, clean.Add(500*time.Millisecond), map[string]map[string]any{"A": {"queryType": "throughput", "groupBy": "none"}})["A"]
	record(map[string]any{"err": r.err, "frames": r.frames})
	require.Empty(t, r.err)
	ss := seriesOf(t, r.frames)
	requireLast(t, one(t, ss, map[string]string{"signal": "prompt_tokens"}), m.counters["vllm:prompt_tokens_total"], rel, "prompt tokens/s next to ten faults")
	notices := allNotices(r.frames)
	for _, f := range faults {
		assert.True(t, containsText(notices, "target "+f.name+" is down"), "no notice that %s is down; notices: %q", f.name, notices)
	}

	// Memory stays bounded: the 100 MB body and the 1 M series pages were
	// fetched every second; the limits cut them at 8 MiB, and the plugin's
	// resident set stays far below them.
	pid := h.client.ReattachConfig().Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM:") || strings.HasPrefix(line, "VmRSS:") {
				fs := strings.Fields(line)
				kb, _ := strconv.Atoi(fs[1])
				t.Logf("plugin %s %d MiB", strings.TrimSuffix(fs[0], ":"), kb>>10)
				assert.Less(t, kb>>10, 400, "plugin %s", fs[0])
			}
		}
	}

	// Health, resources and the plugin's own metrics.
	hr := h.checkHealth(t, ds)
	record(map[string]any{"message": hr.Message, "details": string(hr.JsonDetails)})
	assert.Contains(t, hr.Message, fmt.Sprintf("%d of %d targets failed", len(faults), len(faults)+1))
	assert.Contains(t, string(hr.JsonDetails), "(the sample limit)")
	assert.Contains(t, string(hr.JsonDetails), "larger than the body-size limit of 1048576 bytes")
	for _, path := range []string{"targets", "agents", "models", "gpus", "signals"} {
		code, body := h.resource(t, ds, path)
		record(map[string]any{"path": path, "code": code, "body": string(body)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	mr, err := h.diag.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: ds.pluginContext()})
	require.NoError(t, err)
	page := string(mr.Metrics.Prometheus)
	outputs = append(outputs, page)
	assert.Contains(t, page, `inferscope_scrapes_total{datasource="faults",target="good"}`)
	for _, f := range faults {
		assert.Contains(t, page, `inferscope_scrape_failures_total{datasource="faults",target="`+f.name+`"}`, f.name)
	}
	assert.Contains(t, page, `inferscope_query_duration_seconds_count{outcome="ok",query_type="throughput"}`)
	assert.Contains(t, page, `inferscope_storage_bytes{datasource="faults"}`)

	// No secret anywhere, in any form (the secret, its base64, its first
	// 8 bytes: what a length cap leaves).
	outputs = append(outputs, h.logs.String())
	for key, v := range secrets {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), v[:8]} {
			for k, out := range outputs {
				assert.NotContains(t, out, form, "secret %s in output %d", key, k)
			}
		}
	}
}
