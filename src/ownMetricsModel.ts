import { Settings, updateTarget } from './configModel';
import { TargetConfig } from './types';

/**
 * How a mapped metric is read (pkg/settings UserMetricKind): a classic histogram by its base
 * name (without _bucket/_sum/_count), a counter by its sample name, or a gauge.
 */
export type OwnMetricKind = 'histogram' | 'counter' | 'gauge';

/**
 * The signals a target's `metrics` map may name, in the order the editor offers them, with
 * the kind each is read as and what it is (pkg/settings UserSignals).
 */
export const OWN_SIGNALS: ReadonlyArray<{ signal: string; kind: OwnMetricKind; description: string }> = [
  { signal: 'ttft', kind: 'histogram', description: 'Time to first token (s)' },
  { signal: 'tpot', kind: 'histogram', description: 'Time per output token (s)' },
  { signal: 'itl', kind: 'histogram', description: 'Inter-token latency (s)' },
  { signal: 'e2e', kind: 'histogram', description: 'End-to-end request latency (s)' },
  { signal: 'queue_time', kind: 'histogram', description: 'Time waiting in the queue (s)' },
  { signal: 'prefill_time', kind: 'histogram', description: 'Prefill time (s)' },
  { signal: 'decode_time', kind: 'histogram', description: 'Decode time (s)' },
  { signal: 'inference_time', kind: 'histogram', description: 'Inference time: prefill and decode (s)' },
  { signal: 'prompt_tokens', kind: 'counter', description: 'Prompt tokens processed (counter)' },
  { signal: 'generation_tokens', kind: 'counter', description: 'Tokens generated (counter)' },
  { signal: 'requests_finished', kind: 'counter', description: 'Requests finished (counter)' },
  { signal: 'requests_running', kind: 'gauge', description: 'Requests running now (gauge)' },
  { signal: 'requests_waiting', kind: 'gauge', description: 'Requests waiting now (gauge)' },
];

/** The kind a signal is read as, or undefined for a name that cannot be mapped. */
export function ownSignalKind(signal: string): OwnMetricKind | undefined {
  return OWN_SIGNALS.find((s) => s.signal === signal)?.kind;
}

/** What GET /pagemetrics answers (pkg/plugin PageMetrics): a target's page names, sorted. */
export interface PageMetrics {
  histograms: string[];
  counters: string[];
  gauges: string[];
  labels: string[];
}

/** The names of the page a signal of this kind may be mapped to. */
export function candidatesFor(kind: OwnMetricKind, page: PageMetrics | undefined): string[] {
  if (!page) {
    return [];
  }
  return kind === 'histogram' ? page.histograms : kind === 'counter' ? page.counters : page.gauges;
}

const METRIC_NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Label names a modelLabel may not be (pkg/settings reservedLabels). */
const RESERVED_LABELS = new Set([
  'job',
  'instance',
  'le',
  'quantile',
  'engine',
  'finished_reason',
  'reason',
  'gpu',
  'uuid',
  'hostname',
]);

/** The errors of a target's metrics map and modelLabel, with pkg/settings' sentences. */
export interface OwnMetricsErrors {
  /** About the map as a whole (remote mode, an engine set). */
  map?: string;
  /** Per signal: its name or metric refused. */
  signals: Record<string, string>;
  modelLabel?: string;
}

/**
 * Checks targets[i].metrics and targets[i].modelLabel as pkg/settings checkUserMetrics does,
 * with its sentences (field paths included), so the editor says what Save & test would.
 */
export function ownMetricsErrors(i: number, t: TargetConfig, remote: boolean): OwnMetricsErrors {
  const f = `targets[${i}]`;
  const out: OwnMetricsErrors = { signals: {} };
  const metrics = t.metrics ?? {};
  const keys = Object.keys(metrics).sort();
  if (keys.length === 0) {
    if (t.modelLabel) {
      out.modelLabel = `${f}.modelLabel: set only with ${f}.metrics (an engine's own pages name their model themselves)`;
    }
    return out;
  }
  if (remote) {
    out.map = `${f}.metrics: mapping your own metrics to signals works in embedded mode only (the collector renames them while scraping); in remote mode, record them under an engine's names with Prometheus recording rules`;
  } else if (t.engine) {
    out.map = `${f}.metrics: a target with its own metrics map is read as engine "custom"; leave ${f}.engine empty`;
  }
  const seen = new Map<string, string>();
  for (const k of keys) {
    const kind = ownSignalKind(k);
    const n = metrics[k];
    if (!kind) {
      const names = OWN_SIGNALS.map((s) => s.signal).sort();
      out.signals[k] =
        `${f}.metrics: ${JSON.stringify(k)} is not a signal that can be mapped (one of ${names.join(', ')})`;
    } else if (!METRIC_NAME_RE.test(n)) {
      out.signals[k] = `${f}.metrics.${k}: ${JSON.stringify(n)} is not a metric name`;
    } else if (kind === 'histogram' && /_(bucket|sum|count)$/.test(n)) {
      const suf = n.slice(n.lastIndexOf('_'));
      out.signals[k] = `${f}.metrics.${k}: ${JSON.stringify(n)}: give the histogram's base name, without ${suf}`;
    } else if (seen.has(n)) {
      out.signals[k] = `${f}.metrics.${k}: ${JSON.stringify(n)} is already mapped to ${seen.get(n)}`;
    } else {
      seen.set(n, k);
    }
  }
  const l = t.modelLabel;
  if (l && (!LABEL_NAME_RE.test(l) || l.startsWith('__') || RESERVED_LABELS.has(l))) {
    out.modelLabel = `${f}.modelLabel: ${JSON.stringify(l)} is not a usable label name`;
  }
  return out;
}

/** The first error of a target's mapping, or undefined when Save & test would accept it. */
export function firstOwnMetricsError(e: OwnMetricsErrors): string | undefined {
  return e.map ?? Object.values(e.signals)[0] ?? e.modelLabel;
}

/**
 * Sets (or, with metric undefined, removes) the mapping of one signal of target i. Renaming the
 * signal of a row keeps its metric: pass `from`. Removing the last mapping also removes
 * modelLabel, which the backend accepts only with a map.
 */
export function setOwnMetric(
  o: Settings,
  i: number,
  signal: string,
  metric: string | undefined,
  from?: string
): Settings {
  const t = o.jsonData.targets?.[i];
  if (!t) {
    return o;
  }
  const metrics: Record<string, string> = {};
  for (const [k, v] of Object.entries(t.metrics ?? {})) {
    // Keep the rows' order: a renamed signal takes its old place.
    if (k === from && from !== signal) {
      if (metric !== undefined) {
        metrics[signal] = metric;
      }
    } else if (k !== signal) {
      metrics[k] = v;
    } else if (metric !== undefined) {
      metrics[k] = metric;
    }
  }
  if (metric !== undefined && !(signal in metrics)) {
    metrics[signal] = metric;
  }
  const empty = Object.keys(metrics).length === 0;
  return updateTarget(o, i, { metrics: empty ? undefined : metrics, ...(empty ? { modelLabel: undefined } : {}) });
}

/** The first signal not mapped yet (what "Add metric" starts a row with), or undefined. */
export function nextOwnSignal(t: TargetConfig): string | undefined {
  return OWN_SIGNALS.find((s) => !(s.signal in (t.metrics ?? {})))?.signal;
}
