package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// remoteState is what a remote-mode instance holds besides its Querier: the
// server's own Querier (discovery looks beyond the configured targets) and
// the scrape status read from the server's up and scrape_* series, cached
// for one scrape interval.
type remoteState struct {
	server source.Querier
	url    string
	// rt is the server's transport (authentication, headers, TLS), for the
	// look-up of what kind of server it is.
	rt http.RoundTripper

	// kindMu guards the cached answer of isVictoriaMetrics: asked once per
	// instance (a settings change makes a new one), again a minute after a
	// failure; kindDone is closed when the look-up in flight ends.
	kindMu    sync.Mutex
	kindSet   bool
	isVM      bool
	kindDone  chan struct{}
	kindTried time.Time

	mu       sync.Mutex
	at       time.Time
	statuses map[string]collect.TargetStatus
}

// newRemoteQuerier builds the remote-mode query path: an HTTP client from
// the data source's standard HTTP settings (basic auth, custom headers,
// TLS: read by the plugin SDK from jsonData and secureJsonData) plus the
// bearer token, the client_golang Querier with the timeout, and the target
// mapping of each target's and agent's selector onto its name.
//
// mask (nil: none) masks secrets in the server's messages before they are
// shortened.
func newRemoteQuerier(ctx context.Context, ds backend.DataSourceInstanceSettings, cfg settings.Settings, mask func(string) string) (source.Querier, *remoteState, error) {
	opts, err := ds.HTTPClientOptions(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("remote HTTP settings: %w", err)
	}
	opts.Timeouts.Timeout = cfg.Remote.Timeout + 5*time.Second // the request context ends first
	if cfg.Remote.BearerToken != "" {
		if opts.Header == nil {
			opts.Header = http.Header{}
		}
		opts.Header.Set("Authorization", "Bearer "+cfg.Remote.BearerToken)
	}
	client, err := httpclient.New(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("remote HTTP client: %w", err)
	}
	return newRemoteQuerierMasked(cfg, client.Transport, mask)
}

// newRemoteQuerierMasked is newRemoteQuerier over a given transport, with
// mask scrubbing secrets from the errors it returns.
func newRemoteQuerierMasked(cfg settings.Settings, rt http.RoundTripper, mask func(string) string) (source.Querier, *remoteState, error) {
	server, err := source.NewRemoteWithOptions(cfg.Remote.URL, rt, source.RemoteOptions{Timeout: cfg.Remote.Timeout, Mask: mask,
		MaxAnswerBytes: int64(cfg.RemoteMaxAnswerMiB) << 20, MaxRequestBytes: int64(cfg.RemoteMaxRequestMiB) << 20})
	if err != nil {
		return nil, nil, err
	}
	var sels []source.TargetSelector
	add := func(name, sel string) error {
		ms, err := settings.ParseSelector(sel)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sels = append(sels, source.TargetSelector{Job: name, Matchers: ms})
		return nil
	}
	for _, t := range cfg.Targets {
		if err := add(t.Name, t.SelectorOrDefault()); err != nil {
			return nil, nil, err
		}
	}
	for _, a := range cfg.GPUAgents {
		if err := add(a.Name, a.SelectorOrDefault()); err != nil {
			return nil, nil, err
		}
	}
	return source.MapTargets(server, sels), &remoteState{server: server, url: cfg.Remote.URL, rt: rt}, nil
}

// VictoriaMetricsNotice is the warning notice on the frames of every query
// type whose values come from counter rates or increases
// (victoriaMetricsAffected) when the remote server is VictoriaMetrics
// (docs/remote-mode.md, "VictoriaMetrics").
const VictoriaMetricsNotice = "The remote server is VictoriaMetrics: its rate() and increase() do not extrapolate " +
	"to the window's edges (they count from the sample before the window), so rates and request counts can differ " +
	"from Prometheus's where a counter starts, restarts or has gaps (see the remote-mode docs)."

// victoriaMetricsAffected lists the query types whose values come from
// counter rates or increases: those that carry VictoriaMetricsNotice. The
// others read gauges (raw, gpu), series names and resets (events) or the
// server's scrape status (targets).
var victoriaMetricsAffected = map[string]bool{
	"latency": true, "breakdown": true, "throughput": true, "saturation": true, "diagnosis": true, "slo": true,
	"burn_rate": true, "goodput": true, "buckets": true, "benchmark": true, "regression": true, "probe": true, "cost": true,
}

