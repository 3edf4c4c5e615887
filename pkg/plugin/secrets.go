package plugin

import (
	"encoding/json"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/redact"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// secretMask replaces a secret value wherever it would reach a viewer.
const secretMask = redact.Mask

// scrubber masks the data source's secureJsonData values (bearer tokens,
// passwords, custom header values) and their derived forms (base64 of
// `user:password`, JSON- and URL-escaped, identifying prefixes; see package
// redact) in everything the plugin returns or logs: a server or a metrics
// page may echo request headers in its error body or in label values, and
// errors flow into notices, health messages, frames and resource answers.
type scrubber struct{ m *redact.Masker }

// newScrubber collects the secrets of a data source: every secureJsonData
// value, and the basic-auth credentials (remote mode's top-level user with
// basicAuthPassword; each target's basicAuthUser with
// `<target>.basicAuthPassword`). jsonData is read leniently, so invalid
// settings still mask what they can.
func newScrubber(ds backend.DataSourceInstanceSettings) scrubber {
	secure := ds.DecryptedSecureJSONData
	secrets := make([]string, 0, len(secure))
	for _, v := range secure {
		secrets = append(secrets, v)
	}
	var creds []redact.Credential
	if p := secure["basicAuthPassword"]; p != "" {
		creds = append(creds, redact.Credential{User: ds.BasicAuthUser, Password: p})
	}
	var js struct {
		Targets []struct {
			Name          string `json:"name"`
			BasicAuthUser string `json:"basicAuthUser"`
		} `json:"targets"`
	}
	_ = json.Unmarshal(ds.JSONData, &js)
	for _, t := range js.Targets {
		if p := secure[settings.SecretKey(t.Name, "basicAuthPassword")]; p != "" {
			creds = append(creds, redact.Credential{User: t.BasicAuthUser, Password: p})
		}
	}
	return scrubber{m: redact.New(secrets, creds...)}
}

// text returns t with every secret masked.
func (s scrubber) text(t string) string { return s.m.String(t) }

// mask is text as a function value (for collect and source options).
func (s scrubber) mask() func(string) string {
	if s.m.Empty() {
		return nil
	}
	return s.m.String
}

// bytes is text for a response body.
func (s scrubber) bytes(b []byte) []byte { return s.m.Bytes(b) }

// sanitize prepares an error for panel viewers: secrets masked first, then
// long quoted page content elided and the length capped (fetch.SanitizeError).
func (s scrubber) sanitize(t string) string { return fetch.SanitizeError(s.text(t)) }

// response masks secrets in a query's error, and in its frames: names,
// field names, labels, string values, notices and executed query strings.
func (s scrubber) response(dr backend.DataResponse) backend.DataResponse {
	if s.m.Empty() {
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

// frame masks f in place.
func (s scrubber) frame(f *data.Frame) {
	if f == nil {
		return
	}
	f.Name = s.text(f.Name)
	f.RefID = s.text(f.RefID)
	for _, fl := range f.Fields {
		fl.Name = s.text(fl.Name)
		for k, v := range fl.Labels {
			if m := s.text(v); m != v {
				fl.Labels[k] = m
			}
			if m := s.text(k); m != k {
				fl.Labels[m] = fl.Labels[k]
				delete(fl.Labels, k)
			}
		}
		if fl.Config != nil {
			// Display names, custom options (fillBelowTo names a series),
			// links: every string of the field's config, through its JSON.
			if b, err := json.Marshal(fl.Config); err == nil {
				if m := s.m.Bytes(b); string(m) != string(b) {
					var c data.FieldConfig
					if json.Unmarshal(m, &c) == nil {
						fl.Config = &c
					}
				}
			}
		}
		switch fl.Type() {
		case data.FieldTypeString:
			for r := 0; r < fl.Len(); r++ {
				if v := fl.At(r).(string); len(v) >= redact.MinSecretLen {
					if m := s.text(v); m != v {
						fl.Set(r, m)
					}
				}
			}
		case data.FieldTypeNullableString:
			for r := 0; r < fl.Len(); r++ {
				if p := fl.At(r).(*string); p != nil {
					if m := s.text(*p); m != *p {
						fl.Set(r, &m)
					}
				}
			}
		}
	}
	if f.Meta != nil {
		f.Meta.ExecutedQueryString = s.text(f.Meta.ExecutedQueryString)
		for k := range f.Meta.Notices {
			f.Meta.Notices[k].Text = s.text(f.Meta.Notices[k].Text)
		}
		if f.Meta.Custom != nil {
			if b, err := json.Marshal(f.Meta.Custom); err == nil {
				if m := s.m.Bytes(b); string(m) != string(b) {
					var v any
					if json.Unmarshal(m, &v) == nil {
						f.Meta.Custom = v
					}
				}
			}
		}
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
