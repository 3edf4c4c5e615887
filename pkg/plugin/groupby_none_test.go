package plugin

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// The editor's new query carries groupBy "none" (src/queryTypes/registry.ts DEFAULT_QUERY), and
// switching the type keeps it (switchQueryType keeps shared fields); the capacity and cost
// editors show no groupBy control to clear it. Both types answer per target, so "none" must
// decode like an empty groupBy; a real grouping is still refused with a sentence naming it.
func TestPerTargetTypesAcceptGroupByNone(t *testing.T) {
	st, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for _, qt := range []string{"capacity", "cost"} {
		for groupBy, ok := range map[string]bool{"none": true, "target": true, "model": false} {
			t.Run(qt+",groupBy="+groupBy, func(t *testing.T) {
				_, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: qt, JSON: []byte(`{"groupBy":"` + groupBy + `"}`),
					Interval: time.Minute, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}, &st)
				if ok {
					assert.NoError(t, err, "%s groupBy %s", qt, groupBy)
				} else if assert.Error(t, err, "%s groupBy %s", qt, groupBy) {
					assert.Contains(t, err.Error(), "groupBy")
				}
			})
		}
	}
}
