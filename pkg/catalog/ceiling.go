package catalog

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxRunningGauges are the gauges in which engines export the most requests their scheduler
// runs at once (vLLM's --max-num-seqs): SGLang's max_running_requests (first releases, 0.3)
// and TensorRT-LLM's max_num_active_requests. vLLM exports no such gauge.
var MaxRunningGauges = []string{"sglang:max_running_requests", "trtllm_max_num_active_requests"}

// MaxNumSeqsLabel is the label of a config-info gauge (a family named *_config_info whose value
// is 1 and whose labels are the configuration) that carries --max-num-seqs. vLLM's
// vllm:cache_config_info carries the cache configuration only (block_size, num_gpu_blocks, …,
// not max_num_seqs); a build or fork that exports the scheduler configuration the same way is
// read through this label.
const MaxNumSeqsLabel = "max_num_seqs"

// RunningCeilingPromQL returns the two queries that read an engine's exported running ceiling
// for the given targets, each by job:
//
//	max by (job) ({__name__=~"sglang:max_running_requests|trtllm_max_num_active_requests", job=~"a|b"})
//	max by (job, max_num_seqs) ({__name__=~".+_config_info", max_num_seqs!="", job=~"a|b"})
//
// The second's value is 1; the ceiling is its max_num_seqs label. Errors: no target, or an
// empty target name.
func RunningCeilingPromQL(targets []string) (gauges, info string, err error) {
	if len(targets) == 0 {
		return "", "", fmt.Errorf("catalog: running ceiling needs at least one target")
	}
	jobs, err := anyOf("target", targets)
	if err != nil {
		return "", "", err
	}
	names := make([]string, len(MaxRunningGauges))
	for i, n := range MaxRunningGauges {
		names[i] = regexp.QuoteMeta(n)
	}
	gauges = `max by (job) ({__name__=~"` + strings.Join(names, "|") + `", job=~` + jobs + `})`
	info = `max by (job, ` + MaxNumSeqsLabel + `) ({__name__=~".+_config_info", ` + MaxNumSeqsLabel + `!="", job=~` + jobs + `})`
	return gauges, info, nil
}
