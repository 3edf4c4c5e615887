// Panel renderer: draws one generated dashboard (dashboards/*.json) without a
// Grafana server, with Grafana's published packages: @grafana/data applies the
// panel's transformations and field config (defaults, overrides, thresholds,
// value mappings) to the frames the plugin returned for each query, and
// @grafana/ui draws them (PanelChrome, TimeSeries with its legend, BigValue
// with its sparkline, Table, BarGauge for gauges). Heatmap and state-timeline
// panels live in Grafana itself, not in @grafana/ui: Heatmap and
// StateTimeline below draw the same data in SVG the way those panels do.
//
// Page: panels.html?dash=<dashboard uid>. Data: frames/<uid>/<panel id>.json,
// written by test/asgrafana (INFERSCOPE_PANEL_FRAMES), see scripts/render-panels.sh.
// Grafana's table (TableNG) is drawn by react-data-grid, whose cell layout (padding, wrapping,
// row heights) is in this stylesheet. @grafana/ui imports it, but the package is marked
// side-effect free, so esbuild dropped that import and the screenshots' tables had no cell
// padding or wrapping (issue 33: "Pagevllm-kv-pressure", advice cut instead of wrapped);
// Grafana ships it.
import '@grafana/react-data-grid/lib/styles.css';
import React, { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { lastValueFrom } from 'rxjs';

import {
  cacheFieldDisplayNames,
  applyFieldOverrides,
  createTheme,
  DataFrame,
  dataFrameFromJSON,
  DataFrameJSON,
  DataTransformerConfig,
  FieldConfigOptionsRegistry,
  FieldConfigPropertyItem,
  FieldConfigSource,
  FieldType,
  formattedValueToString,
  getFieldDisplayValues,
  ReducerID,
  standardTransformers,
  standardTransformersRegistry,
  TimeRange,
  transformDataFrame,
  dateTime,
  VizOrientation,
} from '@grafana/data';
import {
  BarGauge,
  BarGaugeDisplayMode,
  BigValue,
  BigValueColorMode,
  BigValueGraphMode,
  BigValueJustifyMode,
  BigValueTextMode,
  PanelChrome,
  TimeSeries,
} from '@grafana/ui';
import { TableNG } from '@grafana/ui/unstable';
import { BarGaugeNamePlacement } from '@grafana/schema';

import overview from '../dashboards/inferscope-overview.json';
import latency from '../dashboards/inferscope-latency.json';
import slo from '../dashboards/inferscope-slo.json';
import gpu from '../dashboards/inferscope-gpu.json';
import targets from '../dashboards/inferscope-targets.json';
import cost from '../dashboards/inferscope-cost.json';
import models from '../dashboards/inferscope-models.json';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const dashboards: Record<string, Json> = {
  'inferscope-overview': overview,
  'inferscope-latency': latency,
  'inferscope-slo': slo,
  'inferscope-gpu': gpu,
  'inferscope-targets': targets,
  'inferscope-cost': cost,
  'inferscope-models': models,
};

// The SLO profile the screenshots select (test/asgrafana asSent sends it for $profile).
const PROFILE = 'interactive-chat';
// The dashboard variables titles may name, at the values asSent sends (Grafana interpolates
// panel and row titles): $profile and the latency page's $estimator at its default
// (test/asgrafana screenshotEstimator, which TestAsSentUsesTheLatencyDefault checks).
const TITLE_VARS: Record<string, string> = { profile: PROFILE, estimator: 'prometheus' };
const titleVars = (s: string): string => s.replace(/\$(profile|estimator)\b/g, (m, name) => TITLE_VARS[name] ?? m);

const theme = createTheme({ colors: { mode: 'dark' } });
const COL = 1560 / 24; // px per grid column
const ROW = 30; // px per grid row, as Grafana

/**
 * Grafana's template interpolation for what the dashboards use in display names:
 * ${__data.fields.<name>} (a table row's field, stat tiles with one tile per row) and
 * ${__field.labels.<name>} (a series' label), from the scoped variables Grafana passes.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function interpolate(v: string, scoped?: any): string {
  if (typeof v !== 'string' || !scoped) {
    return v;
  }
  return v
    .replace(/\$\{__data\.fields\.([^}:]+)\}/g, (m, name) => {
      // Grafana's template service reads the row from __dataContext (frame and row index).
      const ctx = scoped.__dataContext?.value;
      const f = ctx?.frame?.fields?.find((x: Json) => x.name === name || x.config?.displayName === name);
      const v = f?.values?.[ctx?.rowIndex ?? 0];
      // Grafana's __data.fields proxy gives the field's display text (unit, decimals).
      return v == null ? m : f.display ? formattedValueToString(f.display(v)) : String(v);
    })
    .replace(/\$\{__field\.labels\.([^}:]+)\}/g, (m, name) => {
      const l = (scoped.__field?.value?.labels ?? scoped.__dataContext?.value?.field?.labels)?.[name];
      return l == null ? '' : String(l);
    });
}

// Grafana registers its transformers the same way (several names share an id: keep the first).
standardTransformersRegistry.setInit(() => {
  const byId = new Map<string, (typeof standardTransformers)[keyof typeof standardTransformers]>();
  for (const t of Object.values(standardTransformers)) {
    if (!byId.has(t.id)) {
      byId.set(t.id, t);
    }
  }
  return [...byId.values()].map((t) => ({
    id: t.id,
    name: t.name,
    description: t.description,
    transformation: () => Promise.resolve(t), // loaded lazily, as Grafana 13 does
    editor: () => null,
  }));
});

// The time-series panel's own defaults (Grafana's timeseries plugin), under
// what the dashboard sets.
const TS_CUSTOM_DEFAULTS = {
  drawStyle: 'line',
  lineInterpolation: 'linear',
  lineWidth: 1,
  fillOpacity: 0,
  gradientMode: 'none',
  spanNulls: false,
  showPoints: 'never',
  pointSize: 4,
  axisPlacement: 'auto',
  barAlignment: 0,
  stacking: { mode: 'none', group: 'A' },
  thresholdsStyle: { mode: 'off' },
  scaleDistribution: { type: 'linear' },
  hideFrom: { legend: false, tooltip: false, viz: false },
};

/** A field-config registry holding every option the panel sets (standard and custom). */
function registryFor(fc: FieldConfigSource): FieldConfigOptionsRegistry {
  const items = new Map<string, FieldConfigPropertyItem>();
  const add = (id: string) => {
    const isCustom = id.startsWith('custom.');
    const path = isCustom ? id.slice(7) : id;
    items.set(id, {
      id,
      path,
      name: id,
      isCustom,
      // displayName is interpolated per field, as Grafana's string processor does
      // (${__field.labels.target} in a legend).
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      // ${__data.fields.*} stays for the row (stat tiles interpolate it per row).
      process: (v: unknown, ctx: any) =>
        id === 'displayName' && typeof v === 'string' && !v.includes('__data.') && ctx?.replaceVariables
          ? ctx.replaceVariables(v, ctx.field?.state?.scopedVars)
          : v,
      shouldApply: () => true,
      override: () => null,
      editor: () => null,
    } as unknown as FieldConfigPropertyItem);
  };
  for (const id of ['unit', 'decimals', 'min', 'max', 'thresholds', 'mappings', 'color', 'noValue', 'displayName', 'links', 'fieldMinMax']) {
    add(id);
  }
  for (const k of Object.keys({ ...TS_CUSTOM_DEFAULTS, ...(fc.defaults.custom ?? {}) })) {
    add('custom.' + k);
  }
  for (const o of fc.overrides ?? []) {
    for (const p of o.properties) {
      add(p.id);
    }
  }
  return new FieldConfigOptionsRegistry(() => [...items.values()]);
}

/** The span of the times at which some series has a value. */
function timeRangeOf(frames: DataFrame[]): TimeRange {
  let from = Infinity;
  let to = -Infinity;
  for (const f of frames) {
    const time = f.fields.find((fld) => fld.type === FieldType.time);
    if (!time) {
      continue;
    }
    for (let i = 0; i < f.length; i++) {
      if (f.fields.some((fld) => fld.type === FieldType.number && fld.values[i] != null && !Number.isNaN(fld.values[i]))) {
        from = Math.min(from, time.values[i]);
        to = Math.max(to, time.values[i]);
      }
    }
  }
  if (!isFinite(from)) {
    from = Date.now() - 3600e3;
    to = Date.now();
  }
  return { from: dateTime(from), to: dateTime(to), raw: { from: dateTime(from), to: dateTime(to) } };
}

async function prepare(panel: Json, byRef: Record<string, DataFrameJSON[]>): Promise<DataFrame[]> {
  const frames: DataFrame[] = [];
  for (const [refId, list] of Object.entries(byRef)) {
    for (const js of list) {
      frames.push({ ...dataFrameFromJSON(js), refId });
    }
  }
  const transformations: DataTransformerConfig[] = panel.transformations ?? [];
  const transformed = transformations.length
    ? await lastValueFrom(transformDataFrame(transformations, frames, { interpolate: (v: string) => v }))
    : frames;
  const fc: FieldConfigSource = JSON.parse(JSON.stringify(panel.fieldConfig ?? { defaults: {}, overrides: [] }));
  if (panel.type === 'timeseries') {
    fc.defaults.custom = { ...TS_CUSTOM_DEFAULTS, ...(fc.defaults.custom ?? {}) };
  }
  return applyFieldOverrides({
    data: transformed,
    fieldConfig: fc,
    fieldConfigRegistry: registryFor(fc),
    replaceVariables: interpolate,
    theme,
    timeZone: 'utc',
  });
}

/**
 * Grafana's heatmap panel is its own plugin, not in @grafana/ui: this draws the same data the
 * way it does for a rows frame with le layout (one column per time step, one row per bucket
 * upper bound, the cell's colour from the panel's scheme with its exponent), in SVG.
 */
function Heatmap({ panel, frames, width, height }: { panel: Json; frames: DataFrame[]; width: number; height: number }) {
  const frame = frames.find((f) => f.length > 0);
  const time = frame?.fields.find((f) => f.type === FieldType.time);
  const buckets = frame?.fields.filter((f) => f.type === FieldType.number) ?? [];
  if (!frame || !time || buckets.length === 0) {
    return <div style={{ color: theme.colors.text.secondary, padding: 8 }}>No data</div>;
  }
  const exp = panel.options?.color?.exponent ?? 0.5;
  let max = 0;
  for (const b of buckets) {
    for (const v of b.values) {
      if (typeof v === 'number' && v > max) {
        max = v;
      }
    }
  }
  const left = 56;
  const bottom = 18;
  const cw = (width - left) / frame.length;
  const ch = (height - bottom) / buckets.length;
  const label = (b: Json) => {
    const n = Number(b.config?.displayNameFromDS ?? b.name);
    return Number.isFinite(n) ? (n >= 1 ? `${n} s` : `${+(n * 1000).toPrecision(3)} ms`) : String(b.name);
  };
  const every = Math.ceil(buckets.length / Math.max(1, Math.floor((height - bottom) / 14)));
  const ticks = 6;
  return (
    <svg width={width} height={height}>
      {buckets.map((b, j) => (
        <g key={j}>
          {j % every === 0 && (
            <text x={left - 4} y={height - bottom - j * ch - ch / 2 + 4} fontSize={10} textAnchor="end" fill={theme.colors.text.secondary}>
              {label(b)}
            </text>
          )}
          {b.values.map((v: number | null, i: number) =>
            typeof v === 'number' && v > 1e-9 && max > 0 ? (
              <rect
                key={i}
                x={left + i * cw}
                y={height - bottom - (j + 1) * ch}
                width={Math.max(cw, 1)}
                height={Math.max(ch - 0.5, 1)}
                fill="rgb(255, 120, 10)"
                fillOpacity={0.12 + 0.88 * Math.pow(v / max, exp)}
              />
            ) : null
          )}
        </g>
      ))}
      {Array.from({ length: ticks }, (_, k) => {
        const i = Math.floor(((frame.length - 1) * k) / (ticks - 1));
        const d = new Date(time.values[i]);
        return (
          <text key={k} x={left + i * cw} y={height - 4} fontSize={10} textAnchor="middle" fill={theme.colors.text.secondary}>
            {d.toISOString().slice(11, 16)}
          </text>
        );
      })}
    </svg>
  );
}

/**
 * Grafana's state-timeline panel is its own plugin too: one band per string field (per target
 * or GPU), each run of equal values one coloured box with the value's text, colours and texts
 * from the panel's value mappings (the field's display processor).
 */
function StateTimeline({ frames, width, height }: { frames: DataFrame[]; width: number; height: number }) {
  const rows: Array<{ name: string; time: Json; field: Json }> = [];
  for (const f of frames) {
    const time = f.fields.find((x) => x.type === FieldType.time);
    for (const fld of f.fields) {
      if (fld !== time && time && f.length > 0) {
        rows.push({ name: fld.state?.displayName ?? fld.config?.displayNameFromDS ?? fld.name, time, field: fld });
      }
    }
  }
  if (rows.length === 0) {
    return <div style={{ color: theme.colors.text.secondary, padding: 8 }}>No data</div>;
  }
  const left = 280; // Grafana sizes the names' column to the longest name
  const bottom = 18;
  const rh = Math.min(40, (height - bottom) / rows.length);
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const r of rows) {
    t0 = Math.min(t0, r.time.values[0]);
    t1 = Math.max(t1, r.time.values[r.time.values.length - 1]);
  }
  const x = (t: number) => left + ((t - t0) / Math.max(1, t1 - t0)) * (width - left);
  return (
    <svg width={width} height={height}>
      {rows.map((r, j) => {
        const boxes: Array<{ from: number; to: number; v: Json }> = [];
        const vals = r.field.values;
        for (let i = 0; i < vals.length; i++) {
          const last = boxes[boxes.length - 1];
          if (last && last.v === vals[i]) {
            last.to = r.time.values[i];
          } else {
            boxes.push({ from: r.time.values[i], to: r.time.values[i], v: vals[i] });
          }
        }
        return (
          <g key={j}>
            <text x={4} y={j * rh + rh / 2 + 4} fontSize={11} fill={theme.colors.text.primary}>
              {String(r.name).slice(0, 44)}
            </text>
            {boxes.map((b, k) => {
              if (b.v == null || b.v === '') {
                return null;
              }
              const d = r.field.display ? r.field.display(b.v) : { text: String(b.v) };
              const w = Math.max(x(b.to) - x(b.from) + (width - left) / Math.max(1, vals.length), 1);
              return (
                <g key={k}>
                  <rect x={x(b.from)} y={j * rh + 2} width={w} height={rh - 4} fill={d.color ?? theme.colors.text.secondary} />
                  {w > 70 && (
                    <text x={x(b.from) + 4} y={j * rh + rh / 2 + 4} fontSize={11} fill="#000">
                      {d.text}
                    </text>
                  )}
                </g>
              );
            })}
          </g>
        );
      })}
      {Array.from({ length: 6 }, (_, k) => {
        const t = t0 + ((t1 - t0) * k) / 5;
        return (
          <text key={k} x={x(t)} y={height - 4} fontSize={10} textAnchor="middle" fill={theme.colors.text.secondary}>
            {new Date(t).toISOString().slice(11, 16)}
          </text>
        );
      })}
    </svg>
  );
}

