package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// TestCatalogKnowsTheProbe: the data source's catalogue reads the names and
// bucket bounds this probe serves (the catalogue cannot import the probe).
func TestCatalogKnowsTheProbe(t *testing.T) {
	assert.Equal(t, Prefix, catalog.ProbePrefix)
	assert.Equal(t, GapBuckets, catalog.ProbeGapBounds)
	assert.Equal(t, LatencyBuckets, catalog.ProbeLatencyBounds)
	for probeName, catName := range map[string]string{
		MetricRequests: catalog.ProbeRequestsTotal, MetricErrors: catalog.ProbeErrorsTotal, MetricOutputTokens: catalog.ProbeOutputTokensTotal,
		MetricTTFB: catalog.ProbeTTFB, MetricTTFT: catalog.ProbeTTFT, MetricITL: catalog.ProbeITL, MetricTPOT: catalog.ProbeTPOT,
		MetricE2E: catalog.ProbeE2E, MetricRequestMaxGap: catalog.ProbeRequestMaxITL, MetricRequestStddev: catalog.ProbeRequestITLStddev,
		MetricLastTimestamp: catalog.ProbeLastTimestamp, MetricLastSuccess: catalog.ProbeLastSuccess, MetricLastTTFT: catalog.ProbeLastTTFT,
		MetricLastMaxGap: catalog.ProbeLastMaxITL, MetricLastVariance: catalog.ProbeLastITLVariance, MetricInterval: catalog.ProbeIntervalSeconds,
		MetricMaxTokens: catalog.ProbeMaxTokens,
	} {
		assert.Equal(t, probeName, catName)
	}
	// every family the probe serves is stored by the collector
	m := NewMetrics()
	m.Init("e", "m", 5, 8)
	m.Observe(Result{Endpoint: "e", Model: "m", TTFT: 0.1, Gaps: []float64{0.01}, OutputTokens: 2})
	m.Observe(Result{Endpoint: "e", Model: "m", Class: ClassHTTP429, Status: 429})
	fams, err := m.Registry.Gather()
	assert.NoError(t, err)
	assert.Len(t, fams, 21)
	for _, f := range fams {
		name := f.GetName()
		if f.GetType().String() == "HISTOGRAM" {
			name += "_count"
		}
		assert.True(t, catalog.Stores(name), name)
	}
}
