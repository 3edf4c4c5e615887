import { DataSourceJsonData, MetricFindValue } from '@grafana/data';
import { DataQuery } from '@grafana/schema';

import type { QueryJSON, QueryJSONByType } from './generated/queryTypes';

export type { CapacityWhatIf, TimeRange } from './generated/queryTypes';

/**
 * Ids of the query types: the backend's registry, through the types
 * `go generate ./pkg/queries` writes into src/generated/queryTypes.ts. The
 * front end's registry (src/queryTypes/registry.ts) must hold an entry for
 * each (the compiler refuses it otherwise); docs/architecture.md describes
 * how a query travels through the backend.
 */
export type QueryType = keyof QueryJSONByType;

export const LATENCY_STAGES = [
  'ttft',
  'itl',
  'tpot',
  'e2e',
  'queue_time',
  'prefill_time',
  'decode_time',
  'inference_time',
] as const;

export const STAGE_LABELS: Record<string, string> = {
  ttft: 'TTFT (time to first token)',
  itl: 'ITL (inter-token latency)',
  tpot: 'TPOT (time per output token)',
  e2e: 'E2E (end-to-end request latency)',
  queue_time: 'Queue time',
  prefill_time: 'Prefill time',
  decode_time: 'Decode time',
  inference_time: 'Inference time',
};

export const STANDARD_STATS = ['mean', 'p50', 'p90', 'p95', 'p99'] as const;

export const ESTIMATORS = ['prometheus', 'refined'] as const;
export type Estimator = (typeof ESTIMATORS)[number];

export const GROUP_BY = ['none', 'target', 'model', 'target_model', 'engine', 'adapter', 'tenant', 'priority', 'provider'] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/** latency: the engine's histograms, or the client-side probes of the targets (docs/probe.md). */
export const SOURCES = ['engine', 'probe'] as const;
export type Source = (typeof SOURCES)[number];

/** probe: per-request jitter, errors by class, or spike and sustained-breach windows. */
export const PROBE_VIEWS = ['jitter', 'errors', 'spikes'] as const;
export type ProbeView = (typeof PROBE_VIEWS)[number];

/** probe, view spikes: the per-request value compared with the threshold. */
export const PROBE_SIGNALS = ['max_gap', 'ttft', 'e2e'] as const;
export type ProbeSignal = (typeof PROBE_SIGNALS)[number];

export const BREAKDOWN_FORMATS = ['timeseries', 'table'] as const;
export type BreakdownFormat = (typeof BREAKDOWN_FORMATS)[number];
/** Latency formats: the statistics as series, or requests/s per histogram bucket for the heatmap panel. */
export const LATENCY_FORMATS = ['timeseries', 'heatmap'] as const;
export type LatencyFormat = (typeof LATENCY_FORMATS)[number];

/** burn_rate: every window's burn rate and the status (timeseries), or the status series only (for alert rules). */
export const BURN_RATE_FORMATS = ['timeseries', 'status', 'sustained', 'budget'] as const;
export type BurnRateFormat = (typeof BURN_RATE_FORMATS)[number];

/** targets: the inventory table, or per target and signal 1 when a family it had left its latest scrape. */
export const TARGETS_FORMATS = ['table', 'telemetry'] as const;
export type TargetsFormat = (typeof TARGETS_FORMATS)[number];

export const GPU_SIGNALS = [
  'gpu_util',
  'sm_active',
  'dram_active',
  'tensor_active',
  'gr_engine_active',
  'fb_used',
  'fb_total',
  'power',
  'power_limit',
  'power_limit_default',
  'temperature',
  'sm_clock',
  'sm_clock_max',
  'throttle_reasons',
  'saturation',
  // Error and interconnect signals (issue 33): only when named, never in the default set.
  'xid_last',
  'xid_errors',
  'ecc_sbe_volatile',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'pcie_replays',
  'nvlink_bandwidth_total',
  'nvlink_tx',
  'nvlink_rx',
  'nvlink_crc_flit_errors',
  'nvlink_crc_data_errors',
  'nvlink_replay_errors',
  'nvlink_recovery_errors',
] as const;

/** Histograms of the tokens query: tokens per engine step, prompt and generated tokens per request. */
export const TOKENS_SIGNALS = ['iteration_tokens', 'prompt_length', 'generation_length'] as const;

/**
 * Every field of any of the union's members, optional, typed as the union
 * of its types in the members that have it (format: every type's formats).
 */
