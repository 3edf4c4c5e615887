package diagnose

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestObjectiveInputsFromBuckets: bucket rates of 10 requests/s of which
// 9 at or under 0.05 s (le="0.05" 9, le="+Inf" 10) give a good share of 0.9
// at 0.05 s; at 0.1 s (le="0.1" 9.9) 0.99; a step without requests is NaN.
func TestObjectiveInputsFromBuckets(t *testing.T) {
	st := steps(2, time.Minute)
	series := func(le string, v float64) *model.SampleStream {
		return &model.SampleStream{Metric: model.Metric{"job": "a", "le": model.LabelValue(le)}, Values: []model.SamplePair{
			{Timestamp: model.TimeFromUnixNano(st[0].UnixNano()), Value: model.SampleValue(v)},
			{Timestamp: model.TimeFromUnixNano(st[1].UnixNano()), Value: 0},
		}}
	}
	m := model.Matrix{series("0.05", 9), series("0.1", 9.9), series("+Inf", 10)}
	o := settings.Objective{Name: "itl-p99", Signal: "itl", Threshold: 0.05, Target: 0.99}
	got := ObjectiveInputs(o, m, st, time.Minute)["a"]
	require.Len(t, got.Good, 2)
	assert.InDelta(t, 0.9, got.Good[0], 1e-12)
	assert.True(t, math.IsNaN(got.Good[1]))
	o.Threshold = 0.1
	assert.InDelta(t, 0.99, ObjectiveInputs(o, m, st, time.Minute)["a"].Good[0], 1e-12)
}

// TestAnchorObjectives: the named profile (else the first), objectives whose
// selectors include the target and a model, latency objectives only.
func TestAnchorObjectives(t *testing.T) {
	ps := []settings.Profile{
		{Name: "chat", Objectives: []settings.Objective{
			{Name: "ttft", Kind: settings.KindLatency, Signal: "ttft", Threshold: 3, Target: 0.99},
			{Name: "errors", Kind: settings.KindErrorRatio, Target: 0.99},
			{Name: "only-b", Kind: settings.KindLatency, Signal: "itl", Threshold: 0.05, Target: 0.99, Targets: []string{"b"}},
			{Name: "llama", Kind: settings.KindLatency, Signal: "e2e", Threshold: 30, Target: 0.9, Models: []string{"llama"}},
		}},
		{Name: "batch", Objectives: []settings.Objective{{Name: "ttft-batch", Kind: settings.KindLatency, Signal: "ttft", Threshold: 30, Target: 0.99}}},
	}
	names := func(os []settings.Objective) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.Name)
		}
		return out
	}
	assert.Equal(t, []string{"ttft"}, names(AnchorObjectives(ps, "", "a", []string{"qwen"})))
	assert.Equal(t, []string{"ttft", "only-b", "llama"}, names(AnchorObjectives(ps, "", "b", []string{"llama"})))
	assert.Equal(t, []string{"ttft-batch"}, names(AnchorObjectives(ps, "batch", "a", nil)))
	assert.Empty(t, AnchorObjectives(ps, "nope", "a", nil))
}

// TestAttachObjectives: target a gets the profile's TTFT objective with its
// compliance (9 of 10 requests ≤ 3 s: 0.9); target b has no series for
// either of its objectives, which are attached without data (never read as
// met); the stages to fetch are listed once.
func TestAttachObjectives(t *testing.T) {
	st := steps(1, time.Minute)
	ps := []settings.Profile{{Name: "chat", Objectives: []settings.Objective{
		{Name: "ttft-p99", Kind: settings.KindLatency, Signal: "ttft", Threshold: 3, Target: 0.99},
		{Name: "itl-p99", Kind: settings.KindLatency, Signal: "itl", Threshold: 0.05, Target: 0.99, Targets: []string{"b"}},
	}}}
	assert.Equal(t, []string{"itl", "ttft"}, ObjectiveStages(ps, "", []string{"a", "b"}, nil))
	pt := func(le string, v float64) *model.SampleStream {
		return &model.SampleStream{Metric: model.Metric{"job": "a", "le": model.LabelValue(le)},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(st[0].UnixNano()), Value: model.SampleValue(v)}}}
	}
	in := Input{Steps: st, Window: time.Minute, Targets: []TargetInput{{Name: "a"}, {Name: "b"}}}
	AttachObjectives(&in, ps, "", nil, map[string]model.Matrix{"ttft": {pt("2.5", 9), pt("5", 9), pt("+Inf", 10)}})
	require.Len(t, in.Targets[0].Objectives, 1)
	assert.Equal(t, "ttft-p99", in.Targets[0].Objectives[0].Name)
	assert.InDelta(t, 0.9, in.Targets[0].Objectives[0].Good[0], 1e-12)
	require.Len(t, in.Targets[1].Objectives, 2)
	assert.True(t, math.IsNaN(in.Targets[1].Objectives[1].Good[0]))
}

// TestTPOTObjectiveFromGaps: a TPOT objective (0.05 s, target 0.99) on
// target a, which exports per-request TPOT (199 of 200 requests ≤ 0.05 s:
// 0.995), is read from it; target b has none and is read from the gap
// histogram (buckets[TPOTGaps]: 970 of 1000 gaps ≤ 0.05 s: 0.97) and marked
// PerGap. A request's TPOT is the mean of its gaps, so 3 % of gaps over the
// threshold does not show that more than 1 % of requests are: b's objective
// is neither met nor breached (the SLO gate stays open, the invariant does
// not apply). With 995 of 1000 gaps under it, b's objective is met.
func TestTPOTObjectiveFromGaps(t *testing.T) {
	st := steps(1, time.Minute)
	ps := []settings.Profile{{Name: "chat", Objectives: []settings.Objective{
		{Name: "tpot-p99", Kind: settings.KindLatency, Signal: "tpot", Threshold: 0.05, Target: 0.99},
	}}}
	pt := func(job, le string, v float64) *model.SampleStream {
		return &model.SampleStream{Metric: model.Metric{"job": model.LabelValue(job), "le": model.LabelValue(le)},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(st[0].UnixNano()), Value: model.SampleValue(v)}}}
	}
	attach := func(underB float64) Input {
		in := Input{Steps: st, Window: time.Minute, Targets: []TargetInput{{Name: "a"}, {Name: "b"}}}
		AttachObjectives(&in, ps, "", nil, map[string]model.Matrix{
			"tpot":   {pt("a", "0.05", 199), pt("a", "+Inf", 200)},
			TPOTGaps: {pt("a", "0.05", 900), pt("a", "+Inf", 1000), pt("b", "0.05", underB), pt("b", "+Inf", 1000)},
		})
		return in
	}
	in := attach(970)
	a, b := in.Targets[0].Objectives[0], in.Targets[1].Objectives[0]
	assert.False(t, a.PerGap)
	assert.InDelta(t, 0.995, a.Good[0], 1e-12)
	require.True(t, b.PerGap)
	assert.InDelta(t, 0.97, b.Good[0], 1e-12)
	c := &tctx{in: &in.Targets[1]}
	known, met, itl, breached := c.sloAt(0)
	assert.True(t, known)
	assert.False(t, met, "a per-gap reading under target does not show the objective met")
	assert.False(t, itl)
	assert.Empty(t, breached, "a per-gap reading under target does not show the per-request objective breached")
	assert.Empty(t, c.breachedOn(0, "tpot"))

	in = attach(995)
	c = &tctx{in: &in.Targets[1]}
	_, met, _, breached = c.sloAt(0)
	assert.True(t, met)
	assert.Empty(t, breached)
}
