import React, { memo, useCallback, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { Box, Button, InlineField, InlineSwitch, Input, Stack, Text } from '@grafana/ui';
import { ConfigSection } from '@grafana/plugin-ui';

import { Settings } from '../configModel';
import {
  addObjective,
  addProfile,
  objectiveErrors,
  profileError,
  profilesOf,
  removeObjective,
  removeProfile,
  renameProfile,
  resetProfiles,
  updateObjective,
} from '../sloModel';
import { LATENCY_STAGES, ObjectiveConfig, ObjectiveKind, STAGE_LABELS } from '../types';
import { Multi, Single } from './editors/common';
import { useSavedList } from './savedResource';

interface Props {
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

const LW = 16;

const KIND_OPTIONS: Array<SelectableValue<ObjectiveKind>> = [
  { label: 'latency', value: 'latency', description: 'Share of requests with the stage at or under the threshold' },
  {
    label: 'error ratio',
    value: 'error_ratio',
    description:
      'Share of inference requests answered HTTP 5xx, finished with an engine error or rejected at admission',
  },
  {
    label: 'availability',
    value: 'availability',
    description: 'Share of the period the target answered its scrape and was not stalled (down time is bad time)',
  },
];

const SIGNAL_OPTIONS: Array<SelectableValue<string>> = LATENCY_STAGES.map((s) => ({
  label: s,
  value: s,
  description: STAGE_LABELS[s],
}));

/** A number field kept as text while typing, so "0." or "" are not rewritten under the cursor. */
function NumberField(props: {
  id: string;
  label: string;
  tooltip: string;
  value: number | undefined;
  error?: string;
  placeholder: string;
  onChange: (v: number | undefined) => void;
}) {
  const [text, setText] = useState(props.value === undefined ? '' : String(props.value));
  return (
    <InlineField
      label={props.label}
      labelWidth={LW}
      tooltip={props.tooltip}
      invalid={Boolean(props.error)}
      error={props.error}
    >
      <Input
        id={props.id}
        aria-label={props.label}
        width={14}
        placeholder={props.placeholder}
        value={text}
        onChange={(e) => {
          const t = e.currentTarget.value;
          setText(t);
          const n = Number(t.trim());
          props.onChange(t.trim() === '' || Number.isNaN(n) ? undefined : n);
        }}
      />
    </InlineField>
  );
}

/** Applies an edit to the latest settings; the same function across renders. */
type Update = (edit: (o: Settings) => Settings) => void;

/**
 * An Update over the latest options and onOptionsChange. Because it stays the same function,
 * a memoised objective row is drawn again only when its own objective, its profile's
 * objectives or the target and model names change, not at every keystroke elsewhere on the
 * page (each row holds four pickers).
 */
function useUpdate(options: Settings, onOptionsChange: (o: Settings) => void): Update {
  const latest = useRef({ options, onOptionsChange });
  useLayoutEffect(() => {
    latest.current = { options, onOptionsChange };
  });
  return useCallback((edit) => latest.current.onOptionsChange(edit(latest.current.options)), []);
}

const ObjectiveRow = memo(function ObjectiveRow(props: {
  pi: number;
  oi: number;
  obj: ObjectiveConfig;
  siblings: ObjectiveConfig[];
  targetNames: string[];
  /** Model names the saved data source has seen (GET /models). */
  modelNames: string[];
  update: Update;
}) {
  const { pi, oi, obj, update } = props;
  const errs = objectiveErrors(obj, props.siblings, props.targetNames);
  const id = `slo-${pi}-${oi}`;
  const set = (patch: Partial<ObjectiveConfig>) => update((o) => updateObjective(o, pi, oi, patch));
  const kind = obj.kind ?? 'latency';
  return (
    <Box borderColor="weak" borderStyle="dashed" padding={1} marginBottom={1}>
      <Stack gap={0.5} wrap="wrap">
        <InlineField label="Objective" labelWidth={LW} invalid={Boolean(errs.name)} error={errs.name}>
          <Input
            id={`${id}-name`}
            aria-label={`Objective ${oi + 1} name`}
            width={20}
            value={obj.name}
            onChange={(e) => set({ name: e.currentTarget.value })}
          />
        </InlineField>
        <InlineField label="Kind" labelWidth={LW}>
          <Single
            id={`${id}-kind`}
            ariaLabel={`Objective ${oi + 1} kind`}
            width={18}
            options={KIND_OPTIONS}
            value={kind}
            onChange={(k) => set({ kind: k })}
          />
        </InlineField>
        {kind === 'latency' && (
          <InlineField label="Signal" labelWidth={LW} invalid={Boolean(errs.signal)} error={errs.signal}>
            <Single
              id={`${id}-signal`}
              ariaLabel={`Objective ${oi + 1} signal`}
              width={18}
              options={SIGNAL_OPTIONS}
              value={obj.signal}
              onChange={(signal) => set({ signal })}
            />
          </InlineField>
        )}
      </Stack>
      <Stack gap={0.5} wrap="wrap">
        {kind === 'latency' && (
          <NumberField
            id={`${id}-threshold`}
            label="Threshold (s)"
            tooltip="Seconds, used exactly: a value that is not a bucket bound is interpolated and flagged, never rounded"
            placeholder="0.5"
            value={obj.threshold}
            error={errs.threshold}
            onChange={(v) => set({ threshold: v })}
          />
        )}
        <NumberField
          id={`${id}-target`}
          label="Target ratio"
          tooltip="Share of requests that must be good, strictly between 0 and 1 (0.99 = 99 %)"
          placeholder="0.99"
          value={obj.target}
          error={errs.target}
          onChange={(v) => set({ target: v as number })}
        />
        {kind === 'error_ratio' && (
          <>
            <InlineField label="Count 4xx" labelWidth={LW} tooltip="Also count HTTP 4xx answers (client errors) as bad">
              <InlineSwitch
                id={`${id}-include4xx`}
                aria-label={`Objective ${oi + 1} include 4xx`}
                value={obj.include4xx ?? false}
                onChange={(e) => set({ include4xx: e.currentTarget.checked })}
              />
            </InlineField>
            <InlineField
              label="Count aborts"
              labelWidth={LW}
              tooltip='Also count finished_reason="abort" as bad; on vLLM V1 this includes client disconnects, and V0 never counts aborts'
            >
              <InlineSwitch
                id={`${id}-includeAborts`}
                aria-label={`Objective ${oi + 1} include aborts`}
                value={obj.includeAborts ?? false}
                onChange={(e) => set({ includeAborts: e.currentTarget.checked })}
              />
            </InlineField>
          </>
        )}
        <InlineField
          label="Period"
          labelWidth={LW}
          tooltip="Error-budget period, e.g. 30d (default) or 4w, at least 3d; or month for the calendar month (UTC)"
          invalid={Boolean(errs.period)}
          error={errs.period}
        >
          <Input
            id={`${id}-period`}
            aria-label={`Objective ${oi + 1} period`}
            width={10}
            placeholder="30d"
            value={obj.period ?? ''}
            onChange={(e) => set({ period: e.currentTarget.value.trim() })}
          />
        </InlineField>
        <Multi
          label="Targets"
          ariaLabel={`Objective ${oi + 1} targets`}
          id={`${id}-targets`}
          tooltip="Configured targets this objective covers; empty = all"
          width={32}
          value={obj.targets}
          allowCustom={false}
          options={props.targetNames.map((t) => ({ label: t, value: t }))}
          error={errs.targets}
          onChange={(targets) => set({ targets })}
        />
        <Multi
          label="Models"
          ariaLabel={`Objective ${oi + 1} models`}
          id={`${id}-models`}
          tooltip="Model names (model_name label) this objective covers: those seen on the saved targets are listed, others may be typed as served; empty = all"
          width={32}
          value={obj.models}
          options={props.modelNames.map((m) => ({ label: m, value: m }))}
          onChange={(models) => set({ models })}
        />
        <Button
          variant="secondary"
          fill="outline"
          size="sm"
          icon="trash-alt"
          aria-label={`Remove objective ${obj.name}`}
          onClick={() => update((o) => removeObjective(o, pi, oi))}
        >
          Remove
        </Button>
      </Stack>
    </Box>
  );
});

/**
 * Editor of the SLO profiles (jsonData.sloProfiles): each profile is a named
 * set of latency or error-ratio objectives. Fields are checked as typed with
 * the backend's rules (sloModel.objectiveErrors).
 */
export function SLOProfilesEditor({ options, onOptionsChange }: Props) {
  const profiles = profilesOf(options);
  const targetKey = JSON.stringify((options.jsonData.targets ?? []).map((t) => t.name));
  const targetNames = useMemo(() => JSON.parse(targetKey) as string[], [targetKey]);
  const update = useUpdate(options, onOptionsChange);
  const usingDefaults = options.jsonData.sloProfiles === undefined;
  const modelNames = useSavedList(options, 'models');
  return (
    <ConfigSection title="SLO profiles">
      <Text color="secondary" variant="bodySmall">
        {usingDefaults
          ? 'The default profiles apply until you edit them: interactive chat, code completion and batch analysis (TTFT and ITL at p99 over 30 days).'
          : 'Objectives are checked with the same rules as Save & test.'}
      </Text>
      <Stack direction="column" gap={1}>
        {profiles.map((p, pi) => {
          const perr = profileError(p, profiles);
          return (
            <Box key={pi} borderColor="medium" borderStyle="solid" padding={1}>
              <Stack gap={0.5} wrap="wrap">
                <InlineField label="Profile" labelWidth={LW} invalid={Boolean(perr)} error={perr}>
                  <Input
                    id={`slo-profile-${pi}`}
                    aria-label={`Profile ${pi + 1} name`}
                    width={24}
                    value={p.name}
                    onChange={(e) => onOptionsChange(renameProfile(options, pi, e.currentTarget.value))}
                  />
                </InlineField>
                <Button
                  variant="secondary"
                  fill="outline"
                  size="sm"
                  icon="trash-alt"
                  aria-label={`Remove profile ${p.name}`}
                  onClick={() => onOptionsChange(removeProfile(options, pi))}
                >
                  Remove profile
                </Button>
              </Stack>
              {p.objectives.map((o, oi) => (
                <ObjectiveRow
                  key={oi}
                  pi={pi}
                  oi={oi}
                  obj={o}
                  siblings={p.objectives}
                  targetNames={targetNames}
                  modelNames={modelNames}
                  update={update}
                />
              ))}
              <Button
                icon="plus"
                variant="secondary"
                size="sm"
                onClick={() => onOptionsChange(addObjective(options, pi))}
              >
                Add objective
              </Button>
            </Box>
          );
        })}
        <Stack gap={0.5}>
          <Button icon="plus" variant="secondary" onClick={() => onOptionsChange(addProfile(options))}>
            Add SLO profile
          </Button>
          {!usingDefaults && (
            <Button variant="secondary" fill="text" onClick={() => onOptionsChange(resetProfiles(options))}>
              Restore default profiles
            </Button>
          )}
        </Stack>
      </Stack>
    </ConfigSection>
  );
}
