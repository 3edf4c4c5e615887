package settings

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// DefaultGroupTargetLabels are the labels that name one discovered target of
// a target group when the group names none: a Kubernetes pod, as
// kube-prometheus-stack's ServiceMonitors and PodMonitors label its series.
var DefaultGroupTargetLabels = []string{"namespace", "pod"}

// DefaultGroupMaxTargets is how many discovered targets a target group lists
// when it sets no maxTargets; MaxGroupMaxTargets is the most it may set.
const (
	DefaultGroupMaxTargets = 100
	MaxGroupMaxTargets     = 1000
)

// TargetGroup is a remote-mode fleet of targets that follows the series on
// the server instead of a list kept by hand (jsonData "targetGroups"): every
// series Selector matches belongs to the group, and each distinct
// combination of TargetLabels among them is one discovered target (a pod).
// Targets appear and disappear as their series do; autoscaled or restarted
// pods under new names need no edit of the data source.
//
// The group is also a target of its own, named Name: every query type,
// template variable and alert rule selects it like a configured target and
// aggregates over all of its pods, so a pod replaced under a new name
// continues the group's history and alerts. groupBy may name any of
// TargetLabels (one series per discovered target, e.g. groupBy "pod") or
// GroupLabels (e.g. "deployment", or a label kube-prometheus copies from the
// pod such as "app_kubernetes_io_name").
type TargetGroup struct {
	// Name is the group's target name (the stored job label of its series
	// in the plugin's PromQL), under the same rule as a target's name.
	Name string `json:"name"`
	// Selector picks the group's series on the server, e.g.
	// {namespace="llm", job="vllm"}; the rules of ParseSelector apply.
	Selector string `json:"selector"`
	// TargetLabels name one discovered target; default DefaultGroupTargetLabels.
	TargetLabels []string `json:"targetLabels,omitempty"`
	// GroupLabels are labels that group the discovered targets (deployment,
	// service); they may be named in groupBy like TargetLabels.
	GroupLabels []string `json:"groupLabels,omitempty"`
	// MaxTargets caps the discovered targets listed per group (Save & test,
	// GET /members); beyond it a notice names how many were left out.
	// Default DefaultGroupMaxTargets, at most MaxGroupMaxTargets.
	MaxTargets int `json:"maxTargets,omitempty"`
	// Engine optionally overrides engine detection for the whole group.
	Engine string `json:"engine,omitempty"`
	// Discovery finds the group's targets in embedded mode (the plugin
	// scrapes them); remote mode takes Selector instead.
	Discovery *Discovery `json:"discovery,omitempty"`
	// BearerToken, from secureJsonData key "<name>.bearerToken", is sent
	// when scraping the discovered targets (embedded mode).
	BearerToken string `json:"-"`
}

// Labels returns the group's target labels followed by its group labels.
func (g TargetGroup) Labels() []string {
	return append(slices.Clone(g.TargetLabels), g.GroupLabels...)
}

// reservedGroupLabels may not be a group's target or group label: job is
// replaced by the group's name on the server's answers, le and quantile are
// the histograms' and summaries' bounds, model_name is groupBy "model", and
// the rest are the plugin's own output labels.
var reservedGroupLabels = []string{"job", "le", "quantile", "model_name", "target", "model", "stage", "stat", "bound", "signal", "source"}

