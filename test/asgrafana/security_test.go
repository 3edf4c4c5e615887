package asgrafana

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteRedirectsAsGrafana: a remote server answering 302, 307 or 308
// to another port of 127.0.0.1 (another origin) is not followed by the
// built plugin, whatever the credentials (bearer token, basic auth, a
// custom header): Save & test and queries say why, and the other server
// receives no request at all. A redirect within the server's origin is
// followed (the data source answers).
func TestRemoteRedirectsAsGrafana(t *testing.T) {
	var mu sync.Mutex
	var foreign []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		foreign = append(foreign, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" tenant="+r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	defer other.Close()
	codes := map[string]int{"/302": http.StatusFound, "/307": http.StatusTemporaryRedirect, "/308": http.StatusPermanentRedirect}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/same/"):
			http.Redirect(w, r, "/real/"+strings.TrimPrefix(r.URL.Path, "/same/"), http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/real/"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
		default:
			for p, c := range codes {
				if strings.HasPrefix(r.URL.Path, p+"/") {
					http.Redirect(w, r, other.URL+strings.TrimPrefix(r.URL.Path, p), c)
					return
				}
			}
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	h := startPlugin(t)
	jd, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s", "httpHeaderName1": "X-Scope-OrgID",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	var id int64 = 70
	for p := range codes {
		for _, auth := range []string{"bearer", "basic"} {
			id++
			ds := dataSource{id: id, uid: "redir" + strings.Trim(p, "/") + auth, jsonData: jd, url: srv.URL + p, updatedMS: time.Now().UnixMilli(),
				secure: map[string]string{"httpHeaderValue1": "tenant-secret-1"}}
			if auth == "bearer" {
				ds.secure["remoteBearerToken"] = "bearer-secret-token-1"
			} else {
				ds.basicAuth, ds.basicAuthUser = true, "alice"
				ds.secure["basicAuthPassword"] = "basic-secret-pass-1"
			}
			hr := h.checkHealth(t, ds)
			assert.Equal(t, "ERROR", hr.Status.String(), hr.Message)
			assert.Contains(t, hr.Message, "another origin", "%s %s", p, auth)
			assert.Contains(t, hr.Message, other.URL, "%s %s", p, auth)
			now := time.Now().Truncate(time.Minute)
			res := h.query(t, ds, now.Add(-10*time.Minute), now, map[string]map[string]any{
				"A": {"queryType": "raw", "metric": "vllm:num_requests_running"},
			})
			assert.Contains(t, res["A"].err, "another origin", "%s %s", p, auth)
		}
	}
	same := dataSource{id: 90, uid: "redir-same", jsonData: jd, url: srv.URL + "/same", updatedMS: time.Now().UnixMilli(),
		secure: map[string]string{"httpHeaderValue1": "tenant-secret-1", "remoteBearerToken": "bearer-secret-token-1"}}
	hr := h.checkHealth(t, same)
	assert.Contains(t, hr.Message, "Remote Prometheus "+srv.URL+"/same answered", "a redirect within the origin is followed")

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, foreign, "requests that reached the other origin")
}

// secretForms are the spellings of a basic-auth password a server or page
// can echo, computed with the standard library here: the password, the
// credential user:password, its base64 (what follows `Basic `), the
// password JSON-escaped as Go's encoding/json writes it (& < > as \u0026
// \u003c \u003e), URL-escaped, and each form's first bytes that hold 8 of the
// password (what a length cap leaves).
func secretForms(user, pw string) map[string]string {
	cred := user + ":" + pw
	b64 := base64.StdEncoding.EncodeToString([]byte(cred))
	js, _ := json.Marshal(pw)
	jsPw := string(js[1 : len(js)-1])
	forms := map[string]string{
		"password": pw, "user:password": cred, "base64(user:password)": b64,
		"json(password)": jsPw, "url(password)": url.QueryEscape(pw), "path(password)": url.PathEscape(pw),
		"prefix(password)": pw[:8], "prefix(json)": jsPw[:8],
		// 4 base64 characters per 3 bytes: user: and 8 password bytes.
		"prefix(base64)": b64[:(len(user)+1+8+2)/3*4],
	}
	return forms
}

// TestSecretsEveryFormAsGrafana: pages and servers that echo the request's
// credentials, in every form, into label values, error bodies cut by the
// plugin's length caps and JSON error messages; the built plugin's every
// output (query errors, frames' labels and values, notices, health message
// and details, resource answers, its metrics page and its log) is scanned
// for every form of the password.
func TestSecretsEveryFormAsGrafana(t *testing.T) {
	if _, err := os.Stat(pageV1); err != nil {
		t.Skipf("testdata page missing: %v", err)
	}
	page, err := os.ReadFile(pageV1)
	require.NoError(t, err)
	const user = "alice"
	pw := "pa55&<w0rd/+x9Zq" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	forms := secretForms(user, pw)

	// An embedded target whose page puts the Authorization header it got
	// into model_name; one whose page puts the password URL-escaped; one
	// answering 503 with a long body that the error cap cuts in the middle
	// of the JSON-escaped password.
	echo := func(value func(r *http.Request) string) string {
		return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			v := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value(r))
			_, _ = w.Write([]byte(strings.ReplaceAll(string(page), `model_name="Qwen/Qwen1.5-0.5B-Chat"`, `model_name="`+v+`"`)))
		}))
	}
	fail := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("x", 200)+" auth="+r.Header.Get("Authorization")+" json="+forms["json(password)"], http.StatusServiceUnavailable)
	}))
	targets := []map[string]any{
		{"name": "echo-header", "url": echo(func(r *http.Request) string { return r.Header.Get("Authorization") }), "basicAuthUser": user},
		{"name": "echo-url", "url": echo(func(r *http.Request) string { return "u?pw=" + url.QueryEscape(pw) }), "basicAuthUser": user},
		{"name": "echo-fail", "url": fail, "basicAuthUser": user},
	}
	secure := map[string]string{}
	for _, tg := range targets {
		secure[tg["name"].(string)+".basicAuthPassword"] = pw
	}
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 95, uid: "echo", jsonData: jd, secure: secure, updatedMS: time.Now().UnixMilli()}

	// A remote server answering every request with a JSON error quoting
	// the Authorization header and the password, after 150 bytes of text: the
	// plugin's 300-byte cap on errors falls inside the password.
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data",
			"error": strings.Repeat("y", 150) + " you sent " + r.Header.Get("Authorization") + " for " + pw})
	}))
	defer remote.Close()
	rjd, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	rds := dataSource{id: 96, uid: "echo-remote", jsonData: rjd, url: remote.URL, basicAuth: true, basicAuthUser: user,
		secure: map[string]string{"basicAuthPassword": pw}, updatedMS: time.Now().UnixMilli()}

	h := startPlugin(t)
	var outputs []string
	record := func(what string, r queryResult) {
		b, err := json.Marshal(r.frames)
		require.NoError(t, err)
		outputs = append(outputs, what+": "+r.err+"\n"+string(b))
	}
	var echoed bool
	require.Eventually(t, func() bool {
		r := h.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})["T"]
		if r.err != "" || len(r.frames) != 1 {
			return false
		}
		record("targets", r)
		fr := r.frames[0]
		scraped := 0
		for i := 0; i < fr.Rows(); i++ {
			if cellString(t, fr, "last_scrape", i) != "" {
				scraped++
			}
		}
		b, _ := json.Marshal(r.frames)
		echoed = strings.Contains(string(b), "Basic ***") // the echo reached the table, masked
		return scraped == len(targets)
	}, 30*time.Second, 500*time.Millisecond, "targets never all scraped")
	time.Sleep(3 * time.Second)
	now := time.Now()
	for _, q := range []map[string]any{
		{"queryType": "targets"},
		{"queryType": "latency", "groupBy": "model"},
		{"queryType": "latency", "groupBy": "target", "format": "table"},
		{"queryType": "saturation", "groupBy": "model"},
		{"queryType": "throughput", "groupBy": "model"},
		{"queryType": "events"},
		{"queryType": "raw", "metric": "vllm:num_requests_running"},
		{"queryType": "diagnosis"},
	} {
		r := h.query(t, ds, now.Add(-time.Minute), now, map[string]map[string]any{"A": q})["A"]
		record(fmt.Sprint(q), r)
	}
	hr := h.checkHealth(t, ds)
	outputs = append(outputs, "health: "+hr.Message+"\n"+string(hr.JsonDetails))
	for _, path := range []string{"targets", "models", "signals"} {
		code, body := h.resource(t, ds, path)
		outputs = append(outputs, fmt.Sprintf("resource %s %d: %s", path, code, body))
	}
	// Remote mode: health, queries, discovery.
	hr = h.checkHealth(t, rds)
	outputs = append(outputs, "remote health: "+hr.Message+"\n"+string(hr.JsonDetails))
	assert.Contains(t, hr.Message, "you sent Basic ***", "the remote echo reached the health message, masked")
	for _, q := range []map[string]any{{"queryType": "latency"}, {"queryType": "raw", "metric": "up"}, {"queryType": "targets"}} {
		r := h.query(t, rds, now.Add(-time.Minute), now, map[string]map[string]any{"A": q})["A"]
		record("remote "+fmt.Sprint(q), r)
	}
	code, body := h.resource(t, rds, "discover")
	outputs = append(outputs, fmt.Sprintf("remote discover %d: %s", code, body))
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	mr, err := h.diag.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: ds.pluginContext()})
	require.NoError(t, err)
	outputs = append(outputs, "metrics: "+string(mr.Metrics.Prometheus))
	outputs = append(outputs, "log: "+h.logs.String())

	all := strings.Join(outputs, "\n")
	assert.True(t, echoed, "the echoed header reached the targets table (so the scan tests something)")
	assert.Contains(t, all, "***")
	for name, f := range forms {
		for _, out := range outputs {
			if k := strings.Index(out, f); k >= 0 {
				t.Errorf("%s (%q) in output %q", name, f, out[max(0, k-200):min(len(out), k+len(f)+100)])
			}
		}
	}
}

