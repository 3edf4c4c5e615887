package plugin

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

// appendScaledPage stores a hand-written /metrics page as a scrape would, every interval over
// [start, start+span]: job and instance labels added, counter and histogram samples (by the
// page's # TYPE lines) multiplied by 1 + growth·(t − start) in seconds, gauges as written, and
// up = 1. With one factor per scrape, a rate over any window is the page's value × growth and
// a mean or quantile is the page's own.
func appendScaledPage(t *testing.T, db storage.Appendable, page, job, instance string, start time.Time, span, interval time.Duration, growth float64) {
	t.Helper()
	kind := map[string]string{}
	type sample struct {
		lset labels.Labels
		v    float64
		grow bool
	}
	var samples []sample
	for _, l := range strings.Split(page, "\n") {
		if f := strings.Fields(strings.TrimSpace(l)); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			kind[f[2]] = f[3]
		}
	}
	p := textparse.NewPromParser([]byte(page), labels.NewSymbolTable(), false)
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, job)
		if et != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var ls labels.Labels
		p.Labels(&ls)
		name := ls.Get(model.MetricNameLabel)
		fam := kind[name]
		for _, suf := range []string{"_total", "_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && fam == "" {
				fam = kind[b]
			}
		}
		b := labels.NewBuilder(ls)
		b.Set("job", job)
		b.Set("instance", instance)
		samples = append(samples, sample{lset: b.Labels(), v: v, grow: fam == "counter" || fam == "histogram"})
	}
	up := labels.FromStrings(model.MetricNameLabel, "up", "job", job, "instance", instance)
	for ts := start; !ts.After(start.Add(span)); ts = ts.Add(interval) {
		app := db.Appender(context.Background())
		f := 1 + growth*ts.Sub(start).Seconds()
		ms := ts.UnixMilli()
		for _, s := range samples {
			v := s.v
			if s.grow {
				v *= f
			}
			_, err := app.Append(0, s.lset, ms, v)
			require.NoError(t, err)
		}
		_, err := app.Append(0, up, ms, 1)
		require.NoError(t, err)
		require.NoError(t, app.Commit())
	}
}
