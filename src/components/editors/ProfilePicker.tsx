import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField } from '@grafana/ui';

import { profileNames } from '../../sloModel';
import { DEFAULT_SLO_PROFILES, ProfileConfig } from '../../types';
import { MultiPicker, Single } from './common';

const LW = 14;

interface Props {
  profiles: ProfileConfig[] | undefined;
  profile: string | undefined;
  /** Allow "all profiles" (slo, burn_rate); goodput needs one profile. */
  allowAll: boolean;
  /** Label of the empty choice when allowAll (default "all profiles"). */
  emptyLabel?: string;
  tooltip?: string;
  onChange: (profile: string | undefined) => void;
}

/** Picks an SLO profile of the data source (its settings, or the default profiles). */
export function ProfilePicker({ profiles, profile, allowAll, emptyLabel, tooltip, onChange }: Props) {
  const names = profileNames(profiles);
  const options: Array<SelectableValue<string>> = [
    ...(allowAll ? [{ label: emptyLabel ?? 'all profiles', value: '' }] : []),
    ...names.map((n) => ({ label: n, value: n })),
  ];
  if (profile && !names.includes(profile)) {
    options.push({ label: profile, value: profile });
  }
  const missing = !allowAll && !profile;
  return (
    <InlineField
      label="Profile"
      labelWidth={LW}
      tooltip={tooltip ?? 'SLO profile from the data-source settings'}
      invalid={missing}
      error={missing ? 'choose a profile' : undefined}
    >
      <Single
        id="inferscope-profile"
        width={28}
        options={options}
        value={profile ?? (allowAll ? '' : undefined)}
        placeholder="choose a profile"
        onChange={(v) => onChange(v ? v : undefined)}
      />
    </InlineField>
  );
}

interface ObjectivesProps {
  profiles: ProfileConfig[] | undefined;
  profile: string | undefined;
  value: string[] | undefined;
  onChange: (v: string[]) => void;
}

/** Picks objectives of the chosen profile (all profiles' when none is chosen); empty = all. */
export function ObjectivePicker({ profiles, profile, value, onChange }: ObjectivesProps) {
  const all = profiles ?? DEFAULT_SLO_PROFILES;
  const names = new Set<string>();
  for (const p of all) {
    if (!profile || p.name === profile) {
      p.objectives.forEach((o) => names.add(o.name));
    }
  }
  const options = [...names].map((n) => ({ label: n, value: n }));
  return (
    <InlineField label="Objectives" labelWidth={LW} tooltip="Objectives of the profile; empty means all">
      <MultiPicker
        id="inferscope-objectives"
        width={40}
        allowCustom={false}
        options={options}
        value={value}
        onChange={onChange}
      />
    </InlineField>
  );
}
