// Command inferscope-gpu-agent serves NVIDIA GPU metrics read through NVML on
// /metrics for the Inferscope data source. See pkg/gpu for flags and metrics.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/inferscope/inferscope-llm-datasource/pkg/gpu"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := gpu.Run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}
