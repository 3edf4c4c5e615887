// Package collect is Inferscope's embedded Prometheus: Prometheus's own scrape
// manager (github.com/prometheus/prometheus/scrape) scrapes every configured
// target and GPU agent into a TSDB (github.com/prometheus/prometheus/tsdb) kept
// on disk with its write-ahead log, one directory per data source (keyed by
// its organisation and UID, see OrgDataSourceDir), and source.NewEmbedded queries it with the PromQL
// engine. Stored series look exactly like a Prometheus server's: raw engine
// metric names, job=<target name>, instance=<host:port>, plus the target's
// extra labels, and the synthetic up / scrape_duration_seconds series.
//
// What is stored is decided by catalog.Stores: the families the catalogue
// reads, process_start_time_seconds (restart events), and every other family
// of an LLM engine without its _bucket samples (so detection, availability
// and events see every family on the page); `_created` siblings and python_*,
// http_* and other process_* families are dropped before they reach the TSDB.
package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/scrape"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Kinds of scraped endpoint reported in TargetStatus.Kind.
const (
	KindTarget = "target"
	KindAgent  = "agent"
	KindProbe  = "probe" // a client-side probe (settings probes[])
)

// dropRegex matches sample names that are never stored whatever the catalogue
// says: OpenMetrics `_created` siblings (exposed as plain gauges in the text
// format by prometheus_client for Python), and the Python runtime, process and
// HTTP-instrumentator families that inference servers add to their pages.
const dropRegex = `.*_created|python_.*|http_.*`

// keepHTTPLabel is a temporary label marking http_requests_total, the one
// HTTP-instrumentator family the catalogue reads (the error SLI's 5xx
// answers, catalog.ErrorSLINames), so that dropRegex spares it.
const keepHTTPLabel = "__tmp_inferscope_keep_http"

// bucketLabel is a temporary label marking the _bucket samples of engine
// families the catalogue does not read; it never reaches the TSDB.
const bucketLabel = "__tmp_inferscope_unused_bucket"

// storeRelabel builds the metric_relabel_configs that store exactly what
// catalog.Stores accepts: the catalogue's names and process_start_time_seconds,
// plus every other family of an LLM engine without its _bucket samples (so
// detection, availability and events see every family on the page). With
// all set (settings StoreAllSeries) it returns no rule: every sample of the
// page is stored, as a plain Prometheus scrape would.
func storeRelabel(all bool) ([]*relabel.Config, error) {
	if all {
		return nil, nil
	}
	keepRE, famRE, bucketRE := catalog.StoreRegexes()
	bucket, err := relabel.NewRegexp(bucketRE)
	if err != nil {
		return nil, fmt.Errorf("collector: engine bucket regex: %w", err)
	}
	// Keep when the name is the catalogue's (any marker), or when it is an
	// engine family's and not marked as an unused bucket.
	either, err := relabel.NewRegexp(".*;(?:" + keepRE + ")|;(?:" + famRE + ")")
	if err != nil {
		return nil, fmt.Errorf("collector: store regex: %w", err)
	}
	name := model.LabelNames{model.MetricNameLabel}
	return []*relabel.Config{
		{SourceLabels: name, Separator: ";", Regex: relabel.MustNewRegexp(regexp.QuoteMeta(catalog.HTTPRequestsName)), TargetLabel: keepHTTPLabel, Replacement: "1", Action: relabel.Replace, NameValidationScheme: model.UTF8Validation},
		{SourceLabels: model.LabelNames{keepHTTPLabel, model.MetricNameLabel}, Separator: ";", Regex: relabel.MustNewRegexp(";(?:" + dropRegex + ")"), Action: relabel.Drop, NameValidationScheme: model.UTF8Validation},
		{SourceLabels: name, Separator: ";", Regex: bucket, TargetLabel: bucketLabel, Replacement: "1", Action: relabel.Replace, NameValidationScheme: model.UTF8Validation},
		{SourceLabels: model.LabelNames{bucketLabel, model.MetricNameLabel}, Separator: ";", Regex: either, Action: relabel.Keep, NameValidationScheme: model.UTF8Validation},
		{Regex: relabel.MustNewRegexp(bucketLabel + "|" + keepHTTPLabel), Separator: ";", Replacement: "$1", Action: relabel.LabelDrop, NameValidationScheme: model.UTF8Validation},
	}, nil
}

