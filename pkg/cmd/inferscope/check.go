package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Exit codes of inferscope check.
const (
	exitMet      = 0
	exitBreached = 1
	exitPossibly = 2
	exitUsage    = 3
)

const usage = `usage:
  inferscope check --bench FILE [--profile NAME] [--settings DS.json] [--gpu 1xA100 [--model NAME]]
  inferscope check --prometheus URL --from T --to T [--profile NAME] [--settings DS.json]
                   [--targets a,b] [--models m1,m2] [--by target|model] [--bearer-token-file F]

T is RFC 3339 (2026-11-30T10:00:00Z), Unix seconds, "now" or "now-2h".
Exit codes: 0 met, 1 breached, 2 possibly breached, 3 usage or input error.`

// row is one line of the table: an objective over a baseline or a group.
type row struct {
	profile, objective, signal string
	threshold, target          float64
	source                     string // baseline name or group labels
	requests                   float64
	// value is the observed quantile (benchmark: the reported percentile,
	// NaN when only bracketed); lower/upper its bracket.
	value, lower, upper float64
	// attainment with its bracket (Prometheus); NaN for benchmarks.
	attainment, attLower, attUpper float64
	outcome                        bench.Outcome
	reason                         string
	// unit of threshold and quantile: "" for seconds, "tok/s" for throughput rows.
	unit string
}

// run is the whole command: args without the program name; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage) }
	benchFile := fs.String("bench", "", "benchmark result file (vllm bench serve --save-result, GuideLLM report, genai-perf profile export)")
	promURL := fs.String("prometheus", "", "Prometheus-compatible base URL")
	from := fs.String("from", "", "range start")
	to := fs.String("to", "", "range end")
	profile := fs.String("profile", "", "SLO profile name (default: every profile)")
	settingsFile := fs.String("settings", "", "data-source JSON (jsonData, or an object with a jsonData key); default profiles without it")
	targets := fs.String("targets", "", "comma-separated job names (Prometheus mode)")
	models := fs.String("models", "", "comma-separated model names (Prometheus mode)")
	by := fs.String("by", "", "group rows by target or model (Prometheus mode)")
	tokenFile := fs.String("bearer-token-file", "", "file holding a bearer token for the Prometheus server")
	gpu := fs.String("gpu", "", "also check the expected-performance row of the result's model on this GPU (e.g. 1xA100)")
	modelName := fs.String("model", "", "with --gpu: the model's row to use (default: the model the result names)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitUsage
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "check: unexpected argument %q\n%s\n", fs.Arg(0), usage)
		return exitUsage
	}
	if (*benchFile == "") == (*promURL == "") {
		fmt.Fprintf(stderr, "check: give exactly one of --bench or --prometheus\n%s\n", usage)
		return exitUsage
	}
	if (*gpu != "" || *modelName != "") && *benchFile == "" {
		fmt.Fprintln(stderr, "check: --gpu and --model apply to --bench only")
		return exitUsage
	}
	if *modelName != "" && *gpu == "" {
		fmt.Fprintln(stderr, "check: --model needs --gpu")
		return exitUsage
	}
	table, err := loadExpected(*settingsFile)
	if err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return exitUsage
	}
	profiles, err := loadProfiles(*settingsFile, *profile)
	if err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return exitUsage
	}
	var rows []row
	if *benchFile != "" {
		if *from != "" || *to != "" || *targets != "" || *models != "" || *by != "" {
			fmt.Fprintln(stderr, "check: --from, --to, --targets, --models and --by apply to --prometheus only")
			return exitUsage
		}
		for _, p := range profiles {
			for _, o := range p.Objectives {
				if o.Kind == settings.KindAvailability {
					fmt.Fprintf(stderr, "check: %s/%s skipped: availability is the time a live target was serving, which a benchmark result does not measure (check it with --prometheus)\n", p.Name, o.Name)
				}
			}
		}
		rows, err = checkBench(*benchFile, profiles, table, *gpu, *modelName)
	} else {
		var start, end time.Time
		now := time.Now()
		if start, err = parseTime("--from", *from, now); err == nil {
			end, err = parseTime("--to", *to, now)
		}
		if err == nil && !end.After(start) {
			err = fmt.Errorf("--to: %s is not after --from %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
		}
		if err == nil {
			rows, err = checkPrometheus(ctx, *promURL, *tokenFile, start, end, split(*targets), split(*models), *by, profiles)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "check:", err)
		return exitUsage
	}
	printTable(stdout, rows, *benchFile != "")
	worst := bench.Met
	for _, r := range rows {
		if r.outcome.Severity() > worst.Severity() {
			worst = r.outcome
		}
	}
	switch worst {
	case bench.Breached:
		return exitBreached
	case bench.Possibly:
		return exitPossibly
	}
	return exitMet
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// loadProfiles returns the SLO profiles of the settings file (the defaults
// without one), narrowed to name when given.
func loadProfiles(path, name string) ([]settings.Profile, error) {
	var ps []settings.Profile
	if path == "" {
		ps = settings.DefaultProfiles()
		for i := range ps {
			for j := range ps[i].Objectives {
				if ps[i].Objectives[j].Kind == "" {
					ps[i].Objectives[j].Kind = settings.KindLatency
				}
			}
		}
	} else {
		s, err := loadSettingsFile(path)
		if err != nil {
			return nil, err
		}
		ps = s.Profiles
	}
	if name == "" {
		if len(ps) == 0 {
			return nil, errors.New("--settings: the settings define no SLO profile")
		}
		return ps, nil
	}
	for _, p := range ps {
		if p.Name == name {
			return []settings.Profile{p}, nil
		}
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("--profile: %q is not one of %s", name, strings.Join(names, ", "))
}

// parseTime reads RFC 3339, Unix seconds, "now" or "now-<duration>".
func parseTime(flagName, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, fmt.Errorf("%s: a time is needed (RFC 3339, Unix seconds, now or now-2h)", flagName)
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "now-"):
		d, err := model.ParseDuration(strings.TrimPrefix(s, "now-"))
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %q: %v", flagName, s, err)
		}
		return now.Add(-time.Duration(d)), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && !math.IsInf(f, 0) {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%s: %q is neither RFC 3339, Unix seconds, now nor now-<duration>", flagName, s)
}

// loadExpected returns the expected-performance table of the settings file (the published defaults without one).
func loadExpected(path string) ([]bench.Expectation, error) {
	if path == "" {
		return bench.DefaultExpectations(), nil
	}
	s, err := loadSettingsFile(path)
	if err != nil {
		return nil, err
	}
	return s.ExpectedPerformance, nil
}

// loadSettingsFile reads a data source's settings from path: the jsonData object alone, or a
// provisioning-style object that wraps it under "jsonData".
func loadSettingsFile(path string) (settings.Settings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return settings.Settings{}, fmt.Errorf("--settings: %v", err)
	}
	var wrapper struct {
		JSONData json.RawMessage `json:"jsonData"`
	}
	if json.Unmarshal(data, &wrapper) == nil && len(wrapper.JSONData) > 0 {
		data = wrapper.JSONData
	}
	s, err := settings.Load(data, nil)
	if err != nil {
		return settings.Settings{}, fmt.Errorf("--settings %s: %v", path, err)
	}
	return s, nil
}

