package ollamatest

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TinyModel is the name StartTiny creates the tiny model under.
const TinyModel = "inferscope-tiny"

// StartTiny starts a real Ollama on 127.0.0.1 with OLLAMA_NUM_PARALLEL=parallel, writes the
// tiny random-weight model (WriteModel, seed 7) into a temporary directory, imports it as
// TinyModel and loads it. It skips the test when the ollama binary is missing or -short is
// set, stops the server when the test ends, and prints the server's log when it failed.
func StartTiny(t testing.TB, parallel int) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Ollama server")
	}
	bin, err := Binary()
	if err != nil {
		t.Skipf("no Ollama to test against (scripts/live-server.sh builds %s): %v", Version, err)
	}
	dir := t.TempDir()
	gguf := filepath.Join(dir, "tiny.gguf")
	if err := WriteModel(gguf, ModelSpec{Seed: 7}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := Start(ctx, Options{Binary: bin, Dir: dir, Parallel: parallel}, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("ollama serve's log (tail):\n%s", srv.LogTail(6000))
		}
	})
	if err := srv.CreateModel(ctx, TinyModel, gguf); err != nil {
		t.Fatalf("%v\n%s", err, srv.LogTail(3000))
	}
	if err := srv.Load(ctx, TinyModel); err != nil {
		t.Fatalf("%v\n%s", err, srv.LogTail(3000))
	}
	return srv
}
