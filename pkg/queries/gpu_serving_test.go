package queries

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestServingNamesTheInferenceTargetsOfAGPU (issue 33): a GPU series is
// named by the inference targets it serves, not only by its agent. Settings:
// node-1 carries two targets, chat on GPUs 0 and 1 and embed on GPU 2;
// node-2 carries one target with no gpus list (all its GPUs); node-3 is an
// agent no target names.
func TestServingNamesTheInferenceTargetsOfAGPU(t *testing.T) {
	s := &settings.Settings{
		Targets: []settings.Target{
			{Name: "chat", Agent: "node-1", GPUs: []int{0, 1}},
			{Name: "embed", Agent: "node-1", GPUs: []int{2}},
			{Name: "batch", Agent: "node-2"},
			{Name: "rerank", Agent: "node-2", GPUs: []int{3}},
		},
		GPUAgents: []settings.GPUAgent{{Name: "node-1"}, {Name: "node-2"}, {Name: "node-3"}},
	}
	for _, c := range []struct{ agent, gpu, want string }{
		{"node-1", "0", "chat on node-1"},
		{"node-1", "1", "chat on node-1"},
		{"node-1", "2", "embed on node-1"},
		{"node-1", "7", "node-1"}, // no target lists GPU 7
		{"node-2", "0", "batch on node-2"},
		{"node-2", "3", "batch, rerank on node-2"},
		{"node-3", "0", "node-3"},
	} {
		assert.Equal(t, c.want, Serving(s, c.agent, c.gpu), "agent %s GPU %s", c.agent, c.gpu)
	}

	series := []analysis.Series{
		{Labels: map[string]string{"job": "node-1", "gpu": "2"}},
		{Labels: map[string]string{"job": "node-3"}}, // no GPU index: left alone
		{Labels: nil},
	}
	labelServing(s, series)
	assert.Equal(t, "embed on node-1", series[0].Labels[ServingLabel])
	assert.NotContains(t, series[1].Labels, ServingLabel)
}
