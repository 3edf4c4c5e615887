// Writes src/README.md from README.md (npm run readme); the rules are in plugin-readme-lib.mjs.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { pluginReadme } from './plugin-readme-lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
writeFileSync(join(root, 'src', 'README.md'), pluginReadme(readFileSync(join(root, 'README.md'), 'utf8')));