// kindWait is how long a query waits for the look-up of the server's kind
// before it runs without knowing it (a slow server must not add its whole
// timeout to every query).
const kindWait = 250 * time.Millisecond

// kindRetry is how long a failed look-up of the server's kind is not tried again.
const kindRetry = time.Minute

// isVictoriaMetrics reports whether the server is VictoriaMetrics
// (source.IsVictoriaMetrics). The look-up runs once per instance, in the
// background with the data source's timeout, again kindRetry after a
// failure; a query waits for it at most kindWait and reads false while it is
// unknown.
func (s *remoteState) isVictoriaMetrics(timeout time.Duration) bool {
	s.kindMu.Lock()
	if s.kindSet {
		defer s.kindMu.Unlock()
		return s.isVM
	}
	if s.kindDone == nil {
		if !s.kindTried.IsZero() && time.Since(s.kindTried) < kindRetry {
			s.kindMu.Unlock()
			return false
		}
		done := make(chan struct{})
		s.kindDone, s.kindTried = done, time.Now()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			vm, err := source.IsVictoriaMetrics(ctx, s.url, s.rt)
			s.kindMu.Lock()
			if err == nil {
				s.kindSet, s.isVM = true, vm
			}
			s.kindDone = nil
			s.kindMu.Unlock()
			close(done)
		}()
	}
	done := s.kindDone
	s.kindMu.Unlock()
	t := time.NewTimer(kindWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		return false
	}
	s.kindMu.Lock()
	defer s.kindMu.Unlock()
	return s.kindSet && s.isVM
}

// serverKindNotes adds VictoriaMetricsNotice to notes when the server is
// VictoriaMetrics and queryType is affected.
func (i *Instance) serverKindNotes(ctx context.Context, queryType string, notes *source.Notes) {
	if i.remote == nil || !victoriaMetricsAffected[queryType] {
		return
	}
	if i.remote.isVictoriaMetrics(i.settings.Remote.Timeout) {
		notes.Add(VictoriaMetricsNotice)
	}
}

// remoteStatuses returns the scrape status of every target and agent as the
// remote server recorded it (the server scrapes; the plugin does not).
func (i *Instance) remoteStatuses(ctx context.Context) map[string]collect.TargetStatus {
	rs := i.remote
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.statuses != nil && i.now().Sub(rs.at) < i.settings.ScrapeInterval {
		return rs.statuses
	}
	out := map[string]collect.TargetStatus{}
	for _, t := range i.settings.Targets {
		out[t.Name] = collect.TargetStatus{Name: t.Name, Kind: collect.KindTarget, URL: t.SelectorOrDefault(),
			LastError: "the server holds no up series for this selector (is it scraping the target?)"}
	}
	for _, a := range i.settings.GPUAgents {
		out[a.Name] = collect.TargetStatus{Name: a.Name, Kind: collect.KindAgent, URL: a.SelectorOrDefault(),
			LastError: "the server holds no up series for this selector (is it scraping the agent?)"}
	}
	v, err := i.querier.Query(ctx, catalog.RemoteStatusPromQL, i.now())
	if err != nil {
		for n, st := range out {
			st.LastError = i.scrub.sanitize(err.Error())
			out[n] = st
		}
		return out // not cached: the next query retries
	}
	vec, _ := v.(model.Vector)
	for _, s := range vec {
		name := string(s.Metric["job"])
		st, ok := out[name]
		if !ok {
			continue
		}
		val := float64(s.Value)
		switch s.Metric["stat"] {
		case "up":
			st.Up = val == 1
			st.LastError = ""
			if !st.Up {
				st.LastError = "the server's last scrape failed (up = 0)"
			}
		case "last":
			st.LastScrape = time.UnixMilli(int64(val * 1000))
		case "duration":
			st.LastDuration = time.Duration(val * float64(time.Second))
		case "series":
			st.Series = int(val)
		}
		out[name] = st
	}
	rs.statuses, rs.at = out, i.now()
	return out
}

