// Package settings holds the typed data-source configuration of Inferscope:
// the jsonData a Grafana admin saves (targets, GPU agents, scrape limits) and
// the secrets from secureJsonData, merged and validated by one loader.
//
// Secrets are carried in fields tagged `json:"-"` so that they never travel
// back through JSON encoding or logs.
package settings

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"golang.org/x/net/idna"
)

// Defaults applied by Load when a field is zero.
const (
	DefaultScrapeInterval = 15 * time.Second
	DefaultScrapeTimeout  = 10 * time.Second
	DefaultRetention      = 15 * 24 * time.Hour
	// DefaultBodySizeLimit caps one /metrics page in bytes (a real vLLM page is ~50 KB).
	DefaultBodySizeLimit int64 = 8 << 20
	// DefaultSampleLimit caps the samples kept from one scrape after dropping unused families.
	DefaultSampleLimit = 50000
)

// Engine names accepted as a target's engine override. An empty override
// means "detect from the families on the page".
var Engines = []string{"vllm", "sglang", "tgi", "llamacpp", "trtllm", "llm-d-epp"}

// AgentKinds lists the accepted GPU agent kinds: our own NVML agent and NVIDIA dcgm-exporter.
var AgentKinds = []string{"inferscope", "dcgm"}

// Target is one inference server whose Prometheus /metrics page is scraped.
// Name becomes the Prometheus `job` label of every stored series and is what
// queries select by; URL is never taken from a query.
type Target struct {
	Name string `json:"name"`
	// URL of the metrics page, e.g. http://10.0.0.5:8000/metrics.
	URL string `json:"url"`
	// Engine optionally overrides detection: one of Engines.
	Engine string `json:"engine,omitempty"`
	// Labels are added to every series scraped from this target.
	Labels map[string]string `json:"labels,omitempty"`
	// BasicAuthUser is the basic-auth user; the password lives in secureJsonData.
	BasicAuthUser string `json:"basicAuthUser,omitempty"`
	// TLSSkipVerify disables certificate verification for this target.
	TLSSkipVerify bool `json:"tlsSkipVerify,omitempty"`
	// Agent names the GPU agent (from Settings.GPUAgents) of the node serving this target.
	Agent string `json:"agent,omitempty"`
	// GPUs are the GPU indices on that agent used by this target; empty means all.
	GPUs []int `json:"gpus,omitempty"`
	// Selector identifies the target's series on the remote server in remote
	// mode, e.g. {job="vllm", instance="10.0.0.5:8000"}; empty means {job="<name>"}.
	Selector string `json:"selector,omitempty"`
	// Metrics maps signals (keys of UserSignals) to the target's own metric names, for
	// services instrumented by hand, e.g. {"ttft": "llm_ttft_seconds", "prompt_tokens":
	// "llm_prompt_tokens_total"}: histograms by base name, counters and gauges by sample name.
	// The collector stores them under the catalogue's names of engine "custom"; other labels are
	// kept. Embedded mode only.
	Metrics map[string]string `json:"metrics,omitempty"`
	// ModelLabel names the label of the mapped metrics that holds the model (e.g. "model");
	// its value is copied into model_name. Empty: the metrics carry model_name themselves, or
	// labels.model_name names the model.
	ModelLabel string `json:"modelLabel,omitempty"`
	// CostPerHour is what the hardware serving this target costs per hour, in the root
	// currency; 0 (default) means no price of its own (see GPUAgent.CostPerGPUHour).
	CostPerHour float64 `json:"costPerHour,omitempty"`

	// BearerToken comes from secureJsonData key "<name>.bearerToken".
	BearerToken string `json:"-"`
	// BasicAuthPassword comes from secureJsonData key "<name>.basicAuthPassword".
	BasicAuthPassword string `json:"-"`
	// Group is the target group this target stands for (remote mode,
	// jsonData "targetGroups"), nil for a target configured by itself.
	Group *TargetGroup `json:"-"`
}

