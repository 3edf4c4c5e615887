import React, { useState } from 'react';
import { DataSourcePluginOptionsEditorProps, SelectableValue } from '@grafana/data';
import { Box, Button, InlineField, Input, RadioButtonGroup, SecretInput, Stack, Switch, Text } from '@grafana/ui';
import { ConfigSection, ConfigSubSection, DataSourceDescription } from '@grafana/plugin-ui';

import {
  addAgent,
  addProbe,
  addTarget,
  isSecretConfigured,
  nameError,
  durationError,
  urlError,
  parseGPUList,
  removeAgent,
  removeProbe,
  removeTarget,
  resetSecret,
  setOption,
  setSecret,
  Settings,
  updateAgent,
  updateProbe,
  updateTarget,
} from '../configModel';
import {
  AGENT_KINDS,
  ENGINES,
  InferscopeOptions,
  InferscopeSecureJsonData,
  secretKey,
  SETTINGS_DEFAULTS,
  TargetConfig,
} from '../types';
import { KeyValueEditor } from './KeyValueEditor';
import { isRemote, RemoteSettings, SelectorField } from './RemoteSettings';
import { SLOProfilesEditor } from './SLOProfilesEditor';
import { BaselinesEditor } from './BaselinesEditor';
import { Single } from './editors/common';
import { OwnMetricsEditor } from './OwnMetricsEditor';

type Props = DataSourcePluginOptionsEditorProps<InferscopeOptions, InferscopeSecureJsonData>;

const LABEL_WIDTH = 22;

const ENGINE_OPTIONS: Array<SelectableValue<string>> = [
  { label: 'auto (detect)', value: '', description: 'Detect the engine from the metric families on the page' },
  ...ENGINES.map((e) => ({ label: e, value: e })),
];

const KIND_OPTIONS: Array<SelectableValue<string>> = AGENT_KINDS.map((k) => ({
  label: k,
  value: k,
  description: k === 'dcgm' ? 'NVIDIA dcgm-exporter' : 'Inferscope NVML GPU agent',
}));

interface SecretProps {
  id: string;
  label: string;
  options: Settings;
  name: string;
  kind: 'bearerToken' | 'basicAuthPassword';
  onOptionsChange: (o: Settings) => void;
  tooltip: string;
}

function SecretField({ id, label, options, name, kind, onOptionsChange, tooltip }: SecretProps) {
  return (
    <InlineField
      label={kind === 'bearerToken' ? 'Bearer token' : 'Basic auth password'}
      labelWidth={LABEL_WIDTH}
      tooltip={tooltip}
    >
      <SecretInput
        id={id}
        aria-label={label}
        width={40}
        isConfigured={isSecretConfigured(options, name, kind)}
        value={options.secureJsonData?.[secretKey(name, kind)] ?? ''}
        placeholder={kind === 'bearerToken' ? 'token sent as Authorization: Bearer' : 'password'}
        onChange={(e) => onOptionsChange(setSecret(options, name, kind, e.currentTarget.value))}
        onReset={() => onOptionsChange(resetSecret(options, name, kind))}
      />
    </InlineField>
  );
}

/** What a GPU agent's and a probe's card share: the bearer token and TLS switch of a scraped
 *  page (embedded mode only: in remote mode the server scrapes), and the remove button. */
interface ScrapedEndpointProps {
  /** `agent` or `probe`: the element ids' prefix. */
  idPrefix: string;
  /** `Agent` or `Probe`: the accessible names' prefix. */
  noun: string;
  index: number;
  name: string;
  tlsSkipVerify?: boolean;
  remote: boolean;
  options: Settings;
  onOptionsChange: (o: Settings) => void;
  onTLS: (tlsSkipVerify: boolean) => void;
  onRemove: () => void;
}

