import React from 'react';
import { act, fireEvent, render, screen } from '@testing-library/react';

import { DataSource } from '../../datasource';
import { switchQueryType } from '../../queryModel';
import { renderQueryEditor } from '../../test/editorHarness';
import { QueryOf } from '../../types';
import { DiagnosisEditor } from './DiagnosisEditor';

describe('DiagnosisEditor', () => {
  it('shows table by default and sets the format', () => {
    const onChange = jest.fn();
    render(<DiagnosisEditor query={{ refId: 'A', queryType: 'diagnosis' }} onChange={onChange} />);
    expect(screen.getByRole('radio', { name: 'table' })).toBeChecked();
    fireEvent.click(screen.getByRole('radio', { name: 'timeline' }));
    expect(onChange).toHaveBeenCalledWith({ refId: 'A', queryType: 'diagnosis', format: 'timeline' });
  });

  it('treats a format of another type as table', () => {
    render(
      <DiagnosisEditor
        // A saved query may hold another type's format, which its type does not have.
        query={{ refId: 'A', queryType: 'diagnosis', format: 'timeseries' } as unknown as QueryOf<'diagnosis'>}
        onChange={jest.fn()}
      />
    );
    expect(screen.getByRole('radio', { name: 'table' })).toBeChecked();
  });

  it('switching types keeps shared fields and swaps the format', () => {
    const d = switchQueryType(
      { refId: 'A', queryType: 'breakdown', format: 'table', targets: ['a'], window: '5m' },
      'diagnosis'
    );
    expect(d).toEqual({ refId: 'A', queryType: 'diagnosis', format: 'table', targets: ['a'], window: '5m' });
    const b = switchQueryType({ refId: 'A', queryType: 'diagnosis', format: 'numeric' }, 'breakdown');
    expect(b.format).toBe('timeseries');
  });

  it('is shown by the query editor for diagnosis queries, with targets, models and window but no group by', async () => {
    const datasource = { listResource: jest.fn(() => Promise.resolve([])) } as unknown as DataSource;
    const { changes, onRunQuery } = await renderQueryEditor(
      { refId: 'A', queryType: 'diagnosis', format: 'table' },
      datasource
    );
    expect(screen.getByLabelText('Targets')).toBeInTheDocument();
    expect(screen.getByLabelText('Models')).toBeInTheDocument();
    expect(screen.getByLabelText('Window')).toBeInTheDocument();
    expect(screen.queryByLabelText('Group by')).not.toBeInTheDocument();
    await act(async () => {
      fireEvent.click(screen.getByRole('radio', { name: 'numeric' }));
    });
    expect(changes[changes.length - 1]).toEqual({ refId: 'A', queryType: 'diagnosis', format: 'numeric' });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('lets the data source serve annotation queries (diagnosis findings as annotations)', () => {
    const ds = new DataSource({
      id: 1,
      uid: 'inferscope',
      type: 'inferscope-llm-datasource',
      name: 'Inferscope',
      jsonData: {},
      meta: { id: 'inferscope-llm-datasource', info: { logos: {} } },
    } as unknown as ConstructorParameters<typeof DataSource>[0]);
    expect(ds.annotations).toBeDefined();
  });
});
