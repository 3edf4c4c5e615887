package plugin

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
)

func TestDiagExplore(t *testing.T) {
	sc := os.Getenv("DIAG_SCENARIO")
	if sc == "" {
		t.Skip()
	}
	const scrape = 15 * time.Second
	inst, start := simDiagnosisInstance(t, 40*time.Minute, scrape, simTarget{name: "t", scenario: sc, gpu: true})
	p := &plan{Query: Query{QueryType: "diagnosis", Window: "5m"}, start: start.Add(5 * time.Minute), end: start.Add(40 * time.Minute), step: time.Minute, window: 5 * time.Minute}
	p.from, p.to = p.start, p.end
	in, _, err := inst.diagnosisInput(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	res := diagnose.Diagnose(in, inst.settings.Diagnosis)
	ti := in.Targets[0]
	sigs := []diagnose.Signal{diagnose.Up, diagnose.Running, diagnose.Waiting, diagnose.WaitingSpan, diagnose.KVUsage, diagnose.Preemptions, diagnose.Progress, diagnose.Finished, diagnose.Aborted, diagnose.PromptTok,
		diagnose.QueueMean, diagnose.PrefillMean, diagnose.InferenceMean, diagnose.E2EMean, diagnose.TTFTMean, diagnose.ITLMean, diagnose.SMActive, diagnose.DRAMActive, diagnose.TensorActive, diagnose.GPUUtil, diagnose.ClockRatio, diagnose.Slowdown}
	fmt.Printf("%-5s %-22s", "min", "class")
	for _, s := range sigs {
		fmt.Printf(" %9.9s", s)
	}
	fmt.Println()
	for i := range in.Steps {
		fmt.Printf("%-5d %-22s", i+5, res.Targets[0].Primary[i])
		for _, s := range sigs {
			v := math.NaN()
			if x, ok := ti.Values[s]; ok {
				v = x[i]
			}
			fmt.Printf(" %9.4g", v)
		}
		fmt.Println()
	}
	for _, f := range res.Targets[0].Findings {
		fmt.Println(f.Class, f.Start.Sub(start), f.End.Sub(start), f.Confidence, f.Text())
	}
}
