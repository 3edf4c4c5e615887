package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
)

// dumpInputs logs, when DIAGNOSIS_EVAL_DUMP names families
// (comma-separated), the signals the head-of-line and prefill rules read at
// every step of those families' targets, with the class the query named: a
// debugging aid for the evaluation, silent otherwise.
func dumpInputs(t *testing.T, inst *Instance, from, to time.Time, step time.Duration, window string, classes map[string][]string) {
	fams := os.Getenv("DIAGNOSIS_EVAL_DUMP")
	if fams == "" {
		return
	}
	only := strings.Split(fams, ",")
	raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis", "format": "timeline", "window": window})
	d, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: step,
		MaxDataPoints: 100000, TimeRange: backend.TimeRange{From: from, To: to}}, &inst.settings)
	require.NoError(t, err)
	in, _, err := inst.diagnosisInput(context.Background(), d)
	require.NoError(t, err)
	sigs := []diagnose.Signal{diagnose.PromptP50, diagnose.PromptP99, diagnose.PromptTok, diagnose.GenTok, diagnose.Finished,
		diagnose.TTFTMean, diagnose.PrefillMean, diagnose.QueueMean, diagnose.E2EMean, diagnose.RunningAvg, diagnose.WaitingAvg,
		diagnose.SMActive, diagnose.TensorActive, diagnose.KVUsage, diagnose.Preemptions}
	for _, ti := range in.Targets {
		fam := ti.Name[strings.Index(ti.Name, "-")+1:]
		if !slices.Contains(only, fam) {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "DUMP %s step %s window %s\nidx class", ti.Name, step, window)
		for _, s := range sigs {
			fmt.Fprintf(&b, " %s", s)
		}
		b.WriteString(" ppr pre/ppr\n")
		for s := range in.Steps {
			cl := ""
			if c := classes[ti.Name]; s < len(c) {
				cl = c[s]
			}
			fmt.Fprintf(&b, "%d %s", s, cl)
			for _, sg := range sigs {
				v := ti.Values[sg]
				x := 0.0
				if s < len(v) {
					x = v[s]
				}
				fmt.Fprintf(&b, " %.4g", x)
			}
			p, f, pre := ti.Values[diagnose.PromptTok], ti.Values[diagnose.Finished], ti.Values[diagnose.PrefillMean]
			if s < len(p) && s < len(f) && s < len(pre) && f[s] > 0 {
				fmt.Fprintf(&b, " %.4g %.3g", p[s]/f[s], pre[s]/(p[s]/f[s]))
			}
			b.WriteString("\n")
		}
		t.Log(b.String())
	}
}
