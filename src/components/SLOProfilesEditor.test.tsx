import { fireEvent, screen, waitFor } from '@testing-library/react';

import { Settings } from '../configModel';
import { openMenu, optionLabels, pickOption, typeAndPick } from '../test/combobox';
import { renderSettingsEditor } from '../test/editorHarness';
import { SLOProfilesEditor } from './SLOProfilesEditor';

// GET /models of the saved data source: the model names stored in the last hour.
const get = jest.fn((url: string) =>
  Promise.resolve(url.endsWith('/resources/models') ? ['Qwen/Qwen3-0.6B', 'meta-llama/Llama-3.1-8B-Instruct'] : [])
);
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ get }),
}));

/** Renders the editor; `saved` gives it the uid and version of a saved data source. */
function setup(jsonData: Settings['jsonData'], saved = false) {
  const initial = {
    ...(saved ? { uid: 'ds1', version: 3 } : {}),
    jsonData,
    secureJsonFields: {},
    secureJsonData: {},
  } as unknown as Settings;
  return renderSettingsEditor(SLOProfilesEditor, initial);
}

describe('SLOProfilesEditor', () => {
  it('shows the default profiles and turns them into settings when edited', () => {
    const { last } = setup({});
    expect(screen.getByLabelText('Profile 1 name')).toHaveValue('interactive-chat');
    expect(screen.getByLabelText('Profile 3 name')).toHaveValue('batch-analysis');
    expect(screen.getByText(/default profiles apply/)).toBeInTheDocument();
    fireEvent.change(screen.getAllByLabelText('Threshold (s)')[0], { target: { value: '2.5' } });
    expect(last().jsonData.sloProfiles?.[0].objectives[0]).toMatchObject({
      signal: 'ttft',
      threshold: 2.5,
      target: 0.99,
    });
    expect(last().jsonData.sloProfiles).toHaveLength(4);
  });

  it('offers the error-ratio options on error_ratio objectives only', () => {
    const { last } = setup({});
    // The service profile's third objective is the error ratio: one switch of each kind in the form.
    expect(screen.getAllByLabelText(/include 4xx/)).toHaveLength(1);
    fireEvent.click(screen.getByLabelText('Objective 3 include 4xx'));
    expect(last().jsonData.sloProfiles?.[3].objectives[2]).toMatchObject({ kind: 'error_ratio', include4xx: true });
    expect(last().jsonData.sloProfiles?.[3].objectives[3]).toEqual({
      name: 'availability',
      kind: 'availability',
      target: 0.999,
      period: '30d',
    });
  });

  it('validates fields inline with the backend rules', () => {
    setup({ sloProfiles: [{ name: 'p', objectives: [{ name: 'e2e', signal: 'e2e', threshold: 2, target: 0.99 }] }] });
    fireEvent.change(screen.getByLabelText('Threshold (s)'), { target: { value: '0' } });
    expect(screen.getByText('a positive number of seconds (0.5 for 500 ms)')).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('Target ratio'), { target: { value: '99' } });
    expect(screen.getByText('a ratio strictly between 0 and 1, such as 0.99')).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('Objective 1 period'), { target: { value: '1h' } });
    expect(screen.getByText('at least 3d, the longest burn-rate window')).toBeInTheDocument();
    fireEvent.change(screen.getByLabelText('Profile 1 name'), { target: { value: 'a b' } });
    expect(screen.getAllByText("1-63 letters, digits, '_', '.', ':' or '-'").length).toBeGreaterThan(0);
  });

  it('offers the configured targets for an objective and flags one that is not configured', () => {
    setup({
      targets: [{ name: 'vllm-a', url: 'http://a/metrics' }],
      sloProfiles: [
        { name: 'p', objectives: [{ name: 'e2e', signal: 'e2e', threshold: 2, target: 0.99, targets: ['nope'] }] },
      ],
    });
    expect(screen.getByText('"nope" is not a configured target')).toBeInTheDocument();
    expect(screen.getByLabelText('Objective 1 models')).toBeInTheDocument();
  });

  it('objective targets and models are pickers: configured targets, and the models GET /models lists or typed', async () => {
    const { last } = setup(
      {
        targets: [
          { name: 'vllm-a', url: 'http://a/metrics' },
          { name: 'vllm-b', url: 'http://b/metrics' },
        ],
        sloProfiles: [{ name: 'p', objectives: [{ name: 'e2e', signal: 'e2e', threshold: 2, target: 0.99 }] }],
      },
      true
    );
    await waitFor(() => expect(get).toHaveBeenCalledWith('/api/datasources/uid/ds1/resources/models'));
    await pickOption('Objective 1 targets', 'vllm-b');
    await openMenu('Objective 1 models');
    expect(optionLabels()).toEqual(['Qwen/Qwen3-0.6B', 'meta-llama/Llama-3.1-8B-Instruct']);
    await pickOption('Objective 1 models', 'meta-llama/Llama-3.1-8B-Instruct');
    await typeAndPick('Objective 1 models', 'mistral-7b');
    expect(last().jsonData.sloProfiles?.[0].objectives[0]).toEqual({
      name: 'e2e',
      signal: 'e2e',
      threshold: 2,
      target: 0.99,
      targets: ['vllm-b'],
      models: ['meta-llama/Llama-3.1-8B-Instruct', 'mistral-7b'],
    });
  });

  it('adds and removes profiles and objectives', () => {
    const { last } = setup({ sloProfiles: [] });
    fireEvent.click(screen.getByRole('button', { name: 'Add SLO profile' }));
    expect(last().jsonData.sloProfiles).toEqual([
      {
        name: 'profile-1',
        objectives: [{ name: 'ttft-p99', kind: 'latency', signal: 'ttft', threshold: 1, target: 0.99, period: '30d' }],
      },
    ]);
    fireEvent.click(screen.getByRole('button', { name: 'Add objective' }));
    expect(last().jsonData.sloProfiles?.[0].objectives).toHaveLength(2);
    fireEvent.click(screen.getByRole('button', { name: 'Remove objective ttft-p99' }));
    expect(last().jsonData.sloProfiles?.[0].objectives.map((o) => o.name)).toEqual(['objective-1']);
    fireEvent.click(screen.getByRole('button', { name: 'Restore default profiles' }));
    expect(last().jsonData.sloProfiles).toBeUndefined();
  });
});
