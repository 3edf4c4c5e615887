// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');
const { grafanaESModules, nodeModulesToTransform } = require('./.config/jest/utils');

module.exports = {
  // Jest configuration provided by Grafana scaffolding, plus a transform for the
  // ESM-only `.mjs` files that @grafana/ui pulls in (d3-color and friends).
  ...base,
  // The CI machine has 2 cores; rendering @grafana/ui's Comboboxes in jsdom under load took up to
  // 60 s for one test: the limit is there to catch a hang, not to time the editors.
  testTimeout: 180000,
  transform: {
    ...base.transform,
    '^.+\\.mjs$': base.transform['^.+\\.(t|j)sx?$'],
  },
  // @grafana/plugin-ui (remote-mode settings) requires the ESM-only cel-js.
  transformIgnorePatterns: [nodeModulesToTransform([...grafanaESModules, '@marcbachmann/cel-js'])],
};
