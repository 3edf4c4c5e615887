package plugin

import (
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// secretMask replaces a secret value wherever it would reach a viewer.
const secretMask = "***"

// minSecretLen is the shortest secureJsonData value that is masked: shorter
// values would mask ordinary words and digits.
const minSecretLen = 4

// scrubber masks the data source's secureJsonData values (bearer tokens,
// passwords, custom header values) in text the plugin returns: a server or
// a metrics page may echo request headers in its error body, and errors
// flow into notices, health messages and resource answers.
type scrubber struct{ secrets []string }

// newScrubber collects the non-empty secret values, longest first (so a
// secret containing another is masked whole).
func newScrubber(secure map[string]string) scrubber {
	var out []string
	for _, v := range secure {
		if len(v) >= minSecretLen {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(a, b int) bool { return len(out[a]) > len(out[b]) })
	return scrubber{secrets: out}
}

// text returns s with every secret value replaced by secretMask.
func (s scrubber) text(t string) string {
	for _, v := range s.secrets {
		if strings.Contains(t, v) {
			t = strings.ReplaceAll(t, v, secretMask)
		}
	}
	return t
}

// bytes is text for a response body.
func (s scrubber) bytes(b []byte) []byte {
	if len(s.secrets) == 0 {
		return b
	}
	return []byte(s.text(string(b)))
}

// response masks secrets in a query's error, notices and executed query strings.
func (s scrubber) response(dr backend.DataResponse) backend.DataResponse {
	if len(s.secrets) == 0 {
		return dr
	}
	if dr.Error != nil {
		if m := s.text(dr.Error.Error()); m != dr.Error.Error() {
			dr.Error = maskedError{msg: m, err: dr.Error}
		}
	}
	for _, f := range dr.Frames {
		s.frame(f)
	}
	return dr
}

func (s scrubber) frame(f *data.Frame) {
	if f == nil || f.Meta == nil {
		return
	}
	f.Meta.ExecutedQueryString = s.text(f.Meta.ExecutedQueryString)
	for k := range f.Meta.Notices {
		f.Meta.Notices[k].Text = s.text(f.Meta.Notices[k].Text)
	}
}

// maskedError is an error whose message had secrets masked; errors.Is/As
// still see the original (its status mapping is kept).
type maskedError struct {
	msg string
	err error
}

func (e maskedError) Error() string { return e.msg }
func (e maskedError) Unwrap() error { return e.err }

// scrubSender masks secrets in every resource response body.
type scrubSender struct {
	s    scrubber
	next backend.CallResourceResponseSender
}

func (w scrubSender) Send(r *backend.CallResourceResponse) error {
	if r != nil {
		r.Body = w.s.bytes(r.Body)
	}
	return w.next.Send(r)
}