function Viz({ panel, frames, width, height }: { panel: Json; frames: DataFrame[]; width: number; height: number }) {
  const opts = panel.options ?? {};
  if (panel.type === 'heatmap') {
    return <Heatmap panel={panel} frames={frames} width={width} height={height} />;
  }
  if (panel.type === 'state-timeline') {
    return <StateTimeline frames={frames} width={width} height={height} />;
  }
  if (panel.type === 'timeseries') {
    return (
      <TimeSeries
        frames={frames}
        width={width}
        height={height}
        timeRange={timeRangeOf(frames)}
        timeZone="utc"
        legend={opts.legend}
        options={opts}
      />
    );
  }
  if (panel.type === 'stat') {
    const values = getFieldDisplayValues({
      fieldConfig: panel.fieldConfig,
      reduceOptions: opts.reduceOptions ?? { calcs: [ReducerID.lastNotNull], values: false },
      replaceVariables: interpolate,
      theme,
      data: frames,
      timeZone: 'utc',
    });
    const n = Math.max(values.length, 1);
    const w = Math.floor(width / n);
    return (
      <div style={{ display: 'flex' }}>
        {values.map((v, i) => (
          <BigValue
            key={i}
            theme={theme}
            width={w}
            height={height}
            value={v.display}
            sparkline={v.sparkline}
            colorMode={(opts.colorMode as BigValueColorMode) ?? BigValueColorMode.Value}
            graphMode={(opts.graphMode as BigValueGraphMode) ?? BigValueGraphMode.Area}
            justifyMode={BigValueJustifyMode.Center}
            textMode={(opts.textMode as BigValueTextMode) ?? BigValueTextMode.Auto}
            // Grafana's stat panel passes options.text (fixed name and value sizes) the same way.
            text={opts.text}
          />
        ))}
      </div>
    );
  }
  if (panel.type === 'gauge') {
    // Grafana's gauge panel is its own plugin; @grafana/ui's BarGauge draws the same values,
    // thresholds and colours as one bar per value.
    const values = getFieldDisplayValues({
      fieldConfig: panel.fieldConfig,
      reduceOptions: opts.reduceOptions ?? { calcs: [ReducerID.lastNotNull], values: false },
      replaceVariables: interpolate,
      theme,
      data: frames,
      timeZone: 'utc',
    });
    const h = Math.floor(height / Math.max(values.length, 1));
    return (
      <div>
        {values.map((v, i) => (
          <BarGauge
            key={i}
            theme={theme}
            width={width}
            height={h}
            field={v.field}
            value={v.display}
            orientation={VizOrientation.Horizontal}
            displayMode={BarGaugeDisplayMode.Basic}
            // Grafana's gauge panel writes each name in small text over its gauge; BarGauge's
            // default title size grows with the row and cut the names to "vll…", and without a
            // name placement it writes the name left of the bar in a third of the width, which
            // cut "… on gpu-kv-pressure · GPU 0" to "· G…" (issue 33): above, full width.
            namePlacement={BarGaugeNamePlacement.Top}
            text={{ titleSize: 14, valueSize: 36 }}
            showUnfilled={true}
          />
        ))}
      </div>
    );
  }
  // table, and the panels whose component is Grafana's own (heatmap, state timeline).
  // Grafana's table panel shows its noValue when there is no row: PanelDataErrorView without
  // fields, TableNG's empty-table placeholder (noRowsFallback) with fields and no row (e.g.
  // after a filterByValue that kept none). Drawn here as the placeholder's text.
  const frame = frames.find((f) => f.length > 0);
  if (!frame) {
    return <div style={{ color: theme.colors.text.secondary, padding: 8 }}>{panel.fieldConfig?.defaults?.noValue ?? 'No data'}</div>;
  }
  // Grafana 12.2 and later draw the table panel with TableNG (react-data-grid: column widths,
  // wrapped text, gauge cells as Grafana shows them); @grafana/ui's Table is the legacy
  // react-table one, which the screenshots used until issue 33's review found its cells
  // unpadded and its wrapText ignored.
  // Grafana's panel renderer caches each field's display name (an organize rename, a
  // displayName override) before the table reads it; TableNG names its columns from that cache.
  cacheFieldDisplayNames([frame]);
  return (
    <TableNG
      data={frame}
      width={width}
      height={height}
      cellHeight={opts.cellHeight}
      sortBy={opts.sortBy}
      noValue={panel.fieldConfig?.defaults?.noValue}
      maxRowHeight={opts.maxRowHeight}
      enableVirtualization={false}
    />
  );
}

