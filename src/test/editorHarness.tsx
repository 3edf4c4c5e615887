import React, { ComponentType, useState } from 'react';
import { act, render } from '@testing-library/react';

import { Settings } from '../configModel';
import { QueryEditor } from '../components/QueryEditor';
import type { DataSource } from '../datasource';
import { InferscopeQuery } from '../types';

/** A saved data source's settings as Grafana passes them to the settings page, with `patch` applied. */
export function baseSettings(patch: Partial<Settings> = {}): Settings {
  return {
    id: 1,
    uid: 'ds',
    orgId: 1,
    name: 'Inferscope',
    type: 'inferscope-llm-datasource',
    typeName: 'Inferscope LLM',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    readOnly: false,
    withCredentials: false,
    jsonData: {},
    secureJsonFields: {},
    secureJsonData: {},
    ...patch,
  } as Settings;
}

interface SettingsEditorProps {
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

/** Renders a settings editor holding the options as Grafana's settings page does; records every change. */
export function renderSettingsEditor(Editor: ComponentType<SettingsEditorProps>, initial: Settings) {
  const changes: Settings[] = [];
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <Editor
        options={options}
        onOptionsChange={(o) => {
          changes.push(o);
          setOptions(o);
        }}
      />
    );
  }
  render(<Harness />);
  return { changes, last: () => changes[changes.length - 1] };
}

/**
 * Renders the query editor holding the query as a panel does, records every change and lets
 * the resource lists (resolved promises) land.
 */
export async function renderQueryEditor(initial: InferscopeQuery, datasource: DataSource) {
  const changes: InferscopeQuery[] = [];
  const onRunQuery = jest.fn();
  function Harness() {
    const [query, setQuery] = useState(initial);
    return (
      <QueryEditor
        query={query}
        datasource={datasource}
        onRunQuery={onRunQuery}
        onChange={(q) => {
          changes.push(q);
          setQuery(q);
        }}
      />
    );
  }
  await act(async () => {
    render(<Harness />);
  });
  return { changes, last: () => changes[changes.length - 1], onRunQuery };
}
