// Builds src/README.md, the README shipped inside the plugin (Grafana shows it on the plugin's
// page), from the repository README, so the two cannot drift: the introduction, the screenshots,
// "Install in your Grafana" and "Query types", with links made absolute (the plugin page has no
// repository to resolve docs/... or #anchors of left-out sections against).
//   node scripts/plugin-readme.mjs          writes src/README.md (this file is the pure part)
// src/pluginReadme.test.ts fails when the committed src/README.md differs from this output.

export const REPO = 'https://github.com/inferscope/inferscope-llm-datasource';
const BLOB = `${REPO}/blob/main/`;
const RAW = 'https://raw.githubusercontent.com/inferscope/inferscope-llm-datasource/main/';

/** Sections of the README (by their "## " heading) the plugin README carries, in order. */
export const SECTIONS = ['Install in your Grafana', 'Query types'];

/** GitHub's anchor for a heading. */
export function anchor(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** pluginReadme returns the plugin README for the repository README's text. */
export function pluginReadme(readme) {
  const parts = readme.split(/^(?=## )/m);
  const intro = parts[0];
  const byTitle = new Map(parts.slice(1).map((p) => [p.split('\n')[0].slice(3).trim(), p]));
  const kept = [];
  for (const title of SECTIONS) {
    const part = byTitle.get(title);
    if (!part) {
      throw new Error(`README.md has no section "## ${title}"`);
    }
    kept.push(part);
  }
  const keptAnchors = new Set(kept.map((p) => anchor(p.split('\n')[0].slice(3))));
  const body = [intro, ...kept].join('').trimEnd();
  const linked = body
    // Images: absolute raw URLs.
    .replace(/!\[([^\]]*)\]\((?!https?:)([^)]+)\)/g, (_, alt, path) => `![${alt}](${RAW}${path})`)
    // In-page anchors of sections left out: the repository README.
    .replace(/\]\(#([^)]+)\)/g, (m, a) => (keptAnchors.has(a) ? m : `](${REPO}#${a})`))
    // Repository files.
    .replace(/\]\((?!https?:|#)([^)]+)\)/g, (_, path) => `](${BLOB}${path})`);
  return (
    '<!-- Generated from the repository README by scripts/plugin-readme.mjs (npm run readme); do not edit. -->\n\n' +
    linked +
    `\n\n## More\n\nConfiguration reference, dashboards and alert rules, how the numbers are computed, remote mode and\nthe GPU agent: the [repository README](${REPO}#readme) and [docs](${REPO}/tree/main/docs).\nChanges: [CHANGELOG](${BLOB}CHANGELOG.md). License: Apache-2.0.\n`
  );
}