// checkBench judges every objective of profiles on each baseline of the file,
// and with gpu the expected-performance row of the model on that GPU.
func checkBench(path string, profiles []settings.Profile, table []bench.Expectation, gpu, modelName string) ([]row, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("--bench: %v", err)
	}
	if st.Size() > bench.MaxFileSize {
		return nil, fmt.Errorf("--bench: %s is larger than %d MiB", path, bench.MaxFileSize>>20)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--bench: %v", err)
	}
	bs, err := bench.Parse(bench.NameFromPath(path), data)
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, b := range bs {
		for _, p := range profiles {
			for _, o := range p.Objectives {
				if o.Kind == settings.KindAvailability {
					continue // not measured by a benchmark: run names it on stderr
				}
				var c bench.Check
				if o.Kind == settings.KindErrorRatio {
					c = bench.CheckError(b, o.Target)
				} else {
					c = bench.CheckLatency(b, o.Signal, o.Threshold, o.Target)
				}
				nan := math.NaN()
				rows = append(rows, row{profile: p.Name, objective: o.Name, signal: c.Stage, threshold: o.Threshold, target: o.Target,
					source: b.Name, requests: b.Completed, value: c.Value, lower: c.Lower, upper: c.Upper,
					attainment: nan, attLower: nan, attUpper: nan, outcome: c.Outcome, reason: c.Reason})
			}
		}
		if gpu == "" {
			continue
		}
		m := modelName
		if m == "" {
			m = b.Model
		}
		e, ok := bench.Lookup(table, m, gpu)
		if !ok {
			return nil, fmt.Errorf("--gpu: the expected-performance table has no row for model %q on %s", m, gpu)
		}
		for _, c := range bench.CheckExpected(b, e) {
			nan := math.NaN()
			name, target := c.Stage+"-p95", 0.95
			if c.Stage == "output_throughput" {
				name, target = "tokens-per-second", nan
			}
			unit := ""
			if c.Stage == "output_throughput" {
				unit = "tok/s"
			}
			rows = append(rows, row{unit: unit, profile: "expected:" + e.Model + "@" + e.GPU, objective: name, signal: c.Stage, threshold: c.Threshold, target: target,
				source: b.Name, requests: b.Completed, value: c.Value, lower: c.Lower, upper: c.Upper,
				attainment: nan, attLower: nan, attUpper: nan, outcome: c.Outcome, reason: c.Reason})
		}
	}
	return rows, nil
}

