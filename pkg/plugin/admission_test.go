package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdmission: two slots; a third request waits, gets the slot freed
// within its wait, and a fourth that finds none within its wait is told
// "busy, retry"; a canceled request leaves at once.
func TestAdmission(t *testing.T) {
	a := newAdmission(2, 200*time.Millisecond)
	r1, err := a.acquire(context.Background())
	require.NoError(t, err)
	r2, err := a.acquire(context.Background())
	require.NoError(t, err)
	go func() { time.Sleep(50 * time.Millisecond); r1() }()
	r3, err := a.acquire(context.Background())
	require.NoError(t, err, "a slot freed within the wait")
	t0 := time.Now()
	_, err = a.acquire(context.Background())
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(t0), 200*time.Millisecond)
	assert.Contains(t, err.Error(), "Inferscope is busy, retry: all 2 query slots stayed taken for 200ms")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.acquire(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	r2()
	r3()
	assert.Len(t, a.slots, 0)
}