// probeRemote is the remote-mode health check of one target or agent: what
// the server holds for its selector in the last hour (engine, generation,
// version range, models, signals) and whether its last scrape succeeded.
func (i *Instance) probeRemote(ctx context.Context, name, kind string) healthTarget {
	t0 := time.Now()
	h := healthTarget{Name: name, Kind: kind}
	sel := ""
	if t, ok := i.settings.Target(name); ok {
		sel = t.SelectorOrDefault()
	} else if a, ok := i.settings.Agent(name); ok {
		sel = a.SelectorOrDefault()
	}
	now := i.now()
	job := catalog.JobSelector(name)
	names, err := i.querier.MetricNames(ctx, job, now.Add(-fetch.Lookback), now)
	h.DurationMS = time.Since(t0).Milliseconds()
	if err != nil {
		h.Error = fmt.Sprintf("%s `%s`: %s", kind, name, i.scrub.sanitize(err.Error()))
		return h
	}
	if len(names) == 0 {
		h.Error = fmt.Sprintf("%s `%s`: the server holds no series matching %s in the last %s", kind, name, sel, fetch.Lookback)
		return h
	}
	h.Samples = len(names)
	// The same detection and availability as queries: the names the server
	// holds for the target's selector.
	v := i.env().ViewFromNames(name, names)
	d := v.Det
	h.Engine, h.Generation, h.Version = string(d.Engine), d.Generation, d.Version
	models, _ := i.querier.LabelValues(ctx, "model_name", job, now.Add(-fetch.Lookback), now)
	for _, m := range models {
		h.Models = append(h.Models, i.scrub.sanitize(m))
	}
	if kind == "target" && !v.OK {
		h.Error = fmt.Sprintf("%s `%s`: the server holds %d metric names for %s but none from a known inference engine (vLLM, SGLang, TGI, llama.cpp, TensorRT-LLM)", kind, name, len(names), sel)
		return h
	}
	if st, ok := i.remoteStatuses(ctx)[name]; ok && !st.Up && !st.LastScrape.IsZero() {
		h.Error = fmt.Sprintf("%s `%s`: the server holds its series (%s) but its last scrape failed (up = 0)", kind, name, d.Engine)
		return h
	}
	h.OK = true
	if kind == "target" {
		h.addSignals(catalog.AssessAll(d, v.Names))
	}
	return h
}

// pingRemote checks that the server answers at all; the message names the
// server and, on failure, why (unreachable, timeout, 4xx, 5xx).
func (i *Instance) pingRemote(ctx context.Context) (string, error) {
	p, ok := i.remote.server.(source.Pinger)
	if !ok {
		return "", errors.New("the remote Querier cannot be pinged")
	}
	d, err := p.Ping(ctx)
	if err != nil {
		return "", errors.New(i.scrub.sanitize(err.Error()))
	}
	msg := fmt.Sprintf("Remote Prometheus %s answered in %d ms.", i.remote.url, d.Milliseconds())
	if i.remote.isVictoriaMetrics(i.settings.Remote.Timeout) {
		msg += " It is VictoriaMetrics: its rate() and increase() do not extrapolate, and panels computed from them say so."
	}
	return msg, nil
}

// Candidate is one discovered job or instance on the remote server that
// carries an inference engine's or GPU exporter's metrics.
type Candidate struct {
	Job      string            `json:"job"`
	Instance string            `json:"instance,omitempty"`
	Engine   string            `json:"engine"`
	Labels   map[string]string `json:"labels,omitempty"`
	Models   []string          `json:"models,omitempty"`
	// Instances counts the instances of a job-level candidate.
	Instances int `json:"instances,omitempty"`
	// Selector is the label selector to paste into a target's settings.
	Selector string `json:"selector"`
	// Group is, for a job, the target group it becomes when added: its
	// targets then follow the job's series (pods that come and go).
	Group *settings.TargetGroup `json:"group,omitempty"`
}

// Discovery is the answer of GET /discover: candidates per job and per
// instance, sorted by job then instance.
type Discovery struct {
	Jobs      []Candidate `json:"jobs"`
	Instances []Candidate `json:"instances"`
	Truncated bool        `json:"truncated,omitempty"`
}

// discoverLimit caps the series one discovery reads.
const discoverLimit = 5000

// discoveryLabels are the labels worth showing next to a candidate: the
// usual Kubernetes and cloud service-discovery labels.
var discoveryLabels = []string{"namespace", "pod", "service", "container", "cluster", "node", "hostname", "Hostname"}