type AnyFieldOf<U> = {
  [K in U extends unknown ? keyof U : never]?: U extends unknown ? (K extends keyof U ? U[K] : never) : never;
};

/**
 * The query model sent to the backend (DataQuery.JSON) as code that handles
 * every type reads it (the type switch, applyTemplateVariables, the saved
 * query): every field of every query type, from src/generated/queryTypes.ts
 * (written by `go generate ./pkg/queries` from the backend's request
 * structs, like src/generated/queryschema.json, which the registry is
 * checked against by src/queryTypes/schema.test.ts). A type's editor reads
 * {@link QueryOf} instead: that type's fields only. The model must stand
 * alone: alert rules send it without the front end, so it never holds URLs
 * or unexpanded template variables once applyTemplateVariables has run.
 */
export interface InferscopeQuery extends DataQuery, Omit<AnyFieldOf<QueryJSON>, 'queryType'> {
  /** Absent: latency (DEFAULT_QUERY_TYPE). */
  queryType?: QueryType;
}

/** A query of type T as its editor reads it: Grafana's DataQuery fields and T's JSON (src/generated/queryTypes.ts). */
export type QueryOf<T extends QueryType> = DataQuery & QueryJSONByType[T];

/** errors: the five error classes a gateway's failures are mapped to (docs/gateways.md). */
export const ERROR_CLASSES = ['api_timeout', 'client_error', 'content_filter', 'model_error', 'rate_limit'] as const;
/** errors: the share per class at each step, or one row per group. */
export const ERRORS_FORMATS = ['timeseries', 'table'] as const;
export type ErrorsFormat = (typeof ERRORS_FORMATS)[number];

/** capacity: one row per target and profile, the calibrated parameters, what-if predictions, or the replica series. */
export const CAPACITY_FORMATS = ['table', 'parameters', 'whatif', 'replicas'] as const;
export type CapacityFormat = (typeof CAPACITY_FORMATS)[number];

export const REGRESSION_FORMATS = ['table', 'annotations', 'numeric'] as const;
export type RegressionFormat = (typeof REGRESSION_FORMATS)[number];

/** The cost query's series (pkg/analysis/cost Stats), in output order. */
export const COST_STATS = [
  'cost_per_hour',
  'energy_cost_per_hour',
  'cost_per_1m_output_tokens',
  'cost_per_1m_tokens',
  'cost_per_request',
  'idle_share',
  'idle_cost_per_hour',
  'energy_per_output_token',
  'prefill_cost_per_hour',
  'decode_cost_per_hour',
  'prefix_cache_savings_per_hour',
  'cost_per_1m_good_tokens',
  'cost_spike_ratio',
  // a gateway's own spend (LiteLLM), beside the engines' cost (docs/gateways.md)
  'gateway_spend_per_request',
  'gateway_spend_per_1m_tokens',
] as const;

/** Variable query: which list GET /<kind> resource to read. */
export const VARIABLE_KINDS = ['targets', 'models', 'agents', 'gpus', 'signals', 'profiles'] as const;
export type VariableKind = (typeof VARIABLE_KINDS)[number];

/**
 * What the query editors need from the data source: the lists of GET
 * /<kind> and the SLO profiles of its settings (undefined: the backend's
 * default profiles). DataSource implements it; the editors depend on this
 * interface, not on the DataSource class, so no editor imports datasource.ts.
 */
export interface EditorDataSource {
  listResource(kind: VariableKind): Promise<MetricFindValue[]>;
  /**
   * Metric names stored for the named targets or GPU agents in the last hour (GET
   * /metricnames), sorted; every target's and agent's when `targets` is empty.
   */
  metricNames(targets: string[]): Promise<string[]>;
  readonly sloProfiles?: ProfileConfig[];
}

export interface InferscopeVariableQuery extends DataQuery {
  queryType: VariableKind;
}

export const ENGINES = ['vllm', 'sglang', 'tgi', 'llamacpp', 'trtllm', 'llm-d-epp'] as const;
export const AGENT_KINDS = ['inferscope', 'dcgm'] as const;

