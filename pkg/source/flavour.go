package source

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// IsVictoriaMetrics asks the Prometheus-compatible server at baseURL for
// /api/v1/status/buildinfo through rt (nil: http.DefaultTransport) and
// reports whether it is VictoriaMetrics (single-node, vmselect, or behind
// vmauth). VictoriaMetrics answers that path with a fixed Prometheus
// version and nothing else ({"version":"2.24.0"}: no revision, branch or Go
// version, which Prometheus, Thanos and Mimir all send), and sets an
// X-Server-Hostname header on every response unless
// -http.header.disableServerHostname is set; either sign is enough.
// A server that does not serve the path (404) is not VictoriaMetrics.
func IsVictoriaMetrics(ctx context.Context, baseURL string, rt http.RoundTripper) (bool, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil {
		return false, fmt.Errorf("remote Prometheus URL %q: %w", baseURL, err)
	}
	u = u.JoinPath("api", "v1", "status", "buildinfo")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := (&http.Client{Transport: rt, CheckRedirect: sameOriginRedirects(u)}).Do(req)
	if err != nil {
		return false, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.Header.Get("X-Server-Hostname") != "" {
		return true, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, nil
	}
	var body struct {
		Data map[string]any `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body); err != nil {
		return false, nil
	}
	_, hasVersion := body.Data["version"]
	_, hasRevision := body.Data["revision"]
	_, hasGo := body.Data["goVersion"]
	return hasVersion && !hasRevision && !hasGo, nil
}
