import React, { useState } from 'react';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';

import type { DataSource } from '../datasource';
import { InferscopeQuery } from '../types';
import { QueryEditor } from './QueryEditor';

const LISTS: Record<string, Array<{ text: string; value: string }>> = {
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

function fakeDatasource() {
  return { listResource: jest.fn((kind: string) => Promise.resolve(LISTS[kind] ?? [])) } as unknown as DataSource & {
    listResource: jest.Mock;
  };
}

/** Renders the editor and lets the resource lists (resolved promises) land. */
async function setup(initial: InferscopeQuery) {
  const changes: InferscopeQuery[] = [];
  const onRunQuery = jest.fn();
  const datasource = fakeDatasource();
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
  return { changes, last: () => changes[changes.length - 1], onRunQuery, datasource };
}

/** Opens a Grafana Select / MultiSelect by its accessible name and clicks an option. */
async function pick(selectLabel: string, optionText: string) {
  const input = screen.getByLabelText(selectLabel);
  fireEvent.keyDown(input, { key: 'ArrowDown' });
  const option = await screen.findByText(optionText, { selector: 'span' });
  await act(async () => {
    fireEvent.click(option);
  });
}

const latency: InferscopeQuery = {
  refId: 'A',
  queryType: 'latency',
  stages: ['ttft', 'e2e'],
  stats: ['p50', 'p99'],
  estimator: 'prometheus',
  bounds: true,
  targets: ['vllm-a'],
};

describe('QueryEditor', () => {
  it('switches query type, keeping shared fields and dropping latency-only ones', async () => {
    const { last, onRunQuery } = await setup(latency);
    await pick('Query type', 'Stage breakdown');
    expect(last()).toEqual({ refId: 'A', queryType: 'breakdown', targets: ['vllm-a'], format: 'timeseries' });
    expect(onRunQuery).toHaveBeenCalled();
    fireEvent.click(screen.getByLabelText('table'));
    expect(last()).toEqual({ refId: 'A', queryType: 'breakdown', targets: ['vllm-a'], format: 'table' });
  });

  it('switching to gpu shows agents, GPUs and signals from the resources', async () => {
    const { last, datasource } = await setup(latency);
    await pick('Query type', 'GPU');
    expect(last()).toEqual({
      refId: 'A',
      queryType: 'gpu',
      targets: ['vllm-a'],
      signals: ['gpu_util', 'fb_used', 'power', 'saturation'],
    });
    await waitFor(() => expect(datasource.listResource).toHaveBeenCalledWith('agents'));
    await pick('Agents', 'node-a');
    await pick('GPUs', '1');
    expect(last()).toMatchObject({ agents: ['node-a'], gpus: ['1'] });
    expect(screen.queryByLabelText('Stages')).not.toBeInTheDocument();
  });

  it('switching to events keeps the targets, drops latency fields and shows what the table holds', async () => {
    const { last } = await setup(latency);
    await pick('Query type', 'Events');
    expect(last()).toEqual({ refId: 'A', queryType: 'events', targets: ['vllm-a'] });
    expect(screen.getByText(/Use it as a dashboard annotation/)).toBeInTheDocument();
    expect(screen.queryByLabelText('Stages')).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Group by')).not.toBeInTheDocument();
  });

  it('adds a stage and picks the refined estimator', async () => {
    const { last } = await setup(latency);
    await pick('Stages', 'itl');
    expect(last().stages).toEqual(['ttft', 'e2e', 'itl']);
    fireEvent.click(screen.getByLabelText('refined'));
    expect(last()).toEqual({ ...latency, stages: ['ttft', 'e2e', 'itl'], estimator: 'refined' });
  });

  it('turns bounds off', async () => {
    const { last } = await setup(latency);
    fireEvent.click(screen.getByLabelText('Bounds'));
    expect(last().bounds).toBe(false);
  });

  it('accepts a custom quantile such as p99.9 and rejects nonsense', async () => {
    const { last, changes } = await setup(latency);
    const input = screen.getByLabelText('Stats');
    fireEvent.change(input, { target: { value: 'p99.9' } });
    fireEvent.keyDown(input, { key: 'Enter' });
    await waitFor(() => expect(last().stats).toEqual(['p50', 'p99', 'p99.9']));
    const before = changes.length;
    fireEvent.change(input, { target: { value: 'p150' } });
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(await screen.findByText('"p150" is not mean or a quantile such as p99.9')).toBeInTheDocument();
    expect(changes.length).toBe(before);
  });

  it('offers targets from GET /targets and group-by choices', async () => {
    const { last, datasource } = await setup({ refId: 'A', queryType: 'throughput' });
    await waitFor(() => expect(datasource.listResource).toHaveBeenCalledWith('targets'));
    await pick('Targets', 'vllm-b');
    expect(last()).toEqual({ refId: 'A', queryType: 'throughput', targets: ['vllm-b'] });
    fireEvent.click(screen.getByLabelText('model'));
    expect(last().groupBy).toBe('model');
    fireEvent.change(screen.getByLabelText('Window'), { target: { value: '5m' } });
    fireEvent.blur(screen.getByLabelText('Window'));
    expect(last().window).toBe('5m');
  });

  it('builds a raw query from metric name and matchers', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'raw', metric: '', matchers: {} });
    fireEvent.change(screen.getByLabelText('Metric'), { target: { value: 'vllm:num_requests_running' } });
    fireEvent.blur(screen.getByLabelText('Metric'));
    fireEvent.click(screen.getByRole('button', { name: 'Add matcher' }));
    fireEvent.change(screen.getByLabelText('Matcher 1 key'), { target: { value: 'model_name' } });
    fireEvent.change(screen.getByLabelText('Matcher 1 value'), { target: { value: 'llama-3-8b' } });
    expect(last()).toEqual({
      refId: 'A',
      queryType: 'raw',
      metric: 'vllm:num_requests_running',
      matchers: { model_name: 'llama-3-8b' },
    });
  });
});
