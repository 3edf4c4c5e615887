package fetch

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestSharedRunKeying: panels of one data-source instance asking the same query over the same
// plan share one computation, each with its own copy of the run; another instance (its own
// SharedWork, its own store) never gets the first one's answer, and another range, step,
// target list or query key computes again.
func TestSharedRunKeying(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	newEnv := func() *Env {
		return &Env{Settings: &s, Querier: &countingQuerier{}, Shared: NewSharedWork(time.Minute), SettingsGeneration: "uid@1"}
	}
	one, two := newEnv(), newEnv()
	start := time.Unix(1_700_000_000, 0)
	plan := Plan{Start: start, End: start.Add(time.Hour), From: start, To: start.Add(time.Hour), Step: 15 * time.Second, Window: time.Minute,
		Notes: []analysis.Notice{{Severity: analysis.Info, Text: "from decoding"}}}
	var computed atomic.Int32
	fn := func(ctx context.Context, run *Run) (any, error) {
		computed.Add(1)
		run.Notes.Add(analysis.Warning, "from the reads")
		run.record([]string{"up"})
		return run.Env, nil // which instance computed it
	}
	ctx := context.Background()
	r1, v1, err := SharedRun(ctx, one, plan, "diagnosis", fn)
	require.NoError(t, err)
	r2, v2, err := SharedRun(ctx, one, plan, "diagnosis", fn)
	require.NoError(t, err)
	assert.EqualValues(t, 1, computed.Load(), "same instance, plan and key: computed once")
	assert.Same(t, one, v1)
	assert.Same(t, one, v2)
	for _, r := range []*Run{r1, r2} {
		assert.Equal(t, []string{"up"}, r.Queries())
		assert.Equal(t, []analysis.Notice{{Severity: analysis.Info, Text: "from decoding"}, {Severity: analysis.Warning, Text: "from the reads"}}, r.Notes.List())
	}
	r1.Notes.Add(analysis.Warning, "only the first panel's")
	assert.Len(t, r2.Notes.List(), 2, "each caller's run is its own")

	_, v, err := SharedRun(ctx, two, plan, "diagnosis", fn)
	require.NoError(t, err)
	assert.EqualValues(t, 2, computed.Load(), "another instance computes for itself")
	assert.Same(t, two, v, "and never gets the other instance's answer")

	later := plan
	later.Start, later.End = plan.Start.Add(time.Hour), plan.End.Add(time.Hour)
	finer := plan
	finer.Step = 5 * time.Second
	narrow := plan.Narrow([]string{"a"}, nil)
	for name, p := range map[string]Plan{"range": later, "step": finer, "targets": narrow} {
		before := computed.Load()
		_, _, err := SharedRun(ctx, one, p, "diagnosis", fn)
		require.NoError(t, err)
		assert.Equal(t, before+1, computed.Load(), "another %s computes again", name)
	}
	before := computed.Load()
	_, _, err = SharedRun(ctx, one, plan, "diagnosis\x00[\"m\"]", fn)
	require.NoError(t, err)
	assert.Equal(t, before+1, computed.Load(), "another query key computes again")
}

// TestPlanKeyNamesEveryField changes each field of a plan and of its scope in turn: each
// change gives another key (a field added to Plan or catalog.Scope and left out of planKey
// fails here).
func TestPlanKeyNamesEveryField(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	base := Plan{Start: start, End: start, From: start, To: start}
	change := func(f reflect.Value) bool {
		switch v := f.Addr().Interface().(type) {
		case *time.Time:
			*v = v.Add(time.Millisecond)
		case *time.Duration:
			*v++
		case *[]string:
			*v = append(*v, "x")
		case *[]analysis.Notice:
			*v = append(*v, analysis.Notice{Severity: analysis.Info, Text: "x"})
		case *string:
			*v += "x"
		case *bool:
			*v = !*v
		default:
			return false
		}
		return true
	}
	pt := reflect.TypeOf(base)
	for i := range pt.NumField() {
		if pt.Field(i).Type == reflect.TypeOf(catalog.Scope{}) {
			st := pt.Field(i).Type
			for j := range st.NumField() {
				p := base
				require.True(t, change(reflect.ValueOf(&p).Elem().Field(i).Field(j)), "Scope.%s: a type the test cannot change", st.Field(j).Name)
				assert.NotEqual(t, planKey(base), planKey(p), "Scope.%s is not in planKey", st.Field(j).Name)
			}
			continue
		}
		p := base
		require.True(t, change(reflect.ValueOf(&p).Elem().Field(i)), "Plan.%s: a type the test cannot change", pt.Field(i).Name)
		assert.NotEqual(t, planKey(base), planKey(p), "Plan.%s is not in planKey", pt.Field(i).Name)
	}
}
