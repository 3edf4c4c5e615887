package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bounds"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
)

// boundQueries checks every query's JSON against bounds.Query before any
// is decoded: the queries over a limit are answered at once (HTTP 400 from
// downstream, a sentence naming the field); the request of the others is
// returned to be run (nil when none is left).
func boundQueries(req *backend.QueryDataRequest) (*backend.QueryDataRequest, map[string]backend.DataResponse) {
	var refused map[string]backend.DataResponse
	keep := req.Queries[:0:0]
	for _, q := range req.Queries {
		if err := bounds.Check(q.JSON, bounds.Query); err != nil {
			if refused == nil {
				refused = map[string]backend.DataResponse{}
			}
			refused[q.RefID] = errorResponse(queries.Badf("%s", err.Error()))
			continue
		}
		keep = append(keep, q)
	}
	if refused == nil {
		return req, nil
	}
	if len(keep) == 0 {
		return nil, refused
	}
	r := *req
	r.Queries = keep
	return &r, refused
}
