import { Settings, NAME_RE } from './configModel';
import { DEFAULT_SLO_PROFILES, LATENCY_STAGES, ObjectiveConfig, ProfileConfig } from './types';

/**
 * Pure updates and validation of the SLO profiles in the data-source
 * settings (jsonData.sloProfiles). Validation mirrors pkg/settings/slo.go so
 * the editor shows, field by field, what Save & test would reject.
 */

/** The profiles in effect: jsonData's, or the backend's defaults when the key is absent. */
export function profilesOf(o: Settings): ProfileConfig[] {
  return o.jsonData.sloProfiles ?? DEFAULT_SLO_PROFILES;
}

/** Profile names the query editors offer (the defaults when none are configured). */
export function profileNames(profiles: ProfileConfig[] | undefined): string[] {
  return (profiles ?? DEFAULT_SLO_PROFILES).map((p) => p.name);
}

function withProfiles(o: Settings, sloProfiles: ProfileConfig[]): Settings {
  return { ...o, jsonData: { ...o.jsonData, sloProfiles } };
}

/** A profile name not in use: `${prefix}-1`, `${prefix}-2`, ... */
function fresh(used: string[], prefix: string): string {
  for (let i = 1; ; i++) {
    const n = `${prefix}-${i}`;
    if (!used.includes(n)) {
      return n;
    }
  }
}

/** Adds a profile holding one TTFT p99 ≤ 1 s objective over 30 days. */
export function addProfile(o: Settings): Settings {
  const profiles = profilesOf(o);
  const p: ProfileConfig = {
    name: fresh(
      profiles.map((x) => x.name),
      'profile'
    ),
    objectives: [{ name: 'ttft-p99', kind: 'latency', signal: 'ttft', threshold: 1, target: 0.99, period: '30d' }],
  };
  return withProfiles(o, [...profiles, p]);
}

export function removeProfile(o: Settings, index: number): Settings {
  const profiles = [...profilesOf(o)];
  profiles.splice(index, 1);
  return withProfiles(o, profiles);
}

export function renameProfile(o: Settings, index: number, name: string): Settings {
  const profiles = profilesOf(o).map((p, i) => (i === index ? { ...p, name } : p));
  return withProfiles(o, profiles);
}

/** Restores the default profiles (removes the key so the backend's defaults apply). */
export function resetProfiles(o: Settings): Settings {
  const jsonData = { ...o.jsonData };
  delete jsonData.sloProfiles;
  return { ...o, jsonData };
}

export function addObjective(o: Settings, pi: number): Settings {
  const profiles = profilesOf(o).map((p, i) => {
    if (i !== pi) {
      return p;
    }
    const name = fresh(
      p.objectives.map((x) => x.name),
      'objective'
    );
    return {
      ...p,
      objectives: [...p.objectives, { name, kind: 'latency' as const, signal: 'e2e', threshold: 10, target: 0.99 }],
    };
  });
  return withProfiles(o, profiles);
}

export function removeObjective(o: Settings, pi: number, oi: number): Settings {
  const profiles = profilesOf(o).map((p, i) =>
    i === pi ? { ...p, objectives: p.objectives.filter((_, j) => j !== oi) } : p
  );
  return withProfiles(o, profiles);
}

/**
 * Applies a patch to objective oi of profile pi. Switching to error_ratio or
 * availability drops the signal and threshold, which those kinds do not take;
 * leaving error_ratio drops its include4xx/includeAborts options; empty
 * optional fields are removed so the backend defaults apply.
 */
