import React, { useState } from 'react';
import { getBackendSrv } from '@grafana/runtime';
import { Alert, Button, FieldSet, InlineField, Input, Stack, Text } from '@grafana/ui';

import { Settings } from '../configModel';
import { isSaved, resourceError } from './savedResource';

const LABEL_WIDTH = 22;

/** A baseline's name: its file name without .json (pkg/bench.NameRE). */
export const BASELINE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/** The name a file suggests: its base name without extension, with unusable characters replaced. */
export function baselineNameFromFile(file: string): string {
  const base = file.replace(/^.*[\\/]/, '').replace(/\.[^.]*$/, '');
  return base
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 100);
}

/** What POST /baselines answers (pkg/plugin resource_baselines.go). */
interface UploadResult {
  name: string;
  saved: boolean;
  read: Array<{ name: string; summary: string }>;
  note: string;
}

interface Props {
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

/**
 * Benchmark baselines: the directory of result files (jsonData.baselinesPath) and an upload
 * control that sends a vllm bench serve / GuideLLM / genai-perf result to the backend, which
 * validates it, says what it read, and saves it under the directory (after the data source is saved).
 */
export function BaselinesEditor({ options, onOptionsChange }: Props) {
  const [file, setFile] = useState<File | undefined>();
  const [name, setName] = useState('');
  const [state, setState] = useState<{ busy: boolean; error?: string; result?: UploadResult }>({ busy: false });
  const saved = isSaved(options);
  const nameOK = BASELINE_NAME_RE.test(name);
  const upload = async (overwrite: boolean) => {
    if (!file) {
      return;
    }
    setState({ busy: true });
    try {
      const body = await file.text();
      const q = `name=${encodeURIComponent(name)}${overwrite ? '&overwrite=true' : ''}`;
      const result = await getBackendSrv().post<UploadResult>(
        `/api/datasources/uid/${options.uid}/resources/baselines?${q}`,
        body,
        { headers: { 'Content-Type': 'application/json' } }
      );
      setState({ busy: false, result });
    } catch (e: unknown) {
      setState({ busy: false, error: resourceError(e) });
    }
  };
  return (
    <FieldSet label="Benchmark baselines">
      <Text color="secondary" element="p">
        Results of vllm bench serve --save-result, GuideLLM or genai-perf, compared with production by the benchmark
        query. Each file&apos;s name is the baseline&apos;s name.
      </Text>
      <InlineField
        label="Baselines directory"
        labelWidth={LABEL_WIDTH}
        tooltip="An absolute directory on the Grafana server"
      >
        <Input
          aria-label="Baselines directory"
          width={50}
          value={options.jsonData.baselinesPath ?? ''}
          placeholder="/var/lib/grafana/inferscope-baselines"
          onChange={(e) => {
            const v = e.currentTarget.value.trim();
            onOptionsChange({ ...options, jsonData: { ...options.jsonData, baselinesPath: v === '' ? undefined : v } });
          }}
        />
      </InlineField>
      <Stack direction="row" gap={1} alignItems="center">
        <input
          type="file"
          accept=".json,application/json"
          aria-label="Benchmark result file"
          onChange={(e) => {
            const f = e.currentTarget.files?.[0];
            setFile(f);
            if (f) {
              setName(baselineNameFromFile(f.name));
            }
            setState({ busy: false });
          }}
        />
        <Input
          aria-label="Baseline name"
          width={30}
          value={name}
          invalid={name !== '' && !nameOK}
          placeholder="baseline name"
          onChange={(e) => setName(e.currentTarget.value)}
        />
        <Button disabled={!file || !nameOK || !saved || state.busy} onClick={() => upload(false)}>
          {state.busy ? 'Uploading…' : 'Upload baseline'}
        </Button>
      </Stack>
      {!saved && <Text color="secondary">Save the data source before uploading.</Text>}
      {state.error && (
        <Alert severity="error" title="The file was not accepted">
          {state.error}
          {state.error.includes('overwrite') && (
            <div>
              <Button size="sm" variant="destructive" onClick={() => upload(true)}>
                Replace it
              </Button>
            </div>
          )}
        </Alert>
      )}
      {state.result && (
        <Alert severity={state.result.saved ? 'success' : 'info'} title={state.result.note}>
          {state.result.read.map((b) => (
            <div key={b.name}>{b.summary}</div>
          ))}
        </Alert>
      )}
    </FieldSet>
  );
}