// applyTargetGroups validates jsonData "targetGroups", fills their defaults,
// reads their secrets and appends one Target per group (Group set), so that
// the rest of the plugin treats a group as a target: in remote mode one whose
// selector is the group's, in embedded mode one whose series are those of
// every target its discovery finds (stored with the group's name as job).
func (s *Settings) applyTargetGroups(secure map[string]string) error {
	if len(s.TargetGroups) == 0 {
		return nil
	}
	remote := s.Mode == ModeRemote
	used := map[string]string{}
	own := map[string]int{} // a group's own target from an earlier load of these settings
	adopted := map[string]bool{}
	for i, t := range s.Targets {
		used[t.Name] = fmt.Sprintf("targets[%d]", i)
		own[t.Name] = i
	}
	for i, a := range s.GPUAgents {
		used[a.Name] = fmt.Sprintf("gpuAgents[%d]", i)
	}
	for i := range s.TargetGroups {
		g := &s.TargetGroups[i]
		f := fmt.Sprintf("targetGroups[%d]", i)
		if !nameRE.MatchString(g.Name) {
			return fmt.Errorf("%s.name: %q must be 1-63 letters, digits, '_', '.', ':' or '-'", f, g.Name)
		}
		if prev, dup := used[g.Name]; dup {
			// Settings encoded after a load carry each group's own target too: loading them
			// again adopts it instead of refusing the name (a round trip changes nothing).
			if k, ok := own[g.Name]; !ok || !isGroupsOwn(s.Targets[k], g) {
				return fmt.Errorf("%s.name: %q is already used by %s", f, g.Name, prev)
			}
			adopted[g.Name] = true
		}
		used[g.Name] = f
		if remote {
			if g.Discovery != nil {
				return fmt.Errorf("%s.discovery: in remote mode the server discovers and scrapes the targets: give the group's selector instead", f)
			}
			if strings.TrimSpace(g.Selector) == "" {
				return fmt.Errorf("%s.selector: a target group needs the label selector of its series, such as {namespace=\"llm\", job=\"vllm\"}", f)
			}
			if _, err := ParseSelector(g.Selector); err != nil {
				return fmt.Errorf("%s.selector: %v", f, err)
			}
		} else {
			if g.Selector != "" {
				return fmt.Errorf("%s.selector: a selector picks series on a remote server; in embedded mode the group's targets come from its discovery", f)
			}
			if err := g.validateDiscovery(f, secure); err != nil {
				return err
			}
			g.BearerToken = secure[SecretKey(g.Name, "bearerToken")]
		}
		if len(g.TargetLabels) == 0 {
			g.TargetLabels = slices.Clone(DefaultGroupTargetLabels)
			if !remote && g.Discovery.Kubernetes == nil {
				g.TargetLabels = []string{"instance"}
			}
		}
		seen := map[string]bool{}
		for _, field := range []struct {
			name string
			ls   []string
		}{{"targetLabels", g.TargetLabels}, {"groupLabels", g.GroupLabels}} {
			for k, l := range field.ls {
				ff := fmt.Sprintf("%s.%s[%d]", f, field.name, k)
				if !model.LegacyValidation.IsValidLabelName(l) || strings.HasPrefix(l, "__") {
					return fmt.Errorf("%s: %q is not a label name such as pod or deployment", ff, l)
				}
				if slices.Contains(reservedGroupLabels, l) {
					return fmt.Errorf("%s: %q cannot name or group targets (job becomes the group's name; model_name is groupBy model; le, quantile and the plugin's output labels are taken)", ff, l)
				}
				if seen[l] {
					return fmt.Errorf("%s: %q is named twice", ff, l)
				}
				seen[l] = true
			}
		}
		switch {
		case g.MaxTargets == 0:
			g.MaxTargets = DefaultGroupMaxTargets
		case g.MaxTargets < 0 || g.MaxTargets > MaxGroupMaxTargets:
			return fmt.Errorf("%s.maxTargets: %d is not between 1 and %d", f, g.MaxTargets, MaxGroupMaxTargets)
		}
		if g.Engine != "" && !slices.Contains(Engines, g.Engine) {
			return fmt.Errorf("%s.engine: %q is not one of %s", f, g.Engine, strings.Join(Engines, ", "))
		}
	}
	for i := range s.TargetGroups {
		g := s.TargetGroups[i]
		if adopted[g.Name] {
			s.Targets[own[g.Name]].Group = &s.TargetGroups[i]
			continue
		}
		s.Targets = append(s.Targets, Target{Name: g.Name, Selector: g.Selector, Engine: g.Engine, Group: &s.TargetGroups[i]})
	}
	return nil
}