export function updateObjective(o: Settings, pi: number, oi: number, patch: Partial<ObjectiveConfig>): Settings {
  const profiles = profilesOf(o).map((p, i) => {
    if (i !== pi) {
      return p;
    }
    const objectives = p.objectives.map((x, j) => {
      if (j !== oi) {
        return x;
      }
      const next: ObjectiveConfig = { ...x, ...patch };
      if (next.kind === 'error_ratio' || next.kind === 'availability') {
        delete next.signal;
        delete next.threshold;
      } else if (patch.kind === 'latency' && next.signal === undefined) {
        next.signal = 'e2e';
        next.threshold = 10;
      }
      if (next.kind !== 'error_ratio') {
        delete next.include4xx;
        delete next.includeAborts;
      }
      for (const k of ['include4xx', 'includeAborts'] as const) {
        if (next[k] === false) {
          delete next[k];
        }
      }
      for (const k of ['period', 'targets', 'models'] as const) {
        const v = next[k];
        if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) {
          delete next[k];
        }
      }
      return next;
    });
    return { ...p, objectives };
  });
  return withProfiles(o, profiles);
}

/** Prometheus duration in the units settings accept (ms, s, m, h, d, w, y). */
const DURATION_RE = /^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$/;
const UNIT_SECONDS: Record<string, number> = {
  y: 365 * 86400,
  w: 7 * 86400,
  d: 86400,
  h: 3600,
  m: 60,
  s: 1,
  ms: 0.001,
};

/** Seconds of a Prometheus duration such as "30d" or "1w2d"; NaN when it is not one. */
export function durationSeconds(s: string): number {
  if (s === '' || !DURATION_RE.test(s)) {
    return NaN;
  }
  let total = 0;
  for (const m of s.matchAll(/(\d+)(ms|y|w|d|h|m|s)/g)) {
    total += Number(m[1]) * UNIT_SECONDS[m[2]];
  }
  return total;
}

/** Field errors of one objective, keyed by field name (name, signal, threshold, target, period, targets). */
export function objectiveErrors(
  obj: ObjectiveConfig,
  siblings: ObjectiveConfig[],
  targetNames: string[]
): Partial<Record<keyof ObjectiveConfig, string>> {
  const e: Partial<Record<keyof ObjectiveConfig, string>> = {};
  if (!NAME_RE.test(obj.name)) {
    e.name = "1-63 letters, digits, '_', '.', ':' or '-'";
  } else if (siblings.filter((s) => s.name === obj.name).length > 1) {
    e.name = `"${obj.name}" is used twice in this profile`;
  }
  const kind = obj.kind ?? 'latency';
  if (kind === 'latency') {
    if (!obj.signal || !(LATENCY_STAGES as readonly string[]).includes(obj.signal)) {
      e.signal = `choose a latency stage (${LATENCY_STAGES.join(', ')})`;
    }
    if (typeof obj.threshold !== 'number' || !Number.isFinite(obj.threshold) || obj.threshold <= 0) {
      e.threshold = 'a positive number of seconds (0.5 for 500 ms)';
    }
  }
  if (typeof obj.target !== 'number' || !(obj.target > 0 && obj.target < 1)) {
    e.target = 'a ratio strictly between 0 and 1, such as 0.99';
  }
  if (obj.period !== undefined && obj.period !== '' && obj.period !== 'month') {
    const secs = durationSeconds(obj.period);
    if (Number.isNaN(secs)) {
      e.period = `"${obj.period}" is not a duration such as 30d or 4w`;
    } else if (secs < 3 * 86400) {
      e.period = 'at least 3d, the longest burn-rate window';
    }
  }
  const unknown = (obj.targets ?? []).find((t) => !targetNames.includes(t));
  if (unknown !== undefined) {
    e.targets = `"${unknown}" is not a configured target`;
  }
  return e;
}

/** Problem with a profile's own name or size, or undefined. */
export function profileError(p: ProfileConfig, all: ProfileConfig[]): string | undefined {
  if (!NAME_RE.test(p.name)) {
    return "1-63 letters, digits, '_', '.', ':' or '-'";
  }
  if (all.filter((x) => x.name === p.name).length > 1) {
    return `"${p.name}" is used twice`;
  }
  if (p.objectives.length === 0) {
    return 'a profile needs at least one objective';
  }
  return undefined;
}
