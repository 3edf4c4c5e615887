package queries

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// The diagnosis's advice quoting the capacity twin (issue 35). A diagnosis does not calibrate
// a twin (tens of simulations per target): where the capacity query has already calibrated
// one for the target (in capacityCache, less than capacityTTL old, on the same data source),
// each current finding whose advice is a change the twin models gets the twin's predicted
// effect of that change at the target's load: the same what-if, text and bands as the
// capacity query's `advice` column (twin.Advice), one simulation per change, cached and
// shared with the capacity query's what-if format (same changes, same profiles: every
// profile's latency objectives). Where no twin exists the advice stays as the rule wrote it.

// diagnosisTwinChanges are the twin's changes matching the advice of class cl for a target
// whose twin runs max_num_seqs n (DefaultChanges' values, so the capacity query's cached
// what-ifs serve them); rec is the rule's recommendation (queue saturation raises
// --max-num-seqs only when it says the KV cache has headroom). Nil: no change the twin models.
func diagnosisTwinChanges(cl diagnose.Class, rec string, n int) []twin.Change {
	half := twin.Change{Name: fmt.Sprintf("max-num-seqs %d", max(1, n/2)), MaxNumSeqs: max(1, n/2)}
	double := twin.Change{Name: fmt.Sprintf("max-num-seqs %d", 2*n), MaxNumSeqs: 2 * n}
	replica := twin.Change{Name: "+1 replica", AddReplicas: 1}
	prefix := twin.Change{Name: "prefix caching 50%", PrefixHitRatio: 0.5}
	switch cl {
	case diagnose.QueueSaturation:
		if strings.HasPrefix(rec, "Raise --max-num-seqs") {
			return []twin.Change{double, replica}
		}
		return []twin.Change{replica}
	case diagnose.KVPressure:
		return []twin.Change{half, prefix}
	case diagnose.DecodeMemory, diagnose.UnstableBatching:
		return []twin.Change{half}
	case diagnose.PrefillCompute:
		return []twin.Change{replica, prefix}
	}
	return nil
}

// diagnosisTwinAdvice adds the twin's predicted effect to the current findings of res
// (Finding.TwinAdvice, and appended to Recommendation) for the targets with a cached twin.
// Each what-if is waited for until the capacity query's answer deadline; one still computing
// then says so and goes on for the next refresh.
func diagnosisTwinAdvice(ctx context.Context, env *fetch.Env, r *fetch.Run, res *diagnose.Result) {
	wait, cancel := answerDeadline(ctx, capacityWait())
	defer cancel()
	var late []string
	for ti := range res.Targets {
		tr := &res.Targets[ti]
		var t capacityTarget
		var history string
		found := false
		for fi := range tr.Findings {
			f := &tr.Findings[fi]
			if !f.Current {
				continue
			}
			if !found {
				if t, history, found = capacityCache.cachedTwin(fmt.Sprintf("%p", env.Querier), f.Target, capacityNow(env)); !found {
					break
				}
			}
			changes := diagnosisTwinChanges(f.Class, f.Recommendation, t.twin.Config.MaxNumSeqs)
			if len(changes) == 0 {
				continue
			}
			all := twin.Profile{Name: "all"}
			for _, name := range env.Settings.ProfileNames() {
				if tp, ok := twinProfileFor(env.Settings, name, t.name, &analysis.Notices{}); ok {
					all.Objectives = append(all.Objectives, tp.profile.Objectives...)
				}
			}
			var quotes []string
			for _, c := range changes {
				out, err := capacityChangeOutcome(wait, env, t, c, all)
				switch {
				case capacityPending(ctx, err):
					quotes = append(quotes, twin.ChangeWords(c, t.twin.Config)+": prediction still being computed (refresh in a minute)")
					late = append(late, f.Target)
				case err != nil:
					r.Skipped(fmt.Sprintf("the capacity twin's prediction of %q for target %s", c.Name, f.Target), err)
				default:
					quotes = append(quotes, twin.Advice(c, t.twin.Config, out))
				}
			}
			if len(quotes) == 0 {
				continue
			}
			f.TwinAdvice = "Capacity twin (calibrated on " + history + "), at " + fmt.Sprintf("%.3g req/s", t.observed.Rate) + ": " + strings.Join(quotes, "; ") + "."
			f.Recommendation = strings.TrimSpace(f.Recommendation + " " + f.TwinAdvice)
		}
	}
	capacityLate(r, late, "its twin's predictions for the diagnosis are", "their twins' predictions for the diagnosis are")
}

// cachedTwin returns the newest calibrated twin of target on data source source in c, less
// than capacityTTL old at now, with its observation and its history in words; false when none is there (not
// calibrated, still computing, failed, expired). It starts nothing.
func (c *ttlCache) cachedTwin(source, target string, now time.Time) (capacityTarget, string, bool) {
	prefix := "twin|" + source + "|" + target + "|"
	c.mu.Lock()
	defer c.mu.Unlock()
	var best capacityTarget
	var history string
	var at time.Time
	found := false
	for key, e := range c.entries {
		if !strings.HasPrefix(key, prefix) || strings.Count(key[len(prefix):], "|") != 3 {
			continue
		}
		select {
		case <-e.done:
		default:
			continue
		}
		tw, ok := e.val.(twin.Twin)
		if e.err != nil || !ok || now.Sub(e.at) >= capacityTTL || now.Before(e.at) || (found && !e.at.After(at)) {
			continue
		}
		oe, ok := c.entries["observed|"+key]
		if !ok {
			continue
		}
		select {
		case <-oe.done:
		default:
			continue
		}
		o, ok := oe.val.(twin.Observed)
		if oe.err != nil || !ok {
			continue
		}
		best, history = capacityTarget{name: target, key: key, observed: o, twin: tw}, capacityKeyHistory(key[len(prefix):])
		at, found = e.at, true
	}
	return best, history, found
}

// capacityKeyHistory says the history of a twin key's tail ("from|to|seqs|tokens", Unix
// seconds) in words: "the history 12:00–12:30 UTC".
func capacityKeyHistory(tail string) string {
	var from, to int64
	var seqs, tokens int
	if _, err := fmt.Sscanf(strings.ReplaceAll(tail, "|", " "), "%d %d %d %d", &from, &to, &seqs, &tokens); err != nil {
		return "a recent capacity query's range"
	}
	f, t := time.Unix(from, 0).UTC(), time.Unix(to, 0).UTC()
	return fmt.Sprintf("the history %s–%s UTC", f.Format("2006-01-02 15:04"), t.Format("15:04"))
}
