package settings

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDurationTooLong: "1000y" is a well-formed duration that no duration holds (the most is
// 2^63 ns ≈ 292 years): the sentence says too long, not "not a positive duration"; "0s" and
// "soon" stay "not a positive duration"; "1y" is 365 days.
func TestDurationTooLong(t *testing.T) {
	_, err := Load([]byte(`{"sloProfiles":[{"name":"p","objectives":[{"signal":"ttft","threshold":1,"target":0.99,"period":"1000y"}]}]}`), nil)
	require.Error(t, err)
	assert.Equal(t, `sloProfiles[0].objectives[0].period: "1000y" is too long (a duration holds at most 292y)`, err.Error())
	for _, raw := range []string{"0s", "soon", "-5m"} {
		_, err := ParsePositiveDuration("period", raw)
		assert.EqualError(t, err, `period: "`+raw+`" is not a positive duration such as 15s or 6h`)
	}
	d, err := ParsePositiveDuration("period", "1y")
	require.NoError(t, err)
	assert.Equal(t, 365*24*time.Hour, d)
}
