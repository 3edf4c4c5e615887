// Package bounds checks a query's JSON against size limits before it is
// decoded, in one streaming pass (time and memory linear in its size, with
// no list or map built): every list and object of a query is bounded, so
// no field of any query type can make the plugin build or evaluate a query
// of unbounded size (100,000 `matchers` once took 37 s of CPU, growing
// quadratically). A refusal is one sentence naming the field.
package bounds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Limits are the most entries of each named top-level field of a query
// (an array's elements or an object's keys), with Default for any other
// list or object at any depth, MaxDepth for nesting and MaxString for the
// bytes of one string.
type Limits struct {
	Fields    map[string]int
	Default   int
	MaxDepth  int
	MaxString int
}

// Query are the limits of an Inferscope query: a few times what a real
// dashboard uses, far below what would cost noticeable CPU.
var Query = Limits{
	Fields: map[string]int{
		"targets":    256,  // configured targets and agents, by name
		"models":     256,  // served model names
		"stages":     16,   // latency stages (8 exist)
		"stats":      32,   // mean and quantiles
		"classes":    32,   // diagnosis classes
		"matchers":   16,   // raw query's label equality matchers
		"agents":     256,  // GPU agents
		"gpus":       1024, // GPU ids or UUIDs
		"signals":    64,   // GPU signals
		"objectives": 32,   // SLO objectives
		"thresholds": 64,   // SLO thresholds
	},
	Default:   64,
	MaxDepth:  8,
	MaxString: 4096,
}

// Error is a query over a limit; Field names it (dotted path, [i] for an
// array element).
type Error struct {
	Field string
	msg   string
}

func (e *Error) Error() string { return e.msg }

// Check reads the query JSON b once and returns an *Error naming the first
// field over its limit, nil when none is. Invalid JSON is not its concern
// (nil): the decoder says what is wrong with it.
func Check(b []byte, l Limits) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := walk(dec, l, "", 0)
	var be *Error
	if errors.As(err, &be) {
		return be
	}
	return nil
}

// walk reads one value at path.
func walk(dec *json.Decoder, l Limits, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil
		}
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > l.MaxDepth {
			return &Error{Field: field(path), msg: fmt.Sprintf("%s: nested more than %d levels deep", field(path), l.MaxDepth)}
		}
		limit := l.Default
		if depth == 0 && t == '{' {
			limit = -1 // the query object itself: its fields are fixed by its type
		} else if n, ok := l.Fields[path]; ok && depth == 1 {
			limit = n
		}
		n := 0
		for dec.More() {
			n++
			if limit >= 0 && n > limit {
				what := "entries"
				if t == '{' {
					what = "keys"
				}
				return &Error{Field: field(path), msg: fmt.Sprintf("%s: more than %d %s; a query takes at most %d", field(path), limit, what, limit)}
			}
			child := fmt.Sprintf("%s[%d]", path, n-1)
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				if len(key) > l.MaxString {
					return &Error{Field: field(path), msg: fmt.Sprintf("%s: a key of %d bytes; at most %d", field(path), len(key), l.MaxString)}
				}
				child = join(path, key)
			}
			if err := walk(dec, l, child, depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		if len(t) > l.MaxString {
			return &Error{Field: field(path), msg: fmt.Sprintf("%s: a string of %d bytes; at most %d", field(path), len(t), l.MaxString)}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func field(path string) string {
	if path == "" {
		return "query"
	}
	if len(path) > 80 {
		path = path[:80] + "…"
	}
	return strings.ToValidUTF8(path, "")
}