function ScrapedEndpointFields(p: ScrapedEndpointProps) {
  const n = p.index + 1;
  return (
    <>
      {p.remote ? null : (
        <>
          <SecretField
            id={`${p.idPrefix}-${p.index}-token`}
            label={`${p.noun} ${n} bearer token`}
            options={p.options}
            name={p.name}
            kind="bearerToken"
            onOptionsChange={p.onOptionsChange}
            tooltip="Stored encrypted; only the backend reads it"
          />
          <InlineField label="Skip TLS verify" labelWidth={LABEL_WIDTH}>
            <Switch
              id={`${p.idPrefix}-${p.index}-tls`}
              aria-label={`${p.noun} ${n} skip TLS verify`}
              value={Boolean(p.tlsSkipVerify)}
              onChange={(e) => p.onTLS(e.currentTarget.checked)}
            />
          </InlineField>
        </>
      )}
      <Button
        variant="destructive"
        fill="outline"
        size="sm"
        icon="trash-alt"
        aria-label={`Remove ${p.idPrefix} ${n}`}
        onClick={p.onRemove}
      >
        {`Remove ${p.idPrefix}`}
      </Button>
    </>
  );
}

type AuthMethod = 'none' | 'basic' | 'bearer';

const AUTH_OPTIONS: Array<SelectableValue<AuthMethod>> = [
  { label: 'No auth', value: 'none' },
  { label: 'Basic auth', value: 'basic' },
  { label: 'Bearer token', value: 'bearer' },
];

/** The method a target's saved or typed settings use (basic auth wins, as in pkg/collect). */
export function authMethodOf(o: Settings, t: TargetConfig): AuthMethod {
  if (
    t.basicAuthUser ||
    isSecretConfigured(o, t.name, 'basicAuthPassword') ||
    o.secureJsonData?.[secretKey(t.name, 'basicAuthPassword')]
  ) {
    return 'basic';
  }
  if (isSecretConfigured(o, t.name, 'bearerToken') || o.secureJsonData?.[secretKey(t.name, 'bearerToken')]) {
    return 'bearer';
  }
  return 'none';
}

/**
 * A target's authentication: a picker (no auth, basic auth, bearer token) and the fields of
 * the chosen method only. Picking a method clears the other method's user and secrets, so
 * what is saved is what is shown.
 */
function TargetAuth({
  i,
  n,
  target: t,
  options,
  onOptionsChange,
}: {
  i: number;
  n: number;
  target: TargetConfig;
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}) {
  const [method, setMethod] = useState<AuthMethod>(() => authMethodOf(options, t));
  const pick = (m: AuthMethod) => {
    setMethod(m);
    let o = options;
    if (m !== 'basic') {
      if (t.basicAuthUser) {
        o = updateTarget(o, i, { basicAuthUser: undefined });
      }
      if (
        isSecretConfigured(o, t.name, 'basicAuthPassword') ||
        o.secureJsonData?.[secretKey(t.name, 'basicAuthPassword')]
      ) {
        o = resetSecret(o, t.name, 'basicAuthPassword');
      }
    }
    if (
      m !== 'bearer' &&
      (isSecretConfigured(o, t.name, 'bearerToken') || o.secureJsonData?.[secretKey(t.name, 'bearerToken')])
    ) {
      o = resetSecret(o, t.name, 'bearerToken');
    }
    if (o !== options) {
      onOptionsChange(o);
    }
  };
  return (
    <>
      <InlineField label="Authentication" labelWidth={LABEL_WIDTH} tooltip="How the metrics page is fetched">
        <RadioButtonGroup
          aria-label={`Target ${n} authentication`}
          options={AUTH_OPTIONS}
          value={method}
          onChange={pick}
        />
      </InlineField>
      {method === 'basic' && (
        <>
          <InlineField label="Basic auth user" labelWidth={LABEL_WIDTH}>
            <Input
              id={`target-${i}-user`}
              aria-label={`Target ${n} basic auth user`}
              width={40}
              value={t.basicAuthUser ?? ''}
              onChange={(e) => onOptionsChange(updateTarget(options, i, { basicAuthUser: e.currentTarget.value }))}
            />
          </InlineField>
          <SecretField
            id={`target-${i}-password`}
            label={`Target ${n} basic auth password`}
            options={options}
            name={t.name}
            kind="basicAuthPassword"
            onOptionsChange={onOptionsChange}
            tooltip="Stored encrypted; only the backend reads it"
          />
        </>
      )}
      {method === 'bearer' && (
        <SecretField
          id={`target-${i}-token`}
          label={`Target ${n} bearer token`}
          options={options}
          name={t.name}
          kind="bearerToken"
          onOptionsChange={onOptionsChange}
          tooltip="Stored encrypted; only the backend reads it"
        />
      )}
    </>
  );
}

