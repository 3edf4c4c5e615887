import { readFileSync } from 'fs';
import { join } from 'path';

import { anchor, pluginReadme, REPO } from '../scripts/plugin-readme-lib.mjs';

const root = join(__dirname, '..');

describe('src/README.md (the README shipped in the plugin)', () => {
  it('is generated from README.md: run `npm run readme` after editing the README', () => {
    const want = pluginReadme(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(readFileSync(join(root, 'src', 'README.md'), 'utf8')).toBe(want);
  });

  it('lists every query type of the registry and points no link into the repository relatively', () => {
    const text = readFileSync(join(root, 'src', 'README.md'), 'utf8');
    const schema = JSON.parse(readFileSync(join(root, 'src', 'generated', 'queryschema.json'), 'utf8'));
    for (const id of Object.keys(schema)) {
      expect(text).toContain('`' + id + '`');
    }
    expect(text).not.toMatch(/\]\((?!https?:|#)/);
    expect(text).not.toContain('in-memory');
  });

  it('rewrites links by hand-checked examples', () => {
    const out = pluginReadme(
      '# T\n\nSee [x](docs/x.md) and ![shot](src/img/a.png).\n\n## Install in your Grafana\n\n[q](#query-types) [c](#configuration-data-source-settings)\n\n## Query types\n\nq\n'
    );
    expect(out).toContain(`[x](${REPO}/blob/main/docs/x.md)`);
    expect(out).toContain('![shot](https://raw.githubusercontent.com/inferscope/inferscope-llm-datasource/main/src/img/a.png)');
    expect(out).toContain('[q](#query-types)');
    expect(out).toContain(`[c](${REPO}#configuration-data-source-settings)`);
    expect(anchor('Configuration (data-source settings)')).toBe('configuration-data-source-settings');
  });
});