// gaugePage serves one vLLM gauge at value v and counts its scrapes.
func gaugePage(v int, hits *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} %d\n", v)
	}
}

// floats returns every non-null number of the frames.
func floats(t *testing.T, frames data.Frames) []float64 {
	var out []float64
	for _, f := range frames {
		for _, fl := range f.Fields {
			if fl.Type() == data.FieldTypeNullableFloat64 || fl.Type() == data.FieldTypeFloat64 {
				for k := 0; k < fl.Len(); k++ {
					if v, ok := fl.ConcreteAt(k); ok {
						out = append(out, toFloat(t, v))
					}
				}
			}
		}
	}
	return out
}

// TestTwoOrgsOneUIDAsGrafana: Grafana keeps UIDs unique per organisation
// only. Three organisations' data sources share one UID and one target name
// but scrape pages of different values (3, 7, 11): each keeps scraping after
// the others start, each reads its own value only, and the third, created
// last, reads none of the first two's history.
func TestTwoOrgsOneUIDAsGrafana(t *testing.T) {
	h := startPlugin(t)
	var hits [3]atomic.Int64
	vals := []float64{3, 7, 11}
	var dss []dataSource
	for k := range 3 {
		jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms",
			"targets": []map[string]any{{"name": "vllm", "url": serve(t, gaugePage(int(vals[k]), &hits[k])), "engine": "vllm"}}})
		require.NoError(t, err)
		dss = append(dss, dataSource{id: int64(100 + k), uid: "shared-uid", org: int64(k + 1), jsonData: jd, updatedMS: time.Now().UnixMilli()})
	}
	raw := func(ds dataSource) []float64 {
		now := time.Now()
		r := h.query(t, ds, now.Add(-5*time.Minute), now, map[string]map[string]any{
			"A": {"queryType": "raw", "metric": "vllm:num_requests_running"}})["A"]
		require.Empty(t, r.err)
		return floats(t, r.frames)
	}
	// Orgs 1 and 2 first; org 3 once both hold history.
	for _, ds := range dss[:2] {
		hr := h.checkHealth(t, ds)
		require.NotNil(t, hr)
	}
	waitFor(t, 20*time.Second, func() bool { return len(raw(dss[0])) >= 3 && len(raw(dss[1])) >= 3 }, "orgs 1 and 2 hold samples")
	h.checkHealth(t, dss[2])
	before := [2]int64{hits[0].Load(), hits[1].Load()}
	waitFor(t, 20*time.Second, func() bool { return len(raw(dss[2])) >= 2 }, "org 3 holds samples")
	time.Sleep(2 * time.Second)
	for k := range 2 {
		assert.Greater(t, hits[k].Load(), before[k]+1, "org %d still scraping after org 3 started", k+1)
	}
	for k, ds := range dss {
		got := raw(ds)
		require.NotEmpty(t, got, "org %d", k+1)
		for _, v := range got {
			assert.Equal(t, vals[k], v, "org %d reads only its own series", k+1)
		}
	}
}

