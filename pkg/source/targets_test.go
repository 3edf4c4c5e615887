package source

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoStores writes the same samples twice: as the embedded collector stores
// them (job = target name) and as a shared Prometheus holds them (job
// "vllm" for both targets, told apart by pod; a third pod, not configured,
// that the plugin must never see; and target c whose server job is its name).
func twoStores(t *testing.T) (embedded, server Querier) {
	t.Helper()
	open := func() *tsdb.DB {
		db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	edb, sdb := open(), open()
	ea, sa := edb.Appender(context.Background()), sdb.Appender(context.Background())
	for i := 0; i <= 40; i++ {
		ts := base.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
		f := float64(i)
		for _, s := range []struct {
			target, pod string
			v           float64
		}{{"a", "vllm-0", 1}, {"b", "vllm-1", 2}, {"", "vllm-2", 100}, {"c", "", 3}} {
			for _, m := range []struct {
				name, le string
				v        float64
			}{{"h_bucket", "0.1", 1 * f * s.v}, {"h_bucket", "1", 3 * f * s.v}, {"h_bucket", "+Inf", 4 * f * s.v}, {"g", "", 5 * s.v}} {
				el := []string{"__name__", m.name}
				if m.le != "" {
					el = append(el, "le", m.le)
				}
				if s.target != "" {
					_, err := ea.Append(0, labels.FromStrings(append(el, "job", s.target, "instance", "x:1")...), ts, m.v)
					require.NoError(t, err)
				}
				sl := append([]string{}, el...)
				if s.pod != "" {
					sl = append(sl, "job", "vllm", "pod", s.pod, "instance", s.pod+":8000")
				} else {
					sl = append(sl, "job", s.target, "instance", "x:1")
				}
				_, err := sa.Append(0, labels.FromStrings(sl...), ts, m.v)
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, ea.Commit())
	require.NoError(t, sa.Commit())
	return NewEmbedded(edb, EmbeddedOptions{}), NewEmbedded(sdb, EmbeddedOptions{})
}

func sel(t *testing.T, job string, ms ...string) TargetSelector {
	t.Helper()
	ts := TargetSelector{Job: job}
	for k := 0; k < len(ms); k += 2 {
		ts.Matchers = append(ts.Matchers, labels.MustNewMatcher(labels.MatchEqual, ms[k], ms[k+1]))
	}
	return ts
}

// TestMapTargetsSameAnswers runs the plugin-style PromQL on the embedded-style
// store and, through MapTargets, on the server-style store: the answers must
// be identical (same samples, same labels after relabelling).
func TestMapTargetsSameAnswers(t *testing.T) {
	emb, srv := twoStores(t)
	m := MapTargets(srv, []TargetSelector{
		sel(t, "a", "job", "vllm", "pod", "vllm-0"),
		sel(t, "b", "pod", "vllm-1"),
		sel(t, "c", "job", "c"),
	})
	// a and b share job="vllm" and differ by pod: one grouped branch.
	grouped := MapTargets(srv, []TargetSelector{
		sel(t, "a", "job", "vllm", "pod", "vllm-0"),
		sel(t, "b", "job", "vllm", "pod", "vllm-1"),
		sel(t, "c", "job", "c"),
	})
	ctx := context.Background()
	at := base.Add(5 * time.Minute)
	for _, m := range []Querier{m, grouped} {
		for _, q := range []string{
			`sum by (le) (rate(h_bucket[1m]))`,
			`sum by (le, job) (rate(h_bucket{job=~"a|b"}[1m]))`,
			`sum by (le, job) (rate(h_bucket{job=~"a|c"}[1m]))`,
			`sum by (job) (rate(h_bucket{job="b", le="+Inf"}[2m])) / sum by (job) (rate(h_bucket{job="b", le="1"}[2m]))`,
			`avg by (job) (g)`,
			`sum by (job) (g{job="a"} or g{job="c"})`,
			`max_over_time(sum by (job) (rate(h_bucket[1m]))[3m:30s])`,
			`count({__name__=~".+"})`,
			`histogram_quantile(0.9, sum by (le, job) (rate(h_bucket[2m])))`,
			`sum(g{job="nosuch"})`,
		} {
			ev, err := emb.Query(ctx, q, at)
			require.NoError(t, err, q)
			rv, err := m.Query(ctx, q, at)
			require.NoError(t, err, q)
			assert.Equal(t, sortedString(ev), sortedString(rv), q)
			er, err := emb.QueryRange(ctx, q, base.Add(2*time.Minute), at, 30*time.Second)
			require.NoError(t, err, q)
			rr, err := m.QueryRange(ctx, q, base.Add(2*time.Minute), at, 30*time.Second)
			require.NoError(t, err, q)
			assert.Equal(t, er.String(), rr.String(), q)
		}
	}
	// A bare range selector (raw samples) is asked per branch and named in Go.
	for _, m := range []Querier{m, grouped} {
		for _, q := range []string{`h_bucket{le="1"}[1m]`, `(g{job=~"a|b"}[2m])`} {
			ev, err := emb.Query(ctx, q, at)
			require.NoError(t, err, q)
			rv, err := m.Query(ctx, q, at)
			require.NoError(t, err, q)
			strip := func(v model.Value) string {
				mat := v.(model.Matrix)
				for _, ss := range mat {
					delete(ss.Metric, "instance")
					delete(ss.Metric, "pod")
				}
				sort.Sort(mat)
				return mat.String()
			}
			assert.Equal(t, strip(ev), strip(rv), q)
		}
	}

	// The unconfigured pod is invisible; the total counts 3 targets × 4 series.
	v, err := m.Query(ctx, `count({__name__=~".+"})`, at)
	require.NoError(t, err)
	assert.Equal(t, model.SampleValue(12), v.(model.Vector)[0].Value)

	names, err := m.MetricNames(ctx, `{job="b"}`, base, at)
	require.NoError(t, err)
	assert.Equal(t, []string{"g", "h_bucket"}, names)
	les, err := m.LabelValues(ctx, "le", `{job=~"a|b", __name__="h_bucket"}`, base, at)
	require.NoError(t, err)
	assert.Equal(t, []string{"+Inf", "0.1", "1"}, les)
	jobs, err := m.LabelValues(ctx, "pod", ``, base, at)
	require.NoError(t, err)
	assert.Equal(t, []string{"vllm-0", "vllm-1"}, jobs, "only configured targets' pods")
	none, err := m.LabelValues(ctx, "pod", `{job="nosuch"}`, base, at)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestMapTargetsRewrite(t *testing.T) {
	m := MapTargets(nil, []TargetSelector{sel(t, "a", "job", "a"), sel(t, "b", "job", "a"), sel(t, "c", "job", "c")}).(*mapped)
	got, err := m.Rewrite(`sum by (job) (rate(x{job=~"a|b|c"}[5m]))`)
	require.NoError(t, err)
	// a and c are their own server jobs: one branch with a regex; b maps to job a, relabelled.
	assert.Equal(t, `sum by (job) ((rate(x{job=~"a|c"}[5m]) or label_replace(rate(x{job="a"}[5m]), "job", "b", "", "")))`, got)
	_, err = m.Rewrite(`x[5m]`)
	require.Error(t, err, "a bare range selector over several targets cannot be relabelled")

	g := MapTargets(nil, []TargetSelector{sel(t, "a", "job", "vllm", "instance", "10.0.0.5:8000"), sel(t, "b", "job", "vllm", "instance", "10.0.0.6:8000"),
		sel(t, "c", "instance", "10.0.0.7:8000")}).(*mapped)
	got, err = g.Rewrite(`sum by (job) (rate(x{job=~"a|b|c"}[5m]))`)
	require.NoError(t, err)
	// a and b are one selection; the server names their series job="<marker><instance>",
	// renamed to a and b in the answer.
	assert.Equal(t, `sum by (job) ((label_replace(rate(x{instance=~"10\\.0\\.0\\.5:8000|10\\.0\\.0\\.6:8000",job="vllm"}[5m]), "job", "__inferscope_group_0:$1", "instance", "(.*)")`+
		` or label_replace(rate(x{instance="10.0.0.7:8000"}[5m]), "job", "c", "", "")))`, got)
	// Below an aggregation that drops job, nothing needs a name: no relabelling.
	got, err = g.Rewrite(`sum by (le) (rate(x{job=~"a|b|c"}[5m]))`)
	require.NoError(t, err)
	assert.Equal(t, `sum by (le) ((rate(x{instance=~"10\\.0\\.0\\.5:8000|10\\.0\\.0\\.6:8000",job="vllm"}[5m]) or rate(x{instance="10.0.0.7:8000"}[5m])))`, got)
}

// sortedString prints a result with vector samples in label order (a vector's
// order is unspecified).
func sortedString(v model.Value) string {
	if vec, ok := v.(model.Vector); ok {
		c := append(model.Vector{}, vec...)
		sort.Slice(c, func(i, j int) bool { return c[i].Metric.String() < c[j].Metric.String() })
		return c.String()
	}
	return v.String()
}
