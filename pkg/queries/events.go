package queries

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// Events is the annotation query: restarts, down periods, counters going backwards and
// changes of model, engine or configuration per target. It has only the common fields.
type Events struct{ Common }

// runEvents returns every event of the targets in scope in the selected
// range as one annotation-shaped table.
func runEvents(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Events) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	evs, err := r.Events(ctx, p.From, p.To, true)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		var names []string
		for _, v := range r.Views(ctx) {
			names = append(names, v.Name)
		}
		r.Notes.Add(analysis.Info, fmt.Sprintf("no restart, down period, counter going backwards, or change of served models, engine or vLLM cache configuration for %s in the selected range", strings.Join(names, ", ")))
	}
	return frames.Events(evs, meta(r, nil)), nil
}
