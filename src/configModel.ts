import { DataSourceSettings } from '@grafana/data';

import {
  GPUAgentConfig,
  InferscopeOptions,
  InferscopeSecureJsonData,
  ProbeConfig,
  SecretKind,
  secretKey,
  TargetConfig,
} from './types';

/**
 * Pure updates of the data-source settings the ConfigEditor edits. Each
 * returns a new settings object; secrets follow their target or agent by name
 * (secureJsonData keys "<name>.bearerToken", "<name>.basicAuthPassword").
 */
export type Settings = DataSourceSettings<InferscopeOptions, InferscopeSecureJsonData>;

const SECRET_KINDS: SecretKind[] = ['bearerToken', 'basicAuthPassword'];

/** Same rule as pkg/settings: a name usable as a label value and a secret-key prefix. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$/;

function allNames(o: Settings): string[] {
  return [
    ...(o.jsonData.targets ?? []).map((t) => t.name),
    ...(o.jsonData.gpuAgents ?? []).map((a) => a.name),
    ...(o.jsonData.probes ?? []).map((p) => p.name),
  ];
}

/** A name not used by any target or agent: `${prefix}-1`, `${prefix}-2`, ... */
export function freshName(o: Settings, prefix: string): string {
  const used = new Set(allNames(o));
  for (let i = 1; ; i++) {
    const n = `${prefix}-${i}`;
    if (!used.has(n)) {
      return n;
    }
  }
}

/** Problem with a target or agent name, or undefined when it is fine. */
export function nameError(o: Settings, name: string): string | undefined {
  if (!NAME_RE.test(name)) {
    return "1-63 letters, digits, '_', '.', ':' or '-', starting with a letter or digit";
  }
  if (allNames(o).filter((n) => n === name).length > 1) {
    return `"${name}" is used twice; target, agent and probe names must be unique`;
  }
  return undefined;
}

export function isSecretConfigured(o: Settings, name: string, kind: SecretKind): boolean {
  return Boolean(o.secureJsonFields?.[secretKey(name, kind)]);
}

export function setSecret(o: Settings, name: string, kind: SecretKind, value: string): Settings {
  return { ...o, secureJsonData: { ...(o.secureJsonData ?? {}), [secretKey(name, kind)]: value } };
}

/** Clears a secret: the empty value overwrites the stored one on save. */
export function resetSecret(o: Settings, name: string, kind: SecretKind): Settings {
  const key = secretKey(name, kind);
  return {
    ...o,
    secureJsonFields: { ...o.secureJsonFields, [key]: false },
    secureJsonData: { ...(o.secureJsonData ?? {}), [key]: '' },
  };
}

/**
 * Drops every secret of `name` (when no other target or agent still uses the
 * name). A typed but unsaved value is forgotten; a saved one is reset so it
 * cannot be inherited by a later entity of the same name. Returns the pending
 * values that were removed, by kind.
 */
function dropSecrets(o: Settings, name: string): { next: Settings; pending: Partial<Record<SecretKind, string>> } {
  const pending: Partial<Record<SecretKind, string>> = {};
  if (allNames(o).includes(name)) {
    return { next: o, pending };
  }
  const data = { ...(o.secureJsonData ?? {}) };
  const fields = { ...o.secureJsonFields };
  for (const kind of SECRET_KINDS) {
    const key = secretKey(name, kind);
    if (fields[key]) {
      fields[key] = false;
      data[key] = '';
    } else if (key in data) {
      if (data[key] !== '') {
        pending[kind] = data[key];
      }
      delete data[key];
    }
  }
  return { next: { ...o, secureJsonData: data, secureJsonFields: fields }, pending };
}

/** Moves unsaved secrets typed under oldName to newName after a rename. */
function followRename(o: Settings, oldName: string, newName: string): Settings {
  if (oldName === newName) {
    return o;
  }
  const { next, pending } = dropSecrets(o, oldName);
  let out = next;
  for (const kind of SECRET_KINDS) {
    const v = pending[kind];
    if (v !== undefined && !isSecretConfigured(out, newName, kind)) {
      out = setSecret(out, newName, kind, v);
    }
  }
  return out;
}

function withTargets(o: Settings, targets: TargetConfig[]): Settings {
  return { ...o, jsonData: { ...o.jsonData, targets } };
}

