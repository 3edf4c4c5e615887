package settings

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStorageDefaults(t *testing.T) {
	s, err := Load([]byte(`{}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 15*24*time.Hour, s.Retention)
	assert.Equal(t, int64(10*1024*1024*1024), s.RetentionSize)
	assert.Empty(t, s.StoragePath)
}

func TestStorageParses(t *testing.T) {
	s, err := Load([]byte(`{"retention":"90d","retentionSize":"512MB","storagePath":"/var/lib/grafana/inferscope"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 90*24*time.Hour, s.Retention)
	assert.Equal(t, int64(512*1024*1024), s.RetentionSize)
	assert.Equal(t, "/var/lib/grafana/inferscope", s.StoragePath)

	s, err = Load([]byte(`{"retentionSize":"0"}`), nil)
	require.NoError(t, err)
	assert.Zero(t, s.RetentionSize, "0 disables the disk budget")
}

func TestStorageErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		`{"retention":"91d"}`:              "retention",
		`{"retentionSize":"lots"}`:         "retentionSize",
		`{"retentionSize":"-1GB"}`:         "retentionSize",
		`{"retentionSize":"1MB"}`:          "retentionSize",
		`{"storagePath":"data/tsdb"}`:      "storagePath",
		`{"storagePath":"../etc/grafana"}`: "storagePath",
	}
	for in, field := range cases {
		_, err := Load([]byte(in), nil)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), field+":", in)
	}
}
