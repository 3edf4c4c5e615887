// Builds src/README.md, the README shipped inside the plugin (Grafana and its plugin catalog show
// it on the plugin's page), from the repository README, so the two cannot drift: the
// introduction and the sections in SECTIONS.
//   node scripts/plugin-readme.mjs          writes src/README.md (this file is the pure part)
// src/pluginReadme.test.ts fails when the committed src/README.md differs from this output.
//
// The catalog's validator (grafana/plugin-validator) reports a README whose first line is an HTML
// comment (`readme-comment`), every relative link as an error (it resolves nowhere on the catalog's
// page) and every absolute link it cannot fetch as a warning. The repository's address is not
// fixed, so the plugin README links nowhere outside itself: links to repository files become their
// text, images are dropped (plugin.json's screenshots are what the catalog shows), anchors of
// left-out sections become their text, and blocks between `<!-- repo-only -->` and
// `<!-- /repo-only -->` in README.md are left out.

/** Sections of the README (by their "## " heading) the plugin README carries, in order. */
export const SECTIONS = ['Install in your Grafana', 'Already run Prometheus? Use remote mode', 'Query types'];

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
  const parts = readme.replace(/<!-- repo-only -->[\s\S]*?<!-- \/repo-only -->\n*/g, '').split(/^(?=## )/m);
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
  const unlinked = body
    // Relative images: dropped, with the line they stood alone on.
    .replace(/^!\[[^\]]*\]\((?!https?:)[^)]+\)\n\n?/gm, '')
    .replace(/!\[[^\]]*\]\((?!https?:)[^)]+\)/g, '')
    // In-page anchors: kept for sections the plugin README has, else the link's text.
    .replace(/\[([^\]]+)\]\(#([^)]+)\)/g, (m, text, a) => (keptAnchors.has(a) ? m : text))
    // Repository files: the text, as code when the text is the path itself.
    .replace(/\[([^\]]+)\]\((?!https?:|#|mailto:)([^)]+)\)/g, (_, text, path) =>
      text === path ? '`' + path + '`' : text
    );
  return (
    unlinked +
    '\n\n## More\n\nThe configuration reference, dashboards and alert rules, runbooks, how the numbers are computed,\n' +
    "remote mode and the GPU agent are documented in the plugin's source repository (its README and `docs/`).\n" +
    "Changes per version: `CHANGELOG.md` in the plugin's folder. License: Apache-2.0 (`LICENSE`).\n"
  );
}
