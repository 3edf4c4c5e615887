import { act, fireEvent, screen } from '@testing-library/react';

import type { DataSource } from '../../datasource';
import { optionLabels, pickOption } from '../../test/combobox';
import { renderQueryEditor } from '../../test/editorHarness';
import { InferscopeQuery, ProfileConfig } from '../../types';
import { parseThresholds } from './BucketsEditor';

const PROFILES: ProfileConfig[] = [
  {
    name: 'chat',
    objectives: [
      { name: 'ttft-300ms', signal: 'ttft', threshold: 0.3, target: 0.9 },
      { name: 'e2e-2s', signal: 'e2e', threshold: 2, target: 0.5 },
    ],
  },
  { name: 'batch', objectives: [{ name: 'errors', kind: 'error_ratio', target: 0.99 }] },
];

function fakeDatasource(sloProfiles?: ProfileConfig[]) {
  return { listResource: jest.fn(() => Promise.resolve([])), sloProfiles } as unknown as DataSource;
}

async function setup(initial: InferscopeQuery, sloProfiles?: ProfileConfig[]) {
  return renderQueryEditor(initial, fakeDatasource(sloProfiles));
}

describe('SLO query editors', () => {
  it('burn_rate: "Status only" sends format status (what an alert rule asks for), and back', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'burn_rate', profile: 'chat' }, PROFILES);
    await act(async () => {
      fireEvent.click(screen.getByLabelText('Status only'));
    });
    expect(last()).toMatchObject({ queryType: 'burn_rate', profile: 'chat', format: 'status' });
    await act(async () => {
      fireEvent.click(screen.getByLabelText('Burn rates and status'));
    });
    expect(last().format).toBeUndefined();
  });

  it('targets: the telemetry format is one click away', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'targets' }, PROFILES);
    await act(async () => {
      fireEvent.click(screen.getByLabelText('Telemetry'));
    });
    expect(last()).toMatchObject({ queryType: 'targets', format: 'telemetry' });
  });

  it('slo: picks a profile of the settings and one of its objectives', async () => {
    const { last, onRunQuery } = await setup({ refId: 'A', queryType: 'slo' }, PROFILES);
    await pickOption('Profile', 'chat');
    expect(last()).toEqual({ refId: 'A', queryType: 'slo', profile: 'chat' });
    await pickOption('Objectives', 'e2e-2s');
    expect(last()).toEqual({ refId: 'A', queryType: 'slo', profile: 'chat', objectives: ['e2e-2s'] });
    expect(onRunQuery).toHaveBeenCalled();
    // Objectives of other profiles are not offered once a profile is chosen.
    // (A multi-value menu stays open after a pick.)
    expect(optionLabels()).toEqual(['ttft-300ms', 'e2e-2s']);
  });

  it('switching to burn_rate keeps the profile and objectives', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'slo', profile: 'chat', objectives: ['e2e-2s'] }, PROFILES);
    await pickOption('Query type', 'Burn rate');
    expect(last()).toEqual({ refId: 'A', queryType: 'burn_rate', profile: 'chat', objectives: ['e2e-2s'] });
    expect(screen.getByText(/status ≥ 2/)).toBeInTheDocument();
  });

  it('goodput asks for a profile and offers the default ones when none are configured', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'goodput' });
    expect(screen.getByText('choose a profile')).toBeInTheDocument();
    await pickOption('Profile', 'code-completion');
    expect(last()).toEqual({ refId: 'A', queryType: 'goodput', profile: 'code-completion' });
    expect(screen.queryByText('choose a profile')).not.toBeInTheDocument();
  });

  it('buckets: thresholds in seconds, checked as typed', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'buckets', stats: ['p99'] });
    const input = screen.getByLabelText('Thresholds');
    fireEvent.change(input, { target: { value: '0.3, 2' } });
    fireEvent.blur(input);
    expect(last()).toEqual({ refId: 'A', queryType: 'buckets', stats: ['p99'], thresholds: [0.3, 2] });
    fireEvent.change(input, { target: { value: '0.3, soon' } });
    fireEvent.blur(input);
    expect(await screen.findByText('"soon" is not a positive number of seconds')).toBeInTheDocument();
    expect(parseThresholds('1, 1, 0.5')).toEqual({ values: [1, 0.5] });
    expect(parseThresholds('-1').error).toBeDefined();
  });

  it('latency: a profile draws its thresholds', async () => {
    const { last } = await setup({ refId: 'A', queryType: 'latency', stages: ['ttft'], stats: ['p99'] }, PROFILES);
    await pickOption('Profile', 'chat');
    expect(last().profile).toBe('chat');
  });
});
