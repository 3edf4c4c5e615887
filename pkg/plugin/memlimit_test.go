package plugin

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryLimit(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cases := []struct {
		env  map[string]string
		want int64
		from string
		bad  bool
	}{
		{nil, 512 << 20, "default", false},
		{map[string]string{MemoryLimitEnv: "1GiB"}, 1 << 30, MemoryLimitEnv, false},
		{map[string]string{MemoryLimitEnv: " 512MiB "}, 512 << 20, MemoryLimitEnv, false},
		{map[string]string{MemoryLimitEnv: "OFF"}, math.MaxInt64, MemoryLimitEnv, false},
		{map[string]string{MemoryLimitEnv: "lots"}, 512 << 20, "default", true},
		{map[string]string{MemoryLimitEnv: "0"}, 512 << 20, "default", true},
	}
	for _, c := range cases {
		got, from, err := memoryLimit(env(c.env))
		assert.Equal(t, c.want, got, "%v", c.env)
		assert.Equal(t, c.from, from, "%v", c.env)
		if c.bad {
			require.Error(t, err)
			assert.Contains(t, err.Error(), MemoryLimitEnv)
		} else {
			assert.NoError(t, err)
		}
	}
	// GOMEMLIMIT wins: the limit the runtime already has is kept.
	prev := debug.SetMemoryLimit(3 << 30)
	defer debug.SetMemoryLimit(prev)
	got, from, err := memoryLimit(env(map[string]string{"GOMEMLIMIT": "3GiB", MemoryLimitEnv: "1GiB"}))
	require.NoError(t, err)
	assert.Equal(t, int64(3<<30), got)
	assert.Equal(t, "GOMEMLIMIT", from)
}