// TestLockRetriedAsGrafana: two plugin processes on one storagePath (two
// Grafana servers sharing a volume). The second refuses the store while the
// first holds it: its health check says so and its queries answer 503 from
// the plugin (not a 400 "downstream" error). Once the first process stops,
// the second's next query opens the store, without a settings save.
func TestLockRetriedAsGrafana(t *testing.T) {
	dataDir := t.TempDir()
	var hits atomic.Int64
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms",
		"targets": []map[string]any{{"name": "vllm", "url": serve(t, gaugePage(5, &hits)), "engine": "vllm"}}})
	require.NoError(t, err)
	ds := dataSource{id: 110, uid: "locked-uid", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	first := startPluginData(t, dataDir)
	hr := first.checkHealth(t, ds)
	require.Equal(t, "OK", hr.Status.String(), hr.Message)

	second := startPluginData(t, dataDir)
	hr = second.checkHealth(t, ds) // waits 10 s for the lock
	assert.Equal(t, "ERROR", hr.Status.String())
	assert.Contains(t, hr.Message, "is in use by process")
	assert.Contains(t, hr.Message, "tried again at every query and health check")
	now := time.Now()
	q := map[string]map[string]any{"A": {"queryType": "raw", "metric": "vllm:num_requests_running"}}
	r := second.query(t, ds, now.Add(-time.Minute), now, q)["A"]
	assert.Equal(t, int32(http.StatusServiceUnavailable), r.status, r.err)
	assert.Equal(t, "plugin", r.source)
	assert.Contains(t, r.err, "is in use by process")

	first.client.Kill() // Grafana stops the first plugin: its store is closed, its lock released
	r = second.query(t, ds, time.Now().Add(-time.Minute), time.Now(), q)["A"]
	assert.Empty(t, r.err, "the next query opens the store")
	waitFor(t, 10*time.Second, func() bool {
		return second.checkHealth(t, ds).Status.String() == "OK"
	}, "the second process's health check is OK")
	waitFor(t, 10*time.Second, func() bool {
		now := time.Now()
		return len(floats(t, second.query(t, ds, now.Add(-5*time.Minute), now, q)["A"].frames)) > 0
	}, "the second process reads the store (the first's samples and its own)")
}

