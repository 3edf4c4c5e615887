// Command inferscope-promrules writes Prometheus recording and alerting
// rules for SLO profiles (package promrules) to stdout or a file: the
// default profiles, or those of a data source's jsonData given as a JSON
// file (the sloProfiles key; the rest is ignored).
//
//	go run ./pkg/cmd/inferscope-promrules -out provisioning/prometheus/inferscope-slo.rules.yml
//	go run ./pkg/cmd/inferscope-promrules -settings jsonData.json > my-slo.rules.yml
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/inferscope/inferscope-llm-datasource/pkg/promrules"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

func main() {
	out := flag.String("out", "", "file to write (default: stdout)")
	js := flag.String("settings", "", "JSON file holding the data source's jsonData (default: the default profiles)")
	flag.Parse()
	if err := run(*out, *js); err != nil {
		fmt.Fprintln(os.Stderr, "inferscope-promrules:", err)
		os.Exit(1)
	}
}

func run(out, js string) error {
	profiles := settings.DefaultProfiles()
	if js != "" {
		raw, err := os.ReadFile(js)
		if err != nil {
			return err
		}
		// Only the profiles matter here: targets named by objectives are
		// not checked against a targets list.
		var only struct {
			Profiles json.RawMessage `json:"sloProfiles"`
		}
		if err := json.Unmarshal(raw, &only); err != nil {
			return fmt.Errorf("%s: %w", js, err)
		}
		if only.Profiles != nil {
			s, err := settings.Load([]byte(`{"sloProfiles":`+string(only.Profiles)+`}`), nil)
			if err != nil {
				return fmt.Errorf("%s: %w", js, err)
			}
			profiles = s.Profiles
		}
	}
	b, err := promrules.Generate(profiles, promrules.DefaultOptions)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
