package goldentest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"
	"github.com/stretchr/testify/require"
)

// UpdateEnv is the environment variable that, set to 1, makes Check rewrite the golden files
// from the current responses instead of comparing (as the test binaries' -update-golden flag).
const UpdateEnv = "INFERSCOPE_UPDATE_GOLDEN"

// Update reports whether golden files are to be rewritten: flag (a test binary's
// -update-golden) or UpdateEnv set to 1.
func Update(flag bool) bool {
	return flag || os.Getenv(UpdateEnv) == "1"
}

// Case is one query of the golden set: its name (the golden file's), the query JSON (its
// queryType included) over the fixture's range [Start+From, Start+To) at Interval.
type Case struct {
	Name  string
	Query map[string]any
	// From and To are offsets from the simulation start; both zero: the default range
	// (From, To).
	From, To time.Duration
	// Interval is the DataQuery's interval; zero: Interval.
	Interval time.Duration
	// OnProbe runs the case on the probe fixture (Probe) instead of the golden one.
	OnProbe bool
}

// Q builds a query JSON: the query type (left out when empty) and key/value pairs.
func Q(queryType string, kv ...any) map[string]any {
	m := map[string]any{}
	if queryType != "" {
		m["queryType"] = queryType
	}
	for k := 0; k+1 < len(kv); k += 2 {
		m[kv[k].(string)] = kv[k+1]
	}
	return m
}

// DataQuery is c as Grafana sends it: refId A, the query JSON, QueryType queryType (empty:
// routed by the JSON's own), the case's interval, 1000 max data points, and its range after
// start.
func DataQuery(t *testing.T, c Case, queryType string, start time.Time) backend.DataQuery {
	t.Helper()
	from, to, interval := c.From, c.To, c.Interval
	if from == 0 && to == 0 {
		from, to = From, To
	}
	if interval == 0 {
		interval = Interval
	}
	js, err := json.Marshal(c.Query)
	require.NoError(t, err)
	return backend.DataQuery{RefID: "A", QueryType: queryType, JSON: js, Interval: interval, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: start.Add(from), To: start.Add(to)}}
}

// Check normalises dr (Normalise) and compares it with its golden file in dir, rewriting the
// file instead when update is set: a response with frames with <name>.jsonc
// (experimental.CheckGoldenJSONResponse), an error response with <name>.json (its error
// sentence, error source and status). The SDK's CheckGoldenJSONResponse cannot read back a
// file it wrote for a response with an error (v0.299.0: its header then lacks the
// machine-generated marker the reader splits on), so errors get this plain JSON file.
func Check(t *testing.T, dir, name string, dr backend.DataResponse, update bool) {
	t.Helper()
	Normalise(&dr)
	if dr.Error == nil {
		experimental.CheckGoldenJSONResponse(t, dir, name, &dr, update)
		return
	}
	got, err := json.MarshalIndent(dr, "", "  ")
	require.NoError(t, err)
	CheckJSON(t, filepath.Join(dir, name+".json"), got, update)
}

// CheckJSON compares got with the JSON file at path (as JSON: key order and spacing aside),
// or writes got there, with a final newline, when update is set.
func CheckJSON(t *testing.T, path string, got []byte, update bool) {
	t.Helper()
	path = filepath.Clean(path)
	if update {
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o600))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file %s (write it with -update-golden or %s=1)", filepath.Base(path), UpdateEnv)
	require.JSONEq(t, string(want), string(got))
}

// Normalise makes a response byte-stable across runs without dropping any field. What it
// changes, and why:
//
//   - Meta.ExecutedQueryString: the PromQL a query ran, one per line, is collected from
//     stages fetched concurrently (run.parallel), so the order of lines varies between runs;
//     the lines are sorted (all kept).
//
//   - targets table, field last_scrape: the wall-clock time of the collector's last scrape;
//     non-null values become WallClock.
//
//   - targets table, field scrape_duration: the wall-clock duration of the last scrape;
//     non-zero values become 0.001 s.
//
//   - float64 values (fields of float64 and *float64): rounded to Digits significant
//     digits. PromQL aggregations (avg, sum, the `or` of partitions) add series in an order
//     that varies between processes, which moves results in their last bit (seen: KV-cache
//     usage 0.020412171202022805 vs …808); the golden files keep every value.
//
// The fixtures have no collector (no wall-clock scrape, no temporary paths or random ports
// in URLs: every URL is fixed settings text), so the last two are no-ops today; they keep the
// contract stable if a fixture ever scrapes.
func Normalise(dr *backend.DataResponse) {
	for _, f := range dr.Frames {
		if f.Meta != nil && f.Meta.ExecutedQueryString != "" {
			lines := strings.Split(f.Meta.ExecutedQueryString, "\n")
			slices.Sort(lines)
			f.Meta.ExecutedQueryString = strings.Join(lines, "\n")
		}
		for _, fld := range f.Fields {
			roundFloats(fld)
			switch fld.Name {
			case "last_scrape":
				if fld.Type() != data.FieldTypeNullableTime {
					continue
				}
				for k := 0; k < fld.Len(); k++ {
					if v, ok := fld.At(k).(*time.Time); ok && v != nil {
						w := WallClock
						fld.Set(k, &w)
					}
				}
			case "scrape_duration":
				if fld.Type() != data.FieldTypeFloat64 {
					continue
				}
				for k := 0; k < fld.Len(); k++ {
					if v := fld.At(k).(float64); v != 0 {
						fld.Set(k, 0.001)
					}
				}
			}
		}
	}
}

// WallClock replaces wall-clock times in golden frames.
var WallClock = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Digits is the number of significant digits float values keep in golden comparisons
// (Normalise).
const Digits = 10

// roundFloats rounds every finite value of a float64 or *float64 field to Digits
// significant digits; NaN, ±Inf and nulls are kept as they are.
func roundFloats(fld *data.Field) {
	round := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return v
		}
		r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', Digits, 64), 64)
		if err != nil {
			return v
		}
		return r
	}
	switch fld.Type() {
	case data.FieldTypeFloat64:
		for k := 0; k < fld.Len(); k++ {
			fld.Set(k, round(fld.At(k).(float64)))
		}
	case data.FieldTypeNullableFloat64:
		for k := 0; k < fld.Len(); k++ {
			if p := fld.At(k).(*float64); p != nil {
				v := round(*p)
				fld.Set(k, &v)
			}
		}
	}
}
