// Package frames turns Inferscope's typed results into Grafana data frames:
// one function per result type. It computes nothing: values arrive ready
// from the analysis packages.
package frames

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/errclass"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/gpu"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/inventory"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
)

// Meta is what every frame of one query response carries: the PromQL that
// produced it (shown as Grafana's executed query string) and notices. Every
// builder takes it as an input, so a frame is final when built.
type Meta struct {
	Queries []string
	Notices []analysis.Notice
	// Thresholds draws an objective threshold (seconds) on the value field of
	// every time-series frame labelled stage=<key>: a field-config threshold
	// (absolute mode: green below, red from the threshold), shown as a line.
	// A key ErrorClassThreshold+<class> draws an error class's allowed share
	// (0..1) on the frames labelled error_class=<class>.
	Thresholds map[string]float64
	// Server holds the remote server's warnings for the request (partial data,
	// PromQL infos), already sanitised: a warning notice on every frame, after
	// the query's own notices.
	Server []string
}

// seal adds the server's warnings to every frame (an empty frame carries
// them when there is none).
func (m Meta) seal(fr data.Frames) data.Frames {
	if len(m.Server) == 0 {
		return fr
	}
	if len(fr) == 0 {
		fr = data.Frames{data.NewFrame("")}
	}
	for _, f := range fr {
		if f.Meta == nil {
			f.Meta = &data.FrameMeta{}
		}
		for _, msg := range m.Server {
			f.Meta.Notices = append(f.Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: msg})
		}
	}
	return fr
}

// threshold sets the objective threshold of stage th on a time-series value field.
func threshold(v *data.Field, th float64) {
	if v.Config == nil {
		v.Config = &data.FieldConfig{}
	}
	v.Config.Thresholds = &data.ThresholdsConfig{Mode: data.ThresholdsModeAbsolute, Steps: []data.Threshold{
		{Value: data.ConfFloat64(math.Inf(-1)), Color: "green"},
		{Value: data.ConfFloat64(th), Color: "red"},
	}}
	if v.Config.Custom == nil {
		v.Config.Custom = map[string]any{}
	}
	// Dashed, as the dashboards' titles say ("dashed red"): the field config wins over a
	// panel's default, and "line" drew it solid (issue 33, review 33-8).
	v.Config.Custom["thresholdsStyle"] = map[string]any{"mode": "dashed"}
}

func (m Meta) frameMeta(t data.FrameType) *data.FrameMeta {
	fm := &data.FrameMeta{Type: t, TypeVersion: data.FrameTypeVersion{0, 1}}
	fm.ExecutedQueryString = strings.Join(m.Queries, "\n")
	return fm
}

func notices(ns []analysis.Notice) []data.Notice {
	out := make([]data.Notice, 0, len(ns))
	for _, n := range ns {
		sev := data.NoticeSeverityInfo
		if n.Severity == analysis.Warning {
			sev = data.NoticeSeverityWarning
		}
		out = append(out, data.Notice{Severity: sev, Text: n.Text})
	}
	return out
}

