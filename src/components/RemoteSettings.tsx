import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { getBackendSrv } from '@grafana/runtime';
import { AuthMethod, Auth, ConfigSection, ConnectionSettings, convertLegacyAuthProps } from '@grafana/plugin-ui';
import { Alert, Button, InlineField, Input, RadioButtonGroup, SecretInput, Stack, Text } from '@grafana/ui';

import { NAME_RE, Settings } from '../configModel';
import { isSaved, resourceError } from './savedResource';
import { DataSourceMode, REMOTE_BEARER_TOKEN_KEY, TargetConfig, TargetGroupConfig } from '../types';

const LABEL_WIDTH = 22;

const MODE_OPTIONS: Array<SelectableValue<DataSourceMode>> = [
  { label: 'Embedded', value: 'embedded', description: 'Scrape the targets from Grafana and keep their history here' },
  {
    label: 'Remote Prometheus',
    value: 'remote',
    description: 'Read a Prometheus, Mimir, Thanos or VictoriaMetrics server',
  },
];

interface Props {
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

/** True when the data source reads a remote server. */
export function isRemote(o: Settings): boolean {
  return o.jsonData.mode === 'remote';
}

/** A selector's obvious mistakes, mirrored from pkg/settings.ParseSelector; undefined when fine or empty. */
export function selectorError(sel: string | undefined): string | undefined {
  const s = (sel ?? '').trim();
  if (s === '') {
    return undefined;
  }
  if (!s.startsWith('{') || !s.endsWith('}')) {
    return 'a label selector such as {job="vllm", instance="10.0.0.5:8000"}';
  }
  if (/(^|[{,\s])__name__\s*(=|!=|=~|!~)/.test(s)) {
    return 'a target selector picks series by labels only, not by metric name';
  }
  return undefined;
}

/** Turns a discovered job/instance into a target name allowed by pkg/settings. */
export function suggestName(job: string, instance?: string): string {
  const raw = instance ? `${job}-${instance}` : job;
  let n = raw.replace(/[^A-Za-z0-9_.:-]/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  n = n.slice(0, 63);
  return NAME_RE.test(n) ? n : 'target';
}

/** Adds a target for a discovered selector, with a unique name. */
export function addDiscoveredTarget(o: Settings, name: string, selector: string): Settings {
  const used = usedNames(o);
  let n = name;
  for (let i = 2; used.has(n); i++) {
    n = `${name.slice(0, 60)}-${i}`;
  }
  const t: TargetConfig = { name: n, url: '', selector };
  return { ...o, jsonData: { ...o.jsonData, targets: [...(o.jsonData.targets ?? []), t] } };
}

/** Every name a target, GPU agent or target group already uses. */
function usedNames(o: Settings): Set<string> {
  return new Set([
    ...(o.jsonData.targets ?? []).map((t) => t.name),
    ...(o.jsonData.gpuAgents ?? []).map((a) => a.name),
    ...(o.jsonData.targetGroups ?? []).map((g) => g.name),
  ]);
}

/** Adds a discovered job as a target group (its pods then follow the server's series), with a unique name. */
export function addDiscoveredGroup(o: Settings, group: TargetGroupConfig): Settings {
  const used = usedNames(o);
  const base = suggestName(group.name);
  let n = base;
  for (let i = 2; used.has(n); i++) {
    n = `${base.slice(0, 60)}-${i}`;
  }
  const g: TargetGroupConfig = { ...group, name: n };
  return { ...o, jsonData: { ...o.jsonData, targetGroups: [...(o.jsonData.targetGroups ?? []), g] } };
}

/** Splits a comma- or space-separated list of label names. */
export function labelList(s: string): string[] {
  return s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);
}

/** A candidate of GET /discover (pkg/plugin.Candidate). */
export interface Candidate {
  job: string;
  instance?: string;
  engine: string;
  labels?: Record<string, string>;
  models?: string[];
  instances?: number;
  selector: string;
  /** For a job: the target group it becomes when added. */
  group?: TargetGroupConfig;
}

interface Discovery {
  jobs: Candidate[];
  instances: Candidate[];
  truncated?: boolean;
}

function DiscoveryHelper({ options, onOptionsChange }: Props) {
  const [state, setState] = useState<{ loading: boolean; error?: string; result?: Discovery }>({ loading: false });
  const saved = isSaved(options);
  const run = async () => {
    setState({ loading: true });
    try {
      const result = await getBackendSrv().get<Discovery>(`/api/datasources/uid/${options.uid}/resources/discover`);
      setState({ loading: false, result });
    } catch (e: unknown) {
      setState({ loading: false, error: resourceError(e) });
    }
  };
  const rows = (title: string, cs: Candidate[]) =>
    cs.length === 0 ? null : (
      <Stack direction="column" gap={0.5}>
        <Text weight="medium">{title}</Text>
        {cs.map((c) => (
          <Stack key={c.selector} direction="row" gap={1} alignItems="center">
            <Text element="span" variant="code">
              {c.selector}
            </Text>
            <Text element="span" color="secondary">
              {[
                c.engine,
                c.instances ? `${c.instances} instances` : '',
                (c.models ?? []).join(', '),
                Object.entries(c.labels ?? {})
                  .map(([k, v]) => `${k}=${v}`)
                  .join(' '),
              ]
                .filter(Boolean)
                .join(' · ')}
            </Text>
            {c.group ? (
              <Button
                size="sm"
                variant="secondary"
                icon="plus"
                aria-label={`Add ${c.selector} as a target group`}
                tooltip={`Its targets follow the series: one per ${(c.group.targetLabels ?? []).join(', ')}`}
                onClick={() => onOptionsChange(addDiscoveredGroup(options, c.group!))}
              >
                Add as target group
              </Button>
            ) : (
              <Button
                size="sm"
                variant="secondary"
                icon="plus"
                aria-label={`Add ${c.selector} as a target`}
                onClick={() =>
                  onOptionsChange(addDiscoveredTarget(options, suggestName(c.job, c.instance), c.selector))
                }
              >
                Add as target
              </Button>
            )}
          </Stack>
        ))}
      </Stack>
    );
  return (
    <Stack direction="column" gap={1}>
      <Text color="secondary" element="p">
        Lists the jobs and instances on the server that export an inference engine&apos;s or a GPU exporter&apos;s
        metrics in the last hour. A job is added as a target group, whose targets (pods) follow the server&apos;s series
        as they come and go. Save the URL and authentication first.
      </Text>
      <div>
        <Button icon="search" variant="secondary" onClick={run} disabled={state.loading || !saved}>
          {state.loading ? 'Discovering…' : 'Discover targets on the server'}
        </Button>
      </div>
      {state.error ? (
        <Alert title="Discovery failed" severity="error">
          {state.error}
        </Alert>
      ) : null}
      {state.result ? (
        <>
          {state.result.jobs.length === 0 ? (
            <Text>No series of a known engine on the server in the last hour.</Text>
          ) : null}
          {rows('Jobs', state.result.jobs)}
          {rows('Instances', state.result.instances)}
          {state.result.truncated ? <Text color="warning">More series than shown: narrow with a selector.</Text> : null}
        </>
      ) : null}
    </Stack>
  );
}

/**
 * The mode switch, and in remote mode the server's URL, authentication
 * (basic auth, bearer token, custom headers) and TLS with @grafana/plugin-ui's
 * components as Grafana's own Prometheus data source has them, the request
 * timeout and the discovery helper.
 */
export function RemoteSettings({ options, onOptionsChange }: Props) {
  const remote = isRemote(options);
  const tokenKey = REMOTE_BEARER_TOKEN_KEY;
  const tokenConfigured = Boolean(options.secureJsonFields?.[tokenKey]);
  const [bearer, setBearer] = useState(tokenConfigured || Boolean(options.secureJsonData?.[tokenKey]));
  const legacy = convertLegacyAuthProps({ config: options, onChange: onOptionsChange });
  const clearToken = (o: Settings): Settings => ({
    ...o,
    secureJsonFields: { ...o.secureJsonFields, [tokenKey]: false },
    secureJsonData: { ...(o.secureJsonData ?? {}), [tokenKey]: '' },
  });
  return (
    <Stack direction="column" gap={2}>
      <ConfigSection title="Mode">
        <InlineField
          label="Read data"
          labelWidth={LABEL_WIDTH}
          tooltip="Embedded scrapes; remote reads a server that scrapes"
        >
          <RadioButtonGroup<DataSourceMode>
            aria-label="Mode"
            options={MODE_OPTIONS}
            value={remote ? 'remote' : 'embedded'}
            onChange={(v) => onOptionsChange({ ...options, jsonData: { ...options.jsonData, mode: v } })}
          />
        </InlineField>
        {remote ? (
          <Text color="secondary" element="p">
            The plugin scrapes nothing: every query type reads the targets&apos; series from the server. Each target is
            a label selector there.
          </Text>
        ) : null}
      </ConfigSection>
      {remote ? (
        <>
          <ConnectionSettings
            config={options}
            onChange={onOptionsChange}
            urlPlaceholder="http://prometheus:9090"
            urlTooltip="Base URL of the Prometheus HTTP API (a Mimir or Thanos prefix such as http://mimir/prometheus works)"
          />
          <Auth
            {...legacy}
            selectedMethod={bearer ? 'custom-bearer' : legacy.selectedMethod}
            visibleMethods={[AuthMethod.NoAuth, AuthMethod.BasicAuth, 'custom-bearer']}
            customMethods={[
              {
                id: 'custom-bearer',
                label: 'Bearer token',
                description: 'Sends Authorization: Bearer <token> (Mimir, Thanos or a gateway in front of Prometheus)',
                component: (
                  <InlineField
                    label="Bearer token"
                    labelWidth={LABEL_WIDTH}
                    tooltip="Stored encrypted; only the backend reads it"
                  >
                    <SecretInput
                      id="remote-bearer-token"
                      aria-label="Remote bearer token"
                      width={40}
                      isConfigured={tokenConfigured}
                      value={options.secureJsonData?.[tokenKey] ?? ''}
                      onChange={(e) =>
                        onOptionsChange({
                          ...options,
                          secureJsonData: { ...(options.secureJsonData ?? {}), [tokenKey]: e.currentTarget.value },
                        })
                      }
                      onReset={() => onOptionsChange(clearToken(options))}
                    />
                  </InlineField>
                ),
              },
            ]}
            onAuthMethodSelect={(m) => {
              if (m === 'custom-bearer') {
                setBearer(true);
                // Basic auth off: the backend refuses both at once.
                legacy.onAuthMethodSelect(AuthMethod.NoAuth);
                return;
              }
              setBearer(false);
              if (tokenConfigured || options.secureJsonData?.[tokenKey]) {
                const cleared = clearToken(options);
                convertLegacyAuthProps({ config: cleared, onChange: onOptionsChange }).onAuthMethodSelect(m);
                return;
              }
              legacy.onAuthMethodSelect(m);
            }}
          />
          <ConfigSection title="Remote requests">
            <InlineField
              label="Timeout"
              labelWidth={LABEL_WIDTH}
              tooltip="How long one request to the server may take; the server is asked to stop at the same time"
            >
              <Input
                id="remote-timeout"
                aria-label="Remote timeout"
                width={20}
                placeholder="30s"
                value={options.jsonData.remoteTimeout ?? ''}
                onChange={(e) =>
                  onOptionsChange({
                    ...options,
                    jsonData: { ...options.jsonData, remoteTimeout: e.currentTarget.value.trim() },
                  })
                }
              />
            </InlineField>
          </ConfigSection>
          <ConfigSection title="Discover targets">
            <DiscoveryHelper options={options} onOptionsChange={onOptionsChange} />
          </ConfigSection>
          <ConfigSection
            title="Target groups"
            description="A selector whose series are a fleet: each combination of the target labels is one target, the group is a target of its own (its history survives pods replaced under new names), and groupBy may name any of its labels."
          >
            <TargetGroupsEditor options={options} onOptionsChange={onOptionsChange} />
          </ConfigSection>
        </>
      ) : null}
    </Stack>
  );
}

/** Edits jsonData.targetGroups (pkg/settings.TargetGroup). */
export function TargetGroupsEditor({ options, onOptionsChange }: Props) {
  const groups = options.jsonData.targetGroups ?? [];
  const set = (k: number, patch: Partial<TargetGroupConfig>) =>
    onOptionsChange({
      ...options,
      jsonData: { ...options.jsonData, targetGroups: groups.map((g, i) => (i === k ? { ...g, ...patch } : g)) },
    });
  return (
    <Stack direction="column" gap={1}>
      {groups.map((g, k) => (
        <Stack key={k} direction="column" gap={0.5}>
          <InlineField label="Group name" labelWidth={LABEL_WIDTH} tooltip="The group's target name in queries">
            <Input
              aria-label={`Target group ${k + 1} name`}
              width={30}
              value={g.name}
              onChange={(e) => set(k, { name: e.currentTarget.value.trim() })}
            />
          </InlineField>
          <InlineField
            label="Selector"
            labelWidth={LABEL_WIDTH}
            invalid={Boolean(selectorError(g.selector))}
            error={selectorError(g.selector)}
          >
            <Input
              aria-label={`Target group ${k + 1} selector`}
              width={50}
              placeholder='{namespace="llm", job="vllm"}'
              value={g.selector}
              onChange={(e) => set(k, { selector: e.currentTarget.value })}
            />
          </InlineField>
          <InlineField label="Target labels" labelWidth={LABEL_WIDTH} tooltip="Labels that name one target">
            <Input
              aria-label={`Target group ${k + 1} target labels`}
              width={40}
              placeholder="namespace, pod"
              value={(g.targetLabels ?? []).join(', ')}
              onChange={(e) => set(k, { targetLabels: labelList(e.currentTarget.value) })}
            />
          </InlineField>
          <InlineField label="Group labels" labelWidth={LABEL_WIDTH} tooltip="Labels that group the targets">
            <Input
              aria-label={`Target group ${k + 1} group labels`}
              width={40}
              placeholder="deployment"
              value={(g.groupLabels ?? []).join(', ')}
              onChange={(e) => set(k, { groupLabels: labelList(e.currentTarget.value) })}
            />
          </InlineField>
          <InlineField label="Max targets" labelWidth={LABEL_WIDTH} tooltip="Listed per group; beyond it a notice">
            <Input
              aria-label={`Target group ${k + 1} max targets`}
              type="number"
              width={12}
              placeholder="100"
              value={g.maxTargets ?? ''}
              onChange={(e) => {
                const v = parseInt(e.currentTarget.value, 10);
                set(k, { maxTargets: Number.isFinite(v) ? v : undefined });
              }}
            />
          </InlineField>
          <div>
            <Button
              size="sm"
              variant="destructive"
              fill="text"
              icon="trash-alt"
              aria-label={`Remove target group ${k + 1}`}
              onClick={() =>
                onOptionsChange({
                  ...options,
                  jsonData: { ...options.jsonData, targetGroups: groups.filter((_, i) => i !== k) },
                })
              }
            >
              Remove
            </Button>
          </div>
        </Stack>
      ))}
      <div>
        <Button
          size="sm"
          variant="secondary"
          icon="plus"
          onClick={() =>
            onOptionsChange({
              ...options,
              jsonData: {
                ...options.jsonData,
                targetGroups: [...groups, { name: '', selector: '', targetLabels: ['namespace', 'pod'] }],
              },
            })
          }
        >
          Add target group
        </Button>
      </div>
    </Stack>
  );
}

/** The per-target (or per-agent) selector input shown in remote mode. */
export function SelectorField({
  id,
  label,
  name,
  value,
  onChange,
}: {
  id: string;
  label: string;
  name: string;
  value: string | undefined;
  onChange: (v: string) => void;
}) {
  const err = selectorError(value);
  return (
    <InlineField
      label="Selector on server"
      labelWidth={LABEL_WIDTH}
      tooltip='Label selector of this target&apos;s series on the remote server; empty means {job="<name>"}'
      invalid={Boolean(err)}
      error={err}
    >
      <Input
        id={id}
        aria-label={label}
        width={60}
        value={value ?? ''}
        placeholder={`{job="${name}"}`}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
    </InlineField>
  );
}
