package ollamatest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Version is the Ollama release the live tests are written against; scripts/live-server.sh
// installs it (`go install github.com/ollama/ollama@` + Version).
const Version = "v0.17.4"

// BinaryEnv names the environment variable that points at the ollama binary; when unset,
// Binary looks for ollama on PATH and in $(go env GOPATH)/bin.
const BinaryEnv = "INFERSCOPE_OLLAMA"

// Binary returns the path of the ollama binary, or an error saying where it looked.
func Binary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	if gopath != "" {
		p := filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "bin", "ollama")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("ollama is neither in $%s, on PATH nor in $GOPATH/bin (scripts/live-server.sh installs %s)", BinaryEnv, Version)
}

// Options configure one `ollama serve`.
type Options struct {
	Binary string // the ollama binary (Binary())
	Dir    string // scratch directory: HOME, OLLAMA_MODELS and the server's log live under it
	// Parallel is OLLAMA_NUM_PARALLEL: requests one loaded model serves at once (default 1).
	Parallel int
	// MaxQueue is OLLAMA_MAX_QUEUE: requests the server queues beyond those before answering
	// 503 (0: Ollama's default, 512).
	MaxQueue int
	// ContextLength is OLLAMA_CONTEXT_LENGTH, the context of each request (default 4096).
	ContextLength int
}

// Server is a running `ollama serve` on 127.0.0.1, started in its own process group so that
// stopping it also stops the model runner it spawns.
type Server struct {
	opts Options
	addr string // host:port
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// Start starts `ollama serve` on a free loopback port and waits until it answers on /
// (at most ready). The caller must Stop or Kill it.
func Start(ctx context.Context, opts Options, ready time.Duration) (*Server, error) {
	if opts.Parallel == 0 {
		opts.Parallel = 1
	}
	if opts.ContextLength == 0 {
		opts.ContextLength = 4096
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{opts: opts, addr: addr}
	return s, s.start(ctx, ready)
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return "http://" + s.addr }

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// LogPath is the file the server's output goes to.
func (s *Server) LogPath() string { return filepath.Join(s.opts.Dir, "serve.log") }

func (s *Server) env() []string {
	home := filepath.Join(s.opts.Dir, "home")
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"OLLAMA_HOST=" + s.addr,
		"OLLAMA_MODELS=" + filepath.Join(s.opts.Dir, "models"),
		"OLLAMA_NUM_PARALLEL=" + strconv.Itoa(s.opts.Parallel),
		"OLLAMA_CONTEXT_LENGTH=" + strconv.Itoa(s.opts.ContextLength),
		"OLLAMA_KEEP_ALIVE=-1",       // keep the model loaded between requests
		"OLLAMA_NOPRUNE=1",           // never touch blobs at start
		"OLLAMA_NO_CLOUD=1",          // never reach out
		"OLLAMA_MAX_LOADED_MODELS=1", // one model, one runner
	}
	if s.opts.MaxQueue > 0 {
		env = append(env, "OLLAMA_MAX_QUEUE="+strconv.Itoa(s.opts.MaxQueue))
	}
	return env
}

func (s *Server) start(ctx context.Context, ready time.Duration) error {
	for _, d := range []string{filepath.Join(s.opts.Dir, "home"), filepath.Join(s.opts.Dir, "models")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.opts.Binary, "serve")
	cmd.Env = s.env()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()
	deadline := time.Now().Add(ready)
	for {
		if err := s.ping(ctx); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("ollama serve exited before answering (see %s): %s", s.LogPath(), s.LogTail(2000))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("ollama serve did not answer on %s within %s: %s", s.addr, ready, s.LogTail(2000))
		}
	}
}

// ping asks / and expects Ollama's "Ollama is running".
func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Ollama is running") {
		return fmt.Errorf("GET /: %d %q", resp.StatusCode, b)
	}
	return nil
}

// Restart starts the server again on the same address with the same models (after Stop or
// Kill).
func (s *Server) Restart(ctx context.Context, ready time.Duration) error { return s.start(ctx, ready) }

// Stop sends SIGTERM to the server (Ollama closes its connections and unloads the model) and
// waits for it to exit; after grace it kills the process group.
func (s *Server) Stop(grace time.Duration) {
	s.signal(syscall.SIGTERM)
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(grace):
	}
	s.Kill()
}

// Kill sends SIGKILL to the server's process group (the server and its model runner) and
// waits for the server to exit.
func (s *Server) Kill() {
	s.signal(syscall.SIGKILL)
	s.mu.Lock()
	done, log := s.done, s.log
	s.done, s.log = nil, nil
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	if log != nil {
		log.Close()
	}
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil || s.done == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, sig)
}

// RunnerPIDs returns the process ids of the model runners the server has spawned (its child
// processes running `ollama runner`), read from /proc.
func (s *Server) RunnerPIDs() ([]int, error) {
	s.mu.Lock()
	if s.cmd == nil || s.cmd.Process == nil {
		s.mu.Unlock()
		return nil, errors.New("the server is not running")
	}
	parent := s.cmd.Process.Pid
	s.mu.Unlock()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(cmdline, []byte("runner")) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// LogTail returns the last n bytes of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// CreateModel imports the GGUF file at path as model name: the file is uploaded as a blob
// (POST /api/blobs/sha256:…) and the model created from it (POST /api/create with files).
func (s *Server) CreateModel(ctx context.Context, name, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if _, err := s.call(ctx, http.MethodPost, "/api/blobs/"+digest, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("uploading the blob: %w", err)
	}
	body, _ := json.Marshal(map[string]any{"model": name, "files": map[string]string{filepath.Base(path): digest}, "stream": false})
	if _, err := s.call(ctx, http.MethodPost, "/api/create", bytes.NewReader(body)); err != nil {
		return fmt.Errorf("creating model %s: %w", name, err)
	}
	return nil
}

// Load loads model name into a runner (POST /api/generate with no prompt) and keeps it
// loaded.
func (s *Server) Load(ctx context.Context, name string) error {
	body, _ := json.Marshal(map[string]any{"model": name, "keep_alive": -1, "stream": false})
	_, err := s.call(ctx, http.MethodPost, "/api/generate", bytes.NewReader(body))
	return err
}

func (s *Server) call(ctx context.Context, method, path string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return b, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return b, nil
}
