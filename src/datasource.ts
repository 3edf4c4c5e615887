import {
  CoreApp,
  CustomVariableSupport,
  DataQueryRequest,
  DataQueryResponse,
  DataSourceInstanceSettings,
  MetricFindValue,
  ScopedVars,
} from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';
import { from, map, Observable } from 'rxjs';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import { QueryField } from './queryTypes/definition';
import { QUERY_FIELDS } from './queryTypes/fields';
import { DEFAULT_QUERY } from './queryTypes/registry';
import {
  EditorDataSource,
  InferscopeOptions,
  InferscopeQuery,
  InferscopeVariableQuery,
  ProfileConfig,
  VARIABLE_KINDS,
  VariableKind,
} from './types';

/** Separator used to carry multi-value variables through TemplateSrv.replace. */
const SEP = '\u001f';

/** Formats a variable value for {@link expandList}: multi-value → SEP-joined. */
function joinFormat(value: unknown): string {
  if (Array.isArray(value)) {
    return value.map(String).join(SEP);
  }
  return value === undefined || value === null ? '' : String(value);
}

/**
 * Replaces template variables in every element of a list. A multi-value
 * variable (or "All") expands into one element per value; empty results and
 * duplicates are dropped, order is kept.
 */
export function expandList(list: string[] | undefined, scopedVars: ScopedVars): string[] | undefined {
  if (!list) {
    return list;
  }
  const srv = getTemplateSrv();
  const out: string[] = [];
  for (const item of list) {
    for (const v of srv.replace(item, scopedVars, joinFormat).split(SEP)) {
      const t = v.trim();
      if (t !== '' && !out.includes(t)) {
        out.push(t);
      }
    }
  }
  return out;
}

function expandScalar(s: string | undefined, scopedVars: ScopedVars): string | undefined {
  return s === undefined ? s : getTemplateSrv().replace(s, scopedVars);
}

/**
 * Distinct signal names from GET /signals, whose answer is one entry per
 * target: {target, engine, signals: [{signal, status, note}]}. Only signals
 * some target exports (status "exported" or "approximate") are listed; those
 * not seen on any target or absent from its engine are left out.
 */
function signalNames(body: unknown[]): string[] {
  const out: string[] = [];
  for (const t of body) {
    const sigs = t && typeof t === 'object' && 'signals' in t ? (t as { signals: unknown }).signals : undefined;
    if (!Array.isArray(sigs)) {
      continue;
    }
    for (const s of sigs) {
      if (s && typeof s === 'object' && 'signal' in s) {
        const { signal, status } = s as { signal: unknown; status?: unknown };
        const available = status === 'exported' || status === 'approximate' || status === 'exact';
        if (available && typeof signal === 'string' && !out.includes(signal)) {
          out.push(signal);
        }
      }
    }
  }
  return out;
}

/**
 * Turns a resource answer into variable values: an array of strings, of
 * {text,value}, or the per-target shape of GET /signals.
 */
export function toMetricFindValues(body: unknown): MetricFindValue[] {
  if (!Array.isArray(body)) {
    return [];
  }
  const out: MetricFindValue[] = signalNames(body).map((s) => ({ text: s, value: s }));
  for (const item of body) {
    if (typeof item === 'string' || typeof item === 'number') {
      out.push({ text: String(item), value: String(item) });
    } else if (item && typeof item === 'object' && 'text' in item) {
      const o = item as { text: unknown; value?: unknown };
      const value = o.value === undefined ? o.text : o.value;
      out.push({ text: String(o.text), value: typeof value === 'number' ? value : String(value) });
    }
  }
  return out;
}

/**
 * Inferscope data source: every query runs in the Go backend (QueryData);
 * lists for editors and template variables come from GET resources
 * /targets, /models, /signals, /agents and /gpus.
 */
export class DataSource extends DataSourceWithBackend<InferscopeQuery, InferscopeOptions> implements EditorDataSource {
  /** SLO profiles of the settings (undefined: the backend's default profiles apply). */
  readonly sloProfiles?: ProfileConfig[];