/** One scraped inference server (pkg/settings.Target, without secrets). */
export interface TargetConfig {
  name: string;
  url: string;
  /** Empty = detect the engine from the families on the page. */
  engine?: string;
  labels?: Record<string, string>;
  basicAuthUser?: string;
  tlsSkipVerify?: boolean;
  /** Name of the GPU agent of the node serving this target. */
  agent?: string;
  /** GPU indices on that agent; empty = all. */
  gpus?: number[];
  /** Remote mode: label selector of the target's series on the server; empty = {job="<name>"}. */
  selector?: string;
  /** What the hardware serving this target costs per hour (root currency); absent = no own price. */
  costPerHour?: number;
  /**
   * A service instrumented by hand: signal → its own metric name (histograms by base name,
   * counters and gauges by sample name), e.g. {"ttft": "llm_ttft_seconds"}. Embedded mode only.
   */
  metrics?: Record<string, string>;
  /** The label of the mapped metrics holding the model (e.g. "model"); only with metrics. */
  modelLabel?: string;
}

/** A node-level GPU metrics endpoint (pkg/settings.GPUAgent, without secrets). */
export interface GPUAgentConfig {
  name: string;
  url: string;
  kind?: string;
  tlsSkipVerify?: boolean;
  /** Remote mode: label selector of the agent's series on the server; empty = {job="<name>"}. */
  selector?: string;
  /** Price of one GPU of this node per hour, for targets on it without their own price. */
  costPerGPUHour?: number;
}

/** A client-side probe (pkg/settings.Probe, without secrets; docs/probe.md). */
export interface ProbeConfig {
  name: string;
  /** The probe's metrics page, e.g. http://inferscope-probe:9401/metrics. */
  url: string;
  /** The engine target the probe's requests reach. */
  target: string;
  tlsSkipVerify?: boolean;
}

/**
 * A remote-mode target group (pkg/settings.TargetGroup): every series the selector matches belongs to it, each
 * distinct combination of targetLabels is one discovered target (a pod), and the group is a target of its own.
 */
export interface TargetGroupConfig {
  name: string;
  selector: string;
  /** Labels that name one discovered target; default namespace, pod. */
  targetLabels?: string[];
  /** Labels that group the discovered targets (deployment, service); groupBy may name them. */
  groupLabels?: string[];
  /** How many discovered targets are listed (default 100, at most 1000). */
  maxTargets?: number;
  engine?: string;
  /** Embedded mode: Prometheus service discovery (file, http, dns, kubernetes); provisioned, kept as it is. */
  discovery?: Record<string, unknown>;
}

/** jsonData of an Inferscope data source (pkg/settings.Settings). */
export interface InferscopeOptions extends DataSourceJsonData {
  targets?: TargetConfig[];
  /** Remote mode: fleets whose targets follow the server's series. */
  targetGroups?: TargetGroupConfig[];
  gpuAgents?: GPUAgentConfig[];
  probes?: ProbeConfig[];
  scrapeInterval?: string;
  scrapeTimeout?: string;
  retention?: string;
  retentionSize?: string;
  storagePath?: string;
  bodySizeLimit?: number;
  sampleLimit?: number;
  /** embedded mode: store every series of the scraped pages (raw history), not only what the catalogue reads (pkg/settings.Settings.StoreAllSeries). */
  storeAllSeries?: boolean;
  /** SLO profiles (pkg/settings.SLOSettings); absent = the default profiles. */
  sloProfiles?: ProfileConfig[];
  /** embedded (default): scrape the targets; remote: read a Prometheus-compatible server at the data source's URL. */
  mode?: DataSourceMode;
  /** Remote mode: how long one request to the server may take (Prometheus notation, default 30s). */
  remoteTimeout?: string;
  /** Remote mode: the most MiB read of one answer of the server (default 32). */
  remoteMaxAnswerMiB?: number;
  /** Remote mode: the most MiB read of all the answers to one request (default 128). */
  remoteMaxRequestMiB?: number;
  /** Directory of benchmark result files (pkg/settings.Baselines); each file's name is a baseline's name. */
  baselinesPath?: string;
  /** Upload quota of the organisation's baselines folder, MiB (default 64). */
  baselinesQuotaMiB?: number;
  /** Upload quota of the organisation's baselines folder, files (default 100). */
  baselinesMaxFiles?: number;
  /** ISO 4217 code of every price (default USD). */
  currency?: string;
  /** Price of a kWh; adds the measured GPU energy to the cost. */
  energyPricePerKWh?: number;
}

export const DATA_SOURCE_MODES = ['embedded', 'remote'] as const;
export type DataSourceMode = (typeof DATA_SOURCE_MODES)[number];