function withAgents(o: Settings, gpuAgents: GPUAgentConfig[]): Settings {
  return { ...o, jsonData: { ...o.jsonData, gpuAgents } };
}

export function addTarget(o: Settings): Settings {
  const targets = [...(o.jsonData.targets ?? []), { name: freshName(o, 'target'), url: '' }];
  return withTargets(o, targets);
}

export function removeTarget(o: Settings, index: number): Settings {
  const targets = [...(o.jsonData.targets ?? [])];
  const [gone] = targets.splice(index, 1);
  let next = withTargets(o, targets);
  if (gone) {
    // A probe of the removed target is kept with no target: the settings then
    // say which probe needs one (probes[i].target) instead of losing it.
    next = retargetProbes(next, gone.name, '');
  }
  return gone ? dropSecrets(next, gone.name).next : next;
}

/** Points the probes of target `from` at target `to`. */
function retargetProbes(o: Settings, from: string, to: string): Settings {
  if (!o.jsonData.probes) {
    return o;
  }
  const probes = o.jsonData.probes.map((p) => (p.target === from ? { ...p, target: to } : p));
  return { ...o, jsonData: { ...o.jsonData, probes } };
}

/** Adds a probe of the first target, with a fresh name. */
export function addProbe(o: Settings): Settings {
  const target = o.jsonData.targets?.[0]?.name ?? '';
  const probes = [...(o.jsonData.probes ?? []), { name: freshName(o, 'probe'), url: '', target }];
  return { ...o, jsonData: { ...o.jsonData, probes } };
}

/** Removes a probe and its secret. */
export function removeProbe(o: Settings, index: number): Settings {
  const probes = [...(o.jsonData.probes ?? [])];
  const [gone] = probes.splice(index, 1);
  const next = { ...o, jsonData: { ...o.jsonData, probes } };
  return gone ? dropSecrets(next, gone.name).next : next;
}

/** Updates a probe; a rename carries its secret along. */
export function updateProbe(o: Settings, index: number, patch: Partial<ProbeConfig>): Settings {
  const probes = [...(o.jsonData.probes ?? [])];
  const old = probes[index];
  if (!old) {
    return o;
  }
  const merged: ProbeConfig = { ...old, ...patch };
  if (!merged.tlsSkipVerify) {
    delete merged.tlsSkipVerify;
  }
  probes[index] = merged;
  const next = { ...o, jsonData: { ...o.jsonData, probes } };
  return patch.name !== undefined && patch.name !== old.name ? followRename(next, old.name, merged.name) : next;
}

/** Applies a patch to target `index`; a rename carries its unsaved secrets along. */
export function updateTarget(o: Settings, index: number, patch: Partial<TargetConfig>): Settings {
  const targets = [...(o.jsonData.targets ?? [])];
  const old = targets[index];
  if (!old) {
    return o;
  }
  const merged: TargetConfig = { ...old, ...patch };
  for (const k of Object.keys(merged) as Array<keyof TargetConfig>) {
    const v = merged[k];
    if (
      v === undefined ||
      v === '' ||
      v === false ||
      (typeof v === 'number' && Number.isNaN(v)) ||
      (Array.isArray(v) && v.length === 0)
    ) {
      if (k !== 'name' && k !== 'url') {
        delete merged[k];
      }
    }
  }
  if (merged.labels && Object.keys(merged.labels).length === 0) {
    delete merged.labels;
  }
  if (merged.metrics && Object.keys(merged.metrics).length === 0) {
    delete merged.metrics;
  }
  targets[index] = merged;
  let next = withTargets(o, targets);
  if (patch.name !== undefined && patch.name !== old.name) {
    next = retargetProbes(next, old.name, merged.name);
  }
  return patch.name !== undefined ? followRename(next, old.name, merged.name) : next;
}

export function addAgent(o: Settings): Settings {
  const gpuAgents = [...(o.jsonData.gpuAgents ?? []), { name: freshName(o, 'gpu-node'), url: '', kind: 'inferscope' }];
  return withAgents(o, gpuAgents);
}

