package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Issue 23: vLLM's admission rejections feed error_surge. 4 requests/s end, none with an
// error, and 1/s is refused at admission (HTTP 503): the share is 1 / (4 + 1) = 0.2 ≥ 0.05,
// and the summary counts the refused ones (1/s over a 5-minute window ≈ 300). Without the
// rejections the same target is not an error surge.
func TestIssue23RejectionsAreAnErrorSurge(t *testing.T) {
	const n = 3
	v := base(n)
	v[Finished], v[Errored], v[Aborted], v[Rejected] = constant(n, 4), constant(n, 0), constant(n, 0), constant(n, 1)
	r := run1(t, n, time.Minute, 5*time.Minute, TargetInput{Name: "r", Engine: "vllm", Generation: "v1", Values: v})
	assert.Equal(t, ErrorSurge, r.Primary[n-1])
	f := r.Current()[0]
	assert.Contains(t, EvidenceText(f.Evidence), "error_share 0.2 ≥")
	assert.Contains(t, EvidenceText(f.Evidence), "requests_rejected 1")
	assert.Contains(t, f.Summary, "about 300 requests")
	assert.Contains(t, f.Summary, "300 of them refused at admission")

	delete(v, Rejected)
	r = run1(t, n, time.Minute, 5*time.Minute, TargetInput{Name: "r", Engine: "vllm", Generation: "v1", Values: v})
	assert.False(t, activeAnywhere(r, ErrorSurge))
}

// Issue 23: requests deferred (grammar compilation, a remote KV transfer) are not a queue. At
// the seat ceiling (96 of 96 running) with 500 waiting the target is queue-saturated (issue 20
// point 4); when all 500 wait with reason deferred, 0 wait for capacity (< 1) and it is not;
// with 300 deferred, 200 wait for capacity and the evidence says the deferred were left out.
func TestIssue23DeferredWaitingIsNotQueueSaturation(t *testing.T) {
	const n = 3
	v := base(n)
	v[Running], v[RunningAvg] = constant(n, 96), constant(n, 96)
	v[Waiting], v[WaitingAvg] = constant(n, 500), constant(n, 500)
	v[QueueMean], v[E2EMean], v[KVUsage], v[Preemptions] = constant(n, 300), constant(n, 380), constant(n, 0.23), constant(n, 0)
	v[WaitingDeferred] = constant(n, 500)
	ti := TargetInput{Name: "q", Engine: "vllm", Generation: "v1", Values: v, RunningCeiling: 96}
	r := run1(t, n, time.Minute, 5*time.Minute, ti)
	assert.False(t, activeAnywhere(r, QueueSaturation), "every waiting request is deferred")

	v[WaitingDeferred] = constant(n, 300)
	r = run1(t, n, time.Minute, 5*time.Minute, ti)
	assert.Equal(t, QueueSaturation, r.Primary[n-1])
	var q Finding
	for _, f := range r.Current() {
		if f.Class == QueueSaturation {
			q = f
		}
	}
	assert.Contains(t, EvidenceText(q.Evidence), "requests_waiting_avg 200 requests ≥")
	assert.Contains(t, EvidenceText(q.Evidence), "300 deferred (grammar compilation, remote KV) left out")
}