// TimeSeries converts series into a timeseries-multi response: one frame per
// series with a time field and a float64 value field carrying the series
// labels and unit. NaN steps become nulls. A number field never carries ±Inf
// or NaN (Grafana panels scale axes to them and alert reducers treat them
// differently per mode): analysis decides what an unbounded value is, and any
// ±Inf that still arrives becomes a null with a warning naming the series.
// When there are no series, one empty frame still carries the executed query
// and the notices.
func TimeSeries(series []analysis.Series, m Meta) data.Frames {
	out := make(data.Frames, 0, len(series))
	var inf []string
	for _, s := range series {
		times := make([]time.Time, 0, len(s.Times))
		vals := make([]*float64, 0, len(s.Times))
		infs := 0
		for i, t := range s.Times {
			times = append(times, t)
			v := s.Values[i]
			if v != v { // NaN: no data at this step
				vals = append(vals, nil)
				continue
			}
			if math.IsInf(v, 0) {
				infs++
				vals = append(vals, nil)
				continue
			}
			vals = append(vals, &v)
		}
		if infs > 0 {
			inf = append(inf, fmt.Sprintf("%s (%d steps)", displayName(s), infs))
		}
		valueField := data.NewField("value", data.Labels(s.Labels), vals)
		valueField.Config = &data.FieldConfig{Unit: s.Unit, DisplayNameFromDS: displayName(s), Custom: bandStyle(s)}
		if th, ok := m.Thresholds[s.Labels["stage"]]; ok {
			threshold(valueField, th)
		} else if th, ok := m.Thresholds[ErrorClassThreshold+s.Labels[errclass.ClassLabel]]; ok && s.Labels[errclass.ClassLabel] != "" {
			threshold(valueField, th)
		}
		f := data.NewFrame(s.Name, data.NewField("time", nil, times), valueField)
		f.Meta = m.frameMeta(data.FrameTypeTimeSeriesMulti)
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame("", data.NewField("time", nil, []time.Time{}), data.NewField("value", nil, []*float64{}))
		f.Meta = m.frameMeta(data.FrameTypeTimeSeriesMulti)
		out = append(out, f)
	}
	ns := notices(m.Notices)
	if len(inf) > 0 {
		ns = append(ns, data.Notice{Severity: data.NoticeSeverityWarning, Text: "infinite values shown as null: " + strings.Join(inf, "; ")})
	}
	out[0].Meta.Notices = ns
	return m.seal(out)
}

// bandStyle makes a quantile's bound series draw as a shaded band in
// Grafana's time-series panel without any panel option: the upper bound
// fills down to the lower bound of the same quantile, both without lines and
// kept out of the legend. Other series get no custom config.
func bandStyle(s analysis.Series) map[string]any {
	hide := map[string]any{"legend": true, "tooltip": false, "viz": false}
	switch s.Labels["bound"] {
	case "upper":
		lower := analysis.Series{Name: strings.TrimSuffix(s.Name, "upper") + "lower", Labels: s.Labels}
		return map[string]any{"fillBelowTo": displayName(lower), "fillOpacity": 15, "lineWidth": 0, "hideFrom": hide}
	case "lower":
		return map[string]any{"lineWidth": 0, "hideFrom": hide}
	}
	return nil
}

// displayName renders a legend such as "ttft p99 upper · target=vllm-a".
func displayName(s analysis.Series) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		switch k {
		case "stage", "stat", "bound", "signal", "reason":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%s", k, s.Labels[k]))
	}
	if len(parts) == 0 {
		return s.Name
	}
	return s.Name + " · " + strings.Join(parts, ", ")
}

// withMeta sets meta and notices on a single table frame.
func withMeta(f *data.Frame, m Meta) data.Frames {
	f.Meta = m.frameMeta(data.FrameTypeTable)
	f.Meta.Notices = notices(m.Notices)
	return m.seal(data.Frames{f})
}

// BreakdownTable is one row per group: the group labels, then mean queue,
// prefill, decode, overhead and E2E seconds, and the number of requests.
func BreakdownTable(rows []latency.BreakdownRow, m Meta) data.Frames {
	f := data.NewFrame("breakdown")
	groupLabelColumns(f, rows, func(r latency.BreakdownRow) map[string]string { return r.Labels })
	num := func(name, unit string, get func(latency.BreakdownRow) float64) {
		numberColumn(f, rows, name, unit, get)
	}
	num("queue", "s", func(r latency.BreakdownRow) float64 { return r.Queue })
	num("prefill", "s", func(r latency.BreakdownRow) float64 { return r.Prefill })
	num("decode", "s", func(r latency.BreakdownRow) float64 { return r.Decode })
	num("overhead", "s", func(r latency.BreakdownRow) float64 { return r.Overhead })
	num("e2e", "s", func(r latency.BreakdownRow) float64 { return r.Total })
	num("requests", "short", func(r latency.BreakdownRow) float64 { return r.Requests })
	return withMeta(f, m)
}

