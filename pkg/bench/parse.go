package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MaxFileSize caps a result file (bytes): a vLLM result with
// --save-detailed holds every request's ITLs and can reach tens of MB.
const MaxFileSize = 256 << 20

// NameFromPath returns a baseline's name from its file path: the base name
// without its extension ("llama-a100-rate8.json" → "llama-a100-rate8").
func NameFromPath(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// Parse reads one result file in any of the three formats (detected from
// its fields) and returns its baselines: one for a vLLM result or a
// genai-perf export, one per benchmark of a GuideLLM report. name names
// them. The error is one sentence naming what is wrong.
func Parse(name string, data []byte) ([]Baseline, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d MiB a result file may have", name, len(data), MaxFileSize>>20)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(pythonJSON(data), &top); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object (%v)", name, err)
	}
	var out []Baseline
	var err error
	switch {
	case has(top, "benchmarks"):
		out, err = parseGuideLLM(top)
	case isObject(top["time_to_first_token"]) || isObject(top["request_throughput"]) || isObject(top["request_latency"]):
		var b Baseline
		b, err = parseGenAI(top)
		out = []Baseline{b}
	case has(top, "request_throughput") || has(top, "mean_ttft_ms") || has(top, "completed"):
		var b Baseline
		b, err = parseVLLM(top)
		out = []Baseline{b}
	default:
		return nil, fmt.Errorf("%s: neither a vllm bench serve result (request_throughput, mean_ttft_ms), a GuideLLM report (benchmarks) nor a genai-perf profile export (time_to_first_token, request_throughput objects)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i := range out {
		out[i].Name = name
		if len(out) > 1 {
			out[i].Name = fmt.Sprintf("%s#%d", name, i)
		}
		out[i].finish()
		if len(out[i].Stages) == 0 && math.IsNaN(out[i].OutputThroughput) && math.IsNaN(out[i].RequestThroughput) {
			return nil, fmt.Errorf("%s: a %s result without any latency statistic or throughput", out[i].Name, out[i].Tool)
		}
	}
	return out, nil
}

