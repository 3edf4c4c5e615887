import { fireEvent, screen } from '@testing-library/react';

import { Settings } from '../configModel';
import { baseSettings, renderSettingsEditor } from '../test/editorHarness';
import { ConfigEditor } from './ConfigEditor';

const baseOptions = baseSettings;

/** Holds the options like Grafana's settings page does and records every change. */
function setup(initial: Settings) {
  return renderSettingsEditor(ConfigEditor, initial);
}

const type = (label: string, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });

describe('ConfigEditor targets', () => {
  it('adds targets, edits name and URL, and removes one', () => {
    const { last } = setup(baseOptions());
    fireEvent.click(screen.getByRole('button', { name: 'Add target' }));
    expect(last().jsonData.targets).toEqual([{ name: 'target-1', url: '' }]);

    type('Target 1 name', 'vllm-a');
    type('Target 1 URL', 'http://10.0.0.5:8000/metrics');
    fireEvent.click(screen.getByRole('button', { name: 'Add target' }));
    type('Target 2 name', 'sglang-b');
    type('Target 2 URL', 'http://10.0.0.6:30000/metrics');
    expect(last().jsonData.targets).toEqual([
      { name: 'vllm-a', url: 'http://10.0.0.5:8000/metrics' },
      { name: 'sglang-b', url: 'http://10.0.0.6:30000/metrics' },
    ]);

    fireEvent.click(screen.getByRole('button', { name: 'Remove target 1' }));
    expect(last().jsonData.targets).toEqual([{ name: 'sglang-b', url: 'http://10.0.0.6:30000/metrics' }]);
    expect(screen.getByLabelText('Target 1 name')).toHaveValue('sglang-b');
    expect(screen.queryByLabelText('Target 2 name')).not.toBeInTheDocument();
  });

  it('writes extra labels, basic auth user and TLS skip verify', () => {
    const { last } = setup(baseOptions({ jsonData: { targets: [{ name: 'vllm-a', url: 'http://a:8000/metrics' }] } }));
    fireEvent.click(screen.getByRole('button', { name: 'Add label' }));
    type('Target 1 label 1 key', 'cluster');
    type('Target 1 label 1 value', 'eu-1');
    // Only the chosen method's fields are shown.
    expect(screen.queryByLabelText('Target 1 basic auth user')).toBeNull();
    expect(screen.queryByLabelText('Target 1 bearer token')).toBeNull();
    fireEvent.click(screen.getByRole('radio', { name: 'Basic auth' }));
    expect(screen.queryByLabelText('Target 1 bearer token')).toBeNull();
    type('Target 1 basic auth user', 'scraper');
    fireEvent.click(screen.getByLabelText('Target 1 skip TLS verify'));
    expect(last().jsonData.targets).toEqual([
      {
        name: 'vllm-a',
        url: 'http://a:8000/metrics',
        labels: { cluster: 'eu-1' },
        basicAuthUser: 'scraper',
        tlsSkipVerify: true,
      },
    ]);
    fireEvent.click(screen.getByRole('button', { name: 'Remove target 1 label 1' }));
    expect(last().jsonData.targets?.[0].labels).toBeUndefined();
  });

  it('flags a duplicate name', () => {
    setup(
      baseOptions({
        jsonData: {
          targets: [
            { name: 'a', url: 'http://a/metrics' },
            { name: 'a', url: 'http://b/metrics' },
          ],
        },
      })
    );
    expect(screen.getAllByText(/"a" is used twice/)).toHaveLength(2);
  });
});

describe('ConfigEditor authentication picker', () => {
  it('opens on the saved method and clears the other method when switching', () => {
    const { last } = setup(
      baseOptions({
        jsonData: { targets: [{ name: 'vllm-a', url: 'http://a/metrics', basicAuthUser: 'u' }] },
        secureJsonFields: { 'vllm-a.basicAuthPassword': true },
      })
    );
    expect(screen.getByLabelText('Target 1 basic auth user')).toHaveValue('u');
    fireEvent.click(screen.getByRole('radio', { name: 'Bearer token' }));
    expect(screen.queryByLabelText('Target 1 basic auth user')).toBeNull();
    expect(last().jsonData.targets?.[0].basicAuthUser).toBeUndefined();
    expect(last().secureJsonFields).toEqual({ 'vllm-a.basicAuthPassword': false });
    type('Target 1 bearer token', 'tok');
    expect(last().secureJsonData).toEqual({ 'vllm-a.basicAuthPassword': '', 'vllm-a.bearerToken': 'tok' });
  });

  it('checks URLs and durations as typed, with the backend sentences', () => {
    setup(
      baseOptions({ jsonData: { targets: [{ name: 'vllm-a', url: 'ftp://not a url' }], scrapeInterval: '5 seconds' } })
    );
    expect(
      screen.getByText('targets[0].url: "ftp://not a url" is not an http(s) URL such as http://10.0.0.5:8000/metrics')
    ).toBeInTheDocument();
    expect(
      screen.getByText('scrapeInterval: "5 seconds" is not a positive duration such as 15s or 6h')
    ).toBeInTheDocument();
  });
});

