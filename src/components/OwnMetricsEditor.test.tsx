import React, { useState } from 'react';
import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';

import { Settings } from '../configModel';
import { openMenu, optionLabels, pickOption, typeAndPick } from '../test/combobox';
import { OwnMetricsEditor } from './OwnMetricsEditor';

// What GET /pagemetrics answers for the page of the Python service
// (pkg/plugin TestPageMetricsOffersTheOwnHistograms pins the same answer).
const PAGE = {
  histograms: ['llm_queue_seconds', 'llm_tpot_seconds', 'llm_ttft_seconds'],
  counters: ['llm_prompt_tokens_total'],
  gauges: ['process_start_time_seconds'],
  labels: ['dtype', 'model'],
};

const get = jest.fn((url: string, params?: Record<string, string>) => {
  if (url.endsWith('/resources/pagemetrics') && params?.target === 'svc') {
    return Promise.resolve(PAGE);
  }
  return Promise.resolve([]);
});

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ get }),
}));

async function setup(jsonData: Settings['jsonData'], version = 2) {
  const changes: Settings[] = [];
  const initial = { uid: 'ds1', version, jsonData, secureJsonFields: {}, secureJsonData: {} } as unknown as Settings;
  function Harness() {
    const [options, setOptions] = useState(initial);
    return (
      <OwnMetricsEditor
        i={0}
        target={options.jsonData.targets![0]}
        remote={false}
        options={options}
        onOptionsChange={(o) => {
          changes.push(o);
          setOptions(o);
        }}
      />
    );
  }
  await act(async () => {
    render(<Harness />);
  });
  return { last: () => changes[changes.length - 1] };
}

const svc = { name: 'svc', url: 'http://svc:8000/metrics' };

describe('Your own metrics (targets[].metrics, modelLabel)', () => {
  it("maps the service's histograms and counter, picked from the names on its page, and the model label", async () => {
    const { last } = await setup({ targets: [svc] });
    fireEvent.click(screen.getByRole('button', { name: 'Expand section Your own metrics' }));
    await act(async () => {
      fireEvent.click(screen.getByRole('button', { name: 'Map a metric' }));
    });
    expect(get).toHaveBeenCalledWith('/api/datasources/uid/ds1/resources/pagemetrics', { target: 'svc' });
    // Until a name is chosen, the row says what Save & test would.
    expect(screen.getByText('targets[0].metrics.ttft: "" is not a metric name')).toBeInTheDocument();
    expect(
      await screen.findByText('On the page: 3 histograms, 1 counter, 1 gauge; labels dtype, model.')
    ).toBeInTheDocument();

    // A latency signal is offered the page's histograms, by base name.
    await openMenu('Target 1 metric for ttft');
    expect(optionLabels()).toEqual(['llm_queue_seconds', 'llm_tpot_seconds', 'llm_ttft_seconds']);
    await pickOption('Target 1 metric for ttft', 'llm_ttft_seconds');

    // The next row starts on the next unmapped signal (tpot); make it queue_time.
    fireEvent.click(screen.getByRole('button', { name: 'Map a metric' }));
    await pickOption('Target 1 own metric 2 signal', 'queue_time');
    await pickOption('Target 1 metric for queue_time', 'llm_queue_seconds');

    // A counter signal is offered the page's counters.
    fireEvent.click(screen.getByRole('button', { name: 'Map a metric' }));
    await pickOption('Target 1 own metric 3 signal', 'prompt_tokens');
    await openMenu('Target 1 metric for prompt_tokens');
    expect(optionLabels()).toEqual(['llm_prompt_tokens_total']);
    await pickOption('Target 1 metric for prompt_tokens', 'llm_prompt_tokens_total');

    await pickOption('Target 1 model label', 'model');
    expect(last().jsonData.targets).toEqual([
      {
        ...svc,
        metrics: {
          ttft: 'llm_ttft_seconds',
          queue_time: 'llm_queue_seconds',
          prompt_tokens: 'llm_prompt_tokens_total',
        },
        modelLabel: 'model',
      },
    ]);
  });

  it("refuses a histogram's _bucket series as typed, with pkg/settings' sentence; removing the last row drops modelLabel", async () => {
    const { last } = await setup({ targets: [{ ...svc, metrics: { ttft: 'llm_ttft_seconds' }, modelLabel: 'model' }] });
    // Saved mappings open the section.
    await typeAndPick('Target 1 metric for ttft', 'llm_ttft_seconds_bucket');
    expect(
      screen.getByText(
        `targets[0].metrics.ttft: "llm_ttft_seconds_bucket": give the histogram's base name, without _bucket`
      )
    ).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Target 1 remove the ttft mapping' }));
    expect(last().jsonData.targets).toEqual([svc]);
  });

  it('before the first save, names are typed and the page is not read', async () => {
    get.mockClear();
    await setup({ targets: [svc] }, 1);
    fireEvent.click(screen.getByRole('button', { name: 'Expand section Your own metrics' }));
    expect(screen.getByText(/Save the data source to list the names/)).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: 'Map a metric' }));
    await waitFor(() => expect(screen.getByLabelText('Target 1 metric for ttft')).toBeInTheDocument());
    expect(get).not.toHaveBeenCalledWith('/api/datasources/uid/ds1/resources/pagemetrics', expect.anything());
  });
});