// GroupLabelsInScope returns the target and group labels of the target
// groups among targets (all targets when targets is empty): the labels a
// query may name in groupBy besides the canonical groups.
func (s *Settings) GroupLabelsInScope(targets []string) []string {
	var out []string
	for _, t := range s.Targets {
		if t.Group == nil || (len(targets) > 0 && !slices.Contains(targets, t.Name)) {
			continue
		}
		for _, l := range t.Group.Labels() {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

// Discovery is how an embedded-mode target group finds its targets: with
// Prometheus's own service discovery (github.com/prometheus/prometheus/discovery),
// one or more of file, HTTP, DNS and Kubernetes. Every discovered address is
// scraped like a configured target, its series stored under the group's name
// as job and the discovered address as instance (Kubernetes adds namespace
// and pod), so the group is a target of its own whose history survives
// targets that come and go.
type Discovery struct {
	File       *FileDiscovery       `json:"file,omitempty"`
	HTTP       *HTTPDiscovery       `json:"http,omitempty"`
	DNS        *DNSDiscovery        `json:"dns,omitempty"`
	Kubernetes *KubernetesDiscovery `json:"kubernetes,omitempty"`
	// Scheme (http or https, default http) and MetricsPath (default
	// /metrics) of every discovered target.
	Scheme      string `json:"scheme,omitempty"`
	MetricsPath string `json:"metricsPath,omitempty"`
}

// FileDiscovery reads targets from files in Prometheus's file_sd format
// (JSON or YAML lists of {"targets": ["host:port"], "labels": {...}}),
// re-read when they change and every RefreshInterval (default 5m).
type FileDiscovery struct {
	Files           []string `json:"files"`
	RefreshInterval string   `json:"refreshInterval,omitempty"`
}

// HTTPDiscovery fetches targets from an HTTP(S) endpoint in Prometheus's
// http_sd format every RefreshInterval (default 1m).
type HTTPDiscovery struct {
	URL             string `json:"url"`
	RefreshInterval string `json:"refreshInterval,omitempty"`
	TLSSkipVerify   bool   `json:"tlsSkipVerify,omitempty"`
}

// DNSDiscovery resolves Names (SRV records by default; A or AAAA with Port)
// every RefreshInterval (default 30s) with the system's resolver
// configuration (/etc/resolv.conf), as Prometheus's dns_sd does.
type DNSDiscovery struct {
	Names           []string `json:"names"`
	Type            string   `json:"type,omitempty"`
	Port            int      `json:"port,omitempty"`
	RefreshInterval string   `json:"refreshInterval,omitempty"`
}

// KubernetesDiscovery lists and watches pods, endpoints or endpoint slices
// (Role, default pod) of Namespaces (all when empty) that match
// LabelSelector and FieldSelector. With APIServer empty the in-cluster
// service account is used; otherwise its bearer token and CA certificate
// come from secureJsonData keys "<group>.kubeBearerToken" and
// "<group>.kubeCACert". Port, when set, keeps only discovered addresses on
// that port (a pod lists one address per declared container port).
type KubernetesDiscovery struct {
	Role          string   `json:"role,omitempty"`
	Namespaces    []string `json:"namespaces,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	FieldSelector string   `json:"fieldSelector,omitempty"`
	APIServer     string   `json:"apiServer,omitempty"`
	TLSSkipVerify bool     `json:"tlsSkipVerify,omitempty"`
	Port          int      `json:"port,omitempty"`

	// BearerToken and CACert come from secureJsonData (see above).
	BearerToken string `json:"-"`
	CACert      string `json:"-"`
}

// Kubernetes discovery roles a target group may use.
var kubernetesRoles = []string{"pod", "endpoints", "endpointslice"}

// validateDiscovery checks an embedded-mode group's discovery (field names
// f.discovery.…), fills its defaults and reads its secrets.
func (g *TargetGroup) validateDiscovery(f string, secure map[string]string) error {
	d := g.Discovery
	f += ".discovery"
	if d == nil || (d.File == nil && d.HTTP == nil && d.DNS == nil && d.Kubernetes == nil) {
		return fmt.Errorf("%s: an embedded-mode target group finds its targets by file, http, dns or kubernetes discovery: give one", f)
	}
	switch d.Scheme {
	case "":
		d.Scheme = "http"
	case "http", "https":
	default:
		return fmt.Errorf("%s.scheme: %q is neither http nor https", f, d.Scheme)
	}
	if d.MetricsPath == "" {
		d.MetricsPath = "/metrics"
	} else if !strings.HasPrefix(d.MetricsPath, "/") {
		return fmt.Errorf("%s.metricsPath: %q must start with /", f, d.MetricsPath)
	}
	interval := func(field, raw string) error {
		if raw == "" {
			return nil
		}
		_, err := ParsePositiveDuration(field, raw)
		return err
	}
	if d.File != nil {
		if len(d.File.Files) == 0 {
			return fmt.Errorf("%s.file.files: list the files (or globs such as /etc/inferscope/targets/*.json) that name the targets", f)
		}
		for k, p := range d.File.Files {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("%s.file.files[%d]: %q is not an absolute path", f, k, p)
			}
		}
		if err := interval(f+".file.refreshInterval", d.File.RefreshInterval); err != nil {
			return err
		}
	}
	if d.HTTP != nil {
		if err := checkURL(f+".http.url", d.HTTP.URL); err != nil {
			return err
		}
		if err := interval(f+".http.refreshInterval", d.HTTP.RefreshInterval); err != nil {
			return err
		}
	}
	if d.DNS != nil {
		if len(d.DNS.Names) == 0 {
			return fmt.Errorf("%s.dns.names: list the DNS names to resolve, such as _metrics._tcp.vllm.llm.svc.cluster.local", f)
		}
		switch strings.ToUpper(d.DNS.Type) {
		case "", "SRV":
			d.DNS.Type = "SRV"
		case "A", "AAAA":
			d.DNS.Type = strings.ToUpper(d.DNS.Type)
			if d.DNS.Port <= 0 || d.DNS.Port > 65535 {
				return fmt.Errorf("%s.dns.port: an %s look-up needs the port to scrape (1-65535)", f, d.DNS.Type)
			}
		default:
			return fmt.Errorf("%s.dns.type: %q is not SRV, A or AAAA", f, d.DNS.Type)
		}
		if err := interval(f+".dns.refreshInterval", d.DNS.RefreshInterval); err != nil {
			return err
		}
	}
	if k := d.Kubernetes; k != nil {
		if k.Role == "" {
			k.Role = "pod"
		}
		if !slices.Contains(kubernetesRoles, k.Role) {
			return fmt.Errorf("%s.kubernetes.role: %q is not one of %s", f, k.Role, strings.Join(kubernetesRoles, ", "))
		}
		if k.APIServer != "" {
			if err := checkURL(f+".kubernetes.apiServer", k.APIServer); err != nil {
				return err
			}
		}
		if k.Port < 0 || k.Port > 65535 {
			return fmt.Errorf("%s.kubernetes.port: %d is not a port", f, k.Port)
		}
		k.BearerToken = secure[SecretKey(g.Name, "kubeBearerToken")]
		k.CACert = secure[SecretKey(g.Name, "kubeCACert")]
		if k.APIServer == "" && (k.BearerToken != "" || k.CACert != "") {
			return fmt.Errorf("%s.kubernetes.apiServer: credentials are set in secureJsonData but no API server: in-cluster discovery uses the pod's service account", f)
		}
	}
	return nil
}

// isGroupsOwn reports whether t is the target group g appends for itself
// (as encoded settings carry it), secrets read from secureJsonData aside.
func isGroupsOwn(t Target, g *TargetGroup) bool {
	t.BearerToken, t.BasicAuthPassword = "", ""
	return reflect.DeepEqual(t, Target{Name: g.Name, Selector: g.Selector, Engine: g.Engine})
}
