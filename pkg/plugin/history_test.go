package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// handHistory is a hand-made sample history in an embedded TSDB: tests write
// exactly the scrapes they need, then query it through QueryData.
type handHistory struct {
	t   *testing.T
	db  *tsdb.DB
	app storage.Appender
}

func newHandHistory(t *testing.T) *handHistory {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &handHistory{t: t, db: db, app: db.Appender(context.Background())}
}

// sample appends one sample of name{job, instance, extra...} at ts.
func (h *handHistory) sample(ts time.Time, job, name string, extra map[string]string, v float64) {
	h.t.Helper()
	b := labels.NewBuilder(labels.EmptyLabels())
	b.Set(model.MetricNameLabel, name)
	b.Set("job", job)
	b.Set("instance", job+":8000")
	for k, val := range extra {
		b.Set(k, val)
	}
	_, err := h.app.Append(0, b.Labels(), ts.UnixMilli(), v)
	require.NoError(h.t, err)
}

// handHist is a classic histogram's cumulative state: bucket bounds (without
// +Inf), the number of observations per bucket (last = +Inf bucket) and the sum.
type handHist struct {
	bounds []float64
	counts []float64
	sum    float64
}

func newHandHist(bounds ...float64) *handHist {
	return &handHist{bounds: bounds, counts: make([]float64, len(bounds)+1)}
}

// observe records n observations of value v.
func (f *handHist) observe(v float64, n int) {
	i := sort.SearchFloat64s(f.bounds, v) // first bound >= v
	f.counts[i] += float64(n)
	f.sum += v * float64(n)
}

// reset zeroes the histogram, as a process restart does.
func (f *handHist) reset() {
	for i := range f.counts {
		f.counts[i] = 0
	}
	f.sum = 0
}

// scrape writes the histogram's _bucket (cumulative), _sum and _count samples at ts.
func (h *handHistory) scrape(ts time.Time, job, name string, extra map[string]string, f *handHist) {
	h.t.Helper()
	cum := 0.0
	for i, c := range f.counts {
		cum += c
		le := "+Inf"
		if i < len(f.bounds) {
			le = strconv.FormatFloat(f.bounds[i], 'g', -1, 64)
		}
		l := map[string]string{"le": le}
		for k, v := range extra {
			l[k] = v
		}
		h.sample(ts, job, name+"_bucket", l, cum)
	}
	h.sample(ts, job, name+"_sum", extra, f.sum)
	h.sample(ts, job, name+"_count", extra, cum)
}

// instance commits the history and returns an instance whose settings list
// the given targets (jsonData fragment for each, e.g. `{"name":"a","url":"http://a:8000/metrics"}`).
func (h *handHistory) instance(targets ...string) *Instance {
	h.t.Helper()
	require.NoError(h.t, h.app.Commit())
	h.app = h.db.Appender(context.Background())
	js := `{"targets":[`
	for i, t := range targets {
		if i > 0 {
			js += ","
		}
		js += t
	}
	js += `]}`
	st, err := settings.Load([]byte(js), nil)
	require.NoError(h.t, err)
	return newInstanceForTest(st, source.NewEmbedded(h.db, source.EmbeddedOptions{}))
}

// histTarget renders a settings target named name.
func histTarget(name string) string {
	return fmt.Sprintf(`{"name":%q,"url":"http://%s:8000/metrics"}`, name, name)
}

// runHistQuery runs one query of the given JSON over [from, to] with the given
// interval and returns its response (errors included).
func runHistQuery(t *testing.T, inst *Instance, from, to time.Time, interval time.Duration, q map[string]any) backend.DataResponse {
	t.Helper()
	js, err := json.Marshal(q)
	require.NoError(t, err)
	qt, _ := q["queryType"].(string)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: qt, JSON: js, Interval: interval, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// fieldsBy indexes a timeseries response's value fields by the given labels,
// joined with "/": fieldsBy(dr, "stat", "bound")["p90/upper"].
func fieldsBy(dr backend.DataResponse, keys ...string) map[string]*data.Field {
	out := map[string]*data.Field{}
	for _, f := range dr.Frames {
		if len(f.Fields) < 2 {
			continue
		}
		v := f.Fields[1]
		k := ""
		for i, name := range keys {
			if i > 0 {
				k += "/"
			}
			k += v.Labels[name]
		}
		out[k] = v
	}
	return out
}

// lastFloat returns the last non-null value of a nullable float field (NaN if none)
// and the value at its last row (nil when null).
func lastFloat(f *data.Field) (float64, *float64) {
	n := f.Len()
	if n == 0 {
		return math.NaN(), nil
	}
	at := f.At(n - 1).(*float64)
	for i := n - 1; i >= 0; i-- {
		if p := f.At(i).(*float64); p != nil {
			return *p, at
		}
	}
	return math.NaN(), at
}

// responseNotices returns every notice text of a response.
func responseNotices(dr backend.DataResponse) []string {
	var out []string
	for _, f := range dr.Frames {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			out = append(out, n.Text)
		}
	}
	return out
}
