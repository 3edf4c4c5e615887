package settings

import "testing"

// TestTargetUsesGPU pins the one rule the gpu query's serving label, the
// diagnosis's GPU reads and the cost query's energy share: a target uses GPU
// g of agent a when it names a and lists no GPUs, or lists g.
func TestTargetUsesGPU(t *testing.T) {
	all := Target{Name: "vllm-a", Agent: "node-1"}
	two := Target{Name: "vllm-b", Agent: "node-1", GPUs: []int{2, 3}}
	none := Target{Name: "vllm-c"}
	for _, c := range []struct {
		name       string
		t          Target
		agent, gpu string
		want       bool
	}{
		{"every GPU of its agent", all, "node-1", "5", true},
		{"another agent", all, "node-2", "0", false},
		{"a listed GPU", two, "node-1", "3", true},
		{"an unlisted GPU", two, "node-1", "1", false},
		{"a gpu label that is no index, listed GPUs", two, "node-1", "GPU-abc", false},
		{"a gpu label that is no index, no list", all, "node-1", "GPU-abc", true},
		{"no agent named", none, "", "0", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.t.UsesGPU(c.agent, c.gpu); got != c.want {
				t.Errorf("UsesGPU(%q, %q) = %v, want %v", c.agent, c.gpu, got, c.want)
			}
		})
	}
}
