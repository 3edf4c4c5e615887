package fetch

import (
	"context"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// GuardedRate is the aggregated rate of counter signal s over window by the scope's groups
// and the extra labels (CounterRate: NaN and ±Inf samples named and left out), with the
// backwards-counter guard (LeaveOutBackwards: a counter that went backwards without a restart
// is left out of the windows that hold it); a guard that cannot run is said (Skipped) and the
// rate stands.
func (r *Run) GuardedRate(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, extra ...string) (model.Matrix, error) {
	m, used, err := r.CounterRate(ctx, s, sc, window, extra...)
	if err != nil {
		return nil, err
	}
	if err := r.LeaveOutBackwards(ctx, s, used, window, m, extra...); err != nil {
		r.Skipped("the check for "+string(s)+" counters going backwards", err)
	}
	return m, nil
}
