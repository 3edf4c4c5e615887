package asgrafana

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"
)

// series is one timeseries-multi frame: its time field and its value field.
type series struct {
	name   string
	labels data.Labels
	unit   string
	times  []time.Time
	values []float64 // NaN where the frame holds null
}

// seriesOf decodes timeseries-multi frames (one time + one number field each).
func seriesOf(t *testing.T, frames data.Frames) []series {
	t.Helper()
	var out []series
	for _, f := range frames {
		require.NotNil(t, f.Meta, "frame %q has no meta", f.Name)
		require.Equal(t, data.FrameTypeTimeSeriesMulti, f.Meta.Type, "frame %q", f.Name)
		if f.Rows() == 0 && len(f.Fields) == 2 && len(f.Fields[1].Labels) == 0 {
			continue // the empty placeholder frame of a result without series
		}
		require.Len(t, f.Fields, 2, "frame %q", f.Name)
		tf, vf := f.Fields[0], f.Fields[1]
		require.Equal(t, data.FieldTypeTime, tf.Type(), "frame %q time field", f.Name)
		s := series{name: f.Name, labels: vf.Labels}
		if vf.Config != nil {
			s.unit = vf.Config.Unit
		}
		for i := 0; i < f.Rows(); i++ {
			s.times = append(s.times, tf.At(i).(time.Time))
			v, ok := vf.ConcreteAt(i)
			if !ok {
				s.values = append(s.values, math.NaN())
				continue
			}
			s.values = append(s.values, toFloat(t, v))
		}
		out = append(out, s)
	}
	return out
}

func toFloat(t *testing.T, v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	}
	t.Fatalf("value %v (%T) is not a number", v, v)
	return 0
}

// pick returns the series whose labels include every key=value of want
// (a value "" requires the label to be absent).
func pick(ss []series, want map[string]string) []series {
	var out []series
	for _, s := range ss {
		ok := true
		for k, v := range want {
			got, has := s.labels[k]
			if (v == "" && has) || (v != "" && got != v) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// one returns the single series matching want.
func one(t *testing.T, ss []series, want map[string]string) series {
	t.Helper()
	got := pick(ss, want)
	if len(got) != 1 {
		var all []string
		for _, s := range ss {
			all = append(all, s.labels.String())
		}
		sort.Strings(all)
		require.Failf(t, "series lookup", "want exactly one series with %v, got %d; have:\n%s", want, len(got), strings.Join(all, "\n"))
	}
	return got[0]
}

// lastSteps is how many trailing steps are compared: the first steps' windows
// may straddle the start of collection.
const lastSteps = 3

// requireLast asserts that the last lastSteps values of s are want within a
// relative tolerance rel (absolute 1e-12 when want is 0).
func requireLast(t *testing.T, s series, want, rel float64, what string) {
	t.Helper()
	require.GreaterOrEqual(t, len(s.values), lastSteps, "%s: only %d steps", what, len(s.values))
	for _, v := range s.values[len(s.values)-lastSteps:] {
		requireNear(t, want, v, rel, fmt.Sprintf("%s (series %s)", what, s.labels))
	}
}

func requireNear(t *testing.T, want, got, rel float64, what string) {
	t.Helper()
	if math.IsInf(want, 0) {
		// An unbounded edge (a quantile clamped into the +Inf bucket) is
		// sent as null: frames never carry ±Inf.
		require.True(t, math.IsNaN(got), "%s: got %v, want null for an unbounded %v", what, got, want)
		return
	}
	require.False(t, math.IsNaN(got), "%s: got null/NaN, want %v", what, want)
	tol := rel * math.Abs(want)
	if want == 0 {
		tol = 1e-12
	}
	require.LessOrEqualf(t, math.Abs(got-want), tol, "%s: got %.17g, want %.17g (rel. error %.3g)", what, got, want, math.Abs(got-want)/math.Max(math.Abs(want), 1e-300))
}

// requireNoData asserts that the last steps of s are null (absent is not zero).
func requireNoData(t *testing.T, s series, what string) {
	t.Helper()
	for _, v := range s.values[max(0, len(s.values)-lastSteps):] {
		require.Truef(t, math.IsNaN(v), "%s: want null (no requests: no data, not zero), got %v (series %s)", what, v, s.labels)
	}
}

// allNotices gathers the notice texts of every frame.
func allNotices(frames data.Frames) []string {
	var out []string
	for _, f := range frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				out = append(out, n.Text)
			}
		}
	}
	return out
}

func containsText(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// requirePromQLMeta checks the meta every PromQL-backed frame carries.
func requirePromQLMeta(t *testing.T, frames data.Frames, typ data.FrameType, what string) {
	t.Helper()
	require.NotEmpty(t, frames, what)
	for _, f := range frames {
		require.NotNil(t, f.Meta, what)
		require.Equal(t, typ, f.Meta.Type, "%s: frame %q type", what, f.Name)
		require.NotEmpty(t, strings.TrimSpace(f.Meta.ExecutedQueryString), "%s: frame %q has no executed query", what, f.Name)
	}
}

// quantileOracle is Prometheus' histogram_quantile on classic buckets, plus
// the edges of the bucket the rank falls in (computed here by the same rule:
// the first bucket whose cumulative count reaches q × total; the lowest
// bucket starts at 0 when its bound is positive; the +Inf bucket's lower edge
// is the highest finite bound).
func quantileOracle(q float64, b promql.Buckets) (value, lower, upper float64) {
	value, _, _, _, _, _ = promql.BucketQuantile(q, append(promql.Buckets(nil), b...))
	rank := q * b[len(b)-1].Count
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	upper = b[i].UpperBound
	switch {
	case i == len(b)-1:
		lower, upper = b[len(b)-2].UpperBound, math.Inf(1)
	case i == 0 && b[0].UpperBound > 0:
		lower = 0
	case i == 0:
		lower = b[0].UpperBound
	default:
		lower = b[i-1].UpperBound
	}
	return value, lower, upper
}

// tableField returns a table frame's field by name.
func tableField(t *testing.T, f *data.Frame, name string) *data.Field {
	t.Helper()
	fld, idx := f.FieldByName(name)
	require.GreaterOrEqual(t, idx, 0, "table %q has no field %q", f.Name, name)
	return fld
}

// tableRow finds the row whose string field key equals val.
func tableRow(t *testing.T, f *data.Frame, key, val string) int {
	t.Helper()
	fld := tableField(t, f, key)
	for i := 0; i < fld.Len(); i++ {
		if v, ok := fld.ConcreteAt(i); ok && v == val {
			return i
		}
	}
	require.Failf(t, "table row", "table %q has no row with %s=%q", f.Name, key, val)
	return -1
}

func cellString(t *testing.T, f *data.Frame, field string, row int) string {
	t.Helper()
	v, ok := tableField(t, f, field).ConcreteAt(row)
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

func cellFloat(t *testing.T, f *data.Frame, field string, row int) float64 {
	t.Helper()
	v, ok := tableField(t, f, field).ConcreteAt(row)
	if !ok {
		return math.NaN()
	}
	return toFloat(t, v)
}
