package frames

import (
	"maps"
	"math"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// stringColumn appends to f a string field called name with get(row) for
// every row.
func stringColumn[R any](f *data.Frame, rows []R, name string, get func(R) string) {
	vals := make([]string, len(rows))
	for i, r := range rows {
		vals[i] = get(r)
	}
	f.Fields = append(f.Fields, data.NewField(name, nil, vals))
}

// groupLabelColumns appends to f one string column per group label name that
// any of rows carries (labelsOf reads a row's labels), in name order; a row
// without the label has "".
func groupLabelColumns[R any](f *data.Frame, rows []R, labelsOf func(R) map[string]string) {
	names := map[string]bool{}
	for _, r := range rows {
		for k := range labelsOf(r) {
			names[k] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(names)) {
		stringColumn(f, rows, c, func(r R) string { return labelsOf(r)[c] })
	}
}

// numberColumn appends to f a nullable float64 field called name with the
// given unit and get(row) for every row; NaN and ±Inf become nulls (a
// number field never carries them).
func numberColumn[R any](f *data.Frame, rows []R, name, unit string, get func(R) float64) {
	vals := make([]*float64, len(rows))
	for i, r := range rows {
		if v := get(r); !math.IsNaN(v) && !math.IsInf(v, 0) {
			vals[i] = &v
		}
	}
	fld := data.NewField(name, nil, vals)
	fld.Config = &data.FieldConfig{Unit: unit}
	f.Fields = append(f.Fields, fld)
}

// numericMulti is a numeric-multi response for alert rules: one frame called
// name per value, each with one float64 field called field carrying its
// labels. Without values one empty frame carries the executed query and the
// notices; otherwise the first frame does.
func numericMulti(name, field string, labels []data.Labels, values []float64, m Meta) data.Frames {
	out := make(data.Frames, 0, len(values))
	for k, v := range values {
		f := data.NewFrame(name, data.NewField(field, labels[k], []float64{v}))
		f.Meta = m.frameMeta(data.FrameTypeNumericMulti)
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame(name)
		f.Meta = m.frameMeta(data.FrameTypeNumericMulti)
		out = append(out, f)
	}
	out[0].Meta.Notices = notices(m.Notices)
	return m.seal(out)
}
