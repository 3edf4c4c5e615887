package asgrafana

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// alertFile is Grafana's alerting provisioning format (apiVersion 1), the
// part of it the rules under provisioning/alerting use.
type alertFile struct {
	APIVersion int `yaml:"apiVersion"`
	Groups     []struct {
		OrgID    int         `yaml:"orgId"`
		Name     string      `yaml:"name"`
		Folder   string      `yaml:"folder"`
		Interval string      `yaml:"interval"`
		Rules    []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

type alertRule struct {
	UID          string            `yaml:"uid"`
	Title        string            `yaml:"title"`
	Condition    string            `yaml:"condition"`
	Data         []alertQuery      `yaml:"data"`
	NoDataState  string            `yaml:"noDataState"`
	ExecErrState string            `yaml:"execErrState"`
	For          string            `yaml:"for"`
	Annotations  map[string]string `yaml:"annotations"`
	Labels       map[string]string `yaml:"labels"`
}

type alertQuery struct {
	RefID             string `yaml:"refId"`
	RelativeTimeRange struct {
		From int64 `yaml:"from"`
		To   int64 `yaml:"to"`
	} `yaml:"relativeTimeRange"`
	DatasourceUID string         `yaml:"datasourceUid"`
	Model         map[string]any `yaml:"model"`
}

// loadAlertRules reads every rule under provisioning/alerting.
func loadAlertRules(t *testing.T) []alertRule {
	t.Helper()
	root, err := moduleRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "provisioning", "alerting", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no alert rule files under provisioning/alerting")
	var out []alertRule
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var af alertFile
		require.NoError(t, yaml.Unmarshal(raw, &af), f)
		require.Equal(t, 1, af.APIVersion, f)
		for _, g := range af.Groups {
			out = append(out, g.Rules...)
		}
	}
	return out
}

// alertSeries is one numeric series of a query's frames, as Grafana's
// server-side expressions see it: the labels and the values in time order.
type alertSeries struct {
	labels data.Labels
	values []float64 // NaN for null
}

// alertResult is what a rule's condition decided at one evaluation.
type alertResult struct {
	firing []data.Labels // label sets whose condition is true
	noData bool          // the data query returned no numeric series
	err    string        // a query error (execErrState applies)
}

// firingFor reports whether the rule fires for a label set containing every
// label of want.
func (r alertResult) firingFor(want map[string]string) bool {
	for _, l := range r.firing {
		ok := true
		for k, v := range want {
			if l[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// evalRule runs a rule once at now the way Grafana's alerting does: every
// data query over its relative time range through the plugin (query JSON only,
// no front end), then the server-side expressions (reduce, threshold) in
// order. It also checks the frames are alertable: numeric and one series per
// unique label set.
func evalRule(t *testing.T, h *pluginHost, ds dataSource, rule alertRule, now time.Time) alertResult {
	t.Helper()
	vals := map[string][]alertSeries{}
	for _, q := range rule.Data {
		model := map[string]any{}
		for k, v := range q.Model {
			model[k] = v
		}
		if q.DatasourceUID == "__expr__" {
			in, ok := vals[fmt.Sprint(model["expression"])]
			require.True(t, ok, "%s: expression %s reads %v, which is not computed before it", rule.UID, q.RefID, model["expression"])
			vals[q.RefID] = evalExpr(t, rule.UID, model, in)
			continue
		}
		require.Equal(t, ds.uid, q.DatasourceUID, "%s: query %s is not on the Inferscope data source", rule.UID, q.RefID)
		from := now.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second)
		to := now.Add(-time.Duration(q.RelativeTimeRange.To) * time.Second)
		res := h.query(t, ds, from, to, map[string]map[string]any{q.RefID: model})[q.RefID]
		if res.err != "" {
			return alertResult{err: res.err}
		}
		vals[q.RefID] = alertableSeries(t, rule.UID, res.frames)
	}
	cond, ok := vals[rule.Condition]
	require.True(t, ok, "%s: condition %s is not one of its refIds", rule.UID, rule.Condition)
	out := alertResult{noData: len(cond) == 0}
	for _, s := range cond {
		if len(s.values) == 1 && s.values[0] != 0 && !math.IsNaN(s.values[0]) {
			out.firing = append(out.firing, s.labels)
		}
	}
	return out
}

// alertableSeries turns frames into numeric series and fails the test when
// Grafana could not alert on them: a non-numeric value field in a time
// series, or two series with the same labels.
func alertableSeries(t *testing.T, uid string, frames data.Frames) []alertSeries {
	t.Helper()
	var out []alertSeries
	seen := map[string]bool{}
	for _, f := range frames {
		if f.Rows() == 0 {
			continue
		}
		for _, fld := range f.Fields {
			if fld.Type() == data.FieldTypeTime || fld.Type() == data.FieldTypeNullableTime {
				continue
			}
			require.True(t, fld.Type().Numeric(), "%s: frame %q field %q is %s, not numeric: Grafana cannot alert on it", uid, f.Name, fld.Name, fld.Type())
			s := alertSeries{labels: fld.Labels}
			for i := 0; i < fld.Len(); i++ {
				v, ok := fld.ConcreteAt(i)
				if !ok {
					s.values = append(s.values, math.NaN())
					continue
				}
				s.values = append(s.values, toFloat(t, v))
			}
			key := fld.Labels.String()
			require.False(t, seen[key], "%s: two series with labels %s: Grafana alerting needs unique label sets", uid, key)
			seen[key] = true
			out = append(out, s)
		}
	}
	return out
}

// evalExpr applies one server-side expression: reduce (last, mean, max, min,
// sum, count; mode dropNN drops NaN first, as Grafana's "drop non-numeric")
// or threshold (gt, lt, within_range, outside_range), which yields 1 or 0.
func evalExpr(t *testing.T, uid string, model map[string]any, in []alertSeries) []alertSeries {
	t.Helper()
	var out []alertSeries
	switch model["type"] {
	case "reduce":
		mode := ""
		if s, ok := model["settings"].(map[string]any); ok {
			mode, _ = s["mode"].(string)
		}
		for _, s := range in {
			vs := s.values
			if mode == "dropNN" {
				vs = nil
				for _, v := range s.values {
					if !math.IsNaN(v) && !math.IsInf(v, 0) {
						vs = append(vs, v)
					}
				}
			}
			out = append(out, alertSeries{labels: s.labels, values: []float64{reduce(t, uid, fmt.Sprint(model["reducer"]), vs)}})
		}
	case "threshold":
		conds, _ := model["conditions"].([]any)
		require.Len(t, conds, 1, "%s: a threshold needs one condition", uid)
		ev := conds[0].(map[string]any)["evaluator"].(map[string]any)
		typ := fmt.Sprint(ev["type"])
		var params []float64
		for _, p := range ev["params"].([]any) {
			switch x := p.(type) {
			case int: // YAML integers
				params = append(params, float64(x))
			default:
				params = append(params, toFloat(t, p))
			}
		}
		for _, s := range in {
			require.Len(t, s.values, 1, "%s: threshold over an unreduced series", uid)
			v := s.values[0]
			hit := false
			switch typ {
			case "gt":
				hit = v > params[0]
			case "lt":
				hit = v < params[0]
			case "within_range":
				hit = v > params[0] && v < params[1]
			case "outside_range":
				hit = v < params[0] || v > params[1]
			default:
				t.Fatalf("%s: threshold type %q is not handled", uid, typ)
			}
			r := 0.0
			if hit {
				r = 1
			}
			out = append(out, alertSeries{labels: s.labels, values: []float64{r}})
		}
	default:
		t.Fatalf("%s: expression type %v is not handled", uid, model["type"])
	}
	return out
}

func reduce(t *testing.T, uid, reducer string, vs []float64) float64 {
	if len(vs) == 0 {
		if reducer == "count" {
			return 0
		}
		return math.NaN()
	}
	switch reducer {
	case "last":
		return vs[len(vs)-1]
	case "max":
		m := math.Inf(-1)
		for _, v := range vs {
			m = math.Max(m, v)
		}
		return m
	case "min":
		m := math.Inf(1)
		for _, v := range vs {
			m = math.Min(m, v)
		}
		return m
	case "mean", "sum":
		s := 0.0
		for _, v := range vs {
			s += v
		}
		if reducer == "mean" {
			return s / float64(len(vs))
		}
		return s
	case "count":
		return float64(len(vs))
	}
	t.Fatalf("%s: reducer %q is not handled", uid, reducer)
	return 0
}

// ruleSummary renders what fired, for failure messages.
func ruleSummary(r alertResult) string {
	var parts []string
	for _, l := range r.firing {
		parts = append(parts, l.String())
	}
	sort.Strings(parts)
	return fmt.Sprintf("firing=[%s] noData=%v err=%q", strings.Join(parts, "; "), r.noData, r.err)
}
