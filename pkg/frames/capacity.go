package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// CapacityRow is one target's capacity under one SLO profile (the capacity query's table):
// the load it served over the range (req/s), the twin's knee (the highest req/s at which the
// profile holds) with its relative error band, the headroom (knee / load), the days until
// the load trend reaches the knee (+Inf: never, a null in the frame), and the replicas that
// keep each at Utilisation of its knee (NaN, a null, when the profile holds at no load).
type CapacityRow struct {
	Target, Profile       string
	Load, Knee, KneeError float64
	Headroom, DaysToKnee  float64
	Replicas              float64
	Utilisation           float64
	Objectives            string
	// DaysToKneeNote says DaysToKnee in words (added for issue 33, review 8: a null read "no
	// rising trend (or under a day)", which merged a safe target and an unread trend):
	// "in 3.2 days", "past the knee now", "no rising trend" (+Inf) or "no trend read: the
	// range is under a day" (NaN).
	DaysToKneeNote string
	// KneeNote (added for issue 33, review 9) says when the knee is in doubt: "in doubt: …"
	// when the twin's current configuration misses the target's observed p99 (the what-if
	// table's twin check is off), else "".
	KneeNote string
}

// CapacityTable is the capacity query's table frame "capacity": target, profile, load (reqps),
// knee (reqps), knee_error (percentunit), headroom (ratio, "x"), days_to_knee (d),
// replicas, utilisation (percentunit) and objectives (the profile's objectives the twin
// scored, in words); then (added for issue 33) days_to_knee_note, the days in words, and
// knee_note, "in doubt: …" when the twin's current configuration misses the observed p99.
func CapacityTable(rows []CapacityRow, m Meta) data.Frames {
	f := data.NewFrame("capacity")
	stringColumn(f, rows, "target", func(r CapacityRow) string { return r.Target })
	stringColumn(f, rows, "profile", func(r CapacityRow) string { return r.Profile })
	numberColumn(f, rows, "load", "reqps", func(r CapacityRow) float64 { return r.Load })
	numberColumn(f, rows, "knee", "reqps", func(r CapacityRow) float64 { return r.Knee })
	numberColumn(f, rows, "knee_error", "percentunit", func(r CapacityRow) float64 { return r.KneeError })
	numberColumn(f, rows, "headroom", "x", func(r CapacityRow) float64 { return r.Headroom })
	numberColumn(f, rows, "days_to_knee", "d", func(r CapacityRow) float64 { return r.DaysToKnee })
	numberColumn(f, rows, "replicas", "none", func(r CapacityRow) float64 { return r.Replicas })
	numberColumn(f, rows, "utilisation", "percentunit", func(r CapacityRow) float64 { return r.Utilisation })
	stringColumn(f, rows, "objectives", func(r CapacityRow) string { return r.Objectives })
	stringColumn(f, rows, "days_to_knee_note", func(r CapacityRow) string { return r.DaysToKneeNote })
	stringColumn(f, rows, "knee_note", func(r CapacityRow) string { return r.KneeNote })
	return withMeta(f, m)
}

// CapacityParamRow is one calibrated parameter of a target's twin: its name, its value in
// words and its source (data, fit or default), and for the step-time law's rows the held-out
// fit error (relative; NaN, a null, on the other rows; issue 35).
type CapacityParamRow struct {
	Target, Parameter, Value, Source string
	FitError                         float64
}

// CapacityParameters is the frame "capacity_parameters": target, parameter, value, source,
// fit_error (percentunit, null where no fit error applies).
func CapacityParameters(rows []CapacityParamRow, m Meta) data.Frames {
	f := data.NewFrame("capacity_parameters")
	stringColumn(f, rows, "target", func(r CapacityParamRow) string { return r.Target })
	stringColumn(f, rows, "parameter", func(r CapacityParamRow) string { return r.Parameter })
	stringColumn(f, rows, "value", func(r CapacityParamRow) string { return r.Value })
	stringColumn(f, rows, "source", func(r CapacityParamRow) string { return r.Source })
	numberColumn(f, rows, "fit_error", "percentunit", func(r CapacityParamRow) float64 { return r.FitError })
	return withMeta(f, m)
}