// scrapeProtocols asks for the classic text format first: it is what every
// inference server (prometheus_client for Python, Rust and Go exporters)
// serves natively and the cheapest to parse; OpenMetrics stays acceptable.
// Either way the stored series are the same once `_created` is dropped.
var scrapeProtocols = []config.ScrapeProtocol{
	config.PrometheusText0_0_4, config.OpenMetricsText1_0_0, config.OpenMetricsText0_0_1, config.PrometheusText1_0_0,
}

// defaultMetricsPath is used when a target URL has no path (http://host:8000).
const defaultMetricsPath = "/metrics"

// TargetStatus is the scrape state of one target or GPU agent.
type TargetStatus struct {
	// Name is the target or agent name, the `job` label of its series.
	Name string
	// Kind is KindTarget, KindAgent or KindProbe.
	Kind string
	// URL is the scraped URL as configured.
	URL string
	// Up is true when the last scrape succeeded (Prometheus health "up").
	Up bool
	// LastScrape is the start of the last scrape; zero before the first one.
	LastScrape time.Time
	// LastDuration is how long the last scrape took.
	LastDuration time.Duration
	// LastError is the last scrape's error text, empty when it succeeded.
	LastError string
	// Overloaded is set when the last scrape failed because the plugin could not keep up: the
	// page had arrived, but was still being parsed and stored when the scrape timeout passed
	// (ErrParseTimeout). A slow target fails while fetching instead and leaves it false.
	Overloaded bool
	// Series is the number of series with job=Name in the TSDB head (the
	// in-memory part, which holds every series written within the last
	// block range, about 2-3 h at the default 6 h retention), including the
	// synthetic up and scrape_* series. Read from the head's postings index.
	Series int
	// Discovered counts an embedded-mode target group's discovered targets
	// (its URL then says how many); 0 for a configured target.
	Discovered int
}

// endpoint is one scraped URL: a target or a GPU agent.
type endpoint struct {
	name, kind, url string
}

