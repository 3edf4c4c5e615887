//go:build linux && cgo

package gpu

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

// eightGPUNode is a DGX-like node of eight H200s with GPM.
func eightGPUNode(b *testing.B) *fakeNVML {
	devs := make([]*mock.Device, 8)
	gpm := map[int]bool{}
	for i := range devs {
		d := h200()
		uuid := fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i)
		d.GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
		devs[i] = d
		gpm[i] = true
	}
	return newFakeNVML(devs, gpm)
}

// BenchmarkSamplePerGPU measures one NVML sample of an 8-GPU node through the
// mock (the mock's own call recording included) and reports it per GPU.
func BenchmarkSamplePerGPU(b *testing.B) {
	f := eightGPUNode(b)
	src, err := NewNVMLSource(f.lib)
	require.NoError(b, err)
	defer src.Close()
	descs := newDescSet()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		snap, err := src.Sample()
		if err != nil {
			b.Fatal(err)
		}
		descs.build(snap, "node-a")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/8, "ns/gpu")
}

// BenchmarkScrape8GPU measures one /metrics scrape of an 8-GPU node (GPM and
// XID series present): gather from the cache and text encoding. Target ≤ 1 ms.
func BenchmarkScrape8GPU(b *testing.B) {
	f := eightGPUNode(b)
	src, err := NewNVMLSource(f.lib)
	require.NoError(b, err)
	a, err := NewAgent(src, AgentOptions{Interval: time.Hour, Hostname: "node-a", XIDWait: 10 * time.Millisecond})
	require.NoError(b, err)
	defer a.Close()
	a.sampleOnce()
	a.mu.Lock()
	a.xids[xidKey{Identity{Index: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", Name: "NVIDIA H200"}, 79}] = 1
	a.mu.Unlock()
	h := NewHandler(a, "")
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(b, http.StatusOK, rec.Code)
	page := rec.Body.Len()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
	b.ReportMetric(float64(page), "bytes/page")
}
