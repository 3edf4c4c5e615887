package plugin

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// live holds every instance with a running collector, so that the process
// can dispose them when it stops: Grafana stops a plugin with the gRPC
// controller's Shutdown (or SIGTERM, then SIGKILL) and never calls Dispose.
var live = &instances{m: map[*Instance]struct{}{}}

type instances struct {
	mu sync.Mutex
	m  map[*Instance]struct{}
}

func (s *instances) add(i *Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[i] = struct{}{}
}

func (s *instances) remove(i *Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, i)
}

func (s *instances) all() []*Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Instance, 0, len(s.m))
	for i := range s.m {
		out = append(out, i)
	}
	return out
}

// Shutdown disposes every live instance in parallel (scrapes are cut at
// once, queries in flight finish, every store is flushed and closed) and
// returns when all are done.
func Shutdown() {
	all := live.all()
	log.DefaultLogger.Info("plugin stopping: closing every data source's store", "instances", len(all))
	var wg sync.WaitGroup
	for _, i := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i.Dispose()
		}()
	}
	wg.Wait()
}

// Serve runs the plugin as Grafana launches it: datasource.Manage with
// NewInstance, plus a clean shutdown of every instance when the gRPC server
// stops (Grafana's Shutdown call) or the process gets SIGTERM. SIGINT is
// left to go-plugin, which ignores it so that the host decides when to stop.
// It returns Manage's error; the process should exit with it.
func Serve() error {
	limit, from, lerr := memoryLimit(os.Getenv)
	if lerr != nil {
		log.DefaultLogger.Warn(lerr.Error())
	}
	debug.SetMemoryLimit(limit)
	log.DefaultLogger.Info("soft memory limit", "MiB", limit>>20, "from", from)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- datasource.Manage(PluginID, NewInstance, datasource.ManageOpts{}) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		log.DefaultLogger.Info("plugin got SIGTERM")
	}
	Shutdown()
	return err
}
