package bounds

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func matchers(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"refId":"A","queryType":"raw","metric":"vllm:num_requests_running","matchers":{`)
	for k := 0; k < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"l%d":"v"`, k)
	}
	b.WriteString(`}}`)
	return b.Bytes()
}

func TestCheck(t *testing.T) {
	assert.NoError(t, Check(matchers(16), Query))
	err := Check(matchers(100_000), Query)
	require.Error(t, err)
	assert.Equal(t, "matchers: more than 16 keys; a query takes at most 16", err.Error())
	assert.Equal(t, "matchers", err.(*Error).Field)

	ok := `{"queryType":"latency","targets":["a","b"],"stages":["ttft","itl"],"stats":["p50","p99"],"datasource":{"type":"inferscope-llm-datasource","uid":"x"},"intervalMs":1000}`
	assert.NoError(t, Check([]byte(ok), Query))
	assert.NoError(t, Check([]byte(`not json`), Query), "invalid JSON is the decoder's to say")
	assert.NoError(t, Check(nil, Query))

	stages := `{"stages":[` + strings.TrimSuffix(strings.Repeat(`"ttft",`, 17), ",") + `]}`
	assert.EqualError(t, Check([]byte(stages), Query), "stages: more than 16 entries; a query takes at most 16")
	other := `{"queryType":"raw","extra":[` + strings.TrimSuffix(strings.Repeat(`1,`, 65), ",") + `]}`
	assert.EqualError(t, Check([]byte(other), Query), "extra: more than 64 entries; a query takes at most 64")
	deep := `{"a":` + strings.Repeat(`[`, 9) + strings.Repeat(`]`, 9) + `}`
	assert.EqualError(t, Check([]byte(deep), Query), "a[0][0][0][0][0][0][0]: nested more than 8 levels deep")
	long := `{"metric":"` + strings.Repeat("x", 5000) + `"}`
	assert.EqualError(t, Check([]byte(long), Query), "metric: a string of 5000 bytes; at most 4096")
	top := `[` + strings.TrimSuffix(strings.Repeat(`1,`, 65), ",") + `]`
	assert.Error(t, Check([]byte(top), Query), "a top-level array is bounded too")
	nested := `{"datasource":{"uid":"x","matchers":{` + strings.TrimSuffix(strings.Repeat(`"a":"b",`, 20), ",") + `}}}`
	assert.NoError(t, Check([]byte(nested), Query), "a nested key named like a bounded field takes the default limit")
}

// BenchmarkCheck100kMatchers: the refusal of 100,000 matchers stops at the
// 17th; the anchor is a query of 16.
func BenchmarkCheck100kMatchers(b *testing.B) {
	big, small := matchers(100_000), matchers(16)
	b.Run("100k", func(b *testing.B) {
		for b.Loop() {
			_ = Check(big, Query)
		}
	})
	b.Run("anchor-16", func(b *testing.B) {
		for b.Loop() {
			_ = Check(small, Query)
		}
	})
}
