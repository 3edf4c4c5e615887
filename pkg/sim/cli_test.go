package sim

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	cli, err := ParseFlags([]string{"--listen", ":9000", "--gpu-listen", ":9400", "--vllm-version", "0.6", "--scenario", "queue-saturated",
		"--max-num-seqs", "32", "--seed", "9", "--warmup", "5m"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, ":9000", cli.Listen)
	assert.Equal(t, ":9400", cli.GPUListen)
	assert.Equal(t, V06, cli.Config.Version)
	assert.Equal(t, 32, cli.Config.MaxNumSeqs, "explicit flag overrides the scenario")
	assert.Equal(t, 12.0, cli.Config.Rate, "scenario value kept when the flag is absent")
	assert.False(t, cli.Config.PrefixCaching, "auto: off for 0.6")
	assert.Equal(t, uint64(9), cli.Config.Seed)
	assert.Equal(t, 5*time.Minute, cli.Warmup)

	for _, args := range [][]string{{"--vllm-version", "0.7"}, {"--scenario", "x"}, {"--rate", "-1"}, {"--prefix-caching", "maybe"}, {"extra"}, {"--trace", "/nonexistent"}} {
		_, err := ParseFlags(args, io.Discard)
		assert.Error(t, err, strings.Join(args, " "))
	}
}

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader("at,prompt,output\n# comment\n0.5, 100, 10\n\n2,20,3\n"))
	require.NoError(t, err)
	assert.Equal(t, []TraceEntry{{At: 0.5, PromptTokens: 100, OutputTokens: 10}, {At: 2, PromptTokens: 20, OutputTokens: 3}}, tr)
	for _, bad := range []string{"", "1,2\n", "a,b,c\n1,x,3\n"} {
		_, err := ParseTrace(strings.NewReader(bad))
		assert.Error(t, err, bad)
	}
	f := filepath.Join(t.TempDir(), "trace.csv")
	require.NoError(t, os.WriteFile(f, []byte("0,10,2\n1,10,2\n"), 0o600))
	cli, err := ParseFlags([]string{"--trace", f}, io.Discard)
	require.NoError(t, err)
	assert.Len(t, cli.Config.Trace, 2)
}