// checkPrometheus judges every objective over [start, end] from the
// server's histograms: one instant query at end of the bucket rates over
// the whole range (catalog.HistogramPromQL), attainment and its exact
// bracket by slo.LatencyCounts. Bracket rule: lower bracket ≥ target → met;
// upper bracket < target → breached; otherwise possibly.
func checkPrometheus(ctx context.Context, base, tokenFile string, start, end time.Time, targets, models []string, by string, profiles []settings.Profile) ([]row, error) {
	cfg := api.Config{Address: base}
	if tokenFile != "" {
		cfg.RoundTripper = config.NewAuthorizationCredentialsRoundTripper("Bearer", config.NewFileSecret(tokenFile), api.DefaultRoundTripper)
	}
	client, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("--prometheus: %v", err)
	}
	promAPI := v1.NewAPI(client)
	window := end.Sub(start).Truncate(time.Second)
	if window < time.Minute {
		return nil, fmt.Errorf("--from/--to: the range %s is shorter than a minute", window)
	}
	switch by {
	case "", "target", "model":
	default:
		return nil, fmt.Errorf("--by: %q is neither target nor model", by)
	}
	sc := catalog.Scope{Targets: targets, Models: models}
	if by != "" {
		sc.By = []string{by}
	}
	groupLabel := catalog.GroupLabel(by)
	query := func(q string) (model.Vector, error) {
		qctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		v, _, _, err := promAPI.Query(qctx, q, end)
		if err != nil {
			return nil, fmt.Errorf("--prometheus %s: %v", base, err)
		}
		vec, ok := v.(model.Vector)
		if !ok {
			return nil, fmt.Errorf("--prometheus %s: the answer to %s is a %s, not a vector", base, q, v.Type())
		}
		return vec, nil
	}
	groupOf := func(m model.Metric) string {
		if groupLabel == "" {
			return "all"
		}
		return by + "=" + string(m[model.LabelName(groupLabel)])
	}
	var rows []row
	nan := math.NaN()
	for _, p := range profiles {
		for _, o := range p.Objectives {
			base := row{profile: p.Name, objective: o.Name, signal: o.Signal, threshold: o.Threshold, target: o.Target,
				value: nan, lower: nan, upper: nan, attainment: nan, attLower: nan, attUpper: nan}
			groups := map[string]slo.Counts{}
			buckets := map[string][]hist.Bucket{}
			if o.Kind == settings.KindErrorRatio {
				base.signal, base.threshold = "error_ratio", nan
				q, err := catalog.CounterRatePromQL(catalog.RequestsFinished, sc, window, "finished_reason")
				if err != nil {
					return nil, err
				}
				vec, err := query(q)
				if err != nil {
					return nil, err
				}
				bad, total := map[string]float64{}, map[string]float64{}
				for _, s := range vec {
					g := groupOf(s.Metric)
					total[g] += float64(s.Value)
					if r := s.Metric["finished_reason"]; r == "abort" || r == "error" {
						bad[g] += float64(s.Value)
					}
				}
				for g := range total {
					groups[g] = slo.ErrorCounts(bad[g], total[g])
				}
			} else if o.Kind == settings.KindAvailability {
				// Time based (slo.AvailabilityVector's counts): per target, the
				// seconds it answered its scrape and was serving over the
				// seconds with a known state, sampled at res.
				base.signal, base.threshold = "availability", nan
				res := max(15*time.Second, (window / 10000).Truncate(time.Second))
				gq, kq, err := catalog.AvailabilityPromQL(catalog.Scope{Targets: targets}, window, res)
				if err != nil {
					return nil, err
				}
				good, err := query(gq)
				if err != nil {
					return nil, err
				}
				known, err := query(kq)
				if err != nil {
					return nil, err
				}
				availGroup := func(m model.Metric) string {
					if by == "target" {
						return groupOf(m)
					}
					return "all" // serving is per target: a model's share is the whole range's
				}
				g := map[string]float64{}
				for _, s := range good {
					if v := float64(s.Value); v > 0 {
						g[string(s.Metric["job"])] = v
					}
				}
				for _, s := range known {
					n := float64(s.Value)
					if !(n > 0) {
						continue
					}
					sec := res.Seconds()
					ok := math.Min(g[string(s.Metric["job"])], n) * sec
					k := availGroup(s.Metric)
					groups[k] = groups[k].Add(slo.Counts{Good: ok, GoodLower: ok, GoodUpper: ok, Total: n * sec})
				}
			} else {
				hq, err := catalog.HistogramPromQL(catalog.Signal(o.Signal), sc, window)
				if err != nil {
					return nil, err
				}
				vec, err := query(hq.Buckets)
				if err != nil {
					return nil, err
				}
				for _, s := range vec {
					le, err := hist.ParseLe(string(s.Metric["le"]))
					if err != nil {
						continue
					}
					g := groupOf(s.Metric)
					buckets[g] = append(buckets[g], hist.Bucket{UpperBound: le, Count: float64(s.Value)})
				}
				for g, b := range buckets {
					groups[g] = slo.LatencyCounts(o.Threshold, b)
				}
			}
			if len(groups) == 0 {
				r := base
				r.source, r.outcome = "all", bench.Possibly
				r.reason = "no series for this signal in the range: nothing to judge"
				rows = append(rows, r)
				continue
			}
			names := make([]string, 0, len(groups))
			for g := range groups {
				names = append(names, g)
			}
			sort.Strings(names)
			for _, g := range names {
				c := groups[g]
				r := base
				r.source = g
				// Rates × window = requests (rate() extrapolates: approximately);
				// an availability objective counts seconds, not requests.
				r.requests = c.Total * window.Seconds()
				if o.Kind == settings.KindAvailability {
					r.requests = nan
				}
				r.attainment, r.attLower, r.attUpper = c.Attainment()
				if b := buckets[g]; len(b) > 0 && c.Total > 0 {
					est := hist.Quantile(o.Target, b)
					r.value, r.lower, r.upper = est.Value, est.Lower, est.Upper
				}
				switch {
				case !(c.Total > 0):
					r.outcome, r.reason = bench.Possibly, "no requests in the range"
				case r.attLower >= o.Target:
					r.outcome = bench.Met
					r.reason = fmt.Sprintf("at least %.4g%% within the objective (target %.4g%%)", 100*r.attLower, 100*o.Target)
				case r.attUpper < o.Target:
					r.outcome = bench.Breached
					r.reason = fmt.Sprintf("at most %.4g%% within the objective (target %.4g%%)", 100*r.attUpper, 100*o.Target)
				default:
					r.outcome = bench.Possibly
					r.reason = fmt.Sprintf("attainment between %.4g%% and %.4g%% straddles the target %.4g%%: the threshold falls inside a bucket (%s)",
						100*r.attLower, 100*r.attUpper, 100*o.Target, slo.Locate(o.Threshold, buckets[g]))
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// printTable writes the rows like the slo query's table: profile,
// objective, signal, threshold (s), target, source (baseline or group),
// requests, the observed quantile and its bracket (s), attainment and its
// bracket (Prometheus), outcome and reason.
func printTable(w io.Writer, rows []row, isBench bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	src := "group"
	if isBench {
		src = "baseline"
	}
	fmt.Fprintf(tw, "profile\tobjective\tsignal\tthreshold\ttarget\t%s\trequests\tquantile\tquantile_lower\tquantile_upper\tattainment\tattainment_lower\tattainment_upper\tstatus\treason\n", src)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.profile, r.objective, r.signal, fval(r.threshold, r.unit), fpct(r.target), r.source, fnum(r.requests),
			fval(r.value, r.unit), fval(r.lower, r.unit), fval(r.upper, r.unit), fpct(r.attainment), fpct(r.attLower), fpct(r.attUpper), r.outcome, r.reason)
	}
	tw.Flush()
}

func fval(v float64, unit string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	if unit == "" {
		unit = "s"
	} else {
		unit = " " + unit
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + unit
}

func fpct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(100*v, 'g', 5, 64) + "%"
}

func fnum(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
