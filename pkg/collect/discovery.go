package collect

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/dns"
	"github.com/prometheus/prometheus/discovery/file"
	sdhttp "github.com/prometheus/prometheus/discovery/http"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/scrape"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Default refresh intervals of the discovery mechanisms, Prometheus's own.
const (
	defaultFileRefresh = 5 * time.Minute
	defaultHTTPRefresh = time.Minute
	defaultDNSRefresh  = 30 * time.Second
)

// discoveryUpdate is how often the discovery manager hands changed target
// sets to the scrape manager (Prometheus's default is 5 s).
const discoveryUpdate = time.Second

func refreshOr(raw string, def time.Duration) model.Duration {
	if raw == "" {
		return model.Duration(def)
	}
	d, err := model.ParseDuration(raw)
	if err != nil || d <= 0 {
		return model.Duration(def)
	}
	return d
}

// groupDiscovery turns an embedded-mode target group's settings into
// Prometheus's service-discovery configurations: file_sd, http_sd, dns_sd
// and kubernetes_sd as Prometheus reads them from its configuration file.
func groupDiscovery(g settings.TargetGroup) (discovery.Configs, error) {
	d := g.Discovery
	var out discovery.Configs
	if d.File != nil {
		out = append(out, &file.SDConfig{Files: d.File.Files, RefreshInterval: refreshOr(d.File.RefreshInterval, defaultFileRefresh)})
	}
	if d.HTTP != nil {
		hc := config_util.DefaultHTTPClientConfig
		hc.FollowRedirects = false
		hc.TLSConfig.InsecureSkipVerify = d.HTTP.TLSSkipVerify
		out = append(out, &sdhttp.SDConfig{URL: d.HTTP.URL, RefreshInterval: refreshOr(d.HTTP.RefreshInterval, defaultHTTPRefresh), HTTPClientConfig: hc})
	}
	if d.DNS != nil {
		out = append(out, &dns.SDConfig{Names: d.DNS.Names, Type: d.DNS.Type, Port: d.DNS.Port, RefreshInterval: refreshOr(d.DNS.RefreshInterval, defaultDNSRefresh)})
	}
	if k := d.Kubernetes; k != nil {
		role := kubernetes.Role(k.Role)
		sd := &kubernetes.SDConfig{Role: role, HTTPClientConfig: config_util.DefaultHTTPClientConfig,
			NamespaceDiscovery: kubernetes.NamespaceDiscovery{Names: k.Namespaces}}
		if k.APIServer != "" {
			u, err := url.Parse(k.APIServer)
			if err != nil {
				return nil, fmt.Errorf("targetGroups %s: discovery.kubernetes.apiServer: %w", g.Name, err)
			}
			sd.APIServer = config_util.URL{URL: u}
			sd.HTTPClientConfig.TLSConfig.InsecureSkipVerify = k.TLSSkipVerify
			if k.BearerToken != "" {
				sd.HTTPClientConfig.Authorization = &config_util.Authorization{Type: "Bearer", Credentials: config_util.Secret(k.BearerToken)}
			}
			if k.CACert != "" {
				sd.HTTPClientConfig.TLSConfig.CA = k.CACert
			}
		}
		if k.LabelSelector != "" || k.FieldSelector != "" {
			// The selectors select the role's own objects (pods, endpoints or slices).
			sd.Selectors = []kubernetes.SelectorConfig{{Role: role, Label: k.LabelSelector, Field: k.FieldSelector}}
		}
		out = append(out, sd)
	}
	return out, nil
}

// groupRelabel names a discovered target: job is the group's name whatever
// the discovery's labels say (a file_sd "job" label included), Kubernetes'
// namespace and pod become labels, and a Kubernetes port keeps only the
// addresses on that port.
func groupRelabel(g settings.TargetGroup) []*relabel.Config {
	var out []*relabel.Config
	if k := g.Discovery.Kubernetes; k != nil {
		if k.Port > 0 {
			out = append(out, &relabel.Config{SourceLabels: model.LabelNames{model.AddressLabel}, Separator: ";",
				Regex: relabel.MustNewRegexp(".+:" + strconv.Itoa(k.Port)), Action: relabel.Keep, NameValidationScheme: model.UTF8Validation})
		}
		for target, source := range map[string]string{"namespace": "__meta_kubernetes_namespace", "pod": "__meta_kubernetes_pod_name"} {
			out = append(out, &relabel.Config{SourceLabels: model.LabelNames{model.LabelName(source)}, Separator: ";",
				Regex: relabel.MustNewRegexp("(.+)"), TargetLabel: target, Replacement: "$1", Action: relabel.Replace, NameValidationScheme: model.UTF8Validation})
		}
	}
	out = append(out, &relabel.Config{Separator: ";", Regex: relabel.MustNewRegexp("(.*)"), TargetLabel: model.JobLabel,
		Replacement: g.Name, Action: relabel.Replace, NameValidationScheme: model.UTF8Validation})
	return out
}

