import React from 'react';
import { DataSourceApi, QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField } from '@grafana/ui';

import { InferscopeOptions, InferscopeQuery, InferscopeVariableQuery, VariableKind } from '../types';
import { Single } from './editors/common';

/**
 * Typed on DataSourceApi, not on the DataSource class, so datasource.ts can
 * use this editor without an import circle.
 */
type Props = QueryEditorProps<
  DataSourceApi<InferscopeQuery, InferscopeOptions>,
  InferscopeQuery,
  InferscopeOptions,
  InferscopeVariableQuery
>;

const KIND_OPTIONS: Array<SelectableValue<VariableKind>> = [
  { label: 'Targets', value: 'targets', description: 'Configured target names (the job label)' },
  { label: 'Models', value: 'models', description: 'Model names seen on the targets' },
  { label: 'GPU agents', value: 'agents', description: 'Configured GPU agent names' },
  { label: 'GPUs', value: 'gpus', description: 'GPU indices reported by the agents' },
  { label: 'Signals', value: 'signals', description: 'Canonical signals available on the targets' },
  { label: 'SLO profiles', value: 'profiles', description: 'SLO profile names from the data source settings' },
];

/** Editor of a query variable: which list to read from the data source. */
export function VariableQueryEditor({ query, onChange }: Props) {
  const kind = query?.queryType ?? 'targets';
  return (
    <InlineField label="List" labelWidth={14} tooltip="Which list the variable takes its values from">
      <Single
        id="inferscope-variable-kind"
        ariaLabel="Variable list"
        width={30}
        options={KIND_OPTIONS}
        value={kind}
        onChange={(v) => onChange({ ...query, queryType: v })}
      />
    </InlineField>
  );
}