/** Removes agent `index` and the references targets make to it. */
export function removeAgent(o: Settings, index: number): Settings {
  const agents = [...(o.jsonData.gpuAgents ?? [])];
  const [gone] = agents.splice(index, 1);
  if (!gone) {
    return o;
  }
  const targets = (o.jsonData.targets ?? []).map((t) => {
    if (t.agent !== gone.name) {
      return t;
    }
    const { agent: _agent, gpus: _gpus, ...rest } = t;
    return rest;
  });
  const next = { ...o, jsonData: { ...o.jsonData, gpuAgents: agents, targets } };
  return dropSecrets(next, gone.name).next;
}

/** Applies a patch to agent `index`; a rename updates targets that name the agent. */
export function updateAgent(o: Settings, index: number, patch: Partial<GPUAgentConfig>): Settings {
  const agents = [...(o.jsonData.gpuAgents ?? [])];
  const old = agents[index];
  if (!old) {
    return o;
  }
  const merged: GPUAgentConfig = { ...old, ...patch };
  if (!merged.tlsSkipVerify) {
    delete merged.tlsSkipVerify;
  }
  if (merged.costPerGPUHour === undefined || Number.isNaN(merged.costPerGPUHour)) {
    delete merged.costPerGPUHour;
  }
  agents[index] = merged;
  let next = withAgents(o, agents);
  if (patch.name !== undefined && patch.name !== old.name) {
    const targets = (next.jsonData.targets ?? []).map((t) => (t.agent === old.name ? { ...t, agent: merged.name } : t));
    next = followRename(withTargets(next, targets), old.name, merged.name);
  }
  return next;
}

/** Sets a top-level scrape option; an empty value removes it so the backend default applies. */
export function setOption<
  K extends
    | 'scrapeInterval'
    | 'scrapeTimeout'
    | 'retention'
    | 'retentionSize'
    | 'storagePath'
    | 'bodySizeLimit'
    | 'sampleLimit'
    | 'currency'
    | 'energyPricePerKWh',
>(o: Settings, key: K, value: InferscopeOptions[K] | undefined): Settings {
  const jsonData = { ...o.jsonData };
  if (value === undefined || value === '' || (typeof value === 'number' && Number.isNaN(value))) {
    delete jsonData[key];
  } else {
    jsonData[key] = value;
  }
  return { ...o, jsonData };
}

/** Parses "0, 1,3" into GPU indices; returns an error for anything else. */
export function parseGPUList(text: string): { gpus: number[]; error?: string } {
  const gpus: number[] = [];
  for (const part of text.split(',')) {
    const p = part.trim();
    if (p === '') {
      continue;
    }
    if (!/^\d+$/.test(p)) {
      return { gpus, error: `"${p}" is not a GPU index (0, 1, 2, ...)` };
    }
    const n = Number(p);
    if (!gpus.includes(n)) {
      gpus.push(n);
    }
  }
  return { gpus };
}

/**
 * The backend's sentence for a metrics URL it refuses (pkg/settings checkURL), or undefined:
 * `field` is the settings path, e.g. targets[0].url. Empty is allowed in remote mode only.
 */
export function urlError(field: string, raw: string, remote: boolean): string | undefined {
  if (remote && raw === '') {
    return undefined;
  }
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    u = undefined;
  }
  // Go's url.Parse refuses spaces and other characters a host cannot hold; WHATWG URL
  // percent-encodes some of them, so refuse whitespace here explicitly.
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.host === '' || /\s/.test(raw)) {
    return `${field}: ${JSON.stringify(raw)} is not an http(s) URL such as http://10.0.0.5:8000/metrics`;
  }
  if (u.username !== '' || u.password !== '') {
    return `${field}: put credentials in the basic-auth user and password fields, not in the URL`;
  }
  return undefined;
}

/** Prometheus durations (pkg/settings parseDuration accepts what model.ParseDuration does). */
const SETTINGS_DURATION_RE = /^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$/;

/**
 * The backend's sentence for a duration setting it refuses (pkg/settings parseDuration), or
 * undefined; empty means the default.
 */
export function durationError(field: string, raw: string): string | undefined {
  if (raw === '') {
    return undefined;
  }
  const positive = /[1-9]/.test(raw);
  if (!SETTINGS_DURATION_RE.test(raw) || !positive) {
    return `${field}: ${JSON.stringify(raw)} is not a positive duration such as 15s or 6h`;
  }
  return undefined;
}
