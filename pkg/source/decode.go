package source

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unsafe"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"
)

// The Prometheus HTTP API's range-query answer is decoded here without reflection: a
// dashboard's range queries return megabytes of [timestamp, "value"] pairs, and the generic
// JSON decoding of client_golang took most of remote mode's CPU (issue 28). Only a
// successful float matrix takes this path; any other answer (errors, native histograms,
// anything the scanner does not expect) goes to client_golang unchanged, so its error
// handling and results stay what they were.

// matrixSlot receives the matrix decoded by fastClient for one range query.
type matrixSlot struct {
	m   model.Matrix
	got bool
}

type matrixSlotKey struct{}

// fastClient is the api.Client under client_golang's v1 API. For a range query whose
// context carries a matrixSlot and whose answer is a successful float matrix, it decodes the
// matrix into the slot and hands v1 the same envelope with an empty result (the warnings and
// infos kept), so v1 decodes a few bytes instead of the samples.
type fastClient struct{ api.Client }

// Do implements api.Client.
func (c fastClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, body, err := c.Client.Do(ctx, req)
	slot, _ := ctx.Value(matrixSlotKey{}).(*matrixSlot)
	if err != nil || slot == nil || resp == nil || resp.StatusCode/100 != 2 || !strings.HasSuffix(req.URL.Path, "/api/v1/query_range") {
		return resp, body, err
	}
	m, warnings, infos, ok := decodeMatrixResponse(body)
	if !ok {
		return resp, body, err
	}
	env := struct {
		Status   string          `json:"status"`
		Data     json.RawMessage `json:"data"`
		Warnings []string        `json:"warnings,omitempty"`
		Infos    []string        `json:"infos,omitempty"`
	}{"success", json.RawMessage(`{"resultType":"matrix","result":[]}`), warnings, infos}
	small, jerr := json.Marshal(env)
	if jerr != nil {
		return resp, body, err
	}
	slot.m, slot.got = m, true
	return resp, small, nil
}

// scanner walks a JSON document held in memory.
type scanner struct {
	b      []byte
	i      int
	intern map[string]string
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) eat(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// rawString returns the bytes of the next string without its quotes; escaped is set when it
// holds a backslash (the bytes are then still JSON-escaped).
func (s *scanner) rawString() (raw []byte, escaped, ok bool) {
	if !s.eat('"') {
		return nil, false, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, true
		case '\\':
			escaped = true
			s.i += 2
			continue
		}
		s.i++
	}
	return nil, false, false
}

// str returns the next string, unescaped, interned (label names and values repeat).
func (s *scanner) str() (string, bool) {
	s.ws()
	start := s.i
	raw, escaped, ok := s.rawString()
	if !ok {
		return "", false
	}
	if escaped {
		var out string
		if json.Unmarshal(s.b[start:s.i], &out) != nil {
			return "", false
		}
		return out, true
	}
	if v, hit := s.intern[unsafe.String(unsafe.SliceData(raw), len(raw))]; hit {
		return v, true
	}
	v := string(raw)
	s.intern[v] = v
	return v, true
}

// skip passes over the next value of any kind.
func (s *scanner) skip() bool {
	switch s.peek() {
	case '"':
		_, _, ok := s.rawString()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.rawString(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case 0:
		return false
	default: // number, true, false, null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			s.i++
		}
		return true
	}
}

// object calls field for each key of the next object; field must consume the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		key, escaped, ok := s.rawString()
		if !ok || escaped || !s.eat(':') || !field(key) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// array calls elem for each element of the next array; elem must consume it.
func (s *scanner) array(elem func() bool) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

func (s *scanner) strings() ([]string, bool) {
	var out []string
	ok := s.array(func() bool {
		v, ok := s.str()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// timestamp reads a JSON number of seconds as model.Time, as model.Time.UnmarshalJSON does
// (milliseconds, extra fraction digits cut off).
func (s *scanner) timestamp() (model.Time, bool) {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || s.b[s.i] == '.' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	if s.i == start {
		return 0, false
	}
	var t model.Time
	if t.UnmarshalJSON(s.b[start:s.i]) != nil {
		return 0, false
	}
	return t, true
}

// pair reads [timestamp, "value"].
func (s *scanner) pair() (model.SamplePair, bool) {
	var p model.SamplePair
	if !s.eat('[') {
		return p, false
	}
	t, ok := s.timestamp()
	if !ok || !s.eat(',') {
		return p, false
	}
	raw, escaped, ok := s.rawString()
	if !ok || escaped {
		return p, false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64)
	if err != nil || !s.eat(']') {
		return p, false
	}
	p.Timestamp, p.Value = t, model.SampleValue(f)
	return p, true
}

// decodeMatrixResponse decodes a Prometheus API envelope holding a successful float matrix.
// ok is false for anything else (the caller then leaves the body to client_golang).
func decodeMatrixResponse(body []byte) (m model.Matrix, warnings, infos []string, ok bool) {
	s := &scanner{b: body, intern: map[string]string{}}
	status, resultType := "", ""
	m = model.Matrix{}
	series := func() bool {
		ss := &model.SampleStream{}
		ok := s.object(func(key []byte) bool {
			switch string(key) {
			case "metric":
				ss.Metric = model.Metric{}
				return s.object(func(k []byte) bool {
					name := s.intern[unsafe.String(unsafe.SliceData(k), len(k))]
					if name == "" {
						name = string(k)
						s.intern[name] = name
					}
					v, ok := s.str()
					ss.Metric[model.LabelName(name)] = model.LabelValue(v)
					return ok
				})
			case "values":
				return s.array(func() bool {
					p, ok := s.pair()
					ss.Values = append(ss.Values, p)
					return ok
				})
			case "histograms":
				return false // native histograms: client_golang decodes them
			default:
				return s.skip()
			}
		})
		if ss.Metric == nil {
			ss.Metric = model.Metric{}
		}
		m = append(m, ss)
		return ok
	}
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "status":
			v, ok := s.str()
			status = v
			return ok
		case "data":
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "resultType":
					v, ok := s.str()
					resultType = v
					return ok
				case "result":
					return s.array(series)
				default:
					return s.skip()
				}
			})
		case "warnings":
			var ok bool
			warnings, ok = s.strings()
			return ok
		case "infos":
			var ok bool
			infos, ok = s.strings()
			return ok
		default:
			return s.skip()
		}
	})
	if !ok || status != "success" || resultType != "matrix" || s.peek() != 0 {
		return nil, nil, nil, false
	}
	return m, warnings, infos, true
}