function Panel({ uid, panel }: { uid: string; panel: Json }) {
  const [frames, setFrames] = useState<DataFrame[] | null>(null);
  const [error, setError] = useState<string>('');
  const g = panel.gridPos;
  const width = g.w * COL - 8;
  const height = g.h * ROW + (g.h - 1) * 8;
  useEffect(() => {
    fetch(`frames/${uid}/${panel.id}.json`)
      .then((r) => (r.ok ? r.json() : { frames: {} }))
      .then((js) => prepare(panel, js.frames ?? {}))
      .then(setFrames)
      .catch((e) => {
        console.error(`panel ${panel.id} ${panel.title}: ${e}`);
        setError(String(e));
      });
  }, [uid, panel]);
  const drawnAs = '';
  return (
    <div
      className="panel"
      data-ready={frames !== null || error !== '' ? 'yes' : 'no'}
      style={{ position: 'absolute', left: g.x * COL + 20, top: g.y * (ROW + 8) + 20 }}
    >
      <PanelChrome width={width} height={height} title={titleVars(panel.title) + drawnAs} description={panel.description} statusMessage={error || undefined}>
        {(w, h) => (frames ? <Viz panel={panel} frames={frames} width={w} height={h} /> : null)}
      </PanelChrome>
    </div>
  );
}