// openFDs counts the open file descriptors of process pid.
func openFDs(t *testing.T, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	return len(ents)
}

// TestStoreUnderLowOpenFilesLimitAsGrafana: a healthy store opened while
// the plugin process is out of file descriptors (its RLIMIT_NOFILE lowered
// with prlimit to what it has open plus two) is not set aside as corrupted:
// the health check says the error may pass and that it is tried again; once
// descriptors are available again the next query opens the store with its
// history.
func TestStoreUnderLowOpenFilesLimitAsGrafana(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	dataDir := t.TempDir()
	var hits atomic.Int64
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms",
		"targets": []map[string]any{{"name": "vllm", "url": serve(t, gaugePage(9, &hits)), "engine": "vllm"}}})
	require.NoError(t, err)
	ds := dataSource{id: 120, uid: "nofile-uid", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	q := map[string]map[string]any{"A": {"queryType": "raw", "metric": "vllm:num_requests_running"}}
	first := startPluginData(t, dataDir)
	first.checkHealth(t, ds)
	var before int
	waitFor(t, 20*time.Second, func() bool {
		now := time.Now()
		before = len(floats(t, first.query(t, ds, now.Add(-5*time.Minute), now, q)["A"].frames))
		return before >= 4
	}, "the first process stores samples")
	first.client.Kill()
	stopped := time.Now()

	second := startPluginData(t, dataDir)
	pid := second.client.ReattachConfig().Pid
	limit := openFDs(t, pid) + 2
	out, err := exec.Command(prlimit, "--pid", strconv.Itoa(pid), fmt.Sprintf("--nofile=%d:", limit)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	hr := second.checkHealth(t, ds)
	assert.Equal(t, "ERROR", hr.Status.String())
	assert.Contains(t, hr.Message, "too many open files")
	assert.Contains(t, hr.Message, "nothing was set aside")
	assert.Contains(t, hr.Message, "tried again at every query and health check")
	aside, _ := filepath.Glob(filepath.Join(dataDir, "inferscope", "*.corrupted-*"))
	assert.Empty(t, aside, "a healthy store is not set aside")

	out, err = exec.Command(prlimit, "--pid", strconv.Itoa(pid), "--nofile=4096:").CombinedOutput()
	require.NoError(t, err, "%s", out)
	now := time.Now()
	r := second.query(t, ds, now.Add(-5*time.Minute), stopped, q)["A"]
	require.Empty(t, r.err)
	assert.GreaterOrEqual(t, len(floats(t, r.frames)), before, "the history from before opens")
	hr = second.checkHealth(t, ds)
	assert.Equal(t, "OK", hr.Status.String(), hr.Message)
}

// TestAdmissionAsGrafana: 200 concurrent queries to a plugin whose
// concurrency limit is 4 (INFERSCOPE_MAX_CONCURRENT_QUERIES) with a 2 s
// queue wait, against a remote server that takes 100 ms per request and
// counts how many it serves at once: never more than 4, every query either
// answered or told "busy, retry" (503 from the plugin), and the plugin's
// metrics count the 200 waits and the refusals.
func TestAdmissionAsGrafana(t *testing.T) {
	var cur, peak, served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		served.Add(1)
		time.Sleep(100 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/label/") {
			_, _ = w.Write([]byte(`{"status":"success","data":["vllm:num_requests_running"]}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	const limit = 4
	h := startPluginEnv(t, t.TempDir(), fmt.Sprintf("INFERSCOPE_MAX_CONCURRENT_QUERIES=%d", limit), "INFERSCOPE_QUERY_QUEUE_WAIT=2s")
	jd, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	ds := dataSource{id: 130, uid: "admission", jsonData: jd, url: srv.URL, updatedMS: time.Now().UnixMilli()}

	const n = 200
	var wg sync.WaitGroup
	var ok, busy atomic.Int64
	var mu sync.Mutex
	var other []string
	now := time.Now()
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A distinct range per query: identical queries would share one read (fetch.SharedWork).
			r := h.query(t, ds, now.Add(-10*time.Minute-time.Duration(k)*time.Minute), now, map[string]map[string]any{
				"A": {"queryType": "raw", "metric": "vllm:num_requests_running"}})["A"]
			switch {
			case r.err == "":
				ok.Add(1)
			case strings.Contains(r.err, "Inferscope is busy, retry") && r.status == http.StatusServiceUnavailable && r.source == "plugin":
				busy.Add(1)
			default:
				mu.Lock()
				other = append(other, fmt.Sprintf("%d %s %s", r.status, r.source, r.err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d answered, %d busy; the server served %d requests, at most %d at once", ok.Load(), busy.Load(), served.Load(), peak.Load())
	assert.Empty(t, other, "answers other than data or busy")
	assert.LessOrEqual(t, peak.Load(), int64(limit), "the limit holds at the server")
	assert.GreaterOrEqual(t, ok.Load(), int64(limit))
	assert.Positive(t, busy.Load(), "200 queries of ≥100 ms through 4 slots cannot all start within 2 s")

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	mr, err := h.diag.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: ds.pluginContext()})
	require.NoError(t, err)
	page := string(mr.Metrics.Prometheus)
	assert.Contains(t, page, fmt.Sprintf("inferscope_query_queue_wait_seconds_count %d", n))
	assert.Contains(t, page, fmt.Sprintf("inferscope_queries_rejected_total %d", busy.Load()))
	assert.Contains(t, page, fmt.Sprintf("inferscope_query_concurrency_limit %d", limit))
}

// TestHugeQueryBoundedAsGrafana: a raw query with 100,000 matchers (2 MB of
// JSON), sent with a 1 s deadline as a panel whose viewer gives up: refused
// with a sentence naming the field (HTTP 400 from downstream) long before
// the deadline, and the plugin's CPU time over the second after the
// deadline stays that of an idle plugin scraping one small page.
func TestHugeQueryBoundedAsGrafana(t *testing.T) {
	var hits atomic.Int64
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms",
		"targets": []map[string]any{{"name": "vllm", "url": serve(t, gaugePage(1, &hits)), "engine": "vllm"}}})
	require.NoError(t, err)
	ds := dataSource{id: 140, uid: "huge", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	h := startPlugin(t)
	h.checkHealth(t, ds)
	pid := h.client.ReattachConfig().Pid

	m := map[string]string{}
	for k := 0; k < 100_000; k++ {
		m[fmt.Sprintf("l%d", k)] = "v"
	}
	b, err := json.Marshal(map[string]any{"refId": "A", "queryType": "raw", "metric": "vllm:num_requests_running", "matchers": m})
	require.NoError(t, err)
	now := time.Now()
	req := &pluginv2.QueryDataRequest{PluginContext: ds.pluginContext(), Queries: []*pluginv2.DataQuery{{
		RefId: "A", QueryType: "raw", MaxDataPoints: 1000, IntervalMS: 1000, Json: b,
		TimeRange: &pluginv2.TimeRange{FromEpochMS: now.Add(-time.Hour).UnixMilli(), ToEpochMS: now.UnixMilli()},
	}}}
	cpu0 := cpuSeconds(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	t0 := time.Now()
	resp, err := h.data.QueryData(ctx, req)
	took := time.Since(t0)
	cancel()
	require.NoError(t, err)
	r := resp.Responses["A"]
	assert.Equal(t, "matchers: more than 16 keys; a query takes at most 16", r.Error)
	assert.Equal(t, int32(http.StatusBadRequest), r.Status)
	assert.Equal(t, "downstream", r.ErrorSource)
	time.Sleep(time.Until(t0.Add(time.Second)))
	cpu1 := cpuSeconds(t, pid)
	time.Sleep(time.Second)
	cpu2 := cpuSeconds(t, pid)
	t.Logf("refused in %s; plugin CPU %.2f s until the deadline, %.2f s over the second after it", took, cpu1-cpu0, cpu2-cpu1)
	assert.Less(t, took, time.Second)
	assert.Less(t, cpu2-cpu1, 0.3, "CPU seconds in the second after the deadline")
}

// TestQueryBudgetAsGrafana: with the budget per request lowered to 100
// points × series (INFERSCOPE_QUERY_BUDGET), a raw query over 10 minutes at
// a 1 s interval (601 points of one series) is refused before it is
// evaluated, with a sentence (HTTP 400 from downstream); one over 60 s
// (61 points) is answered.
func TestQueryBudgetAsGrafana(t *testing.T) {
	var hits atomic.Int64
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "800ms",
		"targets": []map[string]any{{"name": "vllm", "url": serve(t, gaugePage(1, &hits)), "engine": "vllm"}}})
	require.NoError(t, err)
	ds := dataSource{id: 150, uid: "budget", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	h := startPluginEnv(t, t.TempDir(), "INFERSCOPE_QUERY_BUDGET=100")
	h.checkHealth(t, ds)
	q := func() map[string]map[string]any {
		return map[string]map[string]any{"A": {"queryType": "raw", "metric": "vllm:num_requests_running"}}
	}
	now := time.Now().Truncate(time.Second)
	r := h.query(t, ds, now.Add(-10*time.Minute), now, q())["A"]
	assert.Contains(t, r.err, "this request reads more than 100 points × series")
	assert.Equal(t, int32(http.StatusBadRequest), r.status)
	assert.Equal(t, "downstream", r.source)
	r = h.query(t, ds, now.Add(-time.Minute), now, q())["A"]
	assert.Empty(t, r.err)
}
