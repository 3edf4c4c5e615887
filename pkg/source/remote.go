package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultRemoteTimeout bounds one request to a remote server when
// RemoteOptions.Timeout is zero.
const DefaultRemoteTimeout = 30 * time.Second

// RemoteOptions configures NewRemoteWithOptions.
type RemoteOptions struct {
	// Timeout bounds each request: the request's context ends after it, and
	// the server is asked (query parameter `timeout`) to give up at the same
	// time. Zero means DefaultRemoteTimeout.
	Timeout time.Duration
	// Mask, when set, masks secrets in the server's error messages and
	// warnings before they are shortened (a server may echo the request's
	// credentials); see package redact.
	Mask func(string) string
	// MaxAnswerBytes caps the bytes read of one answer (DefaultMaxAnswerBytes when zero), and
	// MaxRequestBytes those of all the answers to one request whose context carries
	// WithReadCounter (DefaultMaxRequestBytes when zero); past either the answer is cut off
	// and the request fails with a *RemoteError of KindTooLarge naming the limit.
	MaxAnswerBytes, MaxRequestBytes int64
}

// remote is a Querier over a Prometheus-compatible HTTP API (Prometheus,
// Mimir, Thanos, VictoriaMetrics) through client_golang/api/prometheus/v1.
type remote struct {
	base    string
	api     v1.API
	timeout time.Duration
	mask    func(string) string
}

// NewRemote returns a Querier over the Prometheus HTTP API at baseURL with
// the default options; see NewRemoteWithOptions.
func NewRemote(baseURL string, rt http.RoundTripper) (Querier, error) {
	return NewRemoteWithOptions(baseURL, rt, RemoteOptions{})
}

// NewRemoteWithOptions returns a Querier over the Prometheus HTTP API at
// baseURL (for example http://prometheus:9090, or a Mimir prefix such as
// http://mimir/prometheus). rt carries authentication and TLS; nil uses
// api.DefaultRoundTripper.
//
// Warnings and infos returned by the server (partial data, "metric might not
// be a counter") are not errors: the data is kept and the messages go to the
// Notes of the request's context (WithNotes), so the plugin shows them.
// Failures are returned as *RemoteError, which says whether the server was
// unreachable, too slow, refused the request (4xx), failed (5xx) or hit one
// of its limits, and which limit.
//
// The returned value also implements SeriesFinder and MultiLabelValuer.
func NewRemoteWithOptions(baseURL string, rt http.RoundTripper, opts RemoteOptions) (Querier, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote Prometheus URL %q is not an http(s) URL such as http://prometheus:9090", baseURL)
	}
	if rt == nil {
		rt = api.DefaultRoundTripper
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	rt = sizeLimit{next: rt, maxAnswer: opts.MaxAnswerBytes, maxRequest: opts.MaxRequestBytes}
	// Redirects are followed within the server's origin only: the
	// transport adds the credentials to every hop (RedirectError).
	hc := &http.Client{Transport: rt, CheckRedirect: sameOriginRedirects(u)}
	cfg := api.Config{Address: strings.TrimRight(u.String(), "/"), Client: hc}
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("remote Prometheus %s: %w", u.Redacted(), err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRemoteTimeout
	}
	if opts.Mask == nil {
		opts.Mask = func(s string) string { return s }
	}
	return &remote{base: u.Redacted(), api: v1.NewAPI(fastClient{c}), timeout: opts.Timeout, mask: opts.Mask}, nil
}

// queryTimeout is the cause of a query's deadline set by WithQueryTimeout.
type queryTimeout struct{ d time.Duration }

func (e queryTimeout) Error() string {
	return fmt.Sprintf("the query's requests to the server took longer than %s in all, the data source's timeout (remoteTimeout)", e.d)
}

// WithQueryTimeout bounds the whole of one query's requests to the remote server (its
// sub-queries one after another) by d, the data source's remoteTimeout: each request is
// bounded by it already, and a query of many requests is too. A request cut off by it fails
// with a *RemoteError of KindTimeout saying so.
func WithQueryTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, queryTimeout{d})
}

// QueryTimedOut returns the *RemoteError (KindTimeout) of a query whose WithQueryTimeout
// deadline passed, for server, or nil when ctx did not end by it; a query stopped between
// its requests (by a context check) reads the same as one stopped in a request.
func QueryTimedOut(ctx context.Context, server string) error {
	var qt queryTimeout
	if ctx.Err() == nil || !errors.As(context.Cause(ctx), &qt) {
		return nil
	}
	if u, err := url.Parse(server); err == nil {
		server = u.Redacted()
	}
	return &RemoteError{Server: server, Op: "query", Kind: KindTimeout, Err: qt}
}