// pythonJSON rewrites the non-standard tokens Python's json module writes
// for non-finite floats (NaN, Infinity, -Infinity) outside strings as
// strings ("NaN", "inf", "-inf") so that encoding/json accepts the file; the
// number readers below turn those strings back into floats.
func pythonJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	var out bytes.Buffer
	out.Grow(len(data) + 16)
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inStr {
			out.WriteByte(c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out.WriteByte(c)
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out.WriteString(`"NaN"`)
			i += 2
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out.WriteString(`"-inf"`)
			i += 8
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out.WriteString(`"inf"`)
			i += 7
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

func has(o map[string]json.RawMessage, k string) bool {
	v, ok := o[k]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

// num reads an optional number field: absent or null gives NaN and no
// error; a number, or a string holding one ("inf", "NaN", "8"), its value;
// anything else an error naming the field.
func num(o map[string]json.RawMessage, field string) (float64, error) {
	v, ok := o[field]
	if !ok {
		return math.NaN(), nil
	}
	return numValue(field, v)
}

func numValue(field string, v json.RawMessage) (float64, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return math.NaN(), nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err == nil {
		return f, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "inf", "+inf", "infinity":
			return math.Inf(1), nil
		case "-inf", "-infinity":
			return math.Inf(-1), nil
		case "nan", "":
			return math.NaN(), nil
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f, nil
		}
	}
	return math.NaN(), fmt.Errorf("%s: %s is not a number", field, short(v))
}

func short(v json.RawMessage) string {
	s := string(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

func str(o map[string]json.RawMessage, field string) string {
	var s string
	if v, ok := o[field]; ok {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

func object(o map[string]json.RawMessage, field string) (map[string]json.RawMessage, error) {
	v, ok := o[field]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("%s: %s is not an object", field, short(v))
	}
	return m, nil
}

// checkLatency refuses negative or NaN-free nonsense: a latency must be a
// finite number ≥ 0 seconds.
func checkLatency(field string, v float64) error {
	if math.IsNaN(v) {
		return nil
	}
	if v < 0 || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %g is not a latency (a finite number ≥ 0)", field, v)
	}
	return nil
}

func checkRate(field string, v float64, infOK bool) error {
	if math.IsNaN(v) || (infOK && math.IsInf(v, 1)) {
		return nil
	}
	if v < 0 || math.IsInf(v, 0) {
		return fmt.Errorf("%s: %g must be a finite number ≥ 0", field, v)
	}
	return nil
}

// vllmPercentileKey matches vLLM's percentile fields: p99_ttft_ms, p99.9_itl_ms.
var vllmPercentileKey = regexp.MustCompile(`^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$`)

// vllmStage maps vLLM's metric names to the plugin's stage names.
var vllmStage = map[string]string{"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}

// parseVLLM reads a `vllm bench serve --save-result` JSON: request_throughput,
// output_throughput, total_token_throughput (per second), mean_/median_/std_
// and p<N>_ of ttft, tpot, itl and e2el in milliseconds, request_rate (a
// number or "inf"), max_concurrency (null when unlimited), completed,
// duration (s), total_input_tokens, total_output_tokens, model_id.
func parseVLLM(top map[string]json.RawMessage) (Baseline, error) {
	b := newBaseline(ToolVLLM)
	b.Model = str(top, "model_id")
	var err error
	for _, f := range []struct {
		key string
		dst *float64
		inf bool
	}{
		{"request_throughput", &b.RequestThroughput, false},
		{"output_throughput", &b.OutputThroughput, false},
		{"total_token_throughput", &b.TotalThroughput, false},
		{"request_rate", &b.RequestRate, true},
		{"max_concurrency", &b.Concurrency, false},
		{"completed", &b.Completed, false},
		{"duration", &b.Duration, false},
	} {
		if *f.dst, err = num(top, f.key); err != nil {
			return b, err
		}
		if err := checkRate(f.key, *f.dst, f.inf); err != nil {
			return b, err
		}
	}
	prompts, err := num(top, "num_prompts")
	if err != nil {
		return b, err
	}
	if prompts >= b.Completed {
		b.Failed = prompts - b.Completed
	}
	in, err := num(top, "total_input_tokens")
	if err != nil {
		return b, err
	}
	out, err := num(top, "total_output_tokens")
	if err != nil {
		return b, err
	}
	if b.Completed > 0 {
		b.MeanInputTokens, b.MeanOutputTokens = in/b.Completed, out/b.Completed
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasSuffix(k, "_ms") {
			continue
		}
		var stat, metric string
		var p float64
		if m := vllmPercentileKey.FindStringSubmatch(k); m != nil {
			p, _ = strconv.ParseFloat(m[1], 64)
			if p < 0 || p > 100 {
				return b, fmt.Errorf("%s: percentile %g is not between 0 and 100", k, p)
			}
			stat, metric = "p", m[2]
		} else {
			parts := strings.SplitN(strings.TrimSuffix(k, "_ms"), "_", 2)
			if len(parts) != 2 || vllmStage[parts[1]] == "" {
				continue
			}
			stat, metric = parts[0], parts[1]
			if stat != "mean" && stat != "median" && stat != "std" {
				continue
			}
		}
		v, err := num(top, k)
		if err != nil {
			return b, err
		}
		if err := checkLatency(k, v); err != nil {
			return b, err
		}
		if math.IsNaN(v) {
			continue
		}
		stage := vllmStage[metric]
		m, ok := b.Stages[stage]
		if !ok {
			m = newMetric()
		}
		s := v / 1000
		switch stat {
		case "p":
			m.Percentiles = append(m.Percentiles, Percentile{p, s})
		case "mean":
			m.Mean = s
		case "median":
			m.Median = s
		case "std":
			m.Std = s
		}
		b.Stages[stage] = m
	}
	return b, nil
}

// guideLLMPercentile matches GuideLLM's percentile keys: p50, p95, p99, p999 (99.9), p001 (0.1).
var guideLLMPercentile = regexp.MustCompile(`^p(\d+)$`)

// guideLLMPercentileValue turns GuideLLM's key digits into percent: "99" →
// 99, "999" → 99.9, "001" → 0.1, "01" → 1, "05" → 5.
func guideLLMPercentileValue(d string) float64 {
	switch {
	case len(d) == 3:
		v, _ := strconv.ParseFloat(d, 64)
		return v / 10
	default:
		v, _ := strconv.ParseFloat(d, 64)
		return v
	}
}

// guideLLMStages maps GuideLLM's metrics to stages with their unit factor to seconds.
var guideLLMStages = []struct {
	key, stage string
	scale      float64
}{
	{"time_to_first_token_ms", "ttft", 1e-3},
	{"time_per_output_token_ms", "tpot", 1e-3},
	{"inter_token_latency_ms", "itl", 1e-3},
	{"request_latency", "e2e", 1},
}

// parseGuideLLM reads a GuideLLM report: {"benchmarks": [{"args": {"strategy":
// {"type_", "rate", "streams"}}, "metrics": {<metric>: {"successful": {"mean",
// "median", "std_dev", "percentiles": {"p50", "p90", "p95", "p99", …}}}}}]},
// with time_to_first_token_ms, time_per_output_token_ms and
// inter_token_latency_ms in milliseconds, request_latency in seconds,
// requests_per_second, output_tokens_per_second, tokens_per_second,
// request_concurrency, prompt_token_count and output_token_count.
func parseGuideLLM(top map[string]json.RawMessage) ([]Baseline, error) {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(top["benchmarks"], &list); err != nil {
		return nil, fmt.Errorf("benchmarks: %s is not a list of benchmark objects", short(top["benchmarks"]))
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("benchmarks: the report holds no benchmark")
	}
	var out []Baseline
	for i, bm := range list {
		f := fmt.Sprintf("benchmarks[%d]", i)
		if bm == nil {
			return nil, fmt.Errorf("%s: null is not a benchmark object", f)
		}
		b := newBaseline(ToolGuideLLM)
		metrics, err := object(bm, "metrics")
		if err != nil {
			return nil, fmt.Errorf("%s.%w", f, err)
		}
		if metrics == nil {
			return nil, fmt.Errorf("%s.metrics: missing; a GuideLLM benchmark carries its statistics there", f)
		}
		stat := func(key string) (map[string]json.RawMessage, error) {
			m, err := object(metrics, key)
			if err != nil || m == nil {
				return nil, err
			}
			s, err := object(m, "successful")
			if err != nil {
				return nil, fmt.Errorf("%s.%w", key, err)
			}
			return s, nil
		}
		for _, g := range guideLLMStages {
			s, err := stat(g.key)
			if err != nil {
				return nil, fmt.Errorf("%s.metrics.%w", f, err)
			}
			if s == nil {
				continue
			}
			field := f + ".metrics." + g.key + ".successful"
			m := newMetric()
			for _, x := range []struct {
				k   string
				dst *float64
			}{{"mean", &m.Mean}, {"median", &m.Median}, {"std_dev", &m.Std}} {
				v, err := num(s, x.k)
				if err != nil {
					return nil, fmt.Errorf("%s.%w", field, err)
				}
				if err := checkLatency(field+"."+x.k, v); err != nil {
					return nil, err
				}
				*x.dst = v * g.scale
			}
			ps, err := object(s, "percentiles")
			if err != nil {
				return nil, fmt.Errorf("%s.%w", field, err)
			}
			for k, raw := range ps {
				mm := guideLLMPercentile.FindStringSubmatch(k)
				if mm == nil {
					continue
				}
				v, err := numValue(field+".percentiles."+k, raw)
				if err != nil {
					return nil, err
				}
				if err := checkLatency(field+".percentiles."+k, v); err != nil {
					return nil, err
				}
				if !math.IsNaN(v) {
					m.Percentiles = append(m.Percentiles, Percentile{guideLLMPercentileValue(mm[1]), v * g.scale})
				}
			}
			b.Stages[g.stage] = m
		}
		for _, x := range []struct {
			k   string
			dst *float64
		}{
			{"requests_per_second", &b.RequestThroughput},
			{"output_tokens_per_second", &b.OutputThroughput},
			{"tokens_per_second", &b.TotalThroughput},
			{"request_concurrency", &b.MeanConcurrency},
			{"prompt_token_count", &b.MeanInputTokens},
			{"output_token_count", &b.MeanOutputTokens},
		} {
			s, err := stat(x.k)
			if err != nil {
				return nil, fmt.Errorf("%s.metrics.%w", f, err)
			}
			if s == nil {
				continue
			}
			v, err := num(s, "mean")
			if err != nil {
				return nil, fmt.Errorf("%s.metrics.%s.successful.%w", f, x.k, err)
			}
			if err := checkRate(f+".metrics."+x.k+".successful.mean", v, false); err != nil {
				return nil, err
			}
			*x.dst = v
		}
		if tot, err := object(bm, "request_totals"); err == nil && tot != nil {
			if v, err := num(tot, "successful"); err == nil && v >= 0 {
				b.Completed = v
			}
			if v, err := num(tot, "errored"); err == nil && v >= 0 {
				b.Failed = v
			}
		}
		if err := guideLLMLoad(f, bm, &b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// guideLLMLoad reads the strategy the benchmark ran with (args.strategy, or
// the older top-level "strategy"): constant/poisson rate → RequestRate,
// concurrent streams → Concurrency, synchronous → concurrency 1,
// throughput → a burst. It also picks the model from the request loader or
// the backend if either names one.
func guideLLMLoad(f string, bm map[string]json.RawMessage, b *Baseline) error {
	args, err := object(bm, "args")
	if err != nil {
		return fmt.Errorf("%s.%w", f, err)
	}
	src, field := bm, f
	if args != nil && has(args, "strategy") {
		src, field = args, f+".args"
	}
	st, err := object(src, "strategy")
	if err != nil {
		return fmt.Errorf("%s.%w", field, err)
	}
	if st != nil {
		kind := str(st, "type_")
		rate, err := num(st, "rate")
		if err != nil {
			return fmt.Errorf("%s.strategy.%w", field, err)
		}
		streams, err := num(st, "streams")
		if err != nil {
			return fmt.Errorf("%s.strategy.%w", field, err)
		}
		switch kind {
		case "synchronous":
			b.Concurrency = 1
		case "concurrent":
			b.Concurrency = streams
		case "throughput":
			b.RequestRate = math.Inf(1)
			b.Concurrency = streams
		default: // constant, poisson, async
			b.RequestRate = rate
		}
		if err := checkRate(field+".strategy.rate", b.RequestRate, true); err != nil {
			return err
		}
		if err := checkRate(field+".strategy.streams", b.Concurrency, false); err != nil {
			return err
		}
	}
	for _, k := range []string{"worker", "backend"} {
		if w, err := object(bm, k); err == nil && w != nil && b.Model == "" {
			b.Model = firstString(w, "backend_model", "model")
		}
	}
	return nil
}

// genAIStages maps genai-perf's metrics to stages. Their values carry a
// "unit" (ms in current releases; ns and s are also accepted).
var genAIStages = []struct{ key, stage string }{
	{"time_to_first_token", "ttft"},
	{"inter_token_latency", "itl"},
	{"request_latency", "e2e"},
}

// genAIPercentile matches genai-perf's statistic keys p1 … p99.
var genAIPercentile = regexp.MustCompile(`^p(\d+(?:\.\d+)?)$`)

// parseGenAI reads genai-perf's profile_export_genai_perf.json: per metric
// an object {"unit", "avg", "min", "max", "std", "p1" … "p99"};
// request_throughput {"unit": "requests/sec", "avg"},
// output_token_throughput {"unit": "tokens/sec", "avg"},
// input_sequence_length and output_sequence_length in tokens, and the run's
// load in input_config (concurrency, request_rate; newer releases put them
// under input_config.perf_analyzer.stimulus).
func parseGenAI(top map[string]json.RawMessage) (Baseline, error) {
	b := newBaseline(ToolGenAI)
	for _, g := range genAIStages {
		o, err := object(top, g.key)
		if err != nil {
			return b, err
		}
		if o == nil {
			continue
		}
		unit := strings.ToLower(str(o, "unit"))
		scale := 1e-3
		switch unit {
		case "ms", "":
		case "ns":
			scale = 1e-9
		case "us", "µs":
			scale = 1e-6
		case "s", "sec":
			scale = 1
		default:
			return b, fmt.Errorf("%s.unit: %q is not a time unit (ms, ns, us or s)", g.key, unit)
		}
		m := newMetric()
		for k, raw := range o {
			var dst *float64
			p := math.NaN()
			switch k {
			case "avg":
				dst = &m.Mean
			case "std":
				dst = &m.Std
			default:
				mm := genAIPercentile.FindStringSubmatch(k)
				if mm == nil {
					continue
				}
				p, _ = strconv.ParseFloat(mm[1], 64)
				if p > 100 {
					return b, fmt.Errorf("%s.%s: percentile %g is not between 0 and 100", g.key, k, p)
				}
			}
			v, err := numValue(g.key+"."+k, raw)
			if err != nil {
				return b, err
			}
			if err := checkLatency(g.key+"."+k, v); err != nil {
				return b, err
			}
			if math.IsNaN(v) {
				continue
			}
			if dst != nil {
				*dst = v * scale
			} else {
				m.Percentiles = append(m.Percentiles, Percentile{p, v * scale})
			}
		}
		b.Stages[g.stage] = m
	}
	for _, x := range []struct {
		k   string
		dst *float64
	}{
		{"request_throughput", &b.RequestThroughput},
		{"output_token_throughput", &b.OutputThroughput},
		{"input_sequence_length", &b.MeanInputTokens},
		{"output_sequence_length", &b.MeanOutputTokens},
	} {
		o, err := object(top, x.k)
		if err != nil {
			return b, err
		}
		if o == nil {
			continue
		}
		v, err := num(o, "avg")
		if err != nil {
			return b, fmt.Errorf("%s.%w", x.k, err)
		}
		if err := checkRate(x.k+".avg", v, false); err != nil {
			return b, err
		}
		*x.dst = v
	}
	if b.RequestThroughput > 0 && b.MeanInputTokens > 0 && b.OutputThroughput >= 0 {
		b.TotalThroughput = b.OutputThroughput + b.RequestThroughput*b.MeanInputTokens
	}
	cfg, err := object(top, "input_config")
	if err != nil {
		return b, err
	}
	if cfg != nil {
		b.Model = firstString(cfg, "model", "model_names")
		load, field := cfg, "input_config"
		if pa, err := object(cfg, "perf_analyzer"); err == nil && pa != nil {
			if st, err := object(pa, "stimulus"); err == nil && st != nil {
				load, field = st, "input_config.perf_analyzer.stimulus"
			}
		}
		if b.Concurrency, err = num(load, "concurrency"); err != nil {
			return b, fmt.Errorf("%s.%w", field, err)
		}
		if b.RequestRate, err = num(load, "request_rate"); err != nil {
			return b, fmt.Errorf("%s.%w", field, err)
		}
		if err := checkRate(field+".concurrency", b.Concurrency, false); err != nil {
			return b, err
		}
		if err := checkRate(field+".request_rate", b.RequestRate, true); err != nil {
			return b, err
		}
		if b.Concurrency == 0 {
			b.Concurrency = math.NaN()
		}
		if b.RequestRate == 0 {
			b.RequestRate = math.NaN()
		}
	}
	return b, nil
}

// firstString returns the first of keys holding a string or a list whose first element is a string.
func firstString(o map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		v, ok := o[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s != "" {
			return s
		}
		var l []string
		if json.Unmarshal(v, &l) == nil && len(l) > 0 {
			return l[0]
		}
	}
	return ""
}
