// Panel renderer: draws one generated dashboard (dashboards/*.json) without a
// Grafana server, with Grafana's published packages: @grafana/data applies the
// panel's transformations and field config (defaults, overrides, thresholds,
// value mappings) to the frames the plugin returned for each query, and
// @grafana/ui draws them (PanelChrome, TimeSeries with its legend, BigValue
// with its sparkline, Table). Heatmap and state-timeline panels live in
// Grafana itself, not in @grafana/ui: they are drawn as a Table of the same
// data, with a note in the panel's title bar.
//
// Page: panels.html?dash=<dashboard uid>. Data: frames/<uid>/<panel id>.json,
// written by test/asgrafana (INFERSCOPE_PANEL_FRAMES), see scripts/render-panels.sh.
import React, { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { lastValueFrom } from 'rxjs';

import {
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
  getFieldDisplayValues,
  ReducerID,
  standardTransformers,
  standardTransformersRegistry,
  TimeRange,
  transformDataFrame,
  dateTime,
} from '@grafana/data';
import { BigValue, BigValueColorMode, BigValueGraphMode, BigValueJustifyMode, BigValueTextMode, PanelChrome, Table, TimeSeries } from '@grafana/ui';

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

const theme = createTheme({ colors: { mode: 'dark' } });
const COL = 1560 / 24; // px per grid column
const ROW = 30; // px per grid row, as Grafana

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
      process: (v: unknown) => v,
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
    replaceVariables: (v: string) => v,
    theme,
    timeZone: 'utc',
  });
}

function Viz({ panel, frames, width, height }: { panel: Json; frames: DataFrame[]; width: number; height: number }) {
  const opts = panel.options ?? {};
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
      replaceVariables: (v: string) => v,
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
          />
        ))}
      </div>
    );
  }
  // table, and the panels whose component is Grafana's own (heatmap, state timeline).
  const frame = frames.find((f) => f.length > 0) ?? frames[0];
  if (!frame) {
    return <div style={{ color: theme.colors.text.secondary, padding: 8 }}>{panel.fieldConfig?.defaults?.noValue ?? 'No data'}</div>;
  }
  return <Table data={frame} width={width} height={height} cellHeight={opts.cellHeight} />;
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
  const drawnAs = panel.type === 'heatmap' || panel.type === 'state-timeline' ? ` (${panel.type} drawn as a table)` : '';
  return (
    <div
      className="panel"
      data-ready={frames !== null || error !== '' ? 'yes' : 'no'}
      style={{ position: 'absolute', left: g.x * COL + 20, top: g.y * (ROW + 8) + 20 }}
    >
      <PanelChrome width={width} height={height} title={panel.title + drawnAs} description={panel.description} statusMessage={error || undefined}>
        {(w, h) => (frames ? <Viz panel={panel} frames={frames} width={w} height={h} /> : null)}
      </PanelChrome>
    </div>
  );
}

function Row({ panel }: { panel: Json }) {
  const g = panel.gridPos;
  return (
    <div className="panel" data-ready="yes" style={{ position: 'absolute', left: 20, top: g.y * (ROW + 8) + 20, color: theme.colors.text.primary, fontSize: 16, fontWeight: 500 }}>
      {panel.title}
    </div>
  );
}

function App() {
  const uid = new URLSearchParams(window.location.search).get('dash') ?? 'inferscope-overview';
  const d = dashboards[uid];
  const bottom = Math.max(...d.panels.map((p: Json) => (p.gridPos.y + p.gridPos.h) * (ROW + 8))) + 60;
  return (
    <div style={{ position: 'relative', width: 1600, height: bottom, background: theme.colors.background.canvas, fontFamily: theme.typography.fontFamily }}>
      <div style={{ position: 'absolute', left: 20, top: 0, color: theme.colors.text.secondary, fontSize: 12 }}>{d.title}</div>
      {d.panels.map((p: Json) => (p.type === 'row' ? <Row key={p.id} panel={p} /> : <Panel key={p.id} uid={uid} panel={p} />))}
    </div>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
