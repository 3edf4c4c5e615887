package source

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// sampledIn keeps, of the label values candidates (LabelValues of a querier over [start, end]),
// those carried by at least one series matching ms with a sample in [start, end] that is not a
// staleness marker. The TSDB head answers LabelValues from its index, which holds every series
// written within the last block range (2-3 h) whatever the time of its samples, so without
// this a family that left the page an hour ago, or a model no longer served, would still be
// listed for the last five minutes; persisted blocks are already cut by time, and the check
// costs one Seek per series.
func sampledIn(ctx context.Context, qr storage.Querier, name string, candidates []string, ms []*labels.Matcher, start, end time.Time) ([]string, error) {
	if len(candidates) == 0 {
		return candidates, nil
	}
	sel := slices.Clone(ms)
	sel = append(sel, labels.MustNewMatcher(labels.MatchNotEqual, name, ""))
	lo, hi := start.UnixMilli(), end.UnixMilli()
	ss := qr.Select(ctx, false, &storage.SelectHints{Start: lo, End: hi}, sel...)
	seen := map[string]bool{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		v := s.Labels().Get(name)
		if seen[v] {
			continue
		}
		it = s.Iterator(it)
		for vt := it.Seek(lo); vt != chunkenc.ValNone; vt = it.Next() {
			t := it.AtT()
			if t > hi {
				break
			}
			if vt == chunkenc.ValFloat {
				if _, f := it.At(); value.IsStaleNaN(f) {
					continue
				}
			}
			seen[v] = true
			break
		}
	}
	if err := ss.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for _, c := range candidates {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out, nil
}