// Collector owns one data source's scrape manager and its view of the data
// source's store (TSDB on disk with its WAL, shared with other collectors of
// the same data source in this process). Create it with Start and release it
// with Close.
type Collector struct {
	logger    *slog.Logger
	dir       string
	store     *store
	mgr       *scrape.Manager
	tracker   *connTracker
	tsets     chan map[string][]*targetgroup.Group
	runDone   chan struct{}
	querier   source.Querier
	endpoints []endpoint
	// disc feeds the scrape manager the targets of the target groups'
	// discovery (nil without groups); groups are their names, sorted.
	disc   *discoveryFeed
	groups []string
	drain  time.Duration
	errors *errorLog
	mask   func(string) string
	sweep  *staleSweep

	// queries in flight through Querier; Close waits for them.
	qmu      sync.RWMutex
	closing  bool
	inflight sync.WaitGroup

	stopOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

// Options are the per-data-source parts of Start.
type Options struct {
	// Dir is the data source's store directory, usually
	// OrgDataSourceDir(storagePath, org, uid). Required; created if missing.
	Dir string
	// LegacyDirs are where older versions kept this data source's store,
	// newest layout first (LegacyStoreDirs(storagePath, org, uid)); when Dir
	// does not exist, the first of them that does is moved to Dir with its
	// history. Empty: none.
	LegacyDirs []string
	// Owner is the data source Dir belongs to. When Owner.Org is set, Start
	// refuses a directory whose owner marker names another data source and
	// marks an unmarked one as this data source's. Zero: no check.
	Owner Owner
	// UID is the data source's UID, the `datasource` label of the plugin's own metrics.
	UID string
	// Logger receives scrape, TSDB and PromQL logs; nil discards them.
	Logger *slog.Logger
	// LockWait is how long Start waits for another process to release the
	// directory's lock before it fails; 0 means DefaultLockWait.
	LockWait time.Duration
	// QueryDrain is how long Close waits for queries in flight; 0 means DefaultQueryDrain.
	QueryDrain time.Duration
	// Mask, when set, masks the data source's secrets in scrape errors as
	// they are read (Status, ScrapeErrors), before anything shortens them:
	// a page may echo the scrape's Authorization header (see package redact).
	Mask func(string) string

	// pageClock is the clock the scrape timeout of a page being parsed is read on
	// (meteredAppendable); nil: time.Now. Tests freeze or step it.
	pageClock func() time.Time
}

// Defaults of Options.
const (
	DefaultLockWait   = 10 * time.Second
	DefaultQueryDrain = 30 * time.Second
)

// ErrReconfigured is the error of a query that reaches a collector after its
// Close began (the data source's settings were saved or the plugin is
// stopping): the caller should retry, the new instance answers it.
var ErrReconfigured = errors.New("data source reconfigured, retry")

// Per-series label limits of every scrape: a series above any of them fails
// the scrape with a clear error.
const (
	labelLimit            = 64
	labelNameLengthLimit  = 128
	labelValueLengthLimit = 1024
)

// Start opens (or joins) the TSDB in opts.Dir, replaying its WAL, starts
// Prometheus's scrape manager on every target and GPU agent of cfg and
// returns once the scrape pools exist (the first scrape of each target
// follows within one scrape interval, at a per-target offset as in
// Prometheus). If another collector of this process scrapes into the same
// directory (the previous instance of the data source), it stops scraping
// first; its queries keep working until it is closed. Retention by time
// (cfg.Retention) and size (cfg.RetentionSize) apply to the whole directory,
// so targets removed from the settings age out. Errors name the step that
// failed; on error nothing is left running.
func Start(cfg settings.Settings, opts Options) (*Collector, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ScrapeInterval <= 0 || cfg.ScrapeTimeout <= 0 || cfg.Retention <= 0 {
		return nil, errors.New("collector: scrape interval, scrape timeout and retention must be positive (load settings with settings.Load)")
	}
	if opts.Dir == "" {
		return nil, errors.New("collector: no storage directory given")
	}
	if opts.LockWait <= 0 {
		opts.LockWait = DefaultLockWait
	}
	if opts.QueryDrain <= 0 {
		opts.QueryDrain = DefaultQueryDrain
	}
	scfgs, groups, eps, err := scrapeConfigs(cfg)
	if err != nil {
		return nil, err
	}
	gscfgs, sds, err := groupScrapeConfigs(cfg)
	if err != nil {
		return nil, err
	}
	scfgs = append(scfgs, gscfgs...)
	promCfg, err := config.Load("", logger)
	if err != nil {
		return nil, fmt.Errorf("collector: default Prometheus config: %w", err)
	}
	for _, sc := range scfgs {
		if err := sc.Validate(promCfg.GlobalConfig); err != nil {
			return nil, fmt.Errorf("collector: scrape config of %q: %w", sc.JobName, err)
		}
	}
	promCfg.ScrapeConfigs = scfgs

	st, err := acquireStore(opts.Dir, storeOptions{
		retention: cfg.Retention, maxBytes: cfg.RetentionSize, lockWait: opts.LockWait, logger: logger, uid: opts.UID,
		legacyDirs: opts.LegacyDirs, owner: opts.Owner,
	})
	if err != nil {
		return nil, err
	}
	c := &Collector{
		logger:    logger,
		dir:       st.dir,
		store:     st,
		tracker:   newConnTracker(),
		endpoints: eps,
		tsets:     make(chan map[string][]*targetgroup.Group, 1),
		runDone:   make(chan struct{}),
		drain:     opts.QueryDrain,
		errors:    newErrorLog(),
		mask:      opts.Mask,
	}
	if c.mask == nil {
		c.mask = func(s string) string { return s }
	}
	c.handOver()
	// Scraping by any earlier instance (or process) ended by now: the series
	// it wrote that these settings no longer scrape get staleness markers.
	stoppedAt := time.Now()
	// Each collector has its own registry: instances are re-created when
	// settings change and a second registration on a shared one panics.
	reg := prometheus.NewRegistry()
	c.mgr, err = scrape.NewManager(&scrape.Options{
		DiscoveryReloadOnStartup: true,
		DiscoveryReloadInterval:  model.Duration(time.Second),
		HTTPClientOptions:        []config_util.HTTPClientOption{config_util.WithDialContextFunc(c.tracker.dial)},
	}, logger.With("component", "scrape"), nil, meteredAppendable{db: st.db, st: st, sampleLimit: max(cfg.SampleLimit, 0), timeout: cfg.ScrapeTimeout, now: opts.pageClock}, nil, reg)
	if err != nil {
		c.releaseStore()
		return nil, fmt.Errorf("collector: create scrape manager: %w", err)
	}
	if err := c.mgr.ApplyConfig(promCfg); err != nil {
		c.releaseStore()
		return nil, fmt.Errorf("collector: apply scrape config: %w", err)
	}
	c.querier = source.NewEmbedded(st.db, source.EmbeddedOptions{Logger: logger.With("component", "promql")})
	go func() {
		defer close(c.runDone)
		if err := c.mgr.Run(c.tsets); err != nil {
			logger.Error("scrape manager stopped", "err", err)
		}
	}()
	c.tsets <- groups
	// Target groups' discovery (startDiscovery) sends the configured groups plus the
	// discovered ones at every change.
	if c.disc, err = startDiscovery(logger.With("component", "discovery"), reg, sds, groups, c.tsets); err != nil {
		c.mgr.Stop()
		<-c.runDone
		c.releaseStore()
		return nil, err
	}
	for name := range sds {
		c.groups = append(c.groups, name)
	}
	sort.Strings(c.groups)
	c.errors.start(c, cfg.ScrapeInterval/2)
	jobs := make([]string, 0, len(eps))
	for _, ep := range eps {
		jobs = append(jobs, ep.name)
	}
	c.startStaleSweep(stoppedAt, cfg.ScrapeInterval, jobs)
	if err := c.waitTargets(len(eps), 5*time.Second); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// handOver makes c the store's scraper: the previous scraper (an older
// instance of the same data source) stops scraping, and the plugin metrics
// of targets no longer configured are deleted.
func (c *Collector) handOver() {
	names := make([]string, 0, len(c.endpoints))
	for _, ep := range c.endpoints {
		names = append(names, ep.name)
	}
	stores.Lock()
	prev := c.store.scraper
	c.store.scraper = c
	var removed []string
	for _, old := range c.store.targets {
		if !slices.Contains(names, old) {
			removed = append(removed, old)
		}
	}
	c.store.targets = names
	stores.Unlock()
	forgetTargets(c.store.uid, removed)
	if prev != nil {
		prev.stopScraping()
	}
}

// releaseStore drops this collector's reference to its store.
func (c *Collector) releaseStore() {
	stores.Lock()
	if c.store.scraper == c {
		c.store.scraper = nil
	}
	stores.Unlock()
	if err := c.store.release(); err != nil {
		c.logger.Warn("closing the store", "error", err)
	}
}

// Notice is what opening the data source's store found, for its health
// check: transient errors retried, WAL records dropped by the repair, blocks
// quarantined, the directory set aside, and every set-aside directory or
// block still kept; empty when the store opened cleanly.
func (c *Collector) Notice() string { n, _ := c.store.health(); return n }

// HistoryMissing reports whether part of the stored history cannot be read
// (dropped by a WAL repair at this opening, or set aside and still kept):
// the health check is not OK while it is.
func (c *Collector) HistoryMissing() bool { _, lost := c.store.health(); return lost }

// StoreHealth is Notice and HistoryMissing at once.
func (c *Collector) StoreHealth() (notice string, missing bool) { return c.store.health() }

// Dir is the store directory.
func (c *Collector) Dir() string { return c.dir }

// waitTargets waits until the scrape manager has n active targets (and so
// running scrape loops) over its scrape pools. Waiting for the targets, not
// only the pools, guarantees that a Close right after Start stops every loop:
// a pool's Sync starts its loops under the lock that stopping takes.
func (c *Collector) waitTargets(n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ready := 0
		for _, ts := range c.mgr.TargetsActive() {
			ready += len(ts)
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("collector: scrape manager started %d of %d targets within %s", ready, n, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// userRelabel builds the metric_relabel_configs that store a target's own metrics (settings
// Target.Metrics) under the catalogue's names of engine "custom" (catalog.UserMetricName): a
// histogram's _bucket, _sum and _count samples and a counter's or gauge's sample are renamed,
// their other labels kept; with Target.ModelLabel set, that label's value is copied into
// model_name on the renamed samples. They run before the store's own rules, which then keep
// the renamed samples like any catalogue family. None for a target without a map.
func userRelabel(t settings.Target) ([]*relabel.Config, error) {
	if len(t.Metrics) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	name := model.LabelNames{model.MetricNameLabel}
	var out []*relabel.Config
	for _, k := range keys {
		to, kind, ok := catalog.UserMetricName(catalog.Signal(k))
		if !ok {
			return nil, fmt.Errorf("%q is not a signal that can be mapped", k)
		}
		from := regexp.QuoteMeta(t.Metrics[k])
		repl := to
		if kind == catalog.KindHistogram {
			from += "(_bucket|_sum|_count)"
			repl += "$1"
		}
		re, err := relabel.NewRegexp(from)
		if err != nil {
			return nil, err
		}
		out = append(out, &relabel.Config{SourceLabels: name, Separator: ";", Regex: re, TargetLabel: model.MetricNameLabel,
			Replacement: repl, Action: relabel.Replace, NameValidationScheme: model.UTF8Validation})
	}
	if t.ModelLabel != "" && t.ModelLabel != "model_name" {
		re, err := relabel.NewRegexp(regexp.QuoteMeta(catalog.UserMetricPrefix) + ".*;(.+)")
		if err != nil {
			return nil, err
		}
		out = append(out, &relabel.Config{SourceLabels: model.LabelNames{model.MetricNameLabel, model.LabelName(t.ModelLabel)}, Separator: ";",
			Regex: re, TargetLabel: "model_name", Replacement: "$1", Action: relabel.Replace, NameValidationScheme: model.UTF8Validation})
	}
	return out, nil
}

// scrapeConfigs builds the Prometheus scrape configs and static target
// groups of every target, GPU agent and probe. Endpoints whose scrape
// settings are identical (scheme, path, query, TLS verification, credentials
// and, for targets, their metric map) share one scrape config, that is one
// scrape pool, named after its first endpoint: Prometheus keeps per-pool state
// (an HTTP client, a sync-length summary with five quantile streams, about
// 70 KB) that 1,000 pools of one target each multiplied for nothing. Each
// endpoint stays its own target with its own scrape loop, cache, health and
// last error; its name is set as the `job` label of its target group (a
// target label wins over the scrape config's job name, as in Prometheus), so
// stored series are the same as with one pool per endpoint. groups is keyed
// by pool name; eps lists the endpoints in settings order.
func scrapeConfigs(cfg settings.Settings) ([]*config.ScrapeConfig, map[string][]*targetgroup.Group, []endpoint, error) {
	metricRelabel, err := storeRelabel(cfg.StoreAllSeries)
	if err != nil {
		return nil, nil, nil, err
	}
	var (
		scfgs  []*config.ScrapeConfig
		groups = map[string][]*targetgroup.Group{}
		eps    []endpoint
		pools  = map[string]*config.ScrapeConfig{}
	)
	// auth is the part of the pool key that the HTTP client and the user
	// relabelling come from; it stays in memory and is never logged.
	add := func(ep endpoint, field string, labels map[string]string, hc config_util.HTTPClientConfig, user []*relabel.Config, auth string) error {
		u, err := url.Parse(ep.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s.url: %q is not an http(s) URL such as http://10.0.0.5:8000/metrics", field, ep.url)
		}
		if err := hc.Validate(); err != nil {
			return fmt.Errorf("%s: HTTP client settings: %w", field, err)
		}
		path := u.EscapedPath()
		if path == "" {
			path = defaultMetricsPath
		}
		// Scheme, path and single-valued query parameters are target
		// labels (__scheme__, __metrics_path__, __param_<name>), so targets
		// that differ only in them share a pool; a query with a repeated
		// parameter, an empty value or a name that is not a plain label
		// name can only be a scrape config's Params.
		query := u.Query()
		tls := model.LabelSet{
			model.AddressLabel:     model.LabelValue(u.Host),
			model.SchemeLabel:      model.LabelValue(u.Scheme),
			model.MetricsPathLabel: model.LabelValue(path),
		}
		params := url.Values(nil)
		for k, v := range query {
			if len(v) != 1 || v[0] == "" || !plainParam.MatchString(k) {
				params = query
				break
			}
		}
		if params == nil {
			for k, v := range query {
				tls[model.LabelName(model.ParamLabelPrefix+k)] = model.LabelValue(v[0])
			}
		}
		key := strings.Join([]string{params.Encode(), auth}, "\x00")
		sc, ok := pools[key]
		if !ok {
			sc = &config.ScrapeConfig{
				JobName:                ep.name,
				HonorTimestamps:        true,
				Params:                 params,
				ScrapeInterval:         model.Duration(cfg.ScrapeInterval),
				ScrapeTimeout:          model.Duration(cfg.ScrapeTimeout),
				ScrapeProtocols:        scrapeProtocols,
				ScrapeFallbackProtocol: config.PrometheusText0_0_4,
				MetricsPath:            path,
				Scheme:                 u.Scheme,
				EnableCompression:      true,
				BodySizeLimit:          units.Base2Bytes(cfg.BodySizeLimit),
				// The sample limit is enforced while parsing, by the
				// appender (meteredAppendable), not by Prometheus's after it.
				SampleLimit: 0,
				// A page with absurd label sets fails its scrape instead of
				// filling the TSDB (vLLM's widest series, cache_config_info, has ~25 labels).
				LabelLimit:            labelLimit,
				LabelNameLengthLimit:  labelNameLengthLimit,
				LabelValueLengthLimit: labelValueLengthLimit,
				HTTPClientConfig:      hc,
				MetricRelabelConfigs:  append(user, metricRelabel...),
			}
			pools[key] = sc
			scfgs = append(scfgs, sc)
		}
		ls := model.LabelSet{model.JobLabel: model.LabelValue(ep.name)}
		for k, v := range labels {
			ls[model.LabelName(k)] = model.LabelValue(v)
		}
		groups[sc.JobName] = append(groups[sc.JobName], &targetgroup.Group{
			Targets: []model.LabelSet{tls},
			Labels:  ls,
			Source:  ep.name,
		})
		eps = append(eps, ep)
		return nil
	}
	for i, t := range cfg.Targets {
		if t.Group != nil {
			continue // discovered: groupScrapeConfigs
		}
		hc := clientConfig(t.TLSSkipVerify, t.BearerToken, t.BasicAuthUser, t.BasicAuthPassword)
		user, err := userRelabel(t)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("targets[%d].metrics: %w", i, err)
		}
		if err := add(endpoint{t.Name, KindTarget, t.URL}, fmt.Sprintf("targets[%d]", i), t.Labels, hc, user, targetPoolKey(t)); err != nil {
			return nil, nil, nil, err
		}
	}
	for i, a := range cfg.GPUAgents {
		hc := clientConfig(a.TLSSkipVerify, a.BearerToken, "", "")
		if err := add(endpoint{a.Name, KindAgent, a.URL}, fmt.Sprintf("gpuAgents[%d]", i), nil, hc, nil, authPoolKey(a.TLSSkipVerify, a.BearerToken, "", "")); err != nil {
			return nil, nil, nil, err
		}
	}
	for i, pr := range cfg.Probes {
		hc := clientConfig(pr.TLSSkipVerify, pr.BearerToken, "", "")
		if err := add(endpoint{pr.Name, KindProbe, pr.URL}, fmt.Sprintf("probes[%d]", i), nil, hc, nil, authPoolKey(pr.TLSSkipVerify, pr.BearerToken, "", "")); err != nil {
			return nil, nil, nil, err
		}
	}
	return scfgs, groups, eps, nil
}

// clientConfig is the HTTP client an endpoint is scraped with: TLS
// verification as set, a bearer token or else basic auth (as authPoolKey
// keys it), and redirects not followed (one could lead to a host not in the
// settings).
func clientConfig(skipVerify bool, bearer, user, password string) config_util.HTTPClientConfig {
	hc := config_util.DefaultHTTPClientConfig
	hc.FollowRedirects = false
	hc.TLSConfig.InsecureSkipVerify = skipVerify
	switch {
	case bearer != "":
		hc.Authorization = &config_util.Authorization{Type: "Bearer", Credentials: config_util.Secret(bearer)}
	case user != "":
		hc.BasicAuth = &config_util.BasicAuth{Username: user, Password: config_util.Secret(password)}
	}
	return hc
}

// authPoolKey is the part of a pool key that an endpoint's HTTP client is
// built from: TLS verification and credentials (a bearer token wins over basic
// auth, as in scrapeConfigs).
func authPoolKey(skipVerify bool, bearer, user, password string) string {
	if bearer != "" {
		user, password = "", ""
	}
	return strings.Join([]string{strconv.FormatBool(skipVerify), bearer, user, password}, "\x00")
}

// targetPoolKey is authPoolKey of a target plus what its user relabelling is
// built from (userRelabel): the metric map and the model label.
func targetPoolKey(t settings.Target) string {
	if len(t.Metrics) == 0 && t.ModelLabel == "" {
		return authPoolKey(t.TLSSkipVerify, t.BearerToken, t.BasicAuthUser, t.BasicAuthPassword)
	}
	keys := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{authPoolKey(t.TLSSkipVerify, t.BearerToken, t.BasicAuthUser, t.BasicAuthPassword), t.ModelLabel}
	for _, k := range keys {
		parts = append(parts, k, t.Metrics[k])
	}
	return strings.Join(parts, "\x00")
}

// plainParam matches the query parameter names that a __param_<name> target
// label carries as they are.
var plainParam = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// activeByName indexes the scrape manager's active targets (keyed by pool)
// by their job label, the endpoint name.
func activeByName(active map[string][]*scrape.Target) map[string]*scrape.Target {
	out := map[string]*scrape.Target{}
	for _, ts := range active {
		for _, t := range ts {
			out[t.GetValue(model.JobLabel)] = t
		}
	}
	return out
}

// Querier returns the PromQL querier over this collector's TSDB. Queries
// started after Close began fail with ErrReconfigured; Close waits for those
// already running.
func (c *Collector) Querier() source.Querier { return trackedQuerier{c} }

// Status returns the scrape state of every target and agent, sorted by Name.
// Before a target's first scrape Up is false and LastScrape is zero.
func (c *Collector) Status() []TargetStatus {
	active := activeByName(c.mgr.TargetsActive())
	out := make([]TargetStatus, 0, len(c.endpoints))
	for _, ep := range c.endpoints {
		st := TargetStatus{Name: ep.name, Kind: ep.kind, URL: ep.url}
		if t := active[ep.name]; t != nil {
			st.Up = t.Health() == scrape.HealthGood
			st.LastScrape = t.LastScrape()
			st.LastDuration = t.LastScrapeDuration()
			if err := t.LastError(); err != nil {
				st.LastError = c.mask(scrapeErrorText(err, ep.url))
				st.Overloaded = errors.Is(err, ErrParseTimeout)
			}
		}
		if f, ok := c.store.appendFailure(ep.name); ok {
			st.Up = false
			st.LastError = "the page was scraped but its samples could not be stored: " + c.mask(f.err)
		}
		st.Series = c.seriesCount(ep.name)
		out = append(out, st)
	}
	all := c.mgr.TargetsActive()
	for _, g := range c.groups {
		out = append(out, c.groupStatus(g, all[g]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// seriesCount counts head series with job=name through the head's postings
// index (no chunk is read). It returns 0 if the index cannot be read.
func (c *Collector) seriesCount(name string) int {
	ir, err := c.store.db.Head().Index()
	if err != nil {
		return 0
	}
	defer ir.Close()
	p, err := ir.Postings(context.Background(), model.JobLabel, name)
	if err != nil {
		return 0
	}
	n := 0
	for p.Next() {
		n++
	}
	return n
}

// stopScraping ends every in-flight scrape at once (their connections are
// closed), then stops the error log's poller and the scrape manager and
// waits for their goroutines. Safe to call more than once.
func (c *Collector) stopScraping() {
	c.stopOnce.Do(func() {
		c.stopSweep()
		c.tracker.closeAll()
		c.errors.stop()
		c.disc.stop()
		c.mgr.Stop()
		<-c.runDone
		c.tracker.closeAll() // connections dialled while stopping
	})
}

// Close stops scraping at once, waits up to Options.QueryDrain for queries in
// flight through Querier (queries started later fail with ErrReconfigured),
// then releases the store: the TSDB is flushed and closed when no other
// collector of the data source uses it. The directory stays: the history
// outlives instances and processes. Close waits for every goroutine it
// started and is safe to call more than once; later calls return the first
// call's result.
func (c *Collector) Close() error {
	c.closeOnce.Do(func() {
		c.stopScraping()
		c.qmu.Lock()
		c.closing = true
		c.qmu.Unlock()
		done := make(chan struct{})
		go func() { c.inflight.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(c.drain):
			c.logger.Warn("closing the store with queries still in flight", "waited", c.drain)
		}
		stores.Lock()
		if c.store.scraper == c {
			c.store.scraper = nil
		}
		stores.Unlock()
		c.closeErr = c.store.release()
	})
	return c.closeErr
}
