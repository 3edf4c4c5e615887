// Command inferscope-twin prints the capacity report of one vLLM target from a Prometheus
// (or compatible) server that stores its metrics: the calibrated twin's parameters and where
// each came from, the knee of each SLO profile, headroom, days until the load trend reaches
// the knee, the recommended replica count and a what-if table. All logic is in pkg/twin; the
// method is in docs/capacity.md.
//
//	inferscope-twin -prometheus http://prometheus:9090 -job vllm -span 6h
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

func main() {
	url := flag.String("prometheus", "http://localhost:9090", "base URL of the Prometheus-compatible server")
	job := flag.String("job", "vllm", "job label of the vLLM target's series")
	span := flag.Duration("span", 6*time.Hour, "history to calibrate on")
	seqs := flag.Int("max-num-seqs", 0, "the target's --max-num-seqs (0: vLLM's default 256)")
	budget := flag.Int("max-num-batched-tokens", 0, "the target's --max-num-batched-tokens (0: 8192)")
	util := flag.Float64("utilisation", 0.8, "share of the knee each replica should carry")
	ttft := flag.Float64("ttft", 3, "profile: TTFT p99 threshold (s)")
	tpot := flag.Float64("tpot", 0.1, "profile: TPOT p99 threshold (s)")
	flag.Parse()
	q, err := source.NewRemote(*url, http.DefaultTransport)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p := twin.Profile{Name: fmt.Sprintf("TTFT p99 ≤ %gs, TPOT p99 ≤ %gs", *ttft, *tpot),
		Objectives: []twin.Objective{{Signal: "ttft", Threshold: *ttft, Target: 0.99}, {Signal: "tpot", Threshold: *tpot, Target: 0.99}}}
	rep, err := twin.Report(context.Background(), q, *job, time.Now(), *span,
		twin.Known{MaxNumSeqs: *seqs, MaxNumBatchedTokens: *budget}, []twin.Profile{p}, *util)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := rep.Write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