  constructor(instanceSettings: DataSourceInstanceSettings<InferscopeOptions>) {
    super(instanceSettings);
    this.variables = new InferscopeVariableSupport(this);
    // Annotation support: the events query's table (time, timeEnd, title,
    // text, tags) maps onto Grafana annotations with the standard processing,
    // as does the diagnosis query's "annotations" format. A new annotation
    // starts as an events query.
    this.annotations = {
      getDefaultQuery: () => ({ queryType: 'events' }),
    };
    this.sloProfiles = instanceSettings.jsonData?.sloProfiles;
  }

  getDefaultQuery(_: CoreApp): Partial<InferscopeQuery> {
    return DEFAULT_QUERY;
  }

  /**
   * Expands $variables in every field whose registry entry (QUERY_FIELDS)
   * says how: lists element by element (multi-value variables become
   * several entries), scalars as strings, maps value by value.
   */
  applyTemplateVariables(query: InferscopeQuery, scopedVars: ScopedVars): InferscopeQuery {
    const out = { ...query } as Record<string, unknown>;
    const q = query as unknown as Record<string, unknown>;
    for (const [field, spec] of Object.entries(QUERY_FIELDS) as Array<
      [QueryField, (typeof QUERY_FIELDS)[QueryField]]
    >) {
      switch (spec.templating) {
        case 'list':
          out[field] = expandList(q[field] as string[] | undefined, scopedVars);
          break;
        case 'scalar':
          out[field] = expandScalar(q[field] as string | undefined, scopedVars);
          break;
        case 'map':
          if (q[field]) {
            const m: Record<string, string> = {};
            for (const [k, v] of Object.entries(q[field] as Record<string, string>)) {
              m[k] = getTemplateSrv().replace(v, scopedVars);
            }
            out[field] = m;
          }
          break;
      }
    }
    // Keep the JSON free of keys the query never had.
    for (const key of Object.keys(out)) {
      if (out[key] === undefined) {
        delete out[key];
      }
    }
    return out as unknown as InferscopeQuery;
  }

  /** Hidden queries are not sent. */
  filterQuery(query: InferscopeQuery): boolean {
    return !query.hide;
  }

  /** Reads one list resource (GET /<kind>). */
  async listResource(kind: VariableKind): Promise<MetricFindValue[]> {
    const body = await this.getResource(kind);
    return toMetricFindValues(body);
  }

  /** Metric names stored for the targets (GET /metricnames?target=…); all targets' when none. */
  async metricNames(targets: string[]): Promise<string[]> {
    const body = await this.getResource('metricnames', targets.length > 0 ? { target: targets } : undefined);
    return Array.isArray(body) ? body.filter((n): n is string => typeof n === 'string') : [];
  }

  /** Values of a template variable: `{"queryType":"targets"}` lists target names, etc. */
  async metricFindQuery(query: Pick<InferscopeVariableQuery, 'queryType'> | string): Promise<MetricFindValue[]> {
    const kind = typeof query === 'string' ? query.trim() : query?.queryType;
    if (!kind || !(VARIABLE_KINDS as readonly string[]).includes(kind)) {
      throw new Error(`Variable query must be one of ${VARIABLE_KINDS.join(', ')}; got "${kind ?? ''}"`);
    }
    return this.listResource(kind as VariableKind);
  }
}

/** Template-variable support with a dropdown editor (targets | models | agents | gpus | signals). */
export class InferscopeVariableSupport extends CustomVariableSupport<DataSource, InferscopeVariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: DataSource) {
    super();
  }

  query(request: DataQueryRequest<InferscopeVariableQuery>): Observable<DataQueryResponse> {
    const q = request.targets[0] ?? { refId: 'A', queryType: 'targets' };
    return from(this.datasource.metricFindQuery(q)).pipe(map((data) => ({ data })));
  }
}
