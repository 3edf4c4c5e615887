package settings

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Modes of a data source (jsonData "mode").
const (
	// ModeEmbedded scrapes the targets and GPU agents itself into the embedded TSDB (default).
	ModeEmbedded = "embedded"
	// ModeRemote reads the same series from a Prometheus-compatible server
	// (Prometheus, Mimir, Thanos, VictoriaMetrics) and scrapes nothing.
	ModeRemote = "remote"
)

// DefaultRemoteTimeout bounds one request to the remote server, and is sent
// to it as the query's `timeout` parameter.
const DefaultRemoteTimeout = 30 * time.Second

// RemoteBearerTokenKey is the secureJsonData key of the bearer token sent to
// the remote server (Authorization: Bearer …). Basic auth, custom headers and
// TLS use Grafana's standard keys (basicAuthPassword, httpHeaderValueN,
// tlsCACert, tlsClientCert, tlsClientKey), read by the plugin SDK's HTTP client.
const RemoteBearerTokenKey = "remoteBearerToken"

// Remote is the remote-mode configuration after loading: where the server
// is and how long one request may take. Authentication and TLS are built by
// the plugin from the data source's standard HTTP settings.
type Remote struct {
	// URL is the server's base URL (the data source's top-level URL), e.g.
	// http://prometheus:9090 or http://mimir/prometheus.
	URL string `json:"-"`
	// Timeout bounds one request (seconds in the UI, Prometheus notation in jsonData).
	Timeout time.Duration `json:"-"`
	// BearerToken comes from secureJsonData key RemoteBearerTokenKey.
	BearerToken string `json:"-"`
}

// LoadWithURL is Load for a data source whose top-level URL is dsURL and
// whose basic auth (Grafana's own toggle) is on or off: in remote mode that
// URL is the server's. Load is LoadWithURL with neither.
func LoadWithURL(dsURL string, basicAuth bool, jsonData []byte, secure map[string]string) (Settings, error) {
	return load(dsURL, basicAuth, jsonData, secure)
}

// IsRemote reports whether the data source reads a remote server.
func (s *Settings) IsRemote() bool { return s.Mode == ModeRemote }

// applyRemote fills Remote and the defaults of the mode fields.
func (s *Settings) applyRemote(dsURL string, secure map[string]string, basicAuth bool) error {
	switch s.Mode {
	case "":
		s.Mode = ModeEmbedded
	case ModeEmbedded, ModeRemote:
	default:
		return fmt.Errorf("mode: %q is neither %s nor %s", s.Mode, ModeEmbedded, ModeRemote)
	}
	var err error
	if s.Remote.Timeout, err = parseDuration("remoteTimeout", s.RemoteTimeoutRaw, DefaultRemoteTimeout); err != nil {
		return err
	}
	s.Remote.URL = strings.TrimSpace(dsURL)
	s.Remote.BearerToken = secure[RemoteBearerTokenKey]
	s.remoteBasicAuth = basicAuth
	return nil
}

// validateRemote checks the remote-mode fields: a server URL, one auth method,
// and a usable label selector per target and agent.
func (s *Settings) validateRemote() error {
	if !s.IsRemote() {
		return nil
	}
	if s.Remote.URL == "" {
		return fmt.Errorf("url: remote mode needs the server's URL, such as http://prometheus:9090")
	}
	u, err := url.Parse(s.Remote.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url: %q is not an http(s) URL such as http://prometheus:9090", s.Remote.URL)
	}
	if u.User != nil {
		return fmt.Errorf("url: put credentials in the basic-auth fields, not in the URL")
	}
	if s.Remote.BearerToken != "" && s.remoteBasicAuth {
		return fmt.Errorf("remote auth: set either a bearer token or basic auth, not both")
	}
	if s.Remote.Timeout > 10*time.Minute {
		return fmt.Errorf("remoteTimeout: %s is longer than 10m", s.Remote.Timeout)
	}
	if s.RemoteMaxAnswerMiB < 0 || s.RemoteMaxAnswerMiB > 4096 {
		return fmt.Errorf("remoteMaxAnswerMiB: %d must be between 1 and 4096 (0: the default, 32)", s.RemoteMaxAnswerMiB)
	}
	if s.RemoteMaxRequestMiB < 0 || s.RemoteMaxRequestMiB > 16384 {
		return fmt.Errorf("remoteMaxRequestMiB: %d must be between 1 and 16384 (0: the default, 128)", s.RemoteMaxRequestMiB)
	}
	if s.RemoteMaxAnswerMiB > 0 && s.RemoteMaxRequestMiB > 0 && s.RemoteMaxRequestMiB < s.RemoteMaxAnswerMiB {
		return fmt.Errorf("remoteMaxRequestMiB: %d is less than remoteMaxAnswerMiB %d", s.RemoteMaxRequestMiB, s.RemoteMaxAnswerMiB)
	}
	for i, t := range s.Targets {
		if _, err := ParseSelector(t.SelectorOrDefault()); err != nil {
			return fmt.Errorf("targets[%d].selector: %v", i, err)
		}
	}
	for i, a := range s.GPUAgents {
		if _, err := ParseSelector(a.SelectorOrDefault()); err != nil {
			return fmt.Errorf("gpuAgents[%d].selector: %v", i, err)
		}
	}
	return nil
}

// SelectorOrDefault returns the target's label selector on the remote
// server: Selector, else {job="<name>"} (a server whose job label is the
// target's name).
func (t Target) SelectorOrDefault() string { return selectorOrDefault(t.Selector, t.Name) }

// SelectorOrDefault returns the agent's label selector on the remote server
// (see Target.SelectorOrDefault).
func (a GPUAgent) SelectorOrDefault() string { return selectorOrDefault(a.Selector, a.Name) }

func selectorOrDefault(sel, name string) string {
	if strings.TrimSpace(sel) != "" {
		return strings.TrimSpace(sel)
	}
	return `{job="` + name + `"}`
}

// ParseSelector parses a target's label selector such as
// `{job="vllm", namespace="prod", pod=~"vllm-0|vllm-1"}`. It must name no
// metric (the plugin picks the metrics) and must not match every series: at
// least one matcher must require a non-empty value, as Prometheus requires
// of a vector selector.
func ParseSelector(sel string) ([]*labels.Matcher, error) {
	sel = strings.TrimSpace(sel)
	if !strings.HasPrefix(sel, "{") {
		return nil, fmt.Errorf("%q is not a label selector such as {job=\"vllm\", instance=\"10.0.0.5:8000\"}", sel)
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector such as {job=\"vllm\", instance=\"10.0.0.5:8000\"}: %v", sel, err)
	}
	nonEmpty := false
	for _, m := range ms {
		if m.Name == model.MetricNameLabel {
			return nil, fmt.Errorf("%q names a metric: a target selector picks series by labels only", sel)
		}
		if !m.Matches("") {
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return nil, fmt.Errorf("%q would match every series on the server: give at least one matcher that needs a value, such as job=\"vllm\"", sel)
	}
	return ms, nil
}
