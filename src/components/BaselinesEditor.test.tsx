import React from 'react';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';

import { BaselinesEditor, baselineNameFromFile } from './BaselinesEditor';
import { Settings } from '../configModel';

const post = jest.fn();
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ post }),
}));

const saved = { uid: 'ds1', version: 2, jsonData: {}, secureJsonFields: {} } as unknown as Settings;

describe('BaselinesEditor', () => {
  it('suggests a baseline name from the file name', () => {
    expect(baselineNameFromFile('llama-7b a100 rate5.json')).toBe('llama-7b-a100-rate5');
    expect(baselineNameFromFile('C:\\runs\\_x.json')).toBe('x');
  });

  it('writes baselinesPath and leaves it out when empty', () => {
    const onChange = jest.fn();
    render(<BaselinesEditor options={saved} onOptionsChange={onChange} />);
    fireEvent.change(screen.getByLabelText('Baselines directory'), { target: { value: '/var/lib/b' } });
    expect(onChange.mock.calls[0][0].jsonData.baselinesPath).toBe('/var/lib/b');
    fireEvent.change(screen.getByLabelText('Baselines directory'), { target: { value: ' ' } });
    expect(onChange.mock.calls[1][0].jsonData.baselinesPath).toBeUndefined();
  });

  it('uploads the file under its name and shows what the backend read', async () => {
    post.mockResolvedValue({
      name: 'run1',
      saved: true,
      note: 'saved as run1.json',
      read: [{ name: 'run1', summary: 'vllm result for m' }],
    });
    render(<BaselinesEditor options={saved} onOptionsChange={jest.fn()} />);
    const file = new File(['{"request_throughput": 1}'], 'run1.json', { type: 'application/json' });
    if (!file.text) {
      Object.defineProperty(file, 'text', { value: () => Promise.resolve('{"request_throughput": 1}') });
    }
    fireEvent.change(screen.getByLabelText('Benchmark result file'), { target: { files: [file] } });
    expect(screen.getByLabelText('Baseline name')).toHaveValue('run1');
    fireEvent.click(screen.getByRole('button', { name: 'Upload baseline' }));
    await waitFor(() => expect(screen.getByText('vllm result for m')).toBeInTheDocument());
    expect(post.mock.calls[0][0]).toBe('/api/datasources/uid/ds1/resources/baselines?name=run1');
    expect(post.mock.calls[0][1]).toBe('{"request_throughput": 1}');
  });
});
