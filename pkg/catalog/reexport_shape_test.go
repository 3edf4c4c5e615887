package catalog

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReExportersByShape: by hand, from the label sets of each case.
func TestReExportersByShape(t *testing.T) {
	urls := map[string]string{"a": "http://10.0.0.1:8000/metrics", "b": "http://10.0.0.2:8000/metrics", "r": "http://10.0.0.9:8001/metrics"}
	s := func(ls ...string) *model.Sample {
		m := model.Metric{}
		for i := 0; i+1 < len(ls); i += 2 {
			m[model.LabelName(ls[i])] = model.LabelValue(ls[i+1])
		}
		return &model.Sample{Metric: m}
	}
	got := ReExportersByShape(model.Vector{
		// r copies a and b under four label names: a re-exporter of both.
		s("job", "r", "server", "http://10.0.0.1:8000"),
		s("job", "r", "upstream", "http://10.0.0.2:8000/"),
		// a labels its own series with its own URL: not a re-exporter.
		s("job", "a", "endpoint", "http://10.0.0.1:8000", "model_name", "m", "engine", "0"),
		// b's own series (model_name, engine) name a server that is no target: an engine.
		s("job", "b", "backend", "http://10.9.9.9:8000", "model_name", "m", "engine", "0"),
		// g copies a server that is no target, without the engine's labels: a re-exporter.
		s("job", "g", "backend", "grpc://10.7.7.7:30000"),
	}, urls)
	assert.Equal(t, map[string][]string{
		"r": {"http://10.0.0.1:8000", "http://10.0.0.2:8000/"},
		"g": {"grpc://10.7.7.7:30000"},
	}, got)
}

// TestReExportShapePromQLParses: the shape query groups by each label with the engine's own labels.
func TestReExportShapePromQLParses(t *testing.T) {
	q, err := ReExportShapePromQL(Scope{Targets: []string{"a", "r"}})
	require.NoError(t, err)
	parse(t, q)
	for _, l := range ReExportLabels {
		assert.Contains(t, q, "group by (job, "+l+", model_name, engine) (")
	}
}
