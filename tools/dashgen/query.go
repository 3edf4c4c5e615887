package main

import (
	"encoding/json"
	"maps"
	"reflect"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// pluginID is the Inferscope data source's plugin id.
const pluginID = "inferscope-llm-datasource"

// dsRef points every panel and variable at the data source chosen by the
// dashboard's `datasource` variable.
var dsRef = common.DataSourceRef{Type: ptr(pluginID), Uid: ptr("${datasource}")}

func ptr[T any](v T) *T { return &v }

// Query is one Inferscope query as a panel target: the query JSON the plugin
// decodes (queryType and its fields) plus the refId and data source Grafana
// adds. Fields holds the plugin's own keys, flattened into the JSON object.
type Query struct {
	RefID  string
	Fields map[string]any
}

// MarshalJSON writes refId, datasource and the plugin's fields as one object.
func (q Query) MarshalJSON() ([]byte, error) {
	m := maps.Clone(q.Fields)
	if m == nil {
		m = map[string]any{}
	}
	m["refId"] = q.RefID
	m["datasource"] = dsRef
	return json.Marshal(m)
}

// ImplementsDataqueryVariant tells cog that Query is a data query.
func (Query) ImplementsDataqueryVariant() {}

// DataqueryType is the plugin id.
func (Query) DataqueryType() string { return pluginID }

// Validate accepts every query: the plugin validates them (and a test runs
// every generated query through the built plugin).
func (Query) Validate() error { return nil }

// Equals compares refId and fields.
func (q Query) Equals(other variants.Dataquery) bool {
	o, ok := other.(Query)
	return ok && o.RefID == q.RefID && reflect.DeepEqual(o.Fields, q.Fields)
}

// queryBuilder adapts a Query to cog's builder interface.
type queryBuilder struct{ q Query }

var _ cog.Builder[variants.Dataquery] = queryBuilder{}

func (b queryBuilder) Build() (variants.Dataquery, error) { return b.q, nil }

// query builds a target with refId "A" from alternating key, value pairs.
func query(kv ...any) queryBuilder { return queryRef("A", kv...) }

func queryRef(ref string, kv ...any) queryBuilder {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return queryBuilder{Query{RefID: ref, Fields: m}}
}
