// Screenshots every generated dashboard as drawn by harness/panels.tsx (real
// @grafana/data and @grafana/ui in Debian's chromium, no Grafana) into
// src/img/screenshots/<name>.png, the images README.md and plugin.json use.
// Usage: node harness/render-panels.js <dir with panels.html, bundle.js, frames/>
const fs = require('fs');
const http = require('http');
const path = require('path');
const { chromium } = require('playwright-core');

const dist = path.resolve(process.argv[2] || path.join(__dirname, 'dist-panels'));
const out = path.join(__dirname, '..', 'src', 'img', 'screenshots');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const DASHBOARDS = {
  'inferscope-overview': 'overview',
  'inferscope-latency': 'latency',
  'inferscope-slo': 'slo',
  'inferscope-gpu': 'gpu',
  'inferscope-targets': 'targets',
  'inferscope-cost': 'cost',
  'inferscope-models': 'models',
};
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.json': 'application/json' };

function serve() {
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (url.includes('/img/icons/')) {
      res.writeHead(200, { 'content-type': TYPES['.svg'] });
      res.end('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"></svg>');
      return;
    }
    const file = path.join(dist, path.normalize(url === '/' ? '/panels.html' : url));
    if (!file.startsWith(dist) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// capturedAt is the latest capturedAt (ms) of a dashboard's panel frames, 0 without one.
function capturedAt(dir) {
  let latest = 0;
  if (!fs.existsSync(dir)) {
    return latest;
  }
  for (const f of fs.readdirSync(dir)) {
    if (f.endsWith('.json')) {
      const t = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')).capturedAt;
      if (typeof t === 'number' && t > latest) {
        latest = t;
      }
    }
  }
  return latest;
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const server = await serve();
  const browser = await chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const errors = [];
  try {
    for (const [uid, name] of Object.entries(DASHBOARDS)) {
      const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
      // The page's clock is the time the frames were captured (the latest panel's
      // capturedAt): "from now" cells read their age at capture, as in Grafana, not
      // the minutes between capture and render.
      const captured = capturedAt(path.join(dist, 'frames', uid));
      if (captured) {
        await page.clock.setFixedTime(new Date(captured));
      }
      page.on('pageerror', (e) => errors.push(`${uid}: ${e}`));
      page.on('console', (m) => m.type() === 'error' && errors.push(`${uid}: ${m.text()}`));
      await page.goto(`http://127.0.0.1:${server.address().port}/panels.html?dash=${uid}`);
      await page.waitForFunction(() => {
        const ps = [...document.querySelectorAll('.panel')];
        return ps.length > 0 && ps.every((p) => p.getAttribute('data-ready') === 'yes');
      }, null, { timeout: 60000 });
      // The whole dashboard in the viewport: Grafana's table (TableNG, react-data-grid) draws
      // only the cells of a grid that is in view, so a table below the first 900 px was an
      // empty frame in a full-page screenshot; a user scrolling to it sees its rows.
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      await page.setViewportSize({ width: 1600, height });
      await page.waitForTimeout(1500);
      const file = path.join(out, `${name}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log(`render-panels: ${file}`);
      await page.close();
    }
  } finally {
    await browser.close();
    server.close();
  }
  if (errors.length) {
    console.error(errors.join('\n'));
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