/** secureJsonData key of the bearer token sent to the remote server (settings.RemoteBearerTokenKey). */
export const REMOTE_BEARER_TOKEN_KEY = 'remoteBearerToken';

export const OBJECTIVE_KINDS = ['latency', 'error_ratio', 'availability'] as const;
export type ObjectiveKind = (typeof OBJECTIVE_KINDS)[number];

/** One service-level objective (pkg/settings.Objective). */
export interface ObjectiveConfig {
  name: string;
  /**
   * latency (default); error_ratio (HTTP 5xx of the inference handlers, engine error finishes and
   * admission rejections over all inference requests); availability (share of the period the
   * target answered its scrape and was not stalled).
   */
  kind?: ObjectiveKind;
  /** Latency stage (latency objectives). */
  signal?: string;
  /** Seconds (latency objectives); used exactly, never rounded to a bucket bound. */
  threshold?: number;
  /** Ratio of good requests, strictly between 0 and 1 (0.99). */
  target: number;
  /** error_ratio only: also count HTTP 4xx answers as bad. */
  include4xx?: boolean;
  /** error_ratio only: also count finished_reason="abort" (V1 includes client disconnects). */
  includeAborts?: boolean;
  /** Prometheus duration, default 30d, at least 3d; or "month" for the calendar month (UTC). */
  period?: string;
  targets?: string[];
  models?: string[];
}

/** A named set of objectives (pkg/settings.Profile). */
export interface ProfileConfig {
  name: string;
  objectives: ObjectiveConfig[];
}

/** The backend's default profiles (settings.DefaultProfiles), used when jsonData has none. */
export const DEFAULT_SLO_PROFILES: ProfileConfig[] = [
  ...[
    ['interactive-chat', 3, 0.05],
    ['code-completion', 0.5, 0.03],
    ['batch-analysis', 30, 0.2],
  ].map(([name, ttft, tpot]) => ({
    name: name as string,
    objectives: [
      {
        name: 'ttft-p99',
        kind: 'latency' as const,
        signal: 'ttft',
        threshold: ttft as number,
        target: 0.99,
        period: '30d',
      },
      {
        name: 'tpot-p99',
        kind: 'latency' as const,
        signal: 'tpot',
        threshold: tpot as number,
        target: 0.99,
        period: '30d',
      },
    ],
  })),
  {
    name: 'service',
    objectives: [
      { name: 'ttft-p95', kind: 'latency', signal: 'ttft', threshold: 2, target: 0.95, period: '30d' },
      { name: 'itl-p95', kind: 'latency', signal: 'itl', threshold: 0.1, target: 0.95, period: '30d' },
      { name: 'error-ratio', kind: 'error_ratio', target: 0.98, period: '30d' },
      { name: 'availability', kind: 'availability', target: 0.999, period: '30d' },
    ],
  },
];

/**
 * secureJsonData keys are "<name>.bearerToken" and "<name>.basicAuthPassword"
 * for each target or agent called <name> (settings.SecretKey).
 */
export type InferscopeSecureJsonData = Record<string, string>;

export type SecretKind = 'bearerToken' | 'basicAuthPassword';

export function secretKey(name: string, kind: SecretKind): string {
  return `${name}.${kind}`;
}

export const SETTINGS_DEFAULTS = {
  scrapeInterval: '15s',
  scrapeTimeout: '10s',
  retention: '15d',
  retentionSize: '10GB',
  storagePath: '<Grafana data>/inferscope',
  bodySizeLimit: 8388608,
  sampleLimit: 50000,
};

/**
 * What a diagnosis query returns: the current findings (table), every
 * finding in the range as annotation rows, the class over time per target
 * (state timeline), or one number per target and class for alert rules.
 */
export const DIAGNOSIS_FORMATS = ['table', 'annotations', 'timeline', 'numeric'] as const;
export type DiagnosisFormat = (typeof DIAGNOSIS_FORMATS)[number];

export const DIAGNOSIS_FORMAT_DESCRIPTIONS: Record<DiagnosisFormat, string> = {
  table: 'Current findings: class, severity, confidence, evidence, what was not checked, recommended vLLM flags',
  annotations: 'Every finding in the range except healthy, with time, timeEnd, title, text and tags (for annotations)',
  timeline: 'Primary class over time, one field per target (state-timeline panel)',
  numeric: 'One value per target and class for alert rules: 3 critical, 2 warning, 1 info, 0 not holding',
};
