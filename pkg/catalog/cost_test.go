package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdleSharePromQLParsesAndAveragesAnIndicator(t *testing.T) {
	q, err := IdleSharePromQL(Scope{Targets: []string{"a"}, By: []string{"target"}}, 5*time.Minute, 15*time.Second)
	require.NoError(t, err)
	_, err = parser.NewParser(parser.Options{}).ParseExpr(q)
	require.NoError(t, err, q)
	assert.True(t, strings.HasPrefix(q, "avg_over_time(("), q)
	assert.True(t, strings.HasSuffix(q, " == bool 0)[5m:15s])"), q)
	assert.Contains(t, q, "vllm:num_requests_running")
	_, err = IdleSharePromQL(Scope{}, 0, 15*time.Second)
	assert.Error(t, err)
}
