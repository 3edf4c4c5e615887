import { act, fireEvent, screen, waitFor } from '@testing-library/react';

import type { DataSource } from '../datasource';
import { findOption, openMenu, optionLabels, pickOption, typeAndPick } from '../test/combobox';
import { renderQueryEditor } from '../test/editorHarness';
import { InferscopeQuery } from '../types';

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

/** Stored metric names per target, as GET /metricnames answers. */
const METRIC_NAMES: Record<string, string[]> = {
  'vllm-a': ['vllm:num_requests_running', 'vllm:time_to_first_token_seconds_bucket'],
  'vllm-b': ['vllm:gpu_cache_usage_perc', 'vllm:num_requests_running'],
};

function fakeDatasource() {
  return {
    listResource: jest.fn((kind: string) => Promise.resolve(LISTS[kind] ?? [])),
    metricNames: jest.fn((targets: string[]) =>
      Promise.resolve(
        [...new Set((targets.length ? targets : Object.keys(METRIC_NAMES)).flatMap((t) => METRIC_NAMES[t]))].sort()
      )
    ),
  } as unknown as DataSource & { listResource: jest.Mock; metricNames: jest.Mock };
}

/** Renders the editor and lets the resource lists (resolved promises) land. */
async function setup(initial: InferscopeQuery) {
  const datasource = fakeDatasource();
  return { ...(await renderQueryEditor(initial, datasource)), datasource };
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
    await pickOption('Query type', 'Stage breakdown');
    expect(last()).toEqual({ refId: 'A', queryType: 'breakdown', targets: ['vllm-a'], format: 'timeseries' });
    expect(onRunQuery).toHaveBeenCalled();
    fireEvent.click(screen.getByLabelText('table'));
    expect(last()).toEqual({ refId: 'A', queryType: 'breakdown', targets: ['vllm-a'], format: 'table' });
  });

  it('switching to gpu shows agents, GPUs and signals from the resources', async () => {
    const { last, datasource } = await setup(latency);
    await pickOption('Query type', 'GPU');
    expect(last()).toEqual({
      refId: 'A',
      queryType: 'gpu',
      targets: ['vllm-a'],
      signals: ['gpu_util', 'fb_used', 'power', 'saturation'],
    });
    await waitFor(() => expect(datasource.listResource).toHaveBeenCalledWith('agents'));
    await pickOption('Agents', 'node-a');
    await pickOption('GPUs', '1');
    expect(last()).toMatchObject({ agents: ['node-a'], gpus: ['1'] });
    expect(screen.queryByLabelText('Stages')).not.toBeInTheDocument();
  });

  it('switching to events keeps the targets, drops latency fields and shows what the table holds', async () => {
    const { last } = await setup(latency);
    await pickOption('Query type', 'Events');
    expect(last()).toEqual({ refId: 'A', queryType: 'events', targets: ['vllm-a'] });
    expect(screen.getByText(/Use it as a dashboard annotation/)).toBeInTheDocument();
    expect(screen.queryByLabelText('Stages')).not.toBeInTheDocument();
    expect(screen.queryByLabelText('Group by')).not.toBeInTheDocument();
  });

  it('adds a stage and picks the refined estimator', async () => {
    const { last } = await setup(latency);
    await pickOption('Stages', 'itl');
    expect(last().stages).toEqual(['ttft', 'e2e', 'itl']);
    fireEvent.click(screen.getByLabelText('refined'));
    expect(last()).toEqual({ ...latency, stages: ['ttft', 'e2e', 'itl'], estimator: 'refined' });
  });

  it('turns bounds off', async () => {
    const { last } = await setup(latency);
    fireEvent.click(screen.getByRole('switch', { name: 'Bounds' }));
    expect(last().bounds).toBe(false);
  });

  it('accepts a custom quantile such as p99.9 and rejects nonsense', async () => {
    const { last, changes } = await setup(latency);
    await typeAndPick('Stats', 'p99.9');
    expect(last().stats).toEqual(['p50', 'p99', 'p99.9']);
    const before = changes.length;
    await typeAndPick('Stats', 'p150');
    expect(await screen.findByText('"p150" is not mean or a quantile such as p99.9')).toBeInTheDocument();
    expect(changes.length).toBe(before);
  });

  it('offers targets from GET /targets and group-by choices', async () => {
    const { last, datasource } = await setup({ refId: 'A', queryType: 'throughput' });
    await waitFor(() => expect(datasource.listResource).toHaveBeenCalledWith('targets'));
    await pickOption('Targets', 'vllm-b');
    expect(last()).toEqual({ refId: 'A', queryType: 'throughput', targets: ['vllm-b'] });
    fireEvent.click(screen.getByLabelText('model'));
    expect(last().groupBy).toBe('model');
    fireEvent.change(screen.getByLabelText('Window'), { target: { value: '5m' } });
    fireEvent.blur(screen.getByLabelText('Window'));
    expect(last().window).toBe('5m');
  });

  it('raw: offers the metric names stored for the chosen targets, and accepts a typed one', async () => {
    const { last, datasource } = await setup({ refId: 'A', queryType: 'raw', metric: '', targets: ['vllm-b'] });
    await waitFor(() => expect(datasource.metricNames).toHaveBeenLastCalledWith(['vllm-b']));
    await openMenu('Metric');
    expect(optionLabels()).toEqual(['vllm:gpu_cache_usage_perc', 'vllm:num_requests_running']);
    await act(async () => {
      fireEvent.click(await findOption('vllm:gpu_cache_usage_perc'));
    });
    expect(last()).toEqual({ refId: 'A', queryType: 'raw', metric: 'vllm:gpu_cache_usage_perc', targets: ['vllm-b'] });
    // Another target: the names are read again for both.
    await pickOption('Targets', 'vllm-a');
    await waitFor(() => expect(datasource.metricNames).toHaveBeenLastCalledWith(['vllm-b', 'vllm-a']));
    await typeAndPick('Metric', 'my_own_gauge');
    expect(last().metric).toBe('my_own_gauge');
  });

  it('builds a raw query from metric name and matchers', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'raw', metric: '', matchers: {} });
    await pickOption('Metric', 'vllm:num_requests_running');
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
