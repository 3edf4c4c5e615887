package errclass

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

func stream(labels model.Metric, steps []time.Time, v ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: labels}
	for i, t := range steps {
		if i < len(v) && !math.IsNaN(v[i]) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v[i])})
		}
	}
	return s
}

// TestSharesAndTable, by hand: model a has 100 requests/s, rate limits 1/s
// (Openai.RateLimitError) and timeouts 0.5/s (error_type timeout) at both steps, then 2/s of
// rate limits at the second: shares 0.01 → 0.02 and 0.005; model b has failures but no request
// counted: no share. Table at the last step: a's worst burn rate_limit 0.02 / 0.005 = 4 (timeout
// 0.005 / 0.01 = 0.5); TTFT median: rank 50 of 100 in (0.1, 0.5] holding 10 … 60, 0.1 + 0.4 ×
// 40/50 = 0.42 s; spend 0.02 USD/s over 100 requests/s = 0.0002 per request and over 1000 + 500
// tokens/s = 0.02/1500 × 1e6 = 13.33 per 1M tokens.
func TestSharesAndTable(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	steps := []time.Time{t0, t0.Add(time.Minute)}
	a := model.Metric{"model_name": "a"}
	with := func(m model.Metric, k, v string) model.Metric {
		c := m.Clone()
		c[model.LabelName(k)] = model.LabelValue(v)
		return c
	}
	in := Input{
		Requests: model.Matrix{stream(a, steps, 100, 100)},
		Errors: model.Matrix{
			stream(with(with(a, "exception_class", "Openai.RateLimitError"), "exception_status", "429"), steps, 1, 2),
			stream(with(a, "error_type", "timeout"), steps, 0.5, 0.5),
			stream(with(model.Metric{"model_name": "b"}, "error_type", "500"), steps, 1, 1),
		},
		Spend:   model.Matrix{stream(a, steps, 0.02, 0.02)},
		Tokens:  model.Matrix{stream(a, steps, 1000, 1000), stream(a, steps, 500, 500)},
		TTFT:    model.Matrix{stream(with(a, "le", "0.1"), steps, 10, 10), stream(with(a, "le", "0.5"), steps, 60, 60), stream(with(a, "le", "+Inf"), steps, 100, 100)},
		Classes: []catalog.ErrorClass{catalog.ErrAPITimeout, catalog.ErrRateLimit, catalog.ErrModelError},
		Allowed: map[catalog.ErrorClass]float64{catalog.ErrAPITimeout: 0.01, catalog.ErrRateLimit: 0.005, catalog.ErrModelError: 0.001},
	}
	got := map[string][]float64{}
	for _, s := range Series(in, steps) {
		got[s.Labels["model"]+" "+s.Name] = s.Values
		assert.Equal(t, "percentunit", s.Unit)
		assert.NotEmpty(t, s.Labels[ClassLabel])
	}
	assert.InDeltaSlice(t, []float64{0.01, 0.02}, got["a rate_limit share"], 1e-12)
	assert.InDeltaSlice(t, []float64{0.005, 0.005}, got["a api_timeout share"], 1e-12)
	assert.InDeltaSlice(t, []float64{0, 0}, got["a model_error share"], 1e-12)
	require.Len(t, got["b model_error share"], 2)
	assert.True(t, math.IsNaN(got["b model_error share"][1]), "no request counted for b: no share")

	rows := Table(in, steps)
	require.Len(t, rows, 2)
	r := rows[0]
	assert.Equal(t, "a", r.Labels["model"])
	assert.InDelta(t, 100, r.Requests, 1e-12)
	assert.InDelta(t, 2.5, r.Errors, 1e-12)
	assert.InDeltaSlice(t, []float64{0.005, 0.02, 0}, r.Shares, 1e-12)
	assert.InDelta(t, 4, r.WorstBurn, 1e-12)
	assert.Equal(t, "rate_limit", r.WorstClass)
	assert.InDelta(t, 0.42, r.TTFTP50, 1e-12)
	assert.True(t, math.IsNaN(r.ITLP50))
	assert.InDelta(t, 0.0002, r.SpendPerRequest, 1e-15)
	assert.InDelta(t, 0.02/1500*1e6, r.SpendPerMTokens, 1e-9)
	b := rows[1]
	assert.True(t, math.IsNaN(b.Requests) && math.IsNaN(b.WorstBurn) && math.IsNaN(b.SpendPerRequest))
	assert.InDelta(t, 1, b.Errors, 1e-12)
}
