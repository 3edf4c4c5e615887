package source

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomMatrixBody writes a range-query answer the way servers do, with the oddities the
// decoder must meet: escaped label values, NaN and ±Inf, timestamps with 0 to 4 fraction
// digits, spaces between tokens, keys in another order, unknown keys, warnings.
func randomMatrixBody(rng *rand.Rand, series, points int) string {
	var b strings.Builder
	pad := func() string { return []string{"", " ", "\n  "}[rng.IntN(3)] }
	b.WriteString(`{"data":{"result":[`)
	for s := 0; s < series; s++ {
		if s > 0 {
			b.WriteString("," + pad())
		}
		b.WriteString(`{"metric":{"__name__":"vllm:e2e_request_latency_seconds_bucket","job":"vllm-` + fmt.Sprint(s%3) + `"`)
		b.WriteString(`,"le":"` + fmt.Sprint(rng.IntN(100)) + `.0"`)
		if rng.IntN(4) == 0 {
			b.WriteString(`,"model_name":"a \"quoted\" \\ \u00e9\/model"`)
		}
		b.WriteString(`},` + pad() + `"values":[`)
		t := 1735689600.0
		for p := 0; p < points; p++ {
			if p > 0 {
				b.WriteString(",")
			}
			ts := strconvTS(t, rng.IntN(5))
			v := []string{"NaN", "+Inf", "-Inf", "0", "1e-9", fmt.Sprint(rng.Float64() * 1e6), fmt.Sprint(rng.IntN(1000))}[rng.IntN(7)]
			b.WriteString("[" + pad() + ts + "," + pad() + `"` + v + `"]`)
			t += 15.0 + float64(rng.IntN(1000))/1000
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`],"resultType":"matrix","stats":{"timings":{"evalTotalTime":0.1}}},"status":"success","warnings":["partial \"data\""],"infos":["PromQL info: x"]}`)
	return b.String()
}

func strconvTS(t float64, digits int) string {
	return fmt.Sprintf("%.*f", digits, t)
}

// TestDecodeMatrixMatchesModelJSON: the hand-written decoder gives what the
// prometheus/common model types' own JSON decoding gives, on random answers.
func TestDecodeMatrixMatchesModelJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for k := 0; k < 50; k++ {
		body := randomMatrixBody(rng, 1+rng.IntN(8), rng.IntN(40))
		got, warnings, infos, ok := decodeMatrixResponse([]byte(body))
		require.True(t, ok, body)
		var ref struct {
			Status string `json:"status"`
			Data   struct {
				Result model.Matrix `json:"result"`
			} `json:"data"`
			Warnings []string `json:"warnings"`
			Infos    []string `json:"infos"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &ref))
		require.Len(t, got, len(ref.Data.Result))
		for i := range got {
			require.Equal(t, ref.Data.Result[i].Metric, got[i].Metric)
			require.Len(t, got[i].Values, len(ref.Data.Result[i].Values))
			for j, p := range got[i].Values {
				want := ref.Data.Result[i].Values[j]
				require.Equal(t, want.Timestamp, p.Timestamp)
				w, g := float64(want.Value), float64(p.Value)
				require.True(t, w == g || (math.IsNaN(w) && math.IsNaN(g)), "%v vs %v", w, g)
			}
		}
		assert.Equal(t, ref.Warnings, warnings)
		assert.Equal(t, ref.Infos, infos)
	}
}

// TestDecodeMatrixLeavesOtherAnswersToClientGolang: errors, vectors, native histograms and
// malformed bodies are not decoded here.
func TestDecodeMatrixLeavesOtherAnswersToClientGolang(t *testing.T) {
	for _, body := range []string{
		`{"status":"error","errorType":"bad_data","error":"parse error"}`,
		`{"status":"success","data":{"resultType":"vector","result":[]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"1","sum":"1"}]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}} trailing`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]`,
	} {
		_, _, _, ok := decodeMatrixResponse([]byte(body))
		assert.False(t, ok, body)
	}
}

// TestRemoteRangeFastPath: over HTTP, a range query decoded by the fast path returns the
// same matrix (sorted) and passes the server's warnings and infos on as notes.
func TestRemoteRangeFastPath(t *testing.T) {
	body := `{"status":"success","warnings":["partial data"],"infos":["PromQL info: y"],"data":{"resultType":"matrix","result":[` +
		`{"metric":{"job":"b"},"values":[[1735689600,"2"],[1735689615.5,"NaN"]]},{"metric":{"job":"a"},"values":[[1735689600,"1"]]}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	q, err := NewRemote(srv.URL, nil)
	require.NoError(t, err)
	ctx, notes := WithNotes(context.Background())
	m, err := q.QueryRange(ctx, "x", time.Unix(1735689600, 0), time.Unix(1735689615, 0), 15*time.Second)
	require.NoError(t, err)
	require.Len(t, m, 2)
	assert.Equal(t, model.LabelValue("a"), m[0].Metric["job"])
	assert.Equal(t, model.Time(1735689615500), m[1].Values[1].Timestamp)
	assert.True(t, math.IsNaN(float64(m[1].Values[1].Value)))
	list := strings.Join(notes.List(), "\n")
	assert.Contains(t, list, "partial data")
	assert.Contains(t, list, "PromQL info: y")
}

// BenchmarkDecodeMatrix compares, over HTTP from a local server, a range query decoded by
// the fast path (fast) with the same answer decoded by client_golang's v1 API (json-iterator
// with its SamplePair decoder): one 100-series × 1441-point answer.
func BenchmarkDecodeMatrix(b *testing.B) {
	body := []byte(randomMatrixBody(rand.New(rand.NewPCG(1, 2)), 100, 1441))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	q, err := NewRemote(srv.URL, nil)
	require.NoError(b, err)
	start, end := time.Unix(1735689600, 0), time.Unix(1735689600+6*3600, 0)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			if _, err := q.QueryRange(context.Background(), "x", start, end, 15*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client_golang", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for i := 0; i < b.N; i++ {
			if _, _, _, err := q.(*remote).api.QueryRange(context.Background(), "x", v1.Range{Start: start, End: end, Step: 15 * time.Second}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
