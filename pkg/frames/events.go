package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/events"
)

// Events converts events into one table frame shaped for Grafana annotations: fields
// `time` and `timeEnd` (time; equal for an instant), `title`, `text`, `tags` (the kind and
// the target, comma-separated, which Grafana splits into tags), plus `target` and `kind`
// for table panels. An empty table still carries the notices.
func Events(evs []events.Event, m Meta) data.Frames {
	n := len(evs)
	start, end := make([]time.Time, n), make([]time.Time, n)
	title, text, tags, target, kind := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range evs {
		start[i], end[i] = e.Time, e.TimeEnd
		title[i], text[i], tags[i] = e.Title, e.Text, strings.Join(e.Tags, ",")
		target[i], kind[i] = e.Target, string(e.Kind)
	}
	f := data.NewFrame("events",
		data.NewField("time", nil, start),
		data.NewField("timeEnd", nil, end),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
		data.NewField("target", nil, target),
		data.NewField("kind", nil, kind),
	)
	return withMeta(f, m)
}
