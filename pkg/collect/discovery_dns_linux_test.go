//go:build linux

package collect

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// dnsChildEnv marks the re-executed test binary that runs inside its own
// user, mount and network namespaces.
const dnsChildEnv = "INFERSCOPE_DNS_SD_CHILD"

// TestTargetGroupDNSDiscoveryLive: target groups with DNS discovery (SRV and
// A), live against a DNS server on loopback, and the embedded collector
// scraping what it names.
//
// Prometheus's discovery/dns reads its servers from /etc/resolv.conf (a
// constant in the package; the lookup function is unexported) and asks them
// on port 53, so there is no supported way to hand it another resolver. The
// test therefore re-executes itself in new user, mount and network namespaces
// (what `unshare -rmn` makes; no privilege needed where unprivileged user
// namespaces are allowed): there it brings loopback up, binds a resolv.conf
// naming 127.0.0.1 over /etc/resolv.conf, serves DNS on 127.0.0.1:53 and runs
// the collector. Where user namespaces are refused, the test is skipped
// (TestTargetGroupDiscoveryConfigs still checks the configuration).
func TestTargetGroupDNSDiscoveryLive(t *testing.T) {
	if os.Getenv(dnsChildEnv) == "1" {
		dnsDiscoveryInNamespace(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTargetGroupDNSDiscoveryLive$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), dnsChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("no unprivileged user namespaces here (%v): the live DNS test needs its own /etc/resolv.conf and port 53", err)
	}
	err := cmd.Wait()
	t.Log(out.String())
	if strings.Contains(out.String(), "dns-sd-child: namespace setup refused") {
		t.Skip("the namespace could not be set up (see the log above)")
	}
	require.NoError(t, err, "the test inside the namespaces failed (log above)")
	require.Contains(t, out.String(), "--- PASS: TestTargetGroupDNSDiscoveryLive", "the child ran the test")
}

// loopbackUp sets IFF_UP on lo (a new network namespace starts with it down).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// zone is the test's DNS data: SRV records of one name and A records of
// hosts, swappable while the server runs.
type zone struct {
	mu    sync.Mutex
	srv   map[string][]*dns.SRV
	a     map[string]net.IP
	asked map[string]int // "TYPE name" -> questions
}

func (z *zone) set(srv map[string][]*dns.SRV, a map[string]net.IP) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.srv, z.a = srv, a
}

// ServeDNS answers SRV and A questions from the zone; a known name asked for
// another type gets an empty success (as a real server does for AAAA), an
// unknown name NXDOMAIN.
func (z *zone) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	if z.asked == nil {
		z.asked = map[string]int{}
	}
	z.asked[dns.TypeToString[q.Qtype]+" "+name]++
	srvs, isSRV := z.srv[name]
	ip, isA := z.a[name]
	switch {
	case q.Qtype == dns.TypeSRV && isSRV:
		for _, s := range srvs {
			rr := *s
			rr.Hdr = dns.RR_Header{Name: q.Name, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: 1}
			m.Answer = append(m.Answer, &rr)
		}
	case q.Qtype == dns.TypeA && isA:
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: ip})
	case isSRV || isA:
	default:
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

func srvTo(host string, port int) *dns.SRV {
	return &dns.SRV{Priority: 10, Weight: 10, Port: uint16(port), Target: host + "."} // #nosec G115 -- a test server's port
}

