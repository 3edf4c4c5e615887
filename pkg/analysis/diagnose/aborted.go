package diagnose

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
)

// Aborted traffic without an abort counter (issue 39 point 2): clients close their streams,
// the prompts are processed (prompt tokens grow) and no request finishes, while the engine
// counts finished requests by reason but has no series for finished_reason="abort". The
// abort rate is estimated from the counters that do move: the prompt tokens per second over
// the prompt tokens per finished request of the latest earlier step where requests finished.

// hasReason reports whether the finished-requests matrix holds a series of target job with
// finished_reason = reason (the series may read 0).
func hasReason(m model.Matrix, job, reason string) bool {
	for _, s := range m {
		t := s.Metric["target"]
		if t == "" {
			t = s.Metric[model.JobLabel] // the read layer groups by job; Align names it target
		}
		if string(t) == job && string(s.Metric["finished_reason"]) == reason {
			return true
		}
	}
	return false
}

// promptPerFinished returns the median prompt tokens per finished request (prompt tokens/s ÷
// finished/s) over the steps before the current run without finished requests whose rate
// windows end at least one window before that run's first step (the windows that hold the
// onset mix finished and aborted requests and overstate it), and the last such step; ok is
// false when no such step has both.
func promptPerFinished(c *tctx, i int) (ppr float64, at int, ok bool) {
	run := i
	for run > 0 {
		fin, okF := c.value(Finished, run-1)
		if !okF || fin > 0 {
			break
		}
		run--
	}
	if run == 0 {
		return 0, -1, false
	}
	limit := c.steps[run-1].Add(-time.Duration(c.windowS * float64(time.Second)))
	var vals []float64
	at = -1
	for k := 0; k < run && !c.steps[k].After(limit); k++ {
		fin, okF := c.value(Finished, k)
		prompt, okP := c.value(PromptTok, k)
		if okF && okP && fin > 0 && prompt > 0 {
			vals = append(vals, prompt/fin)
			at = k
		}
	}
	if len(vals) == 0 {
		return 0, -1, false
	}
	slices.Sort(vals)
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2], at, true
	}
	return (vals[n/2-1] + vals[n/2]) / 2, at, true
}

// abortEstimate adds to an uncounted aborted-traffic verdict the estimated abort rate and the
// counter the engine is missing.
func abortEstimate(c *tctx, i int, prompt float64, v *verdict) {
	missing := "an abort count (finished_reason=\"abort\")"
	if c.in.Engine == "vllm" {
		missing = `vllm:request_success_total{finished_reason="abort"}`
	}
	v.evidence = append(v.evidence, Evidence{Signal: "missing_counter", Value: math.NaN(), Note: missing + " is not exported: aborts are uncounted, not zero"})
	ppr, at, ok := promptPerFinished(c, i)
	if !ok {
		v.summary += " The abort rate cannot be estimated: no earlier window of the range finished requests to give the prompt tokens per request."
		return
	}
	rate := prompt / ppr
	v.evidence = append(v.evidence, Evidence{Signal: "aborted_rate_estimate", Value: rate, Unit: "/s",
		Note: fmt.Sprintf("prompt tokens %s /s ÷ %s prompt tokens per finished request, the median of the windows up to %s)", num(prompt), num(ppr), c.steps[at].UTC().Format("15:04:05"))})
	v.summary += fmt.Sprintf(" About %s requests/s are aborted (estimated from the prompt tokens; %s is missing).", num(rate), missing)
}

// uncountedAbortShare is the share of started requests (first tokens) that did not finish
// above which, without an abort counter, the traffic is called aborted. Far above abortShare:
// first tokens and finishes of one window are different requests (a burst's first tokens come
// before its finishes), so only a large gap is evidence.
const uncountedAbortShare = 0.5

// abortedByTurnover: without an abort counter, requests finish (fin > 0) but far fewer than get
// their first token: started − finished per second is the estimated abort rate.
func abortedByTurnover(c *tctx, i int, fin float64, v verdict) verdict {
	ft, ok := c.value(FirstTokens, i)
	if !ok || ft <= 0 || 1-fin/ft < uncountedAbortShare {
		return v
	}
	share := 1 - fin/ft
	v.evidence = []Evidence{
		{Signal: "unfinished_share", Value: share, Op: ">=", Threshold: uncountedAbortShare, Unit: "ratio",
			Note: fmt.Sprintf("%s requests/s got a first token, %s finished", num(ft), num(fin))},
		{Signal: "aborted_rate_estimate", Value: ft - fin, Unit: "/s", Note: "first tokens − finished requests"},
	}
	v.lowerTo(Medium, "no abort counter: requests that start and never finish are read as aborted by their clients")
	missing := "an abort count (finished_reason=\"abort\")"
	if c.in.Engine == "vllm" {
		missing = `vllm:request_success_total{finished_reason="abort"}`
	}
	v.evidence = append(v.evidence, Evidence{Signal: "missing_counter", Value: math.NaN(), Note: missing + " is not exported: aborts are uncounted, not zero"})
	return v.holds(fmt.Sprintf("Aborted traffic: %s of the requests that started in the last %s did not finish: clients close them before the end. About %s requests/s are aborted (estimated: first tokens − finished; %s is missing). The latency figures describe only the requests that finished.",
		num(share), c.window, num(ft-fin), missing),
		"Check client timeouts and cancellations (gateway logs); the engine exports no abort count here.")
}