// Targets is the inventory table: one row per configured target or GPU agent, with its
// scrape state (state: up, stale, down, not scraped yet; inventory.State) and the age of
// its last scrape in seconds (scrape_age, null before the first), and not_up: 1 where state is
// anything but up, else 0 (so a stat panel's sum counts the targets that are down, stale or not
// scraped yet without string matching).
func Targets(rows []inventory.Row, m Meta) data.Frames {
	n := len(rows)
	name, kind, url, engine, gen, version, models, lastErr := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	up := make([]bool, n)
	last := make([]*time.Time, n)
	dur := make([]float64, n)
	series := make([]int64, n)
	state := make([]string, n)
	age := make([]*float64, n)
	notUp := make([]int64, n)
	for i, r := range rows {
		state[i] = r.State
		if r.State != inventory.StateUp {
			notUp[i] = 1
		}
		if r.HasScrapeAge {
			a := r.ScrapeAge.Seconds()
			age[i] = &a
		}
		name[i], kind[i], url[i] = r.Name, r.Kind, r.URL
		engine[i], gen[i], version[i] = r.Engine, r.Generation, r.Version
		models[i] = strings.Join(r.Models, ", ")
		lastErr[i] = r.LastError
		up[i] = r.Up
		if !r.LastScrape.IsZero() {
			t := r.LastScrape
			last[i] = &t
		}
		dur[i] = r.LastDuration.Seconds()
		series[i] = int64(r.Series)
	}
	durField := data.NewField("scrape_duration", nil, dur)
	durField.Config = &data.FieldConfig{Unit: "s"}
	ageField := data.NewField("scrape_age", nil, age)
	ageField.Config = &data.FieldConfig{Unit: "s"}
	f := data.NewFrame("targets",
		data.NewField("target", nil, name),
		data.NewField("kind", nil, kind),
		data.NewField("url", nil, url),
		data.NewField("engine", nil, engine),
		data.NewField("generation", nil, gen),
		data.NewField("version", nil, version),
		data.NewField("models", nil, models),
		data.NewField("up", nil, up),
		data.NewField("last_scrape", nil, last),
		durField,
		data.NewField("series", nil, series),
		data.NewField("last_error", nil, lastErr),
		// Added by issue 33 (after the older fields, which keep their order): the scrape
		// state that is up only while the last scrape is recent, and its age in seconds.
		data.NewField("state", nil, state),
		ageField,
		data.NewField("not_up", nil, notUp),
	)
	return withMeta(f, m)
}

// States converts per-GPU throttle states into one wide frame for Grafana's
// state-timeline panel: a time field, then one string field per GPU (labels
// on the field), "" where there was no sample.
func States(states []gpu.State, m Meta) data.Frames {
	var times []time.Time
	if len(states) > 0 {
		times = states[0].Times
	}
	f := data.NewFrame("throttle_reasons", data.NewField("time", nil, append([]time.Time{}, times...)))
	for _, s := range states {
		vals := make([]*string, len(s.Values))
		for i := range s.Values {
			if s.Values[i] != "" {
				v := s.Values[i]
				vals[i] = &v
			}
		}
		fld := data.NewField("throttle_reasons", data.Labels(s.Labels), vals)
		name := displayName(analysis.Series{Name: "throttle", Labels: s.Labels})
		// Named by the targets the GPU serves and its index (issue 33), like
		// the gpu time series on the dashboards: the label list was cut to
		// "throttle · gpu=0, host…" on every row.
		if sv, ok := s.Labels["serving"]; ok && sv != "" {
			name = sv + " · GPU " + s.Labels["gpu"]
		}
		fld.Config = &data.FieldConfig{DisplayNameFromDS: name}
		f.Fields = append(f.Fields, fld)
	}
	f.Meta = m.frameMeta(data.FrameTypeTimeSeriesWide)
	f.Meta.Notices = notices(m.Notices)
	return m.seal(data.Frames{f})
}