// dnsDiscoveryInNamespace is the test proper, inside the namespaces.
func dnsDiscoveryInNamespace(t *testing.T) {
	refused := func(err error) {
		t.Logf("dns-sd-child: namespace setup refused: %v", err)
		t.SkipNow()
	}
	if err := loopbackUp(); err != nil {
		refused(err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		refused(err)
	}
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:2\n"), 0o600))
	if err := unix.Mount(resolv, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		refused(err)
	}
	verifyNoLeaks(t)

	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		refused(err)
	}
	z := &zone{}
	server := &dns.Server{PacketConn: pc, Handler: z}
	started := make(chan struct{})
	server.NotifyStartedFunc = func() { close(started) }
	served := make(chan error, 1)
	go func() { served <- server.ActivateAndServe() }()
	<-started
	t.Cleanup(func() {
		require.NoError(t, server.Shutdown())
		<-served //nolint:errcheck // waits for the server's goroutine; Shutdown's error is checked
	})

	a, b, c, d := runningPage(t, "1"), runningPage(t, "2"), runningPage(t, "3"), runningPage(t, "4")
	portOf := func(u string) int {
		_, p, err := net.SplitHostPort(hostOf(t, u))
		require.NoError(t, err)
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		return n
	}
	lo := net.IPv4(127, 0, 0, 1)
	const srvName = "_metrics._tcp.vllm.llm.test."
	hosts := map[string]net.IP{"pod-a.llm.test.": lo, "pod-b.llm.test.": lo, "pod-d.llm.test.": lo, "vllm-c.llm.test.": lo}
	z.set(map[string][]*dns.SRV{srvName: {srvTo("pod-a.llm.test", portOf(a.URL)), srvTo("pod-b.llm.test", portOf(b.URL))}}, hosts)

	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms", "scrapeTimeout": "150ms", "retention": "1h",
		"targetGroups": []map[string]any{
			{"name": "srvg", "discovery": map[string]any{"dns": map[string]any{"names": []string{strings.TrimSuffix(srvName, ".")}, "type": "SRV", "refreshInterval": "1s"}}},
			{"name": "ag", "discovery": map[string]any{"dns": map[string]any{"names": []string{"vllm-c.llm.test"}, "type": "A", "port": portOf(c.URL), "refreshInterval": "1s"}}},
		},
	}, nil)
	coll, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, coll.Close()) }()

	podA := "pod-a.llm.test:" + strconv.Itoa(portOf(a.URL))
	podB := "pod-b.llm.test:" + strconv.Itoa(portOf(b.URL))
	podD := "pod-d.llm.test:" + strconv.Itoa(portOf(d.URL))
	require.Eventually(t, func() bool {
		return len(instancesOf(t, coll, "srvg")) == 2 && len(instancesOf(t, coll, "ag")) == 1
	}, 60*time.Second, 50*time.Millisecond, "the SRV and A groups' targets are scraped")
	// SRV: the record's target name and port are the address (the scrape
	// resolves the name through the same server); A: the address with the
	// group's port.
	assert.Equal(t, []string{podA + "/", podB + "/"}, instancesOf(t, coll, "srvg"))
	assert.Equal(t, []string{"127.0.0.1:" + strconv.Itoa(portOf(c.URL)) + "/"}, instancesOf(t, coll, "ag"))
	assert.Equal(t, []string{"http://" + podA + "/metrics", "http://" + podB + "/metrics"}, coll.DiscoveredURLs("srvg"))

	// pod-a is replaced by pod-d (a new name and port): the group scrapes
	// pod-d, stops scraping pod-a and keeps its history.
	z.set(map[string][]*dns.SRV{srvName: {srvTo("pod-b.llm.test", portOf(b.URL)), srvTo("pod-d.llm.test", portOf(d.URL))}}, hosts)
	require.Eventually(t, func() bool {
		u := coll.DiscoveredURLs("srvg")
		return len(u) == 2 && u[1] == "http://"+podD+"/metrics" && len(instancesOf(t, coll, "srvg")) == 3
	}, 60*time.Second, 50*time.Millisecond, "the replacement is discovered and scraped")
	assert.Equal(t, []string{"http://" + podB + "/metrics", "http://" + podD + "/metrics"}, coll.DiscoveredURLs("srvg"))
	assert.Equal(t, []string{podA + "/", podB + "/", podD + "/"}, instancesOf(t, coll, "srvg"), "the replaced pod's history stays in the group")

	// Every name went through the test's server: discovery's SRV and A
	// questions, and the scraper's A questions for the SRV targets.
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, q := range []string{"SRV " + srvName, "A vllm-c.llm.test.", "A pod-a.llm.test.", "A pod-b.llm.test.", "A pod-d.llm.test."} {
		assert.Positive(t, z.asked[q], "asked %q", q)
	}
}