function GPUListInput({
  id,
  label,
  value,
  onChange,
}: {
  id: string;
  label: string;
  value: number[] | undefined;
  onChange: (g: number[]) => void;
}) {
  const [text, setText] = useState((value ?? []).join(', '));
  const { error } = parseGPUList(text);
  return (
    <InlineField
      label="GPU indices"
      labelWidth={LABEL_WIDTH}
      tooltip="Comma-separated GPU indices on the agent used by this target; empty means all GPUs of the agent"
      invalid={Boolean(error)}
      error={error}
    >
      <Input
        id={id}
        aria-label={label}
        width={20}
        value={text}
        placeholder="all, or 0, 1"
        onChange={(e) => {
          const t = e.currentTarget.value;
          setText(t);
          const parsed = parseGPUList(t);
          if (!parsed.error) {
            onChange(parsed.gpus);
          }
        }}
      />
    </InlineField>
  );
}

/** Settings page: targets, GPU agents and scrape limits (pkg/settings). */
/** The text settings of the Collection section: durations and sizes in Prometheus notation, the storage path. */
const DURATION_FIELDS: Array<{
  key: 'scrapeInterval' | 'scrapeTimeout' | 'retention' | 'retentionSize' | 'storagePath';
  id: string;
  label: string;
  tooltip: string;
}> = [
  {
    key: 'scrapeInterval',
    id: 'scrape-interval',
    label: 'Scrape interval',
    tooltip: 'How often every target and agent is scraped',
  },
  { key: 'scrapeTimeout', id: 'scrape-timeout', label: 'Scrape timeout', tooltip: 'At most the scrape interval' },
  {
    key: 'retention',
    id: 'retention',
    label: 'Retention',
    tooltip: 'How long scraped series are kept on disk (at most 90d)',
  },
  {
    key: 'retentionSize',
    id: 'retention-size',
    label: 'Retention size',
    tooltip: 'Disk budget of this data source (e.g. 512MB, 10GB; 0 = none): the oldest data goes first',
  },
  {
    key: 'storagePath',
    id: 'storage-path',
    label: 'Storage path',
    tooltip:
      "Absolute directory on the Grafana server; history is kept in <path>/<data source uid>. Empty: Grafana's data directory + /inferscope",
  },
];

/** With more targets than this, saved targets start collapsed (a new one stays open). */
const COLLAPSE_ABOVE = 5;

/** The Collection fields holding a Prometheus duration (checked as typed). */
function isDurationKey(k: string): k is 'scrapeInterval' | 'scrapeTimeout' | 'retention' {
  return k === 'scrapeInterval' || k === 'scrapeTimeout' || k === 'retention';
}

/** The numeric limits of the Collection section. */
const LIMIT_FIELDS: Array<{
  key: 'bodySizeLimit' | 'sampleLimit';
  id: string;
  label: string;
  ariaLabel: string;
  tooltip: string;
}> = [
  {
    key: 'bodySizeLimit',
    id: 'body-size-limit',
    label: 'Body size limit (bytes)',
    ariaLabel: 'Body size limit',
    tooltip: 'Largest metrics page accepted',
  },
  {
    key: 'sampleLimit',
    id: 'sample-limit',
    label: 'Sample limit',
    ariaLabel: 'Sample limit',
    tooltip: 'Most samples kept from one scrape after unused families are dropped; a larger page fails that scrape',
  },
];

