package collect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// probeAccept is the Accept header of a probe: the text formats Prometheus
// asks for, text 0.0.4 preferred (what every inference server serves).
const probeAccept = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"

// ProbeResult is what one fetch of a target's or agent's metrics page found.
type ProbeResult struct {
	// Name is the target or agent name probed; URL its configured URL.
	Name, URL string
	// Names are the distinct sample names on the page (with _bucket, _sum,
	// _count, _total suffixes as exposed), sorted.
	Names []string
	// Labels maps every label name on the page (other than __name__) to its
	// distinct values, sorted; e.g. Labels["model_name"] = ["Qwen/Qwen3-0.6B"].
	Labels map[string][]string
	// Samples is the number of samples on the page.
	Samples int
	// Faults name, one sentence each, the page's duplicate series and classic histograms whose
	// buckets decrease with le (see pageFaults); empty for a clean page.
	Faults []string
	// Upstreams are the servers whose engine series the page re-exports: the URL values of
	// catalog.ReExportLabels on the page (a vLLM production-stack router's `server`, the smg
	// router's `worker_addr`), sorted; empty for an engine's own page.
	Upstreams []string
	// Duration is the time from request to the end of parsing.
	Duration time.Duration
	// Err is nil on success, else one sentence naming the target, the place
	// and the cause, e.g. "target `vllm-a`: connection refused at 10.0.0.5:8000/metrics".
	Err error
}

// Probe fetches the metrics page of the target or GPU agent called name once,
// without the scrape manager, and parses it with Prometheus's textparse (the
// parser is chosen by the response Content-Type; text 0.0.4 when absent or
// unknown). The fetch uses the settings' scrape timeout, body-size limit,
// bearer token or basic auth, and TLS skip-verify. It never panics; every
// failure is reported in ProbeResult.Err as a sentence a Grafana admin can act on.
func Probe(ctx context.Context, cfg settings.Settings, name string) ProbeResult {
	start := time.Now()
	res := ProbeResult{Name: name}
	var (
		kind, rawURL, bearer, user, pass string
		skipVerify                       bool
	)
	if t, ok := cfg.Target(name); ok {
		kind, rawURL, bearer, user, pass, skipVerify = "target", t.URL, t.BearerToken, t.BasicAuthUser, t.BasicAuthPassword, t.TLSSkipVerify
	} else if a, ok := cfg.Agent(name); ok {
		kind, rawURL, bearer, skipVerify = "GPU agent", a.URL, a.BearerToken, a.TLSSkipVerify
	} else {
		res.Err = fmt.Errorf("no target or GPU agent named `%s` is configured", name)
		return res
	}
	res.URL = rawURL
	fail := func(format string, args ...any) ProbeResult {
		res.Err = fmt.Errorf("%s `%s`: %s", kind, name, fmt.Sprintf(format, args...))
		res.Duration = time.Since(start)
		return res
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("%q is not an http(s) URL such as http://10.0.0.5:8000/metrics", rawURL)
	}
	if u.Path == "" {
		u.Path = defaultMetricsPath
	}
	u.User = nil
	where := u.Host + u.EscapedPath()

	timeout := cfg.ScrapeTimeout
	if timeout <= 0 {
		timeout = settings.DefaultScrapeTimeout
	}
	bodyLimit := cfg.BodySizeLimit
	if bodyLimit <= 0 {
		bodyLimit = settings.DefaultBodySizeLimit
	}
	// Which deadline ends the fetch: the scrape timeout, or the caller's
	// (Grafana gives a health check its own) when that comes first.
	limit := fmt.Sprintf("the scrape timeout of %s", timeout)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		limit = fmt.Sprintf("the health check's deadline of %s set by Grafana", time.Until(dl).Round(100*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fail("cannot build a request for %s: %v", where, err)
	}
	req.Header.Set("Accept", probeAccept)
	req.Header.Set("User-Agent", "inferscope-probe")
	switch {
	case bearer != "":
		req.Header.Set("Authorization", "Bearer "+bearer)
	case user != "":
		req.SetBasicAuth(user, pass)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	if skipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // #nosec G402 -- opt-in per target or agent (tlsSkipVerify), off by default
	}
	defer tr.CloseIdleConnections()
	// Redirects are not followed, as in the scrape (a target's URL is
	// the page itself; following could reach a host not in the settings).
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	resp, err := client.Do(req)
	if err != nil {
		return fail("%s", describeFetchError(err, where, limit))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		hint := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			hint = ": check the bearer token or basic-auth credentials"
		case http.StatusNotFound:
			hint = ": check the metrics path of the URL"
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			hint = ": redirects are not followed; set the URL of the metrics page itself"
		}
		return fail("HTTP %s from %s%s", resp.Status, where, hint)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, bodyLimit+1))
	if err != nil {
		return fail("%s", describeFetchError(err, where, limit))
	}
	if int64(len(body)) > bodyLimit {
		return fail("the page at %s is larger than the body-size limit of %d bytes", where, bodyLimit)
	}
	if len(body) == 0 {
		return fail("the page at %s is empty", where)
	}
	if err := parsePage(body, resp.Header.Get("Content-Type"), cfg.SampleLimit, &res); err != nil {
		return fail("the page at %s is not a Prometheus metrics page: %v", where, err)
	}
	res.Duration = time.Since(start)
	return res
}

// maxProbeLabelValues caps the distinct values kept per label name, so that a
// page with a million series does not cost a million strings.
const maxProbeLabelValues = 1000