// UsesGPU reports whether the target's engine runs on GPU gpu (the index
// label its agent reports, e.g. "0") of agent: the target names agent
// (Agent) and its GPUs list is empty (every GPU of the agent) or holds that
// index. A gpu label that is not an index matches only an empty list.
func (t Target) UsesGPU(agent, gpu string) bool {
	if t.Agent == "" || t.Agent != agent {
		return false
	}
	if len(t.GPUs) == 0 {
		return true
	}
	idx, err := strconv.Atoi(gpu)
	return err == nil && slices.Contains(t.GPUs, idx)
}

// GPUAgent is a node-level GPU metrics endpoint: the Inferscope NVML agent or dcgm-exporter.
type GPUAgent struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Kind is "inferscope" (default) or "dcgm"; both are read through the same catalogue.
	Kind          string `json:"kind,omitempty"`
	TLSSkipVerify bool   `json:"tlsSkipVerify,omitempty"`
	// Selector identifies the agent's series on the remote server in remote
	// mode (see Target.Selector).
	Selector string `json:"selector,omitempty"`
	// CostPerGPUHour is the price of one GPU of this node per hour (root currency), applied to
	// the GPUs each target on it uses (targets[].gpus, all the agent reports when empty) when
	// the target has no costPerHour; 0 (default) means no price.
	CostPerGPUHour float64 `json:"costPerGPUHour,omitempty"`

	// BearerToken comes from secureJsonData key "<name>.bearerToken".
	BearerToken string `json:"-"`
}

// Settings is the whole jsonData of an Inferscope data source after defaults.
type Settings struct {
	// Mode is ModeEmbedded (default: scrape into the embedded TSDB) or
	// ModeRemote (read a Prometheus-compatible server; see Remote).
	Mode string `json:"mode,omitempty"`
	// RemoteTimeoutRaw bounds one request to the remote server ("30s").
	RemoteTimeoutRaw string `json:"remoteTimeout,omitempty"`
	// RemoteMaxAnswerMiB caps the MiB read of one answer of the remote server (0: the
	// default, 32); RemoteMaxRequestMiB those of all the answers to one QueryData request
	// (0: 128). Past either the query fails with a sentence naming the limit.
	RemoteMaxAnswerMiB  int `json:"remoteMaxAnswerMiB,omitempty"`
	RemoteMaxRequestMiB int `json:"remoteMaxRequestMiB,omitempty"`
	// Remote holds the parsed remote-mode configuration.
	Remote          Remote `json:"-"`
	remoteBasicAuth bool

	Targets   []Target   `json:"targets"`
	GPUAgents []GPUAgent `json:"gpuAgents,omitempty"`
	// TargetGroups are remote-mode fleets whose targets follow the server's
	// series (TargetGroup); each is also appended to Targets (Target.Group set).
	TargetGroups []TargetGroup `json:"targetGroups,omitempty"`
	// Probes are client-side probes (Probe), each joined to the target it exercises.
	Probes []Probe `json:"probes,omitempty"`

	// Durations in Prometheus notation ("15s", "6h"); the parsed values are below.
	ScrapeIntervalRaw string `json:"scrapeInterval,omitempty"`
	ScrapeTimeoutRaw  string `json:"scrapeTimeout,omitempty"`
	RetentionRaw      string `json:"retention,omitempty"`
	// BodySizeLimit caps one scraped page in bytes.
	BodySizeLimit int64 `json:"bodySizeLimit,omitempty"`
	// SampleLimit caps the samples kept from one scrape (after dropping unused
	// families); a page above it fails that whole scrape, as in Prometheus.
	SampleLimit int `json:"sampleLimit,omitempty"`
	// StoreAllSeries, in embedded mode, stores every sample a scraped page carries (raw
	// history: `_created`, `python_*`, `http_*`, the buckets of histograms no query reads,
	// families no engine entry names) instead of only what the catalogue reads
	// (catalog.Stores). Off by default: on the real vLLM 0.11 page it stores 379 series
	// instead of 280, and each stored series costs about 1.2 KB of memory at 1,000 targets
	// (docs/performance.md). The sample limit then counts every sample of the page.
	StoreAllSeries bool `json:"storeAllSeries,omitempty"`
	// Diagnosis holds the thresholds of the diagnosis query.
	Diagnosis Diagnosis `json:"diagnosis,omitempty"`

	ScrapeInterval time.Duration `json:"-"`
	ScrapeTimeout  time.Duration `json:"-"`
	Retention      time.Duration `json:"-"`

	// Storage: storagePath and retentionSize.
	Storage

	// SLOSettings holds the SLO profiles (jsonData key sloProfiles).
	SLOSettings

	// Baselines holds baselinesPath and expectedPerformance.
	Baselines
	// CostSettings holds the currency and the energy price.
	CostSettings
}

