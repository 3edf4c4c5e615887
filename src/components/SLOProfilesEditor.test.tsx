import React, { useState } from 'react';
import { fireEvent, render, screen } from '@testing-library/react';

import { Settings } from '../configModel';
import { SLOProfilesEditor } from './SLOProfilesEditor';

function setup(jsonData: Settings['jsonData']) {
  const changes: Settings[] = [];
  const initial = { jsonData, secureJsonFields: {}, secureJsonData: {} } as unknown as Settings;
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <SLOProfilesEditor
        options={options}
        onOptionsChange={(o) => {
          changes.push(o);
          setOptions(o);
        }}
      />
    );
  }
  render(<Harness />);
  return { last: () => changes[changes.length - 1] };
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
