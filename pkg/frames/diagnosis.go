package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
)

// DiagnosisFindings is the findings table, one row per finding: time and
// timeEnd (the finding's first and last step), target, gpu and uuid (the
// GPUs the finding is about, comma-separated: gpu_throttled has one row per
// throttled GPU; empty for findings that read no per-GPU signal), class, severity,
// confidence (with why it is below high), summary, evidence (each signal's
// value and threshold), not_checked, recommendation, current, and the
// annotation columns title, text (summary, evidence, what was not checked
// and the recommendation) and tags ("inferscope,diagnosis,<class>,<target>"), and
// twin_advice (issue 35: the capacity twin's predicted effect of the recommended change,
// also part of recommendation; empty where the target has no calibrated twin).
// With current, only findings holding at each target's last step with data
// are listed (healthy included); otherwise every finding in the range except
// healthy, for annotations.
func DiagnosisFindings(res diagnose.Result, current bool, m Meta) data.Frames {
	var rows []diagnose.Finding
	for _, t := range res.Targets {
		for _, f := range t.Findings {
			if current && !f.Current || !current && f.Class == diagnose.Healthy {
				continue
			}
			rows = append(rows, f)
		}
	}
	n := len(rows)
	start, end := make([]time.Time, n), make([]time.Time, n)
	str := func() []string { return make([]string, n) }
	target, class, sev, conf, confWhy, summary, evidence, notChecked, rec, title, text, tags :=
		str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str()
	gpus, uuids, twinAdv := str(), str(), str()
	level := make([]float64, n)
	cur := make([]bool, n)
	for i, f := range rows {
		start[i], end[i] = f.Start, f.End
		target[i], class[i], sev[i], conf[i] = f.Target, string(f.Class), string(f.Severity), string(f.Confidence)
		confWhy[i] = strings.Join(f.ConfidenceWhy, "; ")
		summary[i] = f.Summary
		evidence[i] = diagnose.EvidenceText(f.Evidence)
		notChecked[i] = strings.Join(f.NotChecked, "; ")
		rec[i] = f.Recommendation
		twinAdv[i] = f.TwinAdvice
		gpus[i], uuids[i] = f.GPUList()
		title[i] = f.Target + ": " + strings.ReplaceAll(string(f.Class), "_", " ") + " (" + string(f.Severity) + ")"
		if gpus[i] != "" {
			title[i] += " on gpu " + gpus[i]
		}
		text[i] = f.Text()
		tags[i] = "inferscope,diagnosis," + string(f.Class) + "," + f.Target
		level[i] = f.Severity.Level()
		cur[i] = f.Current
	}
	fr := data.NewFrame("diagnosis",
		data.NewField("time", nil, start),
		data.NewField("timeEnd", nil, end),
		data.NewField("target", nil, target),
		data.NewField("gpu", nil, gpus),
		data.NewField("uuid", nil, uuids),
		data.NewField("class", nil, class),
		data.NewField("severity", nil, sev),
		data.NewField("level", nil, level),
		data.NewField("confidence", nil, conf),
		data.NewField("confidence_note", nil, confWhy),
		data.NewField("summary", nil, summary),
		data.NewField("evidence", nil, evidence),
		data.NewField("not_checked", nil, notChecked),
		data.NewField("recommendation", nil, rec),
		data.NewField("current", nil, cur),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
		data.NewField("twin_advice", nil, twinAdv),
	)
	return withMeta(fr, m)
}

// DiagnosisTimeline is one wide frame for Grafana's state-timeline panel: a
// time field, then one string field per target (label target) holding the
// primary class at each step, null before the target has data.
func DiagnosisTimeline(res diagnose.Result, m Meta) data.Frames {
	f := data.NewFrame("diagnosis", data.NewField("time", nil, append([]time.Time{}, res.Steps...)))
	for _, t := range res.Targets {
		vals := make([]*string, len(t.Primary))
		for i, c := range t.Primary {
			if c != "" {
				v := string(c)
				vals[i] = &v
			}
		}
		fld := data.NewField("class", data.Labels{"target": t.Target}, vals)
		fld.Config = &data.FieldConfig{DisplayNameFromDS: t.Target}
		f.Fields = append(f.Fields, fld)
	}
	f.Meta = m.frameMeta(data.FrameTypeTimeSeriesWide)
	f.Meta.Notices = notices(m.Notices)
	return m.seal(data.Frames{f})
}

// DiagnosisNumeric is a numeric-multi response for alert rules: one frame
// per target and class, each with one number field labelled target and
// class holding the class's severity level (critical 3, warning 2, info 1)
// when it holds at the target's last step with data, else 0 (healthy is
// always 0). For a target with per-GPU data, gpu_throttled is one frame per
// GPU instead, labelled target, gpu, uuid (when known) and class, holding
// the level when that GPU is throttled at the target's last step. A target
// without data at any step gets no series (an alert rule then sees no data,
// not "all clear"). Label sets are unique by construction.
//
// keep, when not nil, keeps only the series whose labels it passes (an alert
// rule's classes, targets with engine data); the notices stay on the first
// frame returned, an empty one when nothing is kept.
func DiagnosisNumeric(res diagnose.Result, keep func(data.Labels) bool, m Meta) data.Frames {
	var labels []data.Labels
	var values []float64
	add := func(l data.Labels, v float64) {
		if keep != nil && !keep(l) {
			return
		}
		labels = append(labels, l)
		values = append(values, v)
	}
	for _, t := range res.Targets {
		if t.Last < 0 {
			// No data for the target at any step (nothing stored for the
			// selection, e.g. a model it does not serve): no series, so an
			// alert rule sees no data rather than "all clear".
			continue
		}
		for _, c := range diagnose.Classes {
			if c == diagnose.GPUThrottled && len(t.GPUs) > 0 {
				for _, g := range t.GPUs {
					v := 0.0
					if t.Last >= 0 && t.GPUActive[g.GPU][t.Last] {
						v = diagnose.GPUThrottled.Severity().Level()
					}
					l := data.Labels{"target": t.Target, "gpu": g.GPU, "class": string(c)}
					if g.UUID != "" {
						l["uuid"] = g.UUID
					}
					add(l, v)
				}
				continue
			}
			v := 0.0
			if t.Last >= 0 && t.Active[c][t.Last] {
				for _, f := range t.Findings {
					if f.Class == c && f.Current {
						v = f.Severity.Level()
					}
				}
			}
			add(data.Labels{"target": t.Target, "class": string(c)}, v)
		}
	}
	return numericMulti("diagnosis", "level", labels, values, m)
}
