package queries

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"
)

// TestLastStepIsNotAfterTheRangeEnd (issue 33, review 7: the "Now" tiles read a falling last
// point): for a 6 h range ending at each second of a 21 s step, the last step (Plan.End) is
// the range's end rounded down to a multiple of 21 s since the epoch, never after it, so the
// last rate window (End − window, End] lies wholly in the past and holds the scrapes up to End.
// By hand: 1,800,000,000 = 21 × 85,714,285 + 15, so ends at …000 to …005 have their last step
// at 1,799,999,985 and ends at …006 to …020 at 1,800,000,006.
func TestLastStepIsNotAfterTheRangeEnd(t *testing.T) {
	s := testSettings(t)
	base := int64(1_800_000_000)
	for k := int64(0); k < 21; k++ {
		to := time.Unix(base+k, 0)
		p, err := decodeQuery(backend.DataQuery{RefID: "A", JSON: json.RawMessage(`{"queryType":"throughput"}`), Interval: time.Second, MaxDataPoints: 1000,
			TimeRange: backend.TimeRange{From: to.Add(-6 * time.Hour), To: to}}, &s)
		require.NoError(t, err)
		require.Equal(t, 21*time.Second, p.Plan.Step)
		want := int64(1_800_000_006)
		if k < 6 {
			want = 1_799_999_985
		}
		require.Equal(t, want, p.Plan.End.Unix(), "end %d", base+k)
		require.False(t, p.Plan.End.After(to), "end %d: last step after the range's end", base+k)
	}
}
