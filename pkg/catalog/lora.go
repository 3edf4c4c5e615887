package catalog

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LoRAInfo is one sample of vLLM's lora_requests_info gauge, read properly: the gauge's value
// is not a count but the Unix time (seconds) of its last update (prometheus_client's
// set_to_current_time), and the adapters are label values joined by commas.
type LoRAInfo struct {
	// Running and Waiting are the adapters with running and waiting requests, in page order,
	// without empty names (an idle engine has running_lora_adapters="").
	Running, Waiting []string
	// MaxLoRA is the max_lora label (adapter slots per batch); -1 when missing or not a number.
	MaxLoRA int
	// Updated is the time of the last update, from the sample's value; zero when the value is
	// not a positive finite number.
	Updated time.Time
}

// ParseLoRAInfo reads one lora_requests_info series: its labels and value. Adapter names are
// split on commas and trimmed; duplicates are kept once.
func ParseLoRAInfo(labels map[string]string, value float64) LoRAInfo {
	info := LoRAInfo{Running: splitAdapters(labels["running_lora_adapters"]), Waiting: splitAdapters(labels["waiting_lora_adapters"]), MaxLoRA: -1}
	if n, err := strconv.Atoi(strings.TrimSpace(labels["max_lora"])); err == nil && n >= 0 {
		info.MaxLoRA = n
	}
	if value > 0 && !math.IsInf(value, 0) && !math.IsNaN(value) {
		sec, frac := math.Modf(value)
		info.Updated = time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC()
	}
	return info
}

func splitAdapters(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
