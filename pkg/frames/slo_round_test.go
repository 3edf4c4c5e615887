package frames

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
)

// TestSLORequestsAreWhole (issue 40 point 6): increase() extrapolates the bucket counts to the
// window's edges, so a report may hold 21.125 requests; the table shows 21 (and 22 for 21.5),
// with the attainment left as computed.
func TestSLORequestsAreWhole(t *testing.T) {
	rows := []slo.Report{{Requests: 21.125, Attainment: 0.95}, {Requests: 21.5, Attainment: 1}, {Requests: math.NaN()}}
	fs := SLOTable(rows, Meta{})
	require.NotEmpty(t, fs)
	f := fs[0]
	req, att := -1, -1
	for k, fl := range f.Fields {
		switch fl.Name {
		case "requests":
			req = k
		case "attainment":
			att = k
		}
	}
	require.GreaterOrEqual(t, req, 0)
	v0, _ := f.Fields[req].ConcreteAt(0)
	v1, _ := f.Fields[req].ConcreteAt(1)
	_, ok2 := f.Fields[req].ConcreteAt(2)
	assert.Equal(t, 21.0, v0)
	assert.Equal(t, 22.0, v1)
	assert.False(t, ok2, "no data stays no data")
	a0, _ := f.Fields[att].ConcreteAt(0)
	assert.Equal(t, 0.95, a0)
}
