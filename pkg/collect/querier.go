package collect

import (
	"context"
	"time"

	"github.com/prometheus/common/model"
)

// trackedQuerier counts queries in flight so that Close can wait for them,
// and refuses queries once Close began.
type trackedQuerier struct{ c *Collector }

// begin registers a query; the returned func ends it.
func (q trackedQuerier) begin() (func(), error) {
	q.c.qmu.RLock()
	defer q.c.qmu.RUnlock()
	if q.c.closing {
		return nil, ErrReconfigured
	}
	q.c.inflight.Add(1)
	return q.c.inflight.Done, nil
}

func (q trackedQuerier) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	end, err := q.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	v, err := q.c.querier.Query(ctx, query, ts)
	return v, q.c.store.chunkError(err, ts.Add(-chunkCheckLookback), ts)
}

func (q trackedQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	done, err := q.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	v, err := q.c.querier.QueryRange(ctx, query, start, end, step)
	return v, q.c.store.chunkError(err, start.Add(-chunkCheckLookback), end)
}

func (q trackedQuerier) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	done, err := q.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	v, err := q.c.querier.MetricNames(ctx, matchers, start, end)
	return v, q.c.store.chunkError(err, start, end)
}

func (q trackedQuerier) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	done, err := q.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	v, err := q.c.querier.LabelValues(ctx, name, matchers, start, end)
	return v, q.c.store.chunkError(err, start, end)
}