// nameRE restricts target and agent names to what is safe as a Prometheus
// label value in PromQL regexes and as a secureJsonData key prefix.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$`)

// claimName checks the name of the entry at field f (e.g. "targets[0]"): it
// matches nameRE and no entry in seen (name → the field that holds it) has
// it; f then holds it.
func claimName(seen map[string]string, f, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s.name: %q must be 1-63 letters, digits, '_', '.', ':' or '-'", f, name)
	}
	if prev, dup := seen[name]; dup {
		return fmt.Errorf("%s.name: %q is already used by %s", f, name, prev)
	}
	seen[name] = f
	return nil
}

// SecretKey returns the secureJsonData key holding secret kind ("bearerToken",
// "basicAuthPassword") for the target or agent called name.
func SecretKey(name, kind string) string { return name + "." + kind }

// Load decodes jsonData, merges secrets from secureJsonData, applies defaults
// and validates. The error, if any, is one sentence naming the field, e.g.
// `targets[1].url: "ftp://x" is not an http(s) URL`.
func Load(jsonData []byte, secure map[string]string) (Settings, error) {
	return load("", false, jsonData, secure)
}

func load(dsURL string, basicAuth bool, jsonData []byte, secure map[string]string) (Settings, error) {
	var s Settings
	if len(strings.TrimSpace(string(jsonData))) > 0 {
		if err := json.Unmarshal(jsonData, &s); err != nil {
			return Settings{}, fmt.Errorf("jsonData is not valid JSON: %w", err)
		}
	}
	for i := range s.Targets {
		t := &s.Targets[i]
		t.BearerToken = secure[SecretKey(t.Name, "bearerToken")]
		t.BasicAuthPassword = secure[SecretKey(t.Name, "basicAuthPassword")]
	}
	for i := range s.GPUAgents {
		a := &s.GPUAgents[i]
		a.BearerToken = secure[SecretKey(a.Name, "bearerToken")]
		if a.Kind == "" {
			a.Kind = "inferscope"
		}
	}
	for i := range s.Probes {
		s.Probes[i].BearerToken = secure[SecretKey(s.Probes[i].Name, "bearerToken")]
	}
	if err := s.applyDefaults(); err != nil {
		return Settings{}, err
	}
	if err := s.applyRemote(dsURL, secure, basicAuth); err != nil {
		return Settings{}, err
	}
	if err := s.applyTargetGroups(secure); err != nil {
		return Settings{}, err
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func parseDuration(field, raw string, def time.Duration) (time.Duration, error) {
	if raw == "" {
		return def, nil
	}
	return ParsePositiveDuration(field, raw)
}

// ParsePositiveDuration parses a Prometheus duration ("15s", "6h", "30d", "1y") that must be
// positive, for the settings and the query fields. The error is one sentence naming field: a
// well-formed duration beyond what a duration can hold (about 292 years, e.g. "1000y") is
// "too long", anything else "not a positive duration".
func ParsePositiveDuration(field, raw string) (time.Duration, error) {
	d, err := model.ParseDuration(raw)
	if err != nil && strings.Contains(err.Error(), "out of range") {
		return 0, fmt.Errorf("%s: %q is too long (a duration holds at most 292y)", field, raw)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive duration such as 15s or 6h", field, raw)
	}
	return time.Duration(d), nil
}

func (s *Settings) applyDefaults() error {
	var err error
	if s.ScrapeInterval, err = parseDuration("scrapeInterval", s.ScrapeIntervalRaw, DefaultScrapeInterval); err != nil {
		return err
	}
	defTimeout := DefaultScrapeTimeout
	if defTimeout > s.ScrapeInterval {
		defTimeout = s.ScrapeInterval
	}
	if s.ScrapeTimeout, err = parseDuration("scrapeTimeout", s.ScrapeTimeoutRaw, defTimeout); err != nil {
		return err
	}
	if s.Retention, err = parseDuration("retention", s.RetentionRaw, DefaultRetention); err != nil {
		return err
	}
	if s.BodySizeLimit == 0 {
		s.BodySizeLimit = DefaultBodySizeLimit
	}
	if s.SampleLimit == 0 {
		s.SampleLimit = DefaultSampleLimit
	}
	s.Diagnosis.applyDefaults()
	s.applyBaselineDefaults()
	s.applyCostDefaults()
	if err := s.storageDefaults(); err != nil {
		return err
	}
	return s.applySLODefaults()
}

func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q is not an http(s) URL such as http://10.0.0.5:8000/metrics", field, raw)
	}
	if u.User != nil {
		// The URL is shown to dashboard viewers (targets table); credentials
		// belong in basicAuthUser and the secure password field.
		return fmt.Errorf("%s: put credentials in the basic-auth user and password fields, not in the URL", field)
	}
	return nil
}