export function ConfigEditor({ options, onOptionsChange }: Props) {
  const remote = isRemote(options);
  const targets = options.jsonData.targets ?? [];
  const agents = options.jsonData.gpuAgents ?? [];
  const agentOptions: Array<SelectableValue<string>> = [
    { label: 'none', value: '' },
    ...agents.map((a) => ({ label: a.name, value: a.name })),
  ];
  // Remount the per-item editors when the lists change length so their
  // local state (label rows, GPU text) never follows the wrong item.
  const tKey = (i: number) => `t-${targets.length}-${i}`;
  const aKey = (i: number) => `a-${agents.length}-${i}`;
  const probes = options.jsonData.probes ?? [];
  const pKey = (i: number) => `p-${probes.length}-${i}`;
  const targetOptions: Array<SelectableValue<string>> = targets.map((t) => ({ label: t.name, value: t.name }));

  const numberOption = (key: 'bodySizeLimit' | 'sampleLimit', raw: string) => {
    const t = raw.trim();
    onOptionsChange(setOption(options, key, t === '' ? undefined : Number(t)));
  };

  return (
    <Stack direction="column" gap={2}>
      <DataSourceDescription
        dataSourceName="Inferscope LLM"
        docsLink="https://github.com/inferscope/inferscope-llm-datasource#configuration-data-source-settings"
        hasRequiredFields
      />
      <RemoteSettings options={options} onOptionsChange={onOptionsChange} />
      <ConfigSection title="Targets">
        <Text color="secondary" element="p">
          Inference servers whose Prometheus /metrics page is scraped. The name becomes the job label of every series
          and is what queries select by.
        </Text>
        <Stack direction="column" gap={2}>
          {targets.map((t, i) => {
            const err = nameError(options, t.name);
            const n = i + 1;
            return (
              <Box key={tKey(i)} borderStyle="solid" borderColor="weak" padding={1.5} data-testid={`target-${i}`}>
                <ConfigSubSection
                  title={`Target ${n}: ${t.name || 'unnamed'}${t.url ? ` (${t.url})` : ''}`}
                  isCollapsible
                  isInitiallyOpen={targets.length <= COLLAPSE_ABOVE || (i === targets.length - 1 && !t.url)}
                >
                  <InlineField label="Name" labelWidth={LABEL_WIDTH} invalid={Boolean(err)} error={err} required>
                    <Input
                      id={`target-${i}-name`}
                      aria-label={`Target ${n} name`}
                      width={40}
                      value={t.name}
                      onChange={(e) => onOptionsChange(updateTarget(options, i, { name: e.currentTarget.value }))}
                    />
                  </InlineField>
                  {remote ? (
                    <SelectorField
                      id={`target-${i}-selector`}
                      label={`Target ${n} selector`}
                      name={t.name}
                      value={t.selector}
                      onChange={(selector) => onOptionsChange(updateTarget(options, i, { selector }))}
                    />
                  ) : null}
                  <InlineField
                    label="Metrics URL"
                    labelWidth={LABEL_WIDTH}
                    required={!remote}
                    invalid={t.url !== '' && Boolean(urlError(`targets[${i}].url`, t.url, remote))}
                    error={t.url !== '' ? urlError(`targets[${i}].url`, t.url, remote) : undefined}
                    tooltip={
                      remote ? 'Optional in remote mode: shown in the targets table only' : 'URL of the metrics page'
                    }
                  >
                    <Input
                      id={`target-${i}-url`}
                      aria-label={`Target ${n} URL`}
                      width={60}
                      value={t.url}
                      placeholder="http://10.0.0.5:8000/metrics"
                      onChange={(e) => onOptionsChange(updateTarget(options, i, { url: e.currentTarget.value }))}
                    />
                  </InlineField>
                  <InlineField label="Engine" labelWidth={LABEL_WIDTH} tooltip="Override engine detection">
                    <Single
                      id={`target-${i}-engine`}
                      ariaLabel={`Target ${n} engine`}
                      width={40}
                      options={ENGINE_OPTIONS}
                      value={t.engine ?? ''}
                      onChange={(engine) => onOptionsChange(updateTarget(options, i, { engine }))}
                    />
                  </InlineField>
                  <InlineField
                    label="Extra labels"
                    labelWidth={LABEL_WIDTH}
                    tooltip="Added to every series scraped from this target (not job or instance)"
                  >
                    <KeyValueEditor
                      name={`Target ${n} label`}
                      addLabel="Add label"
                      value={t.labels}
                      keyPlaceholder="cluster"
                      valuePlaceholder="eu-1"
                      onChange={(labels) => onOptionsChange(updateTarget(options, i, { labels }))}
                    />
                  </InlineField>
                  <OwnMetricsEditor
                    i={i}
                    target={t}
                    remote={remote}
                    options={options}
                    onOptionsChange={onOptionsChange}
                  />
                  {remote ? null : (
                    <>
                      <TargetAuth i={i} n={n} target={t} options={options} onOptionsChange={onOptionsChange} />
                      <InlineField label="Skip TLS verify" labelWidth={LABEL_WIDTH}>
                        <Switch
                          id={`target-${i}-tls`}
                          aria-label={`Target ${n} skip TLS verify`}
                          value={Boolean(t.tlsSkipVerify)}
                          onChange={(e) =>
                            onOptionsChange(updateTarget(options, i, { tlsSkipVerify: e.currentTarget.checked }))
                          }
                        />
                      </InlineField>
                    </>
                  )}
                  <InlineField
                    label="Cost per hour"
                    labelWidth={LABEL_WIDTH}
                    tooltip="What the hardware serving this target costs per hour, in the currency below; empty: the GPU agent's price per GPU-hour applies, else no cost"
                  >
                    <Input
                      id={`target-${i}-cost`}
                      aria-label={`Target ${n} cost per hour`}
                      type="number"
                      min={0}
                      step="any"
                      width={20}
                      value={t.costPerHour ?? ''}
                      placeholder="none"
                      onChange={(e) => {
                        const v = e.currentTarget.value.trim();
                        onOptionsChange(updateTarget(options, i, { costPerHour: v === '' ? undefined : Number(v) }));
                      }}
                    />
                  </InlineField>
                  <InlineField
                    label="GPU agent"
                    labelWidth={LABEL_WIDTH}
                    tooltip="GPU agent of the node serving this target"
                  >
                    <Single
                      id={`target-${i}-agent`}
                      ariaLabel={`Target ${n} GPU agent`}
                      width={40}
                      options={agentOptions}
                      value={t.agent ?? ''}
                      onChange={(agent) =>
                        onOptionsChange(updateTarget(options, i, agent ? { agent } : { agent: '', gpus: [] }))
                      }
                    />
                  </InlineField>
                  {t.agent ? (
                    <GPUListInput
                      id={`target-${i}-gpus`}
                      label={`Target ${n} GPU indices`}
                      value={t.gpus}
                      onChange={(gpus) => onOptionsChange(updateTarget(options, i, { gpus }))}
                    />
                  ) : null}
                  <Button
                    variant="destructive"
                    fill="outline"
                    size="sm"
                    icon="trash-alt"
                    aria-label={`Remove target ${n}`}
                    onClick={() => onOptionsChange(removeTarget(options, i))}
                  >
                    Remove target
                  </Button>
                </ConfigSubSection>
              </Box>
            );
          })}
          <div>
            <Button icon="plus" variant="secondary" onClick={() => onOptionsChange(addTarget(options))}>
              Add target
            </Button>
          </div>
        </Stack>
      </ConfigSection>

      <ConfigSection title="GPU agents">
        <Text color="secondary" element="p">
          Node-level GPU metrics endpoints: the Inferscope NVML agent or NVIDIA dcgm-exporter. Names share one namespace
          with targets.
        </Text>
        <Stack direction="column" gap={2}>
          {agents.map((a, i) => {
            const err = nameError(options, a.name);
            const n = i + 1;
            return (
              <Box key={aKey(i)} borderStyle="solid" borderColor="weak" padding={1.5} data-testid={`agent-${i}`}>
                <InlineField label="Name" labelWidth={LABEL_WIDTH} invalid={Boolean(err)} error={err} required>
                  <Input
                    id={`agent-${i}-name`}
                    aria-label={`Agent ${n} name`}
                    width={40}
                    value={a.name}
                    onChange={(e) => onOptionsChange(updateAgent(options, i, { name: e.currentTarget.value }))}
                  />
                </InlineField>
                {remote ? (
                  <SelectorField
                    id={`agent-${i}-selector`}
                    label={`Agent ${n} selector`}
                    name={a.name}
                    value={a.selector}
                    onChange={(selector) => onOptionsChange(updateAgent(options, i, { selector }))}
                  />
                ) : null}
                <InlineField
                  label="Metrics URL"
                  labelWidth={LABEL_WIDTH}
                  required={!remote}
                  invalid={a.url !== '' && Boolean(urlError(`gpuAgents[${i}].url`, a.url, remote))}
                  error={a.url !== '' ? urlError(`gpuAgents[${i}].url`, a.url, remote) : undefined}
                >
                  <Input
                    id={`agent-${i}-url`}
                    aria-label={`Agent ${n} URL`}
                    width={60}
                    value={a.url}
                    placeholder="http://10.0.0.5:9400/metrics"
                    onChange={(e) => onOptionsChange(updateAgent(options, i, { url: e.currentTarget.value }))}
                  />
                </InlineField>
                <InlineField
                  label="Cost per GPU-hour"
                  labelWidth={LABEL_WIDTH}
                  tooltip="Price of one GPU of this node per hour, applied to the GPUs each target on it uses when the target has no cost per hour"
                >
                  <Input
                    id={`agent-${i}-cost`}
                    aria-label={`Agent ${n} cost per GPU-hour`}
                    type="number"
                    min={0}
                    step="any"
                    width={20}
                    value={a.costPerGPUHour ?? ''}
                    placeholder="none"
                    onChange={(e) => {
                      const v = e.currentTarget.value.trim();
                      onOptionsChange(updateAgent(options, i, { costPerGPUHour: v === '' ? undefined : Number(v) }));
                    }}
                  />
                </InlineField>
                <InlineField label="Kind" labelWidth={LABEL_WIDTH}>
                  <Single
                    id={`agent-${i}-kind`}
                    ariaLabel={`Agent ${n} kind`}
                    width={40}
                    options={KIND_OPTIONS}
                    value={a.kind ?? 'inferscope'}
                    onChange={(kind) => onOptionsChange(updateAgent(options, i, { kind }))}
                  />
                </InlineField>
                <ScrapedEndpointFields
                  idPrefix="agent"
                  noun="Agent"
                  index={i}
                  name={a.name}
                  tlsSkipVerify={a.tlsSkipVerify}
                  remote={remote}
                  options={options}
                  onOptionsChange={onOptionsChange}
                  onTLS={(tlsSkipVerify) => onOptionsChange(updateAgent(options, i, { tlsSkipVerify }))}
                  onRemove={() => onOptionsChange(removeAgent(options, i))}
                />
              </Box>
            );
          })}
          <div>
            <Button icon="plus" variant="secondary" onClick={() => onOptionsChange(addAgent(options))}>
              Add GPU agent
            </Button>
          </div>
        </Stack>
      </ConfigSection>

      <ConfigSection title="Client-side probes">
        <Text color="secondary" element="p">
          inferscope-probe endpoints (docs/probe.md): each sends small streaming requests to the target it exercises and
          serves TTFT, token jitter and errors as users see them. Names share one namespace with targets and agents.
        </Text>
        <Stack direction="column" gap={2}>
          {probes.map((p, i) => {
            const err = nameError(options, p.name);
            const n = i + 1;
            return (
              <Box key={pKey(i)} borderStyle="solid" borderColor="weak" padding={1.5} data-testid={`probe-${i}`}>
                <InlineField label="Name" labelWidth={LABEL_WIDTH} invalid={Boolean(err)} error={err} required>
                  <Input
                    id={`probe-${i}-name`}
                    aria-label={`Probe ${n} name`}
                    width={40}
                    value={p.name}
                    onChange={(e) => onOptionsChange(updateProbe(options, i, { name: e.currentTarget.value }))}
                  />
                </InlineField>
                <InlineField
                  label="Metrics URL"
                  labelWidth={LABEL_WIDTH}
                  required={!remote}
                  invalid={p.url !== '' && Boolean(urlError(`probes[${i}].url`, p.url, remote))}
                  error={p.url !== '' ? urlError(`probes[${i}].url`, p.url, remote) : undefined}
                >
                  <Input
                    id={`probe-${i}-url`}
                    aria-label={`Probe ${n} URL`}
                    width={60}
                    value={p.url}
                    placeholder="http://inferscope-probe:9401/metrics"
                    onChange={(e) => onOptionsChange(updateProbe(options, i, { url: e.currentTarget.value }))}
                  />
                </InlineField>
                <InlineField
                  label="Target"
                  labelWidth={LABEL_WIDTH}
                  required
                  invalid={!p.target}
                  error={p.target ? undefined : 'Choose the target this probe exercises'}
                  tooltip="The engine target the probe's requests reach: its client-side numbers are joined to this target"
                >
                  <Single
                    id={`probe-${i}-target`}
                    ariaLabel={`Probe ${n} target`}
                    width={40}
                    placeholder="choose a target"
                    options={targetOptions}
                    value={p.target || undefined}
                    onChange={(target) => onOptionsChange(updateProbe(options, i, { target }))}
                  />
                </InlineField>
                <ScrapedEndpointFields
                  idPrefix="probe"
                  noun="Probe"
                  index={i}
                  name={p.name}
                  tlsSkipVerify={p.tlsSkipVerify}
                  remote={remote}
                  options={options}
                  onOptionsChange={onOptionsChange}
                  onTLS={(tlsSkipVerify) => onOptionsChange(updateProbe(options, i, { tlsSkipVerify }))}
                  onRemove={() => onOptionsChange(removeProbe(options, i))}
                />
              </Box>
            );
          })}
          <div>
            <Button icon="plus" variant="secondary" onClick={() => onOptionsChange(addProbe(options))}>
              Add probe
            </Button>
          </div>
        </Stack>
      </ConfigSection>

      <ConfigSection title="Collection">
        {DURATION_FIELDS.filter((f) => !remote || f.key === 'scrapeInterval').map((f) => (
          <InlineField
            key={f.key}
            label={f.label}
            labelWidth={LABEL_WIDTH}
            tooltip={f.tooltip}
            invalid={isDurationKey(f.key) && Boolean(durationError(f.key, options.jsonData[f.key] ?? ''))}
            error={isDurationKey(f.key) ? durationError(f.key, options.jsonData[f.key] ?? '') : undefined}
          >
            <Input
              id={f.id}
              aria-label={f.label}
              width={20}
              value={options.jsonData[f.key] ?? ''}
              placeholder={SETTINGS_DEFAULTS[f.key]}
              onChange={(e) => onOptionsChange(setOption(options, f.key, e.currentTarget.value.trim()))}
            />
          </InlineField>
        ))}
        {(remote ? [] : LIMIT_FIELDS).map((f) => (
          <InlineField key={f.key} label={f.label} labelWidth={LABEL_WIDTH} tooltip={f.tooltip}>
            <Input
              id={f.id}
              aria-label={f.ariaLabel}
              type="number"
              min={1}
              width={20}
              value={options.jsonData[f.key] ?? ''}
              placeholder={String(SETTINGS_DEFAULTS[f.key])}
              onChange={(e) => numberOption(f.key, e.currentTarget.value)}
            />
          </InlineField>
        ))}
      </ConfigSection>

      <ConfigSection
        title="Cost"
        description="Prices for the cost query and the Cost & capacity dashboard: per target (cost per hour) or per GPU agent (cost per GPU-hour) above, the currency and the energy price here"
      >
        <InlineField label="Currency" labelWidth={LABEL_WIDTH} tooltip="ISO 4217 code of every price (USD, EUR, …)">
          <Input
            id="currency"
            aria-label="Currency"
            width={20}
            value={options.jsonData.currency ?? ''}
            placeholder="USD"
            onChange={(e) =>
              onOptionsChange(setOption(options, 'currency', e.currentTarget.value.trim().toUpperCase()))
            }
          />
        </InlineField>
        <InlineField
          label="Energy price per kWh"
          labelWidth={LABEL_WIDTH}
          tooltip="Adds the GPUs' measured energy (energy counter, else power × time) to each priced target's cost"
        >
          <Input
            id="energy-price"
            aria-label="Energy price per kWh"
            type="number"
            min={0}
            step="any"
            width={20}
            value={options.jsonData.energyPricePerKWh ?? ''}
            placeholder="none"
            onChange={(e) => {
              const v = e.currentTarget.value.trim();
              onOptionsChange(setOption(options, 'energyPricePerKWh', v === '' ? undefined : Number(v)));
            }}
          />
        </InlineField>
      </ConfigSection>

      <SLOProfilesEditor options={options} onOptionsChange={onOptionsChange} />
      <BaselinesEditor options={options} onOptionsChange={onOptionsChange} />
    </Stack>
  );
}
