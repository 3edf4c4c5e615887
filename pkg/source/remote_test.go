package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProm answers the three Prometheus HTTP API endpoints the remote Querier uses.
func fakeProm(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("query") == "bad(" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error at char 5: unclosed left parenthesis"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","warnings":["PromQL info: metric might not be a counter"],"data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1735689600,"0.5"]}]}}`))
	})
	mux.HandleFunc("/api/v1/query_range", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		assert.Equal(t, "15", r.Form.Get("step"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[` +
			`{"metric":{"job":"b"},"values":[[1735689600,"2"],[1735689615,"3"]]},` +
			`{"metric":{"job":"a"},"values":[[1735689600,"1"]]}]}}`))
	})
	mux.HandleFunc("/api/v1/label/__name__/values", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		assert.Equal(t, []string{`{job="a"}`}, r.Form["match[]"])
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":["vllm:num_requests_running","vllm:e2e_request_latency_seconds_bucket"]}`))
	})
	mux.HandleFunc("/api/v1/label/job/values", func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		assert.Empty(t, r.Form["match[]"])
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":["b","a"]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestRemote(t *testing.T) {
	srv := fakeProm(t)
	q, err := NewRemote(srv.URL+"/", nil)
	require.NoError(t, err)
	ctx := context.Background()
	ts := time.Unix(1735689600, 0)

	// Warnings are ignored and the data kept.
	v, err := q.Query(ctx, `rate(x[1m])`, ts)
	require.NoError(t, err)
	require.Equal(t, model.Vector{{Metric: model.Metric{"job": "a"}, Value: 0.5, Timestamp: model.Time(ts.UnixMilli())}}, v)

	m, err := q.QueryRange(ctx, `x`, ts, ts.Add(15*time.Second), 15*time.Second)
	require.NoError(t, err)
	require.Len(t, m, 2)
	assert.Equal(t, model.LabelValue("a"), m[0].Metric["job"])
	assert.Equal(t, model.LabelValue("b"), m[1].Metric["job"])
	assert.Equal(t, []model.SamplePair{{Timestamp: model.Time(ts.UnixMilli()), Value: 2}, {Timestamp: model.Time(ts.UnixMilli() + 15000), Value: 3}}, m[1].Values)

	names, err := q.MetricNames(ctx, `{job="a"}`, ts, ts)
	require.NoError(t, err)
	assert.Equal(t, []string{"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running"}, names)

	jobs, err := q.LabelValues(ctx, "job", "", ts, ts)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, jobs)

	_, err = q.Query(ctx, `bad(`, ts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unclosed left parenthesis")
	assert.Contains(t, err.Error(), srv.URL)
}

func TestRemoteErrors(t *testing.T) {
	_, err := NewRemote("ftp://x", nil)
	require.ErrorContains(t, err, "not an http(s) URL")
	_, err = NewRemote("", nil)
	require.Error(t, err)

	// A closed server gives a connection error naming the server.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	q, err := NewRemote(url, nil)
	require.NoError(t, err)
	_, err = q.Query(context.Background(), "up", time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), url)

	_, err = q.QueryRange(context.Background(), "up", time.Now(), time.Now(), 0)
	require.ErrorContains(t, err, "step")
}
