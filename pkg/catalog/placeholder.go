package catalog

import "slices"

// placeholderValues are, per engine, label values that stand for "not known" rather than a
// value: TensorRT-LLM's trtllm-serve writes model_name="undefined" and finished_reason="undefined"
// where it has none. Offered as they are, "undefined" became a model in the model list and a
// finish reason in throughput by finished_reason.
var placeholderValues = map[Engine][]string{
	EngineTRTLLM: {"undefined"},
}

// placeholderLabels are the labels whose placeholder values are cleared when results are
// grouped by them.
var placeholderLabels = []string{"model_name", "finished_reason"}

// dropPlaceholders clears, in one engine's chain, the placeholder values of the group labels the
// result is grouped by (label_replace to the empty value removes the label): such series are
// still counted, in the group without that label, never in a group named "undefined".
func dropPlaceholders(e Engine, groups []string, c string) string {
	vals := placeholderValues[e]
	if len(vals) == 0 {
		return c
	}
	for _, l := range placeholderLabels {
		if !slices.Contains(groups, l) {
			continue
		}
		for _, v := range vals {
			c = `label_replace(` + c + `, "` + l + `", "", "` + l + `", "` + v + `")`
		}
	}
	return c
}

// WithoutPlaceholders returns the values that name something (a model, a finish reason),
// dropping every engine's placeholder ("undefined") and empty values, for lists offered to
// users (the models list, the targets table) where the engine of each value is not known.
func WithoutPlaceholders(values []string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		placeholder := v == ""
		for _, vs := range placeholderValues {
			placeholder = placeholder || slices.Contains(vs, v)
		}
		if !placeholder {
			out = append(out, v)
		}
	}
	return out
}