// groupScrapeConfigs returns a scrape config per embedded-mode target group
// (job name = the group's name) and the discovery configurations that feed
// it, keyed by the same name.
func groupScrapeConfigs(cfg settings.Settings) ([]*config.ScrapeConfig, map[string]discovery.Configs, error) {
	if cfg.IsRemote() {
		return nil, nil, nil
	}
	metricRelabel, err := storeRelabel(cfg.StoreAllSeries)
	if err != nil {
		return nil, nil, err
	}
	var scfgs []*config.ScrapeConfig
	sds := map[string]discovery.Configs{}
	for _, g := range cfg.TargetGroups {
		if g.Discovery == nil {
			continue
		}
		dcs, err := groupDiscovery(g)
		if err != nil {
			return nil, nil, err
		}
		hc := config_util.DefaultHTTPClientConfig
		hc.FollowRedirects = false
		if g.BearerToken != "" {
			hc.Authorization = &config_util.Authorization{Type: "Bearer", Credentials: config_util.Secret(g.BearerToken)}
		}
		scfgs = append(scfgs, &config.ScrapeConfig{
			JobName:                g.Name,
			HonorTimestamps:        true,
			ScrapeInterval:         model.Duration(cfg.ScrapeInterval),
			ScrapeTimeout:          model.Duration(cfg.ScrapeTimeout),
			ScrapeProtocols:        scrapeProtocols,
			ScrapeFallbackProtocol: config.PrometheusText0_0_4,
			MetricsPath:            g.Discovery.MetricsPath,
			Scheme:                 g.Discovery.Scheme,
			EnableCompression:      true,
			BodySizeLimit:          units.Base2Bytes(cfg.BodySizeLimit),
			LabelLimit:             labelLimit,
			LabelNameLengthLimit:   labelNameLengthLimit,
			LabelValueLengthLimit:  labelValueLengthLimit,
			HTTPClientConfig:       hc,
			RelabelConfigs:         groupRelabel(g),
			MetricRelabelConfigs:   metricRelabel,
		})
		sds[g.Name] = dcs
	}
	return scfgs, sds, nil
}

// discoveryFeed runs Prometheus's discovery manager over the target groups'
// configurations and hands the scrape manager the configured targets plus
// the latest discovered ones at every change.
type discoveryFeed struct {
	mgr    *discovery.Manager
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startDiscovery starts the discovery manager for sds and the goroutine
// that merges its updates with the static target groups into out. It
// returns nil when there is nothing to discover.
func startDiscovery(logger *slog.Logger, reg prometheus.Registerer, sds map[string]discovery.Configs,
	static map[string][]*targetgroup.Group, out chan<- map[string][]*targetgroup.Group) (*discoveryFeed, error) {
	if len(sds) == 0 {
		return nil, nil
	}
	metrics, err := discovery.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("collector: discovery metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgr := discovery.NewManager(ctx, logger, reg, metrics, discovery.Name("scrape"), discovery.Updatert(discoveryUpdate))
	if mgr == nil {
		cancel()
		return nil, fmt.Errorf("collector: discovery manager could not be created")
	}
	if err := mgr.ApplyConfig(sds); err != nil {
		cancel()
		return nil, fmt.Errorf("collector: discovery: %w", err)
	}
	f := &discoveryFeed{mgr: mgr, cancel: cancel}
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		_ = mgr.Run()
	}()
	go func() {
		defer f.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ts, ok := <-mgr.SyncCh():
				if !ok {
					return
				}
				merged := maps.Clone(static)
				maps.Copy(merged, ts)
				select {
				case out <- merged:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return f, nil
}

// stop ends discovery and waits for its goroutines.
func (f *discoveryFeed) stop() {
	if f == nil {
		return
	}
	f.cancel()
	f.wg.Wait()
}

// groupStatus is the scrape state of an embedded-mode target group: up when
// any of its discovered targets is, its latest scrape, the last error of a
// failing target when none is up, and how many targets it has.
func (c *Collector) groupStatus(name string, active []*scrape.Target) TargetStatus {
	st := TargetStatus{Name: name, Kind: KindTarget, URL: fmt.Sprintf("%d discovered targets", len(active)), Discovered: len(active)}
	var lastErr string
	for _, t := range active {
		if t.Health() == scrape.HealthGood {
			st.Up = true
		} else if err := t.LastError(); err != nil {
			lastErr = c.mask(err.Error())
		}
		if ls := t.LastScrape(); ls.After(st.LastScrape) {
			st.LastScrape, st.LastDuration = ls, t.LastScrapeDuration()
		}
	}
	if !st.Up {
		st.LastError = lastErr
	}
	st.Series = c.seriesCount(name)
	return st
}

// DiscoveredURLs returns the URLs of the targets an embedded-mode target
// group's discovery found and the scrape manager scrapes, sorted.
func (c *Collector) DiscoveredURLs(group string) []string {
	var out []string
	for _, t := range c.mgr.TargetsActive()[group] {
		out = append(out, t.URL().String())
	}
	sort.Strings(out)
	return out
}
