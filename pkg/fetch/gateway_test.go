package fetch

import (
	"fmt"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tenantMatrix is one series per tenant t0000…t(n−1) with value 1 at 0 and 1 s (plus other at 5).
func tenantMatrix(n int) model.Matrix {
	var m model.Matrix
	for i := range n {
		m = append(m, &model.SampleStream{Metric: model.Metric{"fairness_id": model.LabelValue(fmt.Sprintf("t%04d", i))},
			Values: []model.SamplePair{{Timestamp: 0, Value: 1}, {Timestamp: 1000, Value: 1}}})
	}
	m = append(m, &model.SampleStream{Metric: model.Metric{"fairness_id": "other"}, Values: []model.SamplePair{{Timestamp: 1000, Value: 5}}})
	return m
}

// TestFoldTenants: 1,200 tenants and the router's other, cutoff t0999 (the 1,000th): the 200
// after it are summed into other (at 0 s: 200 × 1 = 200; at 1 s: 200 + the router's 5 = 205),
// so 1,001 groups remain; a ratio's folded series are left out; no cutoff folds nothing.
func TestFoldTenants(t *testing.T) {
	v, folded, other := foldTenants(tenantMatrix(1200), "t0999", false)
	assert.Equal(t, 200, folded)
	assert.True(t, other)
	m := v.(model.Matrix)
	require.Len(t, m, 1001)
	var got []model.SamplePair
	for _, s := range m {
		if s.Metric["fairness_id"] == "other" {
			got = s.Values
		}
		assert.NotEqual(t, model.LabelValue("t1000"), s.Metric["fairness_id"])
	}
	assert.Equal(t, []model.SamplePair{{Timestamp: 0, Value: 200}, {Timestamp: 1000, Value: 205}}, got)

	v, folded, _ = foldTenants(tenantMatrix(1200), "t0999", true)
	assert.Equal(t, 200, folded)
	for _, s := range v.(model.Matrix) {
		if s.Metric["fairness_id"] == "other" {
			assert.Equal(t, []model.SamplePair{{Timestamp: 1000, Value: 5}}, s.Values, "a mean is not summed")
		}
	}
	assert.Len(t, v.(model.Matrix), 1001)

	v, folded, other = foldTenants(tenantMatrix(1000), "", false)
	assert.Zero(t, folded)
	assert.True(t, other)
	assert.Len(t, v.(model.Matrix), 1001)

	vec := model.Vector{{Metric: model.Metric{"fairness_id": "a"}, Value: 1}}
	_, folded, other = foldTenants(vec, "", false)
	assert.Zero(t, folded)
	assert.False(t, other)
}
