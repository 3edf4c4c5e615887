import React, { ComponentType, useState } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, Input, RadioButtonGroup, Stack } from '@grafana/ui';

import type { DataSource } from '../datasource';
import { switchQueryType } from '../queryModel';
import { QueryTypeEditorProps, SharedControls } from '../queryTypes/definition';
import { DEFAULT_QUERY_TYPE, QUERY_TYPE_LIST, queryTypeDefinition } from '../queryTypes/registry';
import { GROUP_BY, GroupBy, InferscopeOptions, InferscopeQuery, QueryOf, QueryType } from '../types';
import { LW, Multi, Single, withField } from './editors/common';
import { useResourceOptions } from './useResourceOptions';

type Props = QueryEditorProps<DataSource, InferscopeQuery, InferscopeOptions>;

/** Query types in words (the registry's labels), each with what it returns. */
const TYPE_OPTIONS: Array<SelectableValue<QueryType>> = QUERY_TYPE_LIST.map((d) => ({
  label: d.label,
  value: d.id,
  description: d.description,
}));

const GROUP_OPTIONS: Array<SelectableValue<GroupBy>> = GROUP_BY.map((g) => ({ label: g, value: g }));

/**
 * Query editor of every Inferscope query type: the type picker and the
 * common controls (targets, models, group by, window: which of them a type
 * shows is its registry entry's `shared`), then the type's own editor from
 * the registry (src/queryTypes/). The fields each type accepts are in
 * src/generated/queryschema.json.
 */
export function QueryEditor({ query, onChange, onRunQuery, datasource }: Props) {
  const type = (query.queryType as QueryType) ?? DEFAULT_QUERY_TYPE;
  const def = queryTypeDefinition(type);
  const uses: SharedControls = (def ?? queryTypeDefinition(DEFAULT_QUERY_TYPE))!.shared;
  const targets = useResourceOptions(datasource, 'targets', uses.targets);
  const models = useResourceOptions(datasource, 'models', uses.models);
  const [windowText, setWindowText] = useState(query.window ?? '');
  // The entry's editor reads the query as one of its type: the saved JSON holds that type's
  // fields (switchQueryType drops the others'), which is what the registry entry promises.
  const TypeEditor = def?.editor as ComponentType<QueryTypeEditorProps> | undefined;

  const change = (next: InferscopeQuery, run = true) => {
    onChange(next);
    if (run) {
      onRunQuery();
    }
  };

  const set = <K extends keyof InferscopeQuery>(key: K, v: InferscopeQuery[K]) => change(withField(query, key, v));

  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={0.5} wrap="wrap">
        <InlineField label="Query type" labelWidth={LW} tooltip={def ? `${def.label}: ${def.description}` : undefined}>
          <Single
            id="inferscope-query-type"
            width={28}
            options={TYPE_OPTIONS}
            value={type}
            onChange={(v) => v !== type && change(switchQueryType(query, v))}
          />
        </InlineField>
        {uses.groupBy && (
          <InlineField
            label="Group by"
            labelWidth={LW}
            tooltip="Split series by target (job), model or engine (data-parallel rank)"
          >
            <RadioButtonGroup
              aria-label="Group by"
              options={GROUP_OPTIONS}
              value={query.groupBy ?? 'none'}
              onChange={(v) => set('groupBy', v)}
            />
          </InlineField>
        )}
        {uses.window && (
          <InlineField
            label="Window"
            labelWidth={LW}
            tooltip="Rate window, e.g. 1m or 5m. Empty: max(interval, 4 × scrape interval)"
          >
            <Input
              id="inferscope-window"
              aria-label="Window"
              width={12}
              placeholder="auto"
              value={windowText}
              onChange={(e) => setWindowText(e.currentTarget.value)}
              onBlur={() => windowText.trim() !== (query.window ?? '') && set('window', windowText.trim())}
            />
          </InlineField>
        )}
      </Stack>

      <Stack gap={0.5} wrap="wrap">
        {uses.targets && (
          <Multi
            label="Targets"
            id="inferscope-targets"
            tooltip="Configured target names; empty means all targets"
            value={query.targets}
            {...targets}
            onChange={(v) => set('targets', v)}
          />
        )}
        {uses.models && (
          <Multi
            label="Models"
            id="inferscope-models"
            tooltip="Model names (model_name label); empty means all models"
            value={query.models}
            {...models}
            onChange={(v) => set('models', v)}
          />
        )}
      </Stack>

      {TypeEditor && (
        <TypeEditor
          query={query as QueryOf<QueryType>}
          datasource={datasource}
          profiles={datasource?.sloProfiles}
          onChange={change}
        />
      )}
    </Stack>
  );
}
