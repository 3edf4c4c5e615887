// Command inferscope is Inferscope's command line. Its one subcommand,
// check, is an SLO gate for CI: it evaluates SLO profiles against a
// benchmark result file (vllm bench serve --save-result, GuideLLM, genai-perf)
// or against a Prometheus-compatible server over a time range, prints a
// table like the slo query's, and exits
//
//	0  every objective met
//	1  at least one objective breached for sure
//	2  none breached for sure, but at least one possibly breached (the data
//	   bracket the threshold, or do not measure the stage)
//	3  usage or input error (bad flag, unreadable or malformed file, server error)
//
// See docs/benchmarks.md for the bracket rule and a CI job.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
