package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/dns"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runningPage serves a vLLM page with one gauge of the given value.
func runningPage(t *testing.T, v string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} " + v + "\n"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// writeFileSD writes a file_sd file atomically (Prometheus's advice: a rename,
// so the watcher never reads half a file).
func writeFileSD(t *testing.T, path string, groups []map[string]any) {
	t.Helper()
	b, err := json.Marshal(groups)
	require.NoError(t, err)
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, b, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// instancesOf returns the instance labels of the stored running gauge of job
// over the last hour, sorted, and checks every series is stored under job.
func instancesOf(t *testing.T, c *Collector, job string) []string {
	t.Helper()
	v, err := c.Querier().Query(context.Background(), `count by (job, instance, zone) (last_over_time(vllm:num_requests_running{job="`+job+`"}[1h]))`, time.Now())
	require.NoError(t, err)
	var out []string
	for _, s := range v.(model.Vector) {
		require.Equal(t, job, string(s.Metric["job"]))
		out = append(out, string(s.Metric["instance"])+"/"+string(s.Metric["zone"]))
	}
	sort.Strings(out)
	return out
}

// TestTargetGroupDiscoveryLive: target groups whose targets come from
// Prometheus's file and HTTP service discovery, live on loopback. The
// discovered pages are scraped into the store under the group's name as job
// (a discovery label "job" does not override it) with the address as
// instance and the discovery's own labels; when the file names another
// target (a pod replaced), the group scrapes the new one and keeps the old
// one's history.
func TestTargetGroupDiscoveryLive(t *testing.T) {
	verifyNoLeaks(t)
	a, b, c2 := runningPage(t, "3"), runningPage(t, "5"), runningPage(t, "7")
	dir := t.TempDir()
	sdFile := filepath.Join(dir, "targets.json")
	writeFileSD(t, sdFile, []map[string]any{{"targets": []string{hostOf(t, a.URL)}, "labels": map[string]string{"job": "ignored", "zone": "a"}}})
	httpSD := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]map[string]any{{"targets": []string{hostOf(t, b.URL)}, "labels": map[string]string{"zone": "b"}}})
	}))
	t.Cleanup(httpSD.Close)

	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms", "scrapeTimeout": "150ms", "retention": "1h",
		"targetGroups": []map[string]any{
			{"name": "fileg", "discovery": map[string]any{"file": map[string]any{"files": []string{sdFile}, "refreshInterval": "1s"}}},
			{"name": "httpg", "discovery": map[string]any{"http": map[string]any{"url": httpSD.URL + "/sd", "refreshInterval": "1s"}}},
		},
	}, nil)
	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()

	hostA, hostB, hostC := hostOf(t, a.URL), hostOf(t, b.URL), hostOf(t, c2.URL)
	require.Eventually(t, func() bool {
		return len(instancesOf(t, c, "fileg")) == 1 && len(instancesOf(t, c, "httpg")) == 1
	}, 60*time.Second, 50*time.Millisecond, "both groups' discovered targets are scraped")
	assert.Equal(t, []string{hostA + "/a"}, instancesOf(t, c, "fileg"))
	assert.Equal(t, []string{hostB + "/b"}, instancesOf(t, c, "httpg"))
	assert.Equal(t, []string{"http://" + hostA + "/metrics"}, c.DiscoveredURLs("fileg"))

	byName := map[string]TargetStatus{}
	for _, st := range c.Status() {
		byName[st.Name] = st
	}
	assert.Equal(t, 1, byName["fileg"].Discovered)
	assert.Equal(t, "1 discovered targets", byName["fileg"].URL)
	require.Eventually(t, func() bool {
		for _, st := range c.Status() {
			if st.Name == "httpg" && st.Up {
				return true
			}
		}
		return false
	}, 60*time.Second, 50*time.Millisecond)

	// The file now names target c instead of a.
	writeFileSD(t, sdFile, []map[string]any{{"targets": []string{hostC}, "labels": map[string]string{"zone": "a"}}})
	require.Eventually(t, func() bool {
		urls := c.DiscoveredURLs("fileg")
		return len(urls) == 1 && urls[0] == "http://"+hostC+"/metrics" && len(instancesOf(t, c, "fileg")) == 2
	}, 60*time.Second, 50*time.Millisecond, "the replaced target is scraped")
	assert.ElementsMatch(t, []string{hostA + "/a", hostC + "/a"}, instancesOf(t, c, "fileg"), "the group keeps the old target's history")
}

