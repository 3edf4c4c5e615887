package plugin

import (
	"strconv"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
)

// namespaceOf is the Namespace Grafana sends for organisation org.
func namespaceOf(org int64) string {
	if org <= 1 {
		return "default"
	}
	return "org-" + strconv.FormatInt(org, 10)
}

// TestOrgOfReadsTheNamespace pins how a request's organisation is read: from
// Namespace as Grafana writes it, from the deprecated OrgID only when the
// namespace is missing or unreadable.
//
//nolint:staticcheck // SA1019: OrgID is the fallback under test
func TestOrgOfReadsTheNamespace(t *testing.T) {
	for _, c := range []struct {
		name string
		pc   backend.PluginContext
		want int64
	}{
		{"default is organisation 1", backend.PluginContext{Namespace: "default"}, 1},
		{"org-7 is organisation 7", backend.PluginContext{Namespace: "org-7"}, 7},
		{"a cloud stack is organisation 1", backend.PluginContext{Namespace: "stacks-12345"}, 1},
		{"the namespace wins over OrgID", backend.PluginContext{Namespace: "org-3", OrgID: 5}, 3},
		{"no namespace falls back to OrgID", backend.PluginContext{OrgID: 2}, 2},
		{"an unreadable namespace falls back to OrgID", backend.PluginContext{Namespace: "org-x", OrgID: 4}, 4},
		{"nothing is unknown", backend.PluginContext{}, 0},
		{"namespaceOf round-trips", backend.PluginContext{Namespace: namespaceOf(9)}, 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, orgOf(c.pc))
		})
	}
}
