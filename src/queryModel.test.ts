import { isValidStat, sortStats, switchQueryType } from './queryModel';

describe('isValidStat', () => {
  it.each(['mean', 'p50', 'p9', 'p99', 'p99.9', 'p99.99'])('accepts %s', (s) => expect(isValidStat(s)).toBe(true));
  it.each(['p0', 'p100', 'p150', '99', 'p', 'p99.', 'median', 'P99', 'p-1'])('rejects %s', (s) =>
    expect(isValidStat(s)).toBe(false)
  );
});

describe('sortStats', () => {
  it('puts mean first, quantiles ascending, variables last', () => {
    expect(sortStats(['p99.9', '$stat', 'p50', 'mean', 'p99'])).toEqual(['mean', 'p50', 'p99', 'p99.9', '$stat']);
  });
});

describe('switchQueryType', () => {
  it('keeps existing values of the new type and fills only missing defaults', () => {
    const out = switchQueryType(
      { refId: 'A', queryType: 'gpu', agents: ['n'], signals: ['power'], window: '5m' },
      'latency'
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'latency',
      window: '5m',
      stages: ['ttft', 'e2e'],
      stats: ['p50', 'p99'],
      estimator: 'prometheus',
      bounds: true,
    });
  });
});