// keptName reports whether the scrape stores samples of this name (the
// catalogue's families minus the dropped ones), as scrapeConfigs' relabelling.
var keptName = sync.OnceValue(func() func(string) bool {
	keep := regexp.MustCompile("^(?:" + catalog.KeepMetricRegex() + ")$")
	drop := regexp.MustCompile("^(?:" + dropRegex + ")$")
	return func(n string) bool { return keep.MatchString(n) && !drop.MatchString(n) }
})

// parsePage fills Names, Labels and Samples of res from a metrics page. A
// page with more than sampleLimit samples that the scrape would store fails
// as its scrape would (sampleLimit ≤ 0: no limit).
func parsePage(body []byte, contentType string, sampleLimit int, res *ProbeResult) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser failed: %v", r)
		}
	}()
	return parsePageUnguarded(body, contentType, sampleLimit, res)
}

// parsePageUnguarded is parsePage without its guard against parser panics
// (the fuzz target calls it, so that a panic is found, not hidden).
func parsePageUnguarded(body []byte, contentType string, sampleLimit int, res *ProbeResult) error {
	p, perr := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{
		FallbackContentType: "text/plain",
	})
	if p == nil {
		return fmt.Errorf("unsupported Content-Type %q: %w", contentType, perr)
	}
	names := map[string]struct{}{}
	vals := map[string]map[string]struct{}{}
	kept := map[string]bool{}
	stored := 0
	faults := newPageFaults()
	var lset labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if et != textparse.EntrySeries && et != textparse.EntryHistogram {
			continue
		}
		res.Samples++
		p.Labels(&lset)
		if et == textparse.EntrySeries {
			_, _, v := p.Series()
			faults.add(lset, v)
		}
		name := lset.Get(model.MetricNameLabel)
		k, seen := kept[name]
		if !seen {
			k = keptName()(name)
			kept[name] = k
		}
		if k {
			stored++
			if sampleLimit > 0 && stored > sampleLimit {
				return fmt.Errorf("it holds more than %d samples of the families Inferscope stores (the sample limit); raise sampleLimit or drop series at the source", sampleLimit)
			}
			if err := labelLimitsError(lset); err != nil {
				return err
			}
		}
		lset.Range(func(l labels.Label) {
			if l.Name == model.MetricNameLabel {
				names[l.Value] = struct{}{}
				return
			}
			m := vals[l.Name]
			if m == nil {
				m = map[string]struct{}{}
				vals[l.Name] = m
			}
			if len(m) < maxProbeLabelValues {
				m[l.Value] = struct{}{}
			}
		})
	}
	if res.Samples == 0 {
		return errors.New("it holds no samples")
	}
	res.Names = sortedKeys(names)
	res.Faults = faults.sentences()
	res.Labels = make(map[string][]string, len(vals))
	for k, m := range vals {
		res.Labels[k] = sortedKeys(m)
	}
	res.Upstreams = upstreamsOf(res.Labels)
	return nil
}

// labelLimitsError is the sentence of a stored series over one of the scrape's per-series
// label limits (labelLimit, labelNameLengthLimit, labelValueLengthLimit), which fail every
// scrape of the page: the probe refuses it as the scrape would, so a health check never
// calls such a target working.
func labelLimitsError(lset labels.Labels) error {
	name := lset.Get(model.MetricNameLabel)
	// The scrape adds job and instance to the page's labels.
	if n := lset.Len() - 1 + 2; n > labelLimit {
		return fmt.Errorf("series %s has %d labels with job and instance, more than the scrape's limit of %d: every scrape of this page fails; drop labels at the source", name, n, labelLimit)
	}
	var err error
	lset.Range(func(l labels.Label) {
		switch {
		case err != nil || l.Name == model.MetricNameLabel:
		case len(l.Name) > labelNameLengthLimit:
			err = fmt.Errorf("series %s has a label name of %d bytes, longer than the scrape's limit of %d: every scrape of this page fails; shorten it at the source", name, len(l.Name), labelNameLengthLimit)
		case len(l.Value) > labelValueLengthLimit:
			err = fmt.Errorf("series %s has a value of label %s of %d bytes, longer than the scrape's limit of %d: every scrape of this page fails; shorten or drop the label at the source", name, l.Name, len(l.Value), labelValueLengthLimit)
		}
	})
	return err
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeFetchError turns a transport error into a short actionable phrase.
// limit names the deadline that applied, e.g. "the scrape timeout of 10s".
func describeFetchError(err error, where string, limit string) string {
	var (
		dnsErr *net.DNSError
		recErr tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused at " + where
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return fmt.Sprintf("no complete answer within %s from %s", limit, where)
	case errors.Is(err, context.Canceled):
		return "the check was cancelled while fetching " + where
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("host name %q not found (DNS) for %s", dnsErr.Name, where)
	case untrustedCert(err):
		return fmt.Sprintf("TLS certificate of %s is not trusted (%v); fix the certificate or enable TLS skip-verify for it", where, rootCause(err))
	case errors.As(err, &recErr):
		return fmt.Sprintf("%s does not speak TLS; use an http:// URL", where)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed by the server at " + where
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable at " + where
	default:
		return fmt.Sprintf("fetching %s failed: %v", where, rootCause(err))
	}
}

// untrustedCert reports whether err is a server certificate the client does
// not trust: an unknown authority, an invalid certificate or one for another
// host name.
func untrustedCert(err error) bool {
	var (
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
	)
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// rootCause strips url.Error's "Get \"…\":" prefix, which repeats the URL.
func rootCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