// WhatIfRow is one change's predicted outcome on a target's twin at its current load under
// one profile: the load the changed target gets (req/s), TTFT, TPOT and E2E p50 and p99
// (seconds) with the relative error band of each p99 (null where none was validated: the
// current configuration), the lowest attainment over the profile's objectives (0..1), the
// objective it belongs to, whether every objective holds, and the change as advice quoting
// its predicted p99s with their bands (empty for the current configuration; issue 35).
type WhatIfRow struct {
	Target, Profile, Change        string
	Load                           float64
	TTFTP50, TTFTP99, TTFTP99Error float64
	TPOTP50, TPOTP99, TPOTP99Error float64
	E2EP50, E2EP99, E2EP99Error    float64
	Attainment                     float64
	WorstObjective                 string
	Holds                          bool
	Advice                         string
	// Added for issue 33 (review 8): the observed TTFT and E2E p99 over the twin's history
	// (seconds; NaN, a null, on the changes' rows) and a note: on the current row whether
	// the prediction lies in the band around the observed p99 ("off: …" when not,
	// twin.CheckCurrent), on a change's row why it predicts the same as the current one.
	TTFTP99Observed, E2EP99Observed float64
	Note                            string
}

// CapacityWhatIf is the frame "capacity_whatif": target, profile, change, load (reqps),
// ttft_p50, ttft_p99 (s), ttft_p99_error (percentunit), the same for tpot and e2e,
// attainment (percentunit), worst_objective, holds and advice; then (added for issue 33)
// ttft_p99_observed and e2e_p99_observed (s, null but on the current rows) and note.
func CapacityWhatIf(rows []WhatIfRow, m Meta) data.Frames {
	f := data.NewFrame("capacity_whatif")
	stringColumn(f, rows, "target", func(r WhatIfRow) string { return r.Target })
	stringColumn(f, rows, "profile", func(r WhatIfRow) string { return r.Profile })
	stringColumn(f, rows, "change", func(r WhatIfRow) string { return r.Change })
	numberColumn(f, rows, "load", "reqps", func(r WhatIfRow) float64 { return r.Load })
	for _, c := range []struct {
		name         string
		p50, p99, er func(WhatIfRow) float64
	}{
		{"ttft", func(r WhatIfRow) float64 { return r.TTFTP50 }, func(r WhatIfRow) float64 { return r.TTFTP99 }, func(r WhatIfRow) float64 { return r.TTFTP99Error }},
		{"tpot", func(r WhatIfRow) float64 { return r.TPOTP50 }, func(r WhatIfRow) float64 { return r.TPOTP99 }, func(r WhatIfRow) float64 { return r.TPOTP99Error }},
		{"e2e", func(r WhatIfRow) float64 { return r.E2EP50 }, func(r WhatIfRow) float64 { return r.E2EP99 }, func(r WhatIfRow) float64 { return r.E2EP99Error }},
	} {
		numberColumn(f, rows, c.name+"_p50", "s", c.p50)
		numberColumn(f, rows, c.name+"_p99", "s", c.p99)
		numberColumn(f, rows, c.name+"_p99_error", "percentunit", c.er)
	}
	numberColumn(f, rows, "attainment", "percentunit", func(r WhatIfRow) float64 { return r.Attainment })
	stringColumn(f, rows, "worst_objective", func(r WhatIfRow) string { return r.WorstObjective })
	holds := make([]bool, len(rows))
	for i, r := range rows {
		holds[i] = r.Holds
	}
	f.Fields = append(f.Fields, data.NewField("holds", nil, holds))
	stringColumn(f, rows, "advice", func(r WhatIfRow) string { return r.Advice })
	numberColumn(f, rows, "ttft_p99_observed", "s", func(r WhatIfRow) float64 { return r.TTFTP99Observed })
	numberColumn(f, rows, "e2e_p99_observed", "s", func(r WhatIfRow) float64 { return r.E2EP99Observed })
	stringColumn(f, rows, "note", func(r WhatIfRow) string { return r.Note })
	return withMeta(f, m)
}