function Row({ panel }: { panel: Json }) {
  const g = panel.gridPos;
  return (
    <div className="panel" data-ready="yes" style={{ position: 'absolute', left: 20, top: g.y * (ROW + 8) + 20, color: theme.colors.text.primary, fontSize: 16, fontWeight: 500 }}>
      {panel.collapsed ? '▸ ' : '▾ '}
      {titleVars(panel.title)}
      {panel.collapsed ? ` (collapsed: ${(panel.panels ?? []).length} panels)` : ''}
    </div>
  );
}

function App() {
  const uid = new URLSearchParams(window.location.search).get('dash') ?? 'inferscope-overview';
  const d = dashboards[uid];
  const bottom = Math.max(...d.panels.map((p: Json) => (p.gridPos.y + p.gridPos.h) * (ROW + 8))) + 60;
  return (
    // Text in the theme's primary colour, as Grafana's global styles set it on the body (issue
    // 33: legends and gauge names inherited the page's black and read dark grey on near-black).
    <div style={{ position: 'relative', width: 1600, height: bottom, background: theme.colors.background.canvas, color: theme.colors.text.primary, fontFamily: theme.typography.fontFamily }}>
      <div style={{ position: 'absolute', left: 20, top: 0, color: theme.colors.text.secondary, fontSize: 12 }}>{d.title}</div>
      {d.panels.map((p: Json) => (p.type === 'row' ? <Row key={p.id} panel={p} /> : <Panel key={p.id} uid={uid} panel={p} />))}
    </div>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
