import { readFileSync } from 'fs';
import { join } from 'path';

import { anchor, pluginReadme } from '../scripts/plugin-readme-lib.mjs';

const root = join(__dirname, '..');

describe('src/README.md (the README shipped in the plugin)', () => {
  it('is generated from README.md: run `npm run readme` after editing the README', () => {
    const want = pluginReadme(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(readFileSync(join(root, 'src', 'README.md'), 'utf8')).toBe(want);
  });

  it('lists every query type, starts with its title and links nowhere the catalog cannot reach', () => {
    const text = readFileSync(join(root, 'src', 'README.md'), 'utf8');
    const schema = JSON.parse(readFileSync(join(root, 'src', 'generated', 'queryschema.json'), 'utf8'));
    for (const id of Object.keys(schema)) {
      expect(text).toContain('`' + id + '`');
    }
    // The plugin validator's readme-comment and relative-link rules (pkg/release checks the archive too).
    expect(text.split('\n')[0]).toBe('# Inferscope — LLM inference observability for Grafana');
    expect(text).not.toMatch(/\]\((?!https?:|#)/);
    // No address of a repository that may not exist.
    expect(text).not.toContain('github.com/inferscope');
    expect(text).not.toContain('in-memory');
  });

  it('rewrites links by hand-checked examples', () => {
    const out = pluginReadme(
      '# T\n\nSee [x](docs/x.md), [docs/y.md](docs/y.md) and ![shot](src/img/a.png) ![web](https://e.org/b.png).\n\n' +
        '<!-- repo-only -->\n![big](src/img/big.png)\n<!-- /repo-only -->\n\n' +
        '## Install in your Grafana\n\n[q](#query-types) [c](#configuration-data-source-settings)\n\n' +
        '## Already run Prometheus? Use remote mode\n\nr\n\n## Query types\n\nq\n\n## Left out\n\nz\n'
    );
    expect(
      out.startsWith('# T\n\nSee x, `docs/y.md` and  ![web](https://e.org/b.png).\n\n## Install in your Grafana\n')
    ).toBe(true);
    expect(out).toContain('[q](#query-types) c\n');
    expect(out).not.toContain('big.png');
    expect(out).not.toContain('Left out');
    expect(anchor('Configuration (data-source settings)')).toBe('configuration-data-source-settings');
    expect(anchor('Already run Prometheus? Use remote mode')).toBe('already-run-prometheus-use-remote-mode');
  });
});