// call runs one request under the timeout and turns its outcome into notes
// and a *RemoteError.
func (r *remote) call(ctx context.Context, op string, fn func(ctx context.Context) (v1.Warnings, v1.Infos, error)) error {
	notes := NotesFrom(ctx)
	if err := notes.failed(); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	warnings, infos, err := fn(cctx)
	for _, w := range warnings {
		notes.Add(fmt.Sprintf("remote Prometheus %s: %s", r.base, r.mask(w)))
	}
	for _, w := range infos {
		notes.Add(fmt.Sprintf("remote Prometheus %s: %s", r.base, r.mask(w)))
	}
	if err == nil {
		return nil
	}
	err = classify(r.base, op, r.timeout, ctx, err, r.mask)
	if re, ok := err.(*RemoteError); ok && (re.Kind == KindTimeout || re.Kind == KindUnreachable || re.Kind == KindRedirect) {
		notes.fail(err)
	}
	return err
}

// Query implements Querier.
func (r *remote) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	var v model.Value
	err := r.call(ctx, fmt.Sprintf("query %q", query), func(ctx context.Context) (v1.Warnings, v1.Infos, error) {
		var w v1.Warnings
		var in v1.Infos
		var err error
		v, w, in, err = r.api.Query(ctx, query, ts, v1.WithTimeout(r.timeout))
		return w, in, err
	})
	if err != nil {
		return nil, err
	}
	if m, ok := v.(model.Matrix); ok {
		sort.Sort(m)
	}
	return v, nil
}

// AlignToStep rounds t down to a multiple of step counted from the Unix
// epoch, as Grafana's Prometheus data source and Mimir's query-frontend
// (align_queries_with_step) do, so refreshes evaluate the same instants and
// a server's results cache can serve them.
func AlignToStep(t time.Time, step time.Duration) time.Time {
	ms := step.Milliseconds()
	if ms <= 0 {
		return t
	}
	return time.UnixMilli(t.UnixMilli() / ms * ms).In(t.Location())
}

// QueryRange implements Querier. start and end are aligned down to multiples
// of step (AlignToStep); the plugin's queries are aligned already, so for
// them this changes nothing and the embedded and remote paths evaluate the
// same instants.
func (r *remote) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if step <= 0 {
		return nil, fmt.Errorf("range query %q: step %s must be positive", query, step)
	}
	if end.Before(start) {
		return nil, fmt.Errorf("range query %q: end %s is before start %s", query, end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	if step%time.Millisecond == 0 {
		start, end = AlignToStep(start, step), AlignToStep(end, step)
	}
	var v model.Value
	slot := &matrixSlot{}
	ctx = context.WithValue(ctx, matrixSlotKey{}, slot)
	err := r.call(ctx, fmt.Sprintf("range query %q", query), func(ctx context.Context) (v1.Warnings, v1.Infos, error) {
		var w v1.Warnings
		var in v1.Infos
		var err error
		v, w, in, err = r.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(r.timeout))
		return w, in, err
	})
	if err != nil {
		return nil, err
	}
	if slot.got { // decoded by fastClient
		v = slot.m
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, &RemoteError{Server: r.base, Op: fmt.Sprintf("range query %q", query), Kind: KindBadResponse,
			Err: fmt.Errorf("returned %s, not a matrix", typeOf(v))}
	}
	sort.Sort(m)
	return m, nil
}

// MetricNames implements Querier.
func (r *remote) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return r.LabelValues(ctx, model.MetricNameLabel, matchers, start, end)
}

// LabelValues implements Querier.
func (r *remote) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	var match []string
	if m := strings.TrimSpace(matchers); m != "" && m != "{}" {
		match = []string{m}
	}
	return r.LabelValuesAny(ctx, name, match, start, end)
}

