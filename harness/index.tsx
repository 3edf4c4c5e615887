// Browser harness: mounts the real ConfigEditor and QueryEditor (real
// @grafana/ui, no Grafana) and shows the JSON they produce, for drive.js.
import React, { useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { GlobalStyles } from '@grafana/ui';

import { ConfigEditor } from '../src/components/ConfigEditor';
import { QueryEditor } from '../src/components/QueryEditor';
import type { Settings } from '../src/configModel';
import type { DataSource } from '../src/datasource';
import { DEFAULT_QUERY } from '../src/queryTypes/registry';
import { InferscopeQuery } from '../src/types';

const lists: Record<string, Array<{ text: string; value: string }>> = {
  targets: [
    { text: 'vllm-a', value: 'vllm-a' },
    { text: 'vllm-b', value: 'vllm-b' },
  ],
  models: [{ text: 'llama-3-8b', value: 'llama-3-8b' }],
  agents: [{ text: 'node-a', value: 'node-a' }],
  gpus: [
    { text: '0', value: '0' },
    { text: '1', value: '1' },
  ],
};

/** The query editor's data source sees the SLO profiles the config editor holds. */
function harnessDatasource(options: Settings): DataSource {
  return {
    listResource: (kind: string) => Promise.resolve(lists[kind] ?? []),
    metricNames: () => Promise.resolve(['vllm:gpu_cache_usage_perc', 'vllm:num_requests_running']),
    sloProfiles: options.jsonData.sloProfiles,
  } as unknown as DataSource;
}

const initialOptions = {
  id: 1,
  uid: 'harness',
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
} as unknown as Settings;

function App() {
  const [options, setOptions] = useState<Settings>(initialOptions);
  const [query, setQuery] = useState<InferscopeQuery>({ refId: 'A', ...DEFAULT_QUERY });
  const [runs, setRuns] = useState(0);
  const datasource = useMemo(() => harnessDatasource(options), [options]);
  return (
    <div style={{ display: 'flex', gap: 32, padding: 16 }}>
      {/* Grafana's own page styles (box-sizing: border-box and the rest), as in Grafana. */}
      <GlobalStyles />
      <div style={{ flex: 1 }}>
        <h2>ConfigEditor</h2>
        <ConfigEditor options={options} onOptionsChange={setOptions} />
        <pre id="config-state">
          {JSON.stringify({ url: options.url, jsonData: options.jsonData, secureJsonData: options.secureJsonData })}
        </pre>
      </div>
      <div style={{ flex: 1 }}>
        <h2>QueryEditor</h2>
        <QueryEditor
          query={query}
          datasource={datasource}
          onChange={setQuery}
          onRunQuery={() => setRuns((r) => r + 1)}
        />
        <pre id="query-state">{JSON.stringify(query)}</pre>
        <pre id="query-runs">{runs}</pre>
      </div>
    </div>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
