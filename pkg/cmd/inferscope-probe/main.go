// Command inferscope-probe sends small streaming requests to OpenAI-compatible
// endpoints on an interval and serves the client-side TTFT, inter-token gaps,
// jitter and errors on /metrics for the Inferscope data source. See pkg/probe.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/inferscope/inferscope-llm-datasource/pkg/probe"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := probe.Run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
