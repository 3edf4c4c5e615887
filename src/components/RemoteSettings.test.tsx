import { fireEvent, screen } from '@testing-library/react';

import { Settings } from '../configModel';
import { baseSettings, renderSettingsEditor } from '../test/editorHarness';
import { ConfigEditor } from './ConfigEditor';
import { addDiscoveredGroup, addDiscoveredTarget, labelList, selectorError, suggestName } from './RemoteSettings';

const baseOptions = baseSettings;

function setup(initial: Settings) {
  return renderSettingsEditor(ConfigEditor, initial);
}

describe('remote mode settings', () => {
  it('switches to remote mode and edits the server URL, timeout and a target selector', () => {
    const { last } = setup(baseOptions({ jsonData: { targets: [{ name: 'vllm-a', url: '' }] } }));
    expect(screen.queryByLabelText('Target 1 selector')).toBeNull();
    fireEvent.click(screen.getByLabelText('Remote Prometheus'));
    expect(last().jsonData.mode).toBe('remote');

    fireEvent.change(screen.getByPlaceholderText('http://prometheus:9090'), {
      target: { value: 'http://prometheus:9090' },
    });
    fireEvent.blur(screen.getByPlaceholderText('http://prometheus:9090'));
    expect(last().url).toBe('http://prometheus:9090');

    fireEvent.change(screen.getByLabelText('Remote timeout'), { target: { value: '45s' } });
    expect(last().jsonData.remoteTimeout).toBe('45s');

    fireEvent.change(screen.getByLabelText('Target 1 selector'), {
      target: { value: '{job="vllm", instance="10.0.0.5:8000"}' },
    });
    expect(last().jsonData.targets?.[0].selector).toBe('{job="vllm", instance="10.0.0.5:8000"}');
    // Scrape limits do not apply: the server scrapes.
    expect(screen.queryByLabelText('Sample limit')).toBeNull();
    expect(screen.getByLabelText('Scrape interval')).toBeInTheDocument();
  });

  it('shows a saved bearer token as configured, resets it and stores a new one only in secureJsonData', () => {
    const { last } = setup(
      baseOptions({ jsonData: { mode: 'remote' }, secureJsonFields: { remoteBearerToken: true } })
    );
    expect(screen.getByLabelText('Remote bearer token')).toBeDisabled();
    fireEvent.click(screen.getByRole('button', { name: 'Reset' }));
    expect(last().secureJsonFields.remoteBearerToken).toBe(false);
    fireEvent.change(screen.getByLabelText('Remote bearer token'), { target: { value: 's3cret' } });
    expect(last().secureJsonData?.remoteBearerToken).toBe('s3cret');
    expect(JSON.stringify(last().jsonData)).not.toContain('s3cret');
  });
});

describe('target groups', () => {
  it('adds, edits and removes a target group', () => {
    const { last } = setup(baseOptions({ jsonData: { mode: 'remote' } }));
    fireEvent.click(screen.getByRole('button', { name: 'Add target group' }));
    expect(last().jsonData.targetGroups).toEqual([{ name: '', selector: '', targetLabels: ['namespace', 'pod'] }]);
    fireEvent.change(screen.getByLabelText('Target group 1 name'), { target: { value: 'chat' } });
    fireEvent.change(screen.getByLabelText('Target group 1 selector'), {
      target: { value: '{namespace="llm", job="vllm"}' },
    });
    fireEvent.change(screen.getByLabelText('Target group 1 group labels'), {
      target: { value: 'deployment, service' },
    });
    fireEvent.change(screen.getByLabelText('Target group 1 max targets'), { target: { value: '250' } });
    expect(last().jsonData.targetGroups?.[0]).toEqual({
      name: 'chat',
      selector: '{namespace="llm", job="vllm"}',
      targetLabels: ['namespace', 'pod'],
      groupLabels: ['deployment', 'service'],
      maxTargets: 250,
    });
    fireEvent.change(screen.getByLabelText('Target group 1 selector'), { target: { value: '{__name__="up"}' } });
    expect(screen.getByText('a target selector picks series by labels only, not by metric name')).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Remove target group 1' }));
    expect(last().jsonData.targetGroups).toEqual([]);
  });

  it('adds a discovered job as a group under a name no target, agent or group uses', () => {
    let o = baseOptions({ jsonData: { mode: 'remote', targets: [{ name: 'vllm', url: '' }] } });
    o = addDiscoveredGroup(o, { name: 'vllm', selector: '{job="vllm"}', targetLabels: ['namespace', 'pod'] });
    o = addDiscoveredGroup(o, { name: 'vllm', selector: '{job="vllm"}', targetLabels: ['instance'] });
    expect(o.jsonData.targetGroups).toEqual([
      { name: 'vllm-2', selector: '{job="vllm"}', targetLabels: ['namespace', 'pod'] },
      { name: 'vllm-3', selector: '{job="vllm"}', targetLabels: ['instance'] },
    ]);
    expect(labelList(' namespace, pod  node ')).toEqual(['namespace', 'pod', 'node']);
  });
});

describe('remote helpers', () => {
  it('flags selectors the backend refuses', () => {
    expect(selectorError('')).toBeUndefined();
    expect(selectorError('{job="vllm"}')).toBeUndefined();
    expect(selectorError('job="vllm"')).toMatch('label selector');
    expect(selectorError('{__name__="up"}')).toMatch('not by metric name');
  });

  it('names discovered targets within the backend name rule and uniquely', () => {
    expect(suggestName('vllm', '10.0.0.5:8000')).toBe('vllm-10.0.0.5:8000');
    expect(suggestName('kubernetes-pods/llm', 'a b')).toBe('kubernetes-pods-llm-a-b');
    let o = baseOptions({ jsonData: { targets: [{ name: 'vllm', url: '' }] } });
    o = addDiscoveredTarget(o, 'vllm', '{job="vllm"}');
    expect(o.jsonData.targets?.[1]).toEqual({ name: 'vllm-2', url: '', selector: '{job="vllm"}' });
  });
});
