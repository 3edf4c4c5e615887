package sim

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunAnchoredContinuesTheHistoryAtTheWallClock: a simulator started an hour ago and
// fast-forwarded through ten minutes of it reads, once served with RunAnchored, the model
// state of the wall clock (at least 3600 simulated seconds: wall − Start is at least an hour
// whatever the machine's speed), where Run would continue from the 600th second (issue 33:
// the screenshots' live scrapes lagged their history by the fast-forward's duration).
func TestRunAnchoredContinuesTheHistoryAtTheWallClock(t *testing.T) {
	for _, anchored := range []bool{false, true} {
		s := newSim(t, "healthy", nil, Options{Start: time.Now().Add(-time.Hour)})
		s.AdvanceTo(600)
		srv := NewServer(s)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		run := srv.Run
		if anchored {
			run = srv.RunAnchored
		}
		go func() { _ = run(ctx); close(done) }()
		<-srv.ready
		hs := httptest.NewServer(srv.Handler())
		resp, err := hs.Client().Get(hs.URL + "/metrics")
		require.NoError(t, err)
		resp.Body.Close()
		hs.Close()
		cancel()
		<-done
		if anchored {
			require.GreaterOrEqual(t, s.Now(), 3600.0, "RunAnchored: the model at the wall clock")
		} else {
			require.Less(t, s.Now(), 3000.0, "Run: the model continues from where it stood (600 s), control")
		}
	}
}
