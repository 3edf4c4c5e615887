package plugin

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// newInstanceForTest builds an instance over an existing querier, without a
// collector: tests feed samples straight into a TSDB.
func newInstanceForTest(s settings.Settings, q source.Querier) *Instance {
	inst := newInstance(slog.Default())
	inst.settings, inst.querier = s, q
	return inst
}

// decodeQuery decodes q as QueryData routes it: by its QueryType, else the queryType of its JSON.
func decodeQuery(q backend.DataQuery, s *settings.Settings) (*queries.Decoded, error) {
	name := q.QueryType
	if name == "" {
		var m struct {
			QueryType string `json:"queryType"`
		}
		_ = json.Unmarshal(q.JSON, &m)
		name = m.QueryType
	}
	return queries.Decode(name, q, s)
}

// diagnosisInput is the diagnosis query's input for a decoded diagnosis query over the
// instance's store.
func (i *Instance) diagnosisInput(ctx context.Context, d *queries.Decoded) (diagnose.Input, *fetch.Run, error) {
	return queries.DiagnosisInput(ctx, i.env(), d.Plan, d.Req.(*queries.Diagnosis).Models)
}
