import CopyWebpackPlugin from 'copy-webpack-plugin';
import type { Configuration } from 'webpack';

import grafanaConfig, { type Env } from './.config/webpack/webpack.config.ts';
import { copyFilePatterns } from './.config/bundler/copyFiles.ts';

// The root LICENSE and CHANGELOG.md are copied into dist/ when present; a
// checkout without them still builds (the scaffold's patterns require them).
const OPTIONAL = new Set(['../LICENSE', '../CHANGELOG.md']);

const config = async (env: Env): Promise<Configuration> => {
  const base = await grafanaConfig(env);
  const patterns = [
    ...copyFilePatterns.map((p) => (OPTIONAL.has(p.from) ? { ...p, noErrorOnMissing: true } : p)),
    // The overview dashboard ships inside the plugin (plugin.json "includes"),
    // so it can be imported from the data source page without the demo.
    { from: '../dashboards/*.json', to: 'dashboards/[name][ext]' },
  ];
  return {
    ...base,
    plugins: (base.plugins ?? []).map((p) =>
      p instanceof CopyWebpackPlugin ? new CopyWebpackPlugin({ patterns }) : p
    ),
  };
};

export default config;
