// Package ollamatest runs a real serving stack for the live tests: Ollama (a server nobody
// here wrote; MIT; installed with `go install github.com/ollama/ollama@` + Version by
// scripts/live-server.sh) on 127.0.0.1, serving a tiny llama-architecture model with random
// weights that WriteModel writes as a GGUF file. The generated text is gibberish, but the
// serving, streaming, queueing of parallel requests, errors and restarts are Ollama's own.
//
// Recorder is a TCP relay that timestamps every read of each connection; ParseWire and
// Wire.TokenEvents turn that into per-request truth (when each token chunk came off the
// wire) with code that shares nothing with the probe.
//
// Only tests import this package; the plugin never links it.
package ollamatest
