package plugin

// One organisation's data source never reaches another's store or metric series, through
// the plugin's edge (NewInstance with the organisation in the request context, storagePath
// from jsonData as an org admin saves it). Both tests failed before issue 32's fixes.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newOrgInstance builds data source (org, uid) as Grafana's instance manager
// does: the organisation reaches NewInstance in the request's plugin context.
func newOrgInstance(t *testing.T, org int64, uid string, js map[string]any) *Instance {
	t.Helper()
	b, err := json.Marshal(js)
	require.NoError(t, err)
	ctx := backend.WithPluginContext(context.Background(), backend.PluginContext{Namespace: namespaceOf(org)})
	raw, err := NewInstance(ctx, backend.DataSourceInstanceSettings{UID: uid, JSONData: b})
	require.NoError(t, err)
	inst := raw.(*Instance)
	t.Cleanup(inst.Dispose)
	return inst
}

// TestStoragePathIntoAnotherOrgLeavesItsStore: organisation 2's data source "prod" has
// stored history under the shared storagePath and the plugin restarts. An organisation 1
// admin saves a data source of UID "prod" with storagePath <root>/org.2 (absolute, so
// settings accept it): its first request must neither move organisation 2's store into its
// own directory (as it once did) nor open that history.
func TestStoragePathIntoAnotherOrgLeavesItsStore(t *testing.T) {
	root := filepath.Join(t.TempDir(), "inferscope")
	victim := newOrgInstance(t, 2, "prod", map[string]any{"storagePath": root})
	require.NoError(t, victim.settingsErr)
	victimDir := victim.collector.Dir()
	require.Equal(t, filepath.Join(root, "org.2", "prod"), victimDir)
	victim.Dispose() // plugin restart: instances come back on the next request

	atk := newOrgInstance(t, 1, "prod", map[string]any{"storagePath": filepath.Join(root, "org.2")})
	assert.DirExists(t, victimDir, "organisation 2's store must stay where it is")
	if atk.collector != nil {
		_, err := os.Stat(filepath.Join(atk.collector.Dir(), "wal"))
		assert.True(t, os.IsNotExist(err) || atk.collector.Dir() == victimDir, "organisation 1 opened organisation 2's history at %s", atk.collector.Dir())
	}
}

// TestMetricsUIDDiffersAcrossOrgs: the `datasource` label is "<org>/<uid>" outside
// organisation 1 and the bare UID inside it; organisation 1's UID "2/prod" (the legacy API
// allows UIDs outside Grafana's alphabet; the store code hashes them for exactly that
// reason) must not spell organisation 2's "prod", or the two would share every plugin metric
// series: one's release (forgetDataSource) would delete the other's counters, and the
// per-store gauges would be emitted twice with one label set.
func TestMetricsUIDDiffersAcrossOrgs(t *testing.T) {
	assert.NotEqual(t, metricsUID(2, "prod"), metricsUID(1, "2/prod"))
}