// LabelValuesAny implements MultiLabelValuer: one request with several
// match[] parameters, answered with the union.
func (r *remote) LabelValuesAny(ctx context.Context, name string, selectors []string, start, end time.Time) ([]string, error) {
	if name == "" {
		return nil, errors.New("label values: empty label name")
	}
	var vals model.LabelValues
	err := r.call(ctx, fmt.Sprintf("label values of %q matching %s", name, strings.Join(selectors, " or ")), func(ctx context.Context) (v1.Warnings, v1.Infos, error) {
		var w v1.Warnings
		var in v1.Infos
		var err error
		vals, w, in, err = r.api.LabelValues(ctx, name, selectors, start, end)
		return w, in, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if v != "" {
			out = append(out, string(v))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Series implements SeriesFinder with the server's /api/v1/series; limit > 0
// asks the server for at most that many series (servers that ignore the
// parameter return all, and the result is cut to limit).
func (r *remote) Series(ctx context.Context, selectors []string, start, end time.Time, limit int) ([]model.LabelSet, error) {
	var out []model.LabelSet
	var opts []v1.Option
	if limit > 0 {
		opts = append(opts, v1.WithLimit(uint64(limit)))
	}
	err := r.call(ctx, fmt.Sprintf("series matching %s", strings.Join(selectors, " or ")), func(ctx context.Context) (v1.Warnings, v1.Infos, error) {
		var w v1.Warnings
		var in v1.Infos
		var err error
		out, w, in, err = r.api.Series(ctx, selectors, start, end, opts...)
		return w, in, err
	})
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Ping asks the server for `vector(1)`, the cheapest query every
// Prometheus-compatible API answers, and returns how long it took.
func (r *remote) Ping(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	_, err := r.Query(ctx, "vector(1)", time.Now())
	return time.Since(t0), err
}

// Pinger is implemented by the remote Querier: a reachability check.
type Pinger interface {
	Ping(ctx context.Context) (time.Duration, error)
}

// SeriesFinder is implemented by Queriers that can list series labels
// (the remote one: discovery of candidate targets on the server).
type SeriesFinder interface {
	// Series returns the label sets of series matching any of the selectors
	// in [start, end], at most limit of them when limit > 0.
	Series(ctx context.Context, selectors []string, start, end time.Time, limit int) ([]model.LabelSet, error)
}

// MultiLabelValuer is implemented by Queriers that answer a label-values
// look-up over a union of selectors in one request.
type MultiLabelValuer interface {
	// LabelValuesAny returns the distinct non-empty values of label name among
	// series matching any of selectors in [start, end], sorted.
	LabelValuesAny(ctx context.Context, name string, selectors []string, start, end time.Time) ([]string, error)
}

func typeOf(v model.Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().String()
}

// Kinds of RemoteError.
const (
	KindUnreachable = "unreachable"  // no connection (refused, DNS, TLS handshake)
	KindTimeout     = "timeout"      // no answer within the timeout
	KindClient      = "client_error" // 4xx other than a limit: the server refused the request
	KindServer      = "server_error" // 5xx: the server failed
	KindBadData     = "bad_data"     // the server could not parse the query
	KindExecution   = "execution"    // the query failed while running
	KindLimit       = "limit"        // one of the server's limits was hit (Limit says which)
	KindBadResponse = "bad_response" // the answer was not the Prometheus API's JSON
	KindCanceled    = "canceled"     // the caller gave up (dashboard closed, request canceled)
	KindRedirect    = "redirect"     // the server redirected to another origin (refused, see RedirectError)
	KindTooLarge    = "too_large"    // the answer passed the plugin's size limit (TooLargeError)
)

// apiErrorKinds are the kinds of the Prometheus API's error types; any other
// type is KindBadResponse.
var apiErrorKinds = map[v1.ErrorType]string{
	v1.ErrBadData:  KindBadData,
	v1.ErrTimeout:  KindTimeout,
	v1.ErrCanceled: KindCanceled,
	v1.ErrExec:     KindExecution,
	v1.ErrClient:   KindClient,
	v1.ErrServer:   KindServer,
}

// RemoteError is a failed request to a remote server, described for the
// user: Kind is one of the Kind* constants, Limit names the server limit hit
// (with KindLimit), Err is the underlying error.
type RemoteError struct {
	Server string
	Op     string
	Kind   string
	Limit  string
	Err    error
}

func (e *RemoteError) Error() string {
	var what string
	switch e.Kind {
	case KindUnreachable:
		what = "is unreachable"
	case KindTimeout:
		what = "did not answer in time"
	case KindClient:
		what = "refused the request"
	case KindServer:
		what = "failed"
	case KindBadData:
		what = "rejected the query"
	case KindExecution:
		what = "failed while running the query"
	case KindLimit:
		what = "hit its limit on " + e.Limit
	case KindBadResponse:
		what = "answered with something that is not the Prometheus API"
	case KindCanceled:
		what = "request was canceled"
	case KindRedirect:
		what = "answered with a redirect that was not followed"
	case KindTooLarge:
		what = "answered more than the plugin reads"
	default:
		what = "failed"
	}
	return fmt.Sprintf("remote Prometheus %s %s (%s): %v", e.Server, what, e.Op, e.Err)
}

func (e *RemoteError) Unwrap() error { return e.Err }

// limits maps substrings of limit errors, as Prometheus, Mimir, Thanos and
// VictoriaMetrics word them, to the limit's name.
var limits = []struct{ match, name string }{
	{"would load too many samples into memory", "samples per query (Prometheus --query.max-samples)"},
	{"exceeded maximum resolution of", "points per series (11,000 points: use a longer step or a shorter range)"},
	{"max-series-per-query", "series per query (Mimir -querier.max-fetched-series-per-query)"},
	{"maximum number of series", "series per query"},
	{"max-fetched-chunks-per-query", "chunks per query (Mimir -querier.max-fetched-chunks-per-query)"},
	{"maximum number of chunks", "chunks per query"},
	{"max-fetched-chunk-bytes-per-query", "chunk bytes per query (Mimir -querier.max-fetched-chunk-bytes-per-query)"},
	{"aggregated chunks size limit", "chunk bytes per query"},
	{"max-estimated-memory-consumption-per-query", "memory per query (Mimir -querier.max-estimated-memory-consumption-per-query)"},
	{"max-total-query-length", "query time range (Mimir -query-frontend.max-total-query-length)"},
	{"the query time range exceeds the limit", "query time range"},
	{"exceeded series limit", "series per query (Thanos --store.limits.request-series)"},
	{"exceeded samples limit", "samples per query (Thanos --store.limits.request-samples)"},
	{"search.maxUniqueTimeseries", "series per query (VictoriaMetrics -search.maxUniqueTimeseries)"},
	{"search.maxSamplesPerQuery", "samples per query (VictoriaMetrics -search.maxSamplesPerQuery)"},
	{"search.maxPointsPerTimeseries", "points per series (VictoriaMetrics -search.maxPointsPerTimeseries)"},
	{"too many requests", "request rate (HTTP 429)"},
}

// limitName returns the limit a server error message names, or "".
func limitName(msg string) string {
	low := strings.ToLower(msg)
	for _, l := range limits {
		if strings.Contains(low, strings.ToLower(l.match)) {
			return l.name
		}
	}
	return ""
}

// classify turns a client_golang error into a *RemoteError.
// mask is applied to the server's message before it is shortened.
func classify(server, op string, timeout time.Duration, parent context.Context, err error, mask func(string) string) error {
	re := &RemoteError{Server: server, Op: op, Err: err}
	var apiErr *v1.Error
	var netErr net.Error
	var tooLarge *TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		re.Kind, re.Err = KindTooLarge, tooLarge
	case parent.Err() != nil:
		re.Kind = KindCanceled
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			re.Kind = KindTimeout
		}
		var qt queryTimeout
		if errors.As(context.Cause(parent), &qt) {
			re.Err = qt
		}
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		re.Kind = KindTimeout
		re.Err = fmt.Errorf("no answer within %s, the data source's timeout", timeout)
	case errors.As(err, &apiErr):
		msg := apiErr.Msg
		if d := strings.TrimSpace(apiErr.Detail); d != "" {
			// A proxy's error page, or the API's JSON error on a 5xx.
			var body struct {
				Error string `json:"error"`
			}
			if json.Unmarshal([]byte(d), &body) == nil && body.Error != "" {
				d = body.Error
			}
			msg += ": " + d
		}
		re.Kind = KindBadResponse
		if k, ok := apiErrorKinds[apiErr.Type]; ok {
			re.Kind = k
		}
		if l := limitName(msg); l != "" {
			re.Kind, re.Limit = KindLimit, l
		}
		re.Err = errors.New(strings.TrimSpace(shorten(mask(msg))))
	case isRedirectError(err):
		var rerr *RedirectError
		errors.As(err, &rerr)
		re.Kind, re.Err = KindRedirect, rerr
	default:
		re.Kind = KindUnreachable
		if l := limitName(err.Error()); l != "" {
			re.Kind, re.Limit = KindLimit, l
		}
		if m := mask(err.Error()); m != err.Error() {
			re.Err = errors.New(m)
		}
	}
	return re
}

// shorten caps a server's message (an HTML error page can be long).
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		return strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}
