package main

import (
	"encoding/json"
	"fmt"
)

// Render builds every dashboard and returns file name → indented JSON with a
// trailing newline, exactly the bytes committed under dashboards/.
func Render() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, b := range All() {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		js, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = append(js, '\n')
	}
	return out, nil
}