describe('ConfigEditor secrets', () => {
  it('writes a bearer token under "<name>.bearerToken" and follows a rename', () => {
    const { last } = setup(baseOptions({ jsonData: { targets: [{ name: 'vllm-a', url: 'http://a/metrics' }] } }));
    fireEvent.click(screen.getByRole('radio', { name: 'Bearer token' }));
    type('Target 1 bearer token', 's3cret');
    expect(last().secureJsonData).toEqual({ 'vllm-a.bearerToken': 's3cret' });
    type('Target 1 name', 'vllm-b');
    expect(last().secureJsonData).toEqual({ 'vllm-b.bearerToken': 's3cret' });
    expect(last().jsonData.targets?.[0].name).toBe('vllm-b');
  });

  it('shows a saved secret as configured and resets it to empty', () => {
    const { last } = setup(
      baseOptions({
        jsonData: { targets: [{ name: 'vllm-a', url: 'http://a/metrics', basicAuthUser: 'u' }] },
        secureJsonFields: { 'vllm-a.basicAuthPassword': true },
      })
    );
    expect(screen.getByLabelText('Target 1 basic auth password')).toHaveValue('configured');
    fireEvent.click(screen.getAllByRole('button', { name: 'Reset' })[0]);
    expect(last().secureJsonFields).toEqual({ 'vllm-a.basicAuthPassword': false });
    expect(last().secureJsonData).toEqual({ 'vllm-a.basicAuthPassword': '' });
    type('Target 1 basic auth password', 'pw');
    expect(last().secureJsonData).toEqual({ 'vllm-a.basicAuthPassword': 'pw' });
  });

  it('clears the secrets of a removed target so a later target of that name cannot inherit them', () => {
    const { last } = setup(
      baseOptions({
        jsonData: { targets: [{ name: 'vllm-a', url: 'http://a/metrics' }] },
        secureJsonFields: { 'vllm-a.bearerToken': true },
      })
    );
    fireEvent.click(screen.getByRole('button', { name: 'Remove target 1' }));
    expect(last().jsonData.targets).toEqual([]);
    expect(last().secureJsonData).toEqual({ 'vllm-a.bearerToken': '' });
    expect(last().secureJsonFields).toEqual({ 'vllm-a.bearerToken': false });
  });
});

describe('ConfigEditor GPU agents and collection', () => {
  it('adds an agent with its token and removes it', () => {
    const { last } = setup(baseOptions());
    fireEvent.click(screen.getByRole('button', { name: 'Add GPU agent' }));
    type('Agent 1 name', 'node-a');
    type('Agent 1 URL', 'http://10.0.0.5:9400/metrics');
    type('Agent 1 bearer token', 'tok');
    expect(last().jsonData.gpuAgents).toEqual([
      { name: 'node-a', url: 'http://10.0.0.5:9400/metrics', kind: 'inferscope' },
    ]);
    expect(last().secureJsonData).toEqual({ 'node-a.bearerToken': 'tok' });
    fireEvent.click(screen.getByRole('button', { name: 'Remove agent 1' }));
    expect(last().jsonData.gpuAgents).toEqual([]);
    expect(last().secureJsonData).toEqual({});
  });

  it('shows defaults as placeholders and writes only what the user sets', () => {
    const { last } = setup(baseOptions());
    expect(screen.getByLabelText('Scrape interval')).toHaveAttribute('placeholder', '15s');
    expect(screen.getByLabelText('Scrape timeout')).toHaveAttribute('placeholder', '10s');
    expect(screen.getByLabelText('Retention')).toHaveAttribute('placeholder', '15d');
    expect(screen.getByLabelText('Retention size')).toHaveAttribute('placeholder', '10GB');
    expect(screen.getByLabelText('Storage path')).toHaveAttribute('placeholder', '<Grafana data>/inferscope');
    expect(screen.getByLabelText('Body size limit')).toHaveAttribute('placeholder', '8388608');
    expect(screen.getByLabelText('Sample limit')).toHaveAttribute('placeholder', '50000');
    type('Scrape interval', '30s');
    type('Retention', '12h');
    type('Sample limit', '20000');
    expect(last().jsonData).toEqual({ scrapeInterval: '30s', retention: '12h', sampleLimit: 20000 });
    type('Scrape interval', '');
    expect(last().jsonData).toEqual({ retention: '12h', sampleLimit: 20000 });
    type('Retention size', '512MB');
    type('Storage path', '/data/inferscope');
    expect(last().jsonData).toEqual({
      retention: '12h',
      sampleLimit: 20000,
      retentionSize: '512MB',
      storagePath: '/data/inferscope',
    });
  });
});

describe('ConfigEditor cost', () => {
  it('writes prices: per target, per GPU-hour of an agent, currency and energy price; empty removes them', () => {
    const { last } = setup(
      baseOptions({
        jsonData: {
          targets: [{ name: 'vllm-a', url: 'http://a:8000/metrics' }],
          gpuAgents: [{ name: 'node-a', url: 'http://a:9400/metrics', kind: 'inferscope' }],
        },
      })
    );
    type('Target 1 cost per hour', '3.6');
    type('Agent 1 cost per GPU-hour', '2.5');
    type('Currency', 'eur');
    type('Energy price per kWh', '0.25');
    expect(last().jsonData.targets).toEqual([{ name: 'vllm-a', url: 'http://a:8000/metrics', costPerHour: 3.6 }]);
    expect(last().jsonData.gpuAgents).toEqual([
      { name: 'node-a', url: 'http://a:9400/metrics', kind: 'inferscope', costPerGPUHour: 2.5 },
    ]);
    expect(last().jsonData.currency).toBe('EUR');
    expect(last().jsonData.energyPricePerKWh).toBe(0.25);

    type('Target 1 cost per hour', '');
    type('Energy price per kWh', '');
    expect(last().jsonData.targets).toEqual([{ name: 'vllm-a', url: 'http://a:8000/metrics' }]);
    expect(last().jsonData.energyPricePerKWh).toBeUndefined();
  });
});
