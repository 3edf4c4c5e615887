package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestProvisionedDemoIsValid loads the demo's provisioned data source as
// Grafana would hand it to the plugin, and decodes every panel and
// annotation query of every dashboard under dashboards/ the way the front
// end sends it (template variables set to "All", which the front end drops,
// the estimator and profile variables to their defaults), so the demo cannot
// ship a setting or panel the backend rejects.
func TestProvisionedDemoIsValid(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "provisioning", "datasources", "inferscope.yaml"))
	require.NoError(t, err)
	var prov struct {
		Datasources []struct {
			Type     string         `yaml:"type"`
			JSONData map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &prov))
	require.Len(t, prov.Datasources, 1)
	require.Equal(t, PluginID, prov.Datasources[0].Type)
	js, err := json.Marshal(prov.Datasources[0].JSONData)
	require.NoError(t, err)
	s, err := settings.Load(js, nil)
	require.NoError(t, err)
	require.NotEmpty(t, s.Targets)

	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	type panel struct {
		Title   string            `json:"title"`
		Targets []json.RawMessage `json:"targets"`
		Panels  []json.RawMessage `json:"panels"` // a collapsed row's
	}
	var d struct {
		Panels []panel
	}
	for _, file := range files {
		dash, err := os.ReadFile(file)
		require.NoError(t, err)
		var one struct {
			Panels      []panel `json:"panels"`
			Annotations struct {
				List []struct {
					Name   string          `json:"name"`
					Target json.RawMessage `json:"target"`
				} `json:"list"`
			} `json:"annotations"`
		}
		require.NoError(t, json.Unmarshal(dash, &one), file)
		require.NotEmpty(t, one.Panels, file)
		d.Panels = append(d.Panels, one.Panels...)
		for _, p := range one.Panels {
			for _, raw := range p.Panels {
				var sub panel
				require.NoError(t, json.Unmarshal(raw, &sub), file)
				d.Panels = append(d.Panels, sub)
			}
		}
		// The dashboard's annotation queries decode like panel queries.
		for _, a := range one.Annotations.List {
			d.Panels = append(d.Panels, panel{Title: "annotation " + a.Name, Targets: []json.RawMessage{a.Target}})
		}
	}
	// Restarts and changes are marked on the overview's panels.
	overview, err := os.ReadFile(filepath.Join(root, "dashboards", "inferscope-overview.json"))
	require.NoError(t, err)
	require.Contains(t, string(overview), `"queryType": "events"`)
	now := time.Now()
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			// What applyTemplateVariables sends for "All" and the default estimator.
			body := strings.ReplaceAll(string(q), `"$target"`, `""`)
			body = strings.ReplaceAll(body, `"$model"`, `""`)
			body = strings.ReplaceAll(body, `"$estimator"`, `"prometheus"`)
			body = strings.ReplaceAll(body, `"$profile"`, `"interactive-chat"`)
			body = strings.ReplaceAll(body, `"$gpu"`, `""`)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &m), p.Title)
			for _, k := range []string{"targets", "models", "gpus"} {
				if list, ok := m[k].([]any); ok {
					kept := []any{}
					for _, v := range list {
						if v != "" {
							kept = append(kept, v)
						}
					}
					m[k] = kept
				}
			}
			delete(m, "datasource") // ${datasource} is resolved by Grafana, not sent to the plugin
			b, _ := json.Marshal(m)
			// The interval and range macros ($__range, $__rate_interval, …) are the backend's
			// to expand (queries' macros; Grafana's template service replaces them first, and
			// decodeQuery below expands what is left); every other variable must be gone.
			require.NotContains(t, backendMacros.ReplaceAllString(string(b), ""), "$", "%s: unexpanded variable", p.Title)
			_, err := decodeQuery(backend.DataQuery{RefID: "A", JSON: b, Interval: 15 * time.Second, MaxDataPoints: 1000,
				TimeRange: backend.TimeRange{From: now.Add(-30 * time.Minute), To: now}}, &s)
			require.NoError(t, err, p.Title)
		}
	}
}

// backendMacros are the variables decodeQuery expands itself (pkg/queries: $__interval,
// $__rate_interval, $__range and their _ms/_s forms).
var backendMacros = regexp.MustCompile(`\$__(rate_interval_ms|rate_interval|interval_ms|interval|range_ms|range_s|range)\b`)
