// Command vllm-sim is a vLLM-compatible simulator: the OpenAI API with
// streaming, vLLM's /metrics for a chosen version and scenario, and an
// optional GPU-agent page. Flags are documented by -h; all logic is in
// pkg/sim.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sim.Main(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
