package queries

import (
	"context"
	"fmt"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// The diagnosis's advice quoting the capacity twin (issue 35). A diagnosis does not calibrate
// a twin (tens of simulations per target): where the capacity query has already calibrated
// one for the target (in the instance's fetch.Twins, less than fetch.TwinTTL old),
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
// (Finding.TwinAdvice, and appended to Recommendation) for the targets with a cached twin
// (fetch.Env.CachedTwin). Each what-if is waited for until the capacity query's answer
// deadline (fetch.Twins.Deadline); one still computing then says so and goes on for the next
// refresh.
func diagnosisTwinAdvice(ctx context.Context, env *fetch.Env, r *fetch.Run, res *diagnose.Result) {
	if env.Twins == nil {
		return
	}
	wait, cancel := env.Twins.Deadline(ctx)
	defer cancel()
	var late []string
	for ti := range res.Targets {
		tr := &res.Targets[ti]
		var t fetch.TwinTarget
		var history string
		found := false
		for fi := range tr.Findings {
			f := &tr.Findings[fi]
			if !f.Current {
				continue
			}
			if !found {
				if t, history, found = env.CachedTwin(f.Target); !found {
					break
				}
			}
			if diagnosisQuoteTwin(ctx, wait, env, r, t, history, f) {
				late = append(late, f.Target)
			}
		}
	}
	r.TwinsLate(late, "its twin's predictions for the diagnosis are", "their twins' predictions for the diagnosis are")
}

// diagnosisQuoteTwin quotes, in finding f, the predicted effect on t's twin (calibrated on
// history) of the changes its advice names, scored under every profile's latency
// objectives; late when a prediction is still being computed (said in the quote).
func diagnosisQuoteTwin(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, t fetch.TwinTarget, history string, f *diagnose.Finding) (late bool) {
	changes := diagnosisTwinChanges(f.Class, f.Recommendation, t.Twin.Config.MaxNumSeqs)
	if len(changes) == 0 {
		return false
	}
	all := fetch.TwinProfileAll(env.Settings, env.Settings.ProfileNames(), t.Name)
	var quotes []string
	for _, c := range changes {
		out, err := env.TwinWhatIf(wait, t, c, all)
		switch {
		case fetch.TwinPending(ctx, err):
			quotes = append(quotes, twin.ChangeWords(c, t.Twin.Config)+": prediction still being computed (refresh in a minute)")
			late = true
		case err != nil:
			r.Skipped(fmt.Sprintf("the capacity twin's prediction of %q for target %s", c.Name, f.Target), err)
		default:
			quotes = append(quotes, twin.Advice(c, t.Twin.Config, out))
		}
	}
	if len(quotes) == 0 {
		return late
	}
	f.TwinAdvice = "Capacity twin (calibrated on " + history + "), at " + fmt.Sprintf("%.3g req/s", t.Observed.Rate) + ": " + strings.Join(quotes, "; ") + "."
	f.Recommendation = strings.TrimSpace(f.Recommendation + " " + f.TwinAdvice)
	return late
}