// TestTargetGroupDiscoveryConfigs: DNS and Kubernetes discovery become
// Prometheus's dns_sd and kubernetes_sd configurations with the settings'
// names, credentials (from secureJsonData) and selectors, and the relabelling
// names a discovered pod: namespace and pod from Kubernetes' metadata, job
// the group's name, addresses on other ports dropped.
func TestTargetGroupDiscoveryConfigs(t *testing.T) {
	cfg := loadSettings(t, map[string]any{
		"targetGroups": []map[string]any{
			{"name": "dnsg", "discovery": map[string]any{"dns": map[string]any{"names": []string{"vllm.llm.svc"}, "type": "A", "port": 8000}}},
			{"name": "kube", "discovery": map[string]any{"kubernetes": map[string]any{"apiServer": "https://10.0.0.1:6443", "namespaces": []string{"llm"},
				"labelSelector": "app=vllm", "port": 8000}}},
		},
	}, map[string]string{"kube.kubeBearerToken": "kube-token", "kube.kubeCACert": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----"})
	scfgs, sds, err := groupScrapeConfigs(cfg)
	require.NoError(t, err)
	require.Len(t, scfgs, 2)
	d := sds["dnsg"][0].(*dns.SDConfig)
	assert.Equal(t, []string{"vllm.llm.svc"}, d.Names)
	assert.Equal(t, "A", d.Type)
	assert.Equal(t, 8000, d.Port)
	k := sds["kube"][0].(*kubernetes.SDConfig)
	assert.Equal(t, kubernetes.RolePod, k.Role)
	assert.Equal(t, "https://10.0.0.1:6443", k.APIServer.String())
	assert.Equal(t, []string{"llm"}, k.NamespaceDiscovery.Names)
	assert.Equal(t, "kube-token", string(k.HTTPClientConfig.Authorization.Credentials))
	assert.Contains(t, k.HTTPClientConfig.TLSConfig.CA, "BEGIN CERTIFICATE")
	assert.Equal(t, []kubernetes.SelectorConfig{{Role: kubernetes.RolePod, Label: "app=vllm"}}, k.Selectors)
	require.NoError(t, k.HTTPClientConfig.Validate())

	var kubeCfg = scfgs[0]
	if kubeCfg.JobName != "kube" {
		kubeCfg = scfgs[1]
	}
	pod := labels.FromStrings(model.AddressLabel, "10.1.2.3:8000", "__meta_kubernetes_namespace", "llm",
		"__meta_kubernetes_pod_name", "vllm-7d9f-a", model.JobLabel, "kube")
	lb := labels.NewBuilder(pod)
	require.True(t, relabel.ProcessBuilder(lb, kubeCfg.RelabelConfigs...))
	got := lb.Labels()
	assert.Equal(t, "llm", got.Get("namespace"))
	assert.Equal(t, "vllm-7d9f-a", got.Get("pod"))
	assert.Equal(t, "kube", got.Get("job"))
	other := labels.NewBuilder(labels.FromStrings(model.AddressLabel, "10.1.2.3:9090", "__meta_kubernetes_namespace", "llm"))
	assert.False(t, relabel.ProcessBuilder(other, kubeCfg.RelabelConfigs...), "a pod's other container ports are not scraped")
}

// fakeKubeAPI serves the pod list and watch of namespace llm as a
// Kubernetes API server does (JSON): one running pod whose container port is
// the given page's, then a bookmark that ends the initial events; a watch is
// held open until the client leaves. It records the label selectors asked.
func fakeKubeAPI(t *testing.T, page *httptest.Server, selectors *[]string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(page.URL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	pod := fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"vllm-7d9f-a","namespace":"llm","uid":"u-1","resourceVersion":"1","labels":{"app":"vllm"}},`+
		`"spec":{"nodeName":"node-a","containers":[{"name":"vllm","ports":[{"name":"http","containerPort":%s,"protocol":"TCP"}]}]},`+
		`"status":{"phase":"Running","podIP":%q,"hostIP":%q,"conditions":[{"type":"Ready","status":"True"}]}}`, port, host, host)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/llm/pods" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		*selectors = append(*selectors, r.URL.Query().Get("labelSelector")+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_, _ = fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[%s]}`, pod)
			return
		}
		fl, _ := w.(http.Flusher)
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", pod)
		}
		_, _ = fmt.Fprint(w, `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"2","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
		if fl != nil {
			fl.Flush()
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTargetGroupKubernetesDiscovery: a target group with Kubernetes pod
// discovery against an API server on loopback (client-go's real client,
// as Prometheus's kubernetes_sd runs it, over the API's JSON): the running
// pod it lists is scraped at its IP and container port, stored under the
// group's name with its namespace and pod as labels, and the label selector
// of the settings reaches the API server; the bearer token from
// secureJsonData is sent.
func TestTargetGroupKubernetesDiscovery(t *testing.T) {
	page := runningPage(t, "9")
	var selectors []string
	api := fakeKubeAPI(t, page, &selectors)
	_, port, _ := net.SplitHostPort(hostOf(t, page.URL))
	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms", "scrapeTimeout": "150ms", "retention": "1h",
		"targetGroups": []map[string]any{{"name": "kube", "discovery": map[string]any{"kubernetes": map[string]any{
			"apiServer": api.URL, "namespaces": []string{"llm"}, "labelSelector": "app=vllm", "port": mustAtoi(t, port)}}}},
	}, map[string]string{"kube.kubeBearerToken": "kube-token"})
	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Eventually(t, func() bool {
		v, err := c.Querier().Query(context.Background(), `vllm:num_requests_running{job="kube", namespace="llm", pod="vllm-7d9f-a"}`, time.Now())
		return err == nil && len(v.(model.Vector)) == 1 && v.(model.Vector)[0].Value == 9
	}, 60*time.Second, 50*time.Millisecond, "the discovered pod is scraped and named")
	assert.Contains(t, selectors, "app=vllm Bearer kube-token")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
