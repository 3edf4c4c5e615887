package asgrafana

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// gatewayPage serves one of pkg/catalog/testdata's gateway pages (LiteLLM, OpenTelemetry
// GenAI, written from their documented names) with every counter and histogram sample
// multiplied by 1 + 0.2·scrapes, so each scrape adds a fifth of the page: rates are
// positive and shares, means and quantiles are the page's own.
type gatewayPage struct {
	mu      sync.Mutex
	scrapes int
	lines   []string
	kind    map[string]string
}

func newGatewayPage(t *testing.T, file string) *gatewayPage {
	t.Helper()
	root, err := moduleRoot()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "pkg", "catalog", "testdata", file))
	require.NoError(t, err)
	p := &gatewayPage{kind: map[string]string{}, lines: strings.Split(strings.TrimRight(string(b), "\n"), "\n")}
	for _, l := range p.lines {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			p.kind[f[2]] = f[3]
		}
	}
	return p
}

func (p *gatewayPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.scrapes++
	f := 1 + 0.2*float64(p.scrapes)
	p.mu.Unlock()
	var sb strings.Builder
	for _, l := range p.lines {
		if l == "" || strings.HasPrefix(l, "#") {
			sb.WriteString(l + "\n")
			continue
		}
		cut := strings.LastIndexByte(l, ' ')
		name := l[:cut]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		k := p.kind[name]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && k == "" {
				k = p.kind[b]
			}
		}
		if k == "counter" || k == "histogram" {
			v, err := strconv.ParseFloat(l[cut+1:], 64)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			sb.WriteString(l[:cut+1] + strconv.FormatFloat(v*f, 'g', -1, 64) + "\n")
			continue
		}
		sb.WriteString(l + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(sb.String()))
}

// surgePage is a LiteLLM proxy page (documented names) whose one model m fails 15 % of its
// requests in each of the five error classes: every error-surge rule fires for it (each
// class above ten times its allowed share: 10 %, 5 %, 10 %, 1 %, 5 %).
type surgePage struct {
	mu sync.Mutex
	n  float64
}

func (p *surgePage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.n += 100
	n := p.n
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# TYPE litellm_proxy_total_requests_metric_total counter\nlitellm_proxy_total_requests_metric_total{requested_model=\"m\",status_code=\"200\"} %g\n", n)
	fmt.Fprintln(w, "# TYPE litellm_proxy_failed_requests_metric_total counter")
	for _, c := range [][2]string{{"Openai.Timeout", "408"}, {"Openai.RateLimitError", "429"}, {"Openai.ContentPolicyViolationError", "400"},
		{"Openai.InternalServerError", "500"}, {"Openai.BadRequestError", "400"}} {
		fmt.Fprintf(w, "litellm_proxy_failed_requests_metric_total{requested_model=\"m\",exception_class=%q,exception_status=%q} %g\n", c[0], c[1], 0.15*n)
	}
}