// discover lists, from the remote server's series of the last hour, the jobs
// and instances exporting an engine's running-requests gauge or a GPU
// exporter's utilisation, one series look-up (/api/v1/series).
func (i *Instance) discover(ctx context.Context) (Discovery, error) {
	out := Discovery{Jobs: []Candidate{}, Instances: []Candidate{}}
	if i.remote == nil {
		return out, queries.Badf("discovery needs remote mode: in embedded mode targets are the URLs you configure")
	}
	sf, ok := i.remote.server.(source.SeriesFinder)
	if !ok {
		return out, errors.New("the remote Querier cannot list series")
	}
	marker := engineMarkers()
	var sels []string
	for n := range marker {
		sels = append(sels, fmt.Sprintf("{__name__=%q}", n))
	}
	sort.Strings(sels)
	now := i.now()
	series, err := sf.Series(ctx, sels, now.Add(-fetch.Lookback), now, discoverLimit)
	if err != nil {
		return out, err
	}
	out.Truncated = len(series) >= discoverLimit
	type key struct{ job, instance string }
	inst := map[key]*Candidate{}
	jobs := map[string]*Candidate{}
	jobInst := map[string]map[string]bool{}
	jobLabels := map[string]map[string]bool{}
	for _, ls := range series {
		if jobLabels[string(ls["job"])] == nil {
			jobLabels[string(ls["job"])] = map[string]bool{}
		}
		for l, v := range ls {
			if v != "" {
				jobLabels[string(ls["job"])][string(l)] = true
			}
		}
		job, in := string(ls["job"]), string(ls["instance"])
		eng := string(marker[string(ls[model.MetricNameLabel])])
		c, ok := inst[key{job, in}]
		if !ok {
			c = &Candidate{Job: job, Instance: in, Engine: eng, Labels: map[string]string{},
				Selector: fmt.Sprintf("{job=%q, instance=%q}", job, in)}
			inst[key{job, in}] = c
		}
		for _, l := range discoveryLabels {
			if v := string(ls[model.LabelName(l)]); v != "" {
				c.Labels[l] = v
			}
		}
		if m := string(ls["model_name"]); m != "" && !containsString(c.Models, m) {
			c.Models = append(c.Models, m)
			sort.Strings(c.Models)
		}
		j, ok := jobs[job]
		if !ok {
			j = &Candidate{Job: job, Engine: eng, Selector: fmt.Sprintf("{job=%q}", job)}
			jobs[job] = j
			jobInst[job] = map[string]bool{}
		}
		if j.Engine != eng && !strings.Contains(j.Engine, eng) {
			j.Engine += "," + eng
		}
		jobInst[job][in] = true
		for _, m := range c.Models {
			if !containsString(j.Models, m) {
				j.Models = append(j.Models, m)
				sort.Strings(j.Models)
			}
		}
	}
	for job, j := range jobs {
		j.Instances = len(jobInst[job])
		j.Group = suggestGroup(job, jobLabels[job])
		out.Jobs = append(out.Jobs, *j)
	}
	for _, c := range inst {
		if len(c.Labels) == 0 {
			c.Labels = nil
		}
		out.Instances = append(out.Instances, *c)
	}
	sort.Slice(out.Jobs, func(a, b int) bool { return out.Jobs[a].Job < out.Jobs[b].Job })
	sort.Slice(out.Instances, func(a, b int) bool {
		if out.Instances[a].Job != out.Instances[b].Job {
			return out.Instances[a].Job < out.Instances[b].Job
		}
		return out.Instances[a].Instance < out.Instances[b].Instance
	})
	return out, nil
}

func containsString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func isRemoteError(err error) bool {
	var re *source.RemoteError
	return errors.As(err, &re)
}

// remoteErrorResponse maps a failed request to the remote server: the
// server's fault or absence is downstream (502/504), never the plugin's.
func remoteErrorResponse(err error) backend.DataResponse {
	var re *source.RemoteError
	errors.As(err, &re)
	status := backend.StatusBadGateway
	switch re.Kind {
	case source.KindTimeout:
		status = backend.StatusTimeout
	case source.KindBadData, source.KindTooLarge:
		status = backend.StatusBadRequest
	case source.KindLimit:
		status = backend.StatusTooManyRequests
	}
	return backend.DataResponse{Error: errors.New(sanitizeRemote(err.Error())), Status: status, ErrorSource: backend.ErrorSourceDownstream}
}

// sanitizeRemote caps an error message that may quote a long query.
func sanitizeRemote(s string) string {
	if len(s) > 2000 {
		return strings.ToValidUTF8(s[:2000], "") + "…"
	}
	return s
}