// reservedLabels are label names a target's extra labels may not set: they
// are Prometheus's own or labels the catalogue reads from engine pages
// (histogram bounds, data-parallel rank, finish reason, GPU identity), and a
// clash would rename the page's label to exported_<name>. model_name is
// allowed: it names the model of engines whose pages carry none (TGI, llama.cpp).
var reservedLabels = map[string]bool{"job": true, "instance": true, "le": true, "quantile": true,
	"engine": true, "finished_reason": true, "reason": true, "gpu": true, "uuid": true, "hostname": true}

// Validate checks a loaded Settings and returns one sentence naming the first bad field.
func (s *Settings) Validate() error {
	if s.ScrapeTimeout > s.ScrapeInterval {
		return fmt.Errorf("scrapeTimeout: %s is longer than scrapeInterval %s", s.ScrapeTimeout, s.ScrapeInterval)
	}
	if s.Retention < 4*s.ScrapeInterval {
		return fmt.Errorf("retention: %s must hold at least four scrapes (4 × %s)", s.Retention, s.ScrapeInterval)
	}
	if err := s.validateStorage(); err != nil {
		return err
	}
	if s.BodySizeLimit < 0 {
		return fmt.Errorf("bodySizeLimit: %d must be positive", s.BodySizeLimit)
	}
	if s.SampleLimit < 0 {
		return fmt.Errorf("sampleLimit: %d must be positive", s.SampleLimit)
	}
	if err := s.Diagnosis.validate(); err != nil {
		return err
	}
	if err := s.validateBaselines(); err != nil {
		return err
	}
	seen := map[string]string{}
	for i, t := range s.Targets {
		f := fmt.Sprintf("targets[%d]", i)
		if err := claimName(seen, f, t.Name); err != nil {
			return err
		}
		if t.Group == nil { // a target group's targets are discovered (TargetGroup)
			if err := checkURLFor(s.IsRemote(), f+".url", t.URL); err != nil {
				return err
			}
			var err error
			if s.Targets[i].URL, err = normalizeHost(f+".url", t.URL); err != nil {
				return err
			}
		}
		if t.Engine != "" && !slices.Contains(Engines, t.Engine) {
			return fmt.Errorf("%s.engine: %q is not one of %s", f, t.Engine, strings.Join(Engines, ", "))
		}
		for k := range t.Labels {
			if !model.LegacyValidation.IsValidLabelName(k) || strings.HasPrefix(k, "__") {
				return fmt.Errorf("%s.labels: %q is not a usable label name", f, k)
			}
			if reservedLabels[k] {
				return fmt.Errorf("%s.labels: %q is set by the scrape or the engine's page and cannot be overridden", f, k)
			}
		}
		if err := checkUserMetrics(f, t, s.IsRemote()); err != nil {
			return err
		}
		if t.BearerToken != "" && t.BasicAuthUser != "" {
			return fmt.Errorf("%s: set either a bearer token or basic auth, not both", f)
		}
		for _, g := range t.GPUs {
			if g < 0 {
				return fmt.Errorf("%s.gpus: %d is not a GPU index", f, g)
			}
		}
	}
	agents := map[string]bool{}
	for i, a := range s.GPUAgents {
		f := fmt.Sprintf("gpuAgents[%d]", i)
		if err := claimName(seen, f, a.Name); err != nil {
			return err
		}
		agents[a.Name] = true
		if err := checkURLFor(s.IsRemote(), f+".url", a.URL); err != nil {
			return err
		}
		var err error
		if s.GPUAgents[i].URL, err = normalizeHost(f+".url", a.URL); err != nil {
			return err
		}
		if !slices.Contains(AgentKinds, a.Kind) {
			return fmt.Errorf("%s.kind: %q is not one of %s", f, a.Kind, strings.Join(AgentKinds, ", "))
		}
	}
	if err := s.validateProbes(seen); err != nil {
		return err
	}
	for i, t := range s.Targets {
		if t.Agent != "" && !agents[t.Agent] {
			return fmt.Errorf("targets[%d].agent: %q is not a configured GPU agent", i, t.Agent)
		}
	}
	if err := s.validateRemote(); err != nil {
		return err
	}
	if err := s.validateCost(); err != nil {
		return err
	}
	return s.validateSLO()
}

