package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
)

// registry maps each queryType to its request struct and run function. Adding a query type
// is one line here (and one file holding the type, one golden file, one front-end registry
// entry: docs/architecture.md).
var registry = []*Type{
	register("latency", false, latencyEnums, runLatency),
	register("breakdown", false, breakdownEnums, runBreakdown),
	register("throughput", false, nil, runThroughput),
	register("saturation", false, nil, runSaturation),
	register("targets", true, targetsEnums, runTargets),
	register("raw", true, nil, runRaw),
	register("gpu", true, gpuEnums, runGPU),
	register("events", false, nil, runEvents),
	register("diagnosis", false, diagnosisEnums, runDiagnosis),
	register("slo", false, sloEnums, runSLO),
	register("burn_rate", false, burnRateEnums, runBurnRate),
	register("goodput", false, nil, runGoodput),
	register("buckets", false, bucketsEnums, runBuckets),
	register("benchmark", false, nil, runBenchmark),
	register("regression", false, regressionEnums, runRegression),
	register("probe", false, probeEnums, runProbe),
	register("cost", false, costEnums, runCost),
	register("capacity", false, capacityEnums, runCapacity),
	register("errors", false, errorsEnums, runErrors),
	register("tokens", false, tokensEnums, runTokens),
}

// Type is one query type: its name (the queryType of the JSON), whether its targets field may
// name GPU agents, the enumerated values of its fields (the query schema), a constructor of
// its request struct and its run function.
type Type struct {
	Name            string
	agentsAsTargets bool
	enums           map[string][]string
	new             func() Request
	run             func(ctx context.Context, env *fetch.Env, p fetch.Plan, req Request) (data.Frames, error)
}

// register builds the Type of a request struct T from its run function.
func register[T any, P interface {
	*T
	Request
}](name string, agentsAsTargets bool, enums map[string][]string, run func(ctx context.Context, env *fetch.Env, p fetch.Plan, q P) (data.Frames, error)) *Type {
	return &Type{
		Name: name, agentsAsTargets: agentsAsTargets, enums: enums,
		new: func() Request { return P(new(T)) },
		run: func(ctx context.Context, env *fetch.Env, p fetch.Plan, req Request) (data.Frames, error) {
			return run(ctx, env, p, req.(P))
		},
	}
}

// Lookup returns the query type of a name.
func Lookup(name string) (*Type, bool) {
	for _, t := range registry {
		if t.Name == name {
			return t, true
		}
	}
	return nil, false
}

// Names returns every query type's name in registry order.
func Names() []string {
	out := make([]string, 0, len(registry))
	for _, t := range registry {
		out = append(out, t.Name)
	}
	return out
}
