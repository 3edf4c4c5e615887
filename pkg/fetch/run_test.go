package fetch

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

func TestSanitizeErrorElidesPageContent(t *testing.T) {
	// A page echoing the Authorization header: base64("bob:BASICSECRET").
	in := `expected a valid start token, got "Ym9iOkJBU0lDU0VDUkVU" ("INVALID") while parsing: "Basic Ym9iOkJBU0lDU0VDUkVU"`
	out := SanitizeError(in)
	assert.NotContains(t, out, "Ym9iOkJBU0lDU0VDUkVU\"")
	assert.NotContains(t, out, "Basic Ym9i")
	assert.Contains(t, out, "expected a valid start token")
	long := SanitizeError(strings.Repeat("x", 5000))
	assert.LessOrEqual(t, len(long), maxErrorLen+len("…"))
}

func TestParallelTurnsPanicsIntoErrors(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	r := NewRun(context.Background(), &Env{Settings: &s}, Plan{})
	err = r.Parallel(3, func(k int) error {
		if k == 1 {
			var m map[string]int
			m["boom"]++ // nil map write panics
		}
		return nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal error")
}