// normalizeHost returns raw with a host spelled in other than ASCII mapped
// to the ASCII form the network uses, by IDNA's UTS #46 lookup mapping (the
// WHATWG URL standard's host parsing, as browsers do): fullwidth digits and
// dots (１２７.０.０.１) become 127.0.0.1, an internationalised name its
// xn-- form. So the scraped address is the address shown in the targets
// table and health check. A host that cannot be mapped is refused. An empty
// or ASCII host is returned unchanged.
func normalizeHost(field, raw string) (string, error) {
	if raw == "" {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %q is not an http(s) URL such as http://10.0.0.5:8000/metrics", field, raw)
	}
	host := u.Hostname()
	ascii := true
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return raw, nil
	}
	mapped, err := idna.Lookup.ToASCII(host)
	if err != nil || mapped == "" {
		return "", fmt.Errorf("%s: host %q is not a valid host name (%v); write it in ASCII, such as 10.0.0.5 or vllm.example.com", field, host, err)
	}
	if p := u.Port(); p != "" {
		u.Host = net.JoinHostPort(mapped, p)
	} else {
		u.Host = mapped
	}
	return u.String(), nil
}

// checkURLFor checks a target's or agent's URL; in remote mode the URL is
// only shown (the plugin scrapes nothing) and may be empty.
func checkURLFor(remote bool, field, raw string) error {
	if remote && raw == "" {
		return nil
	}
	return checkURL(field, raw)
}

// TargetNames returns the configured target names, sorted.
func (s *Settings) TargetNames() []string {
	out := make([]string, 0, len(s.Targets))
	for _, t := range s.Targets {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

// Target returns the target called name.
func (s *Settings) Target(name string) (Target, bool) {
	return byName(s.Targets, name, func(t Target) string { return t.Name })
}

// Agent returns the GPU agent called name.
func (s *Settings) Agent(name string) (GPUAgent, bool) {
	return byName(s.GPUAgents, name, func(a GPUAgent) string { return a.Name })
}

// byName returns the entry of list called name (nameOf reads an entry's
// name); false when none is.
func byName[T any](list []T, name string, nameOf func(T) string) (T, bool) {
	for _, x := range list {
		if nameOf(x) == name {
			return x, true
		}
	}
	var none T
	return none, false
}
