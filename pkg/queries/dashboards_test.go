package queries

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// grafanaKeys are what Grafana adds to every query model besides the data source's own fields.
var grafanaKeys = []string{"refId", "datasource", "hide", "key", "intervalMs", "maxDataPoints", "queryType"}

// decodeStrict decodes one query model through the registry, refusing any field the query
// type's request struct does not have (Grafana's own keys aside) and any value of the wrong
// JSON type.
func decodeStrict(t *testing.T, where string, model map[string]any) {
	t.Helper()
	name, _ := model["queryType"].(string)
	ty, ok := Lookup(name)
	require.True(t, ok, "%s: queryType %q is not a registered query type", where, name)
	body := map[string]any{"queryType": name}
	for k, v := range model {
		body[k] = v
	}
	for _, k := range grafanaKeys[:len(grafanaKeys)-1] {
		delete(body, k)
	}
	js, err := json.Marshal(body)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(ty.new()), "%s: %s", where, js)
}

// TestCommittedQueriesDecodeStrictly: every Inferscope query tools/dashgen emitted into
// dashboards/*.json (panels and annotations) and every provisioned alert rule's query model
// decodes through the registry with no unknown field, so the generator cannot drift from the
// Go request structs unnoticed.
func TestCommittedQueriesDecodeStrictly(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	n := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var d struct {
			Panels []struct {
				Title   string           `json:"title"`
				Targets []map[string]any `json:"targets"`
				Panels  []struct {
					Title   string           `json:"title"`
					Targets []map[string]any `json:"targets"`
				} `json:"panels"`
			} `json:"panels"`
			Annotations struct {
				List []struct {
					Name   string         `json:"name"`
					Target map[string]any `json:"target"`
				} `json:"list"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(raw, &d), file)
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				decodeStrict(t, filepath.Base(file)+": "+p.Title, q)
				n++
			}
			for _, sub := range p.Panels {
				for _, q := range sub.Targets {
					decodeStrict(t, filepath.Base(file)+": "+sub.Title, q)
					n++
				}
			}
		}
		for _, a := range d.Annotations.List {
			if a.Target == nil || a.Target["queryType"] == nil {
				continue // Grafana's built-in annotations
			}
			decodeStrict(t, filepath.Base(file)+": annotation "+a.Name, a.Target)
			n++
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, "provisioning", "alerting", "inferscope-rules.yaml"))
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Title string `yaml:"title"`
				Data  []struct {
					DatasourceUID string         `yaml:"datasourceUid"`
					Model         map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, q := range r.Data {
				if q.DatasourceUID == "__expr__" {
					continue
				}
				decodeStrict(t, "alert rule "+r.Title, q.Model)
				alerts++
			}
		}
	}
	require.NotZero(t, alerts, "no alert rule query found")
	require.NotZero(t, n, "no dashboard query found")
}
