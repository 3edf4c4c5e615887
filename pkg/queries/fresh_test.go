package queries

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteGaugesNeedAFreshSample: in remote mode (no staleness markers from Inferscope) the
// scope asks gauges for a sample within three scrape intervals (15 s → 45 s); in embedded mode
// the staleness markers do it and the scope is plain.
func TestRemoteGaugesNeedAFreshSample(t *testing.T) {
	emb := testSettings(t)
	rem := emb
	rem.Mode = "remote"
	q := backend.DataQuery{RefID: "A", JSON: json.RawMessage(`{"queryType":"saturation"}`), Interval: 15 * time.Second, MaxDataPoints: 100,
		TimeRange: backend.TimeRange{From: time.Unix(1_800_000_000, 0), To: time.Unix(1_800_003_600, 0)}}
	d, err := Decode("saturation", q, &rem)
	require.NoError(t, err)
	assert.Equal(t, 3*emb.ScrapeInterval, d.Plan.Scope.Fresh)
	assert.Equal(t, 45*time.Second, d.Plan.Scope.Fresh)
	d, err = Decode("saturation", q, &emb)
	require.NoError(t, err)
	assert.Zero(t, d.Plan.Scope.Fresh)
}
