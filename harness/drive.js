// Drives harness/dist/index.html in Debian's chromium with playwright-core:
// adds a target, sets its URL and token, maps one of its own metrics, adds a GPU
// agent, switches the query (Combobox) to gpu and back to latency with the refined
// estimator and a typed quantile, picks a raw metric, edits an SLO profile
// (with inline validation), picks it in an slo query, and checks the JSON the
// editors produce. Exits non-zero on any mismatch or page error.
const fs = require('fs');
const http = require('http');
const path = require('path');
const { chromium } = require('playwright-core');

const dist = path.join(__dirname, 'dist');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

function check(cond, msg) {
  if (!cond) {
    throw new Error(`harness check failed: ${msg}`);
  }
  console.log(`ok  ${msg}`);
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

/**
 * Serves harness/dist on a loopback port. @grafana/ui fetches its icons from
 * Grafana's public/build/img/icons/, which only Grafana has: those get a blank SVG.
 * Its fonts (public/fonts/) get no content.
 */
function serve() {
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (url.startsWith('/public/fonts/')) {
      // Grafana's GlobalStyles name its fonts under public/fonts/, which only Grafana serves:
      // none is sent, and the browser falls back to its own.
      res.writeHead(204);
      res.end();
      return;
    }
    if (url.includes('/img/icons/')) {
      res.writeHead(200, { 'content-type': TYPES['.svg'] });
      res.end('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"></svg>');
      return;
    }
    const file = path.join(dist, path.normalize(url === '/' ? '/index.html' : url));
    if (!file.startsWith(dist) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      console.error(`harness: 404 ${url}`);
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function main() {
  const server = await serve();
  const browser = await chromium.launch({
    executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const errors = [];
  const page = await browser.newPage({ viewport: { width: 1600, height: 1400 } });
  try {
    page.setDefaultTimeout(10000);
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    const json = async (id) => JSON.parse(await page.locator(`#${id}`).innerText());
    // A picked option reaches the editor's state a render later: read it until pred holds
    // (5 s at most), then check it as before.
    const jsonWhen = async (id, pred) => {
      let v = await json(id);
      for (let i = 0; i < 50 && !pred(v); i++) {
        await page.waitForTimeout(100);
        v = await json(id);
      }
      return v;
    };

    // ConfigEditor
    await page.getByRole('button', { name: 'Add target' }).click();
    await page.getByLabel('Target 1 name').fill('vllm-a');
    await page.getByLabel('Target 1 URL').fill('http://10.0.0.5:8000/metrics');
    await page.getByRole('radio', { name: 'Bearer token' }).click();
    await page.getByLabel('Target 1 bearer token').fill('s3cret');
    await page.getByRole('button', { name: 'Add label' }).click();
    await page.getByLabel('Target 1 label 1 key').fill('cluster');
    await page.getByLabel('Target 1 label 1 value').fill('eu-1');
    await page.getByRole('button', { name: 'Add GPU agent' }).click();
    await page.getByLabel('Agent 1 name').fill('node-a');
    await page.getByLabel('Agent 1 URL').fill('http://10.0.0.5:9400/metrics');
    await page.getByLabel('Scrape interval').fill('30s');
    let cfg = await json('config-state');
    check(
      JSON.stringify(cfg.jsonData.targets) ===
        JSON.stringify([{ name: 'vllm-a', url: 'http://10.0.0.5:8000/metrics', labels: { cluster: 'eu-1' } }]),
      `targets ${JSON.stringify(cfg.jsonData.targets)}`
    );
    check(cfg.secureJsonData['vllm-a.bearerToken'] === 's3cret', 'bearer token under "vllm-a.bearerToken"');
    check(
      cfg.jsonData.gpuAgents[0].name === 'node-a' && cfg.jsonData.gpuAgents[0].kind === 'inferscope',
      'GPU agent added'
    );
    check(cfg.jsonData.scrapeInterval === '30s', 'scrape interval');

    // Your own metrics: before the first save the names are typed (Combobox custom values).
    await page.getByRole('button', { name: 'Expand section Your own metrics' }).click();
    await page.getByRole('button', { name: 'Map a metric' }).click();
    const ttft = page.getByLabel('Target 1 metric for ttft');
    await ttft.click();
    await ttft.fill('llm_ttft_seconds');
    await page.getByRole('option', { name: /^llm_ttft_seconds/ }).click();
    cfg = await jsonWhen('config-state', (v) => (v.jsonData.targets[0].metrics || {}).ttft === 'llm_ttft_seconds');
    check(
      JSON.stringify(cfg.jsonData.targets[0].metrics) === JSON.stringify({ ttft: 'llm_ttft_seconds' }),
      `own metrics mapping: ${JSON.stringify(cfg.jsonData.targets[0])}`
    );
    await page.getByRole('button', { name: 'Target 1 remove the ttft mapping' }).click();

    await page.getByRole('button', { name: 'Add target' }).click();
    await page.getByRole('button', { name: 'Remove target 1', exact: true }).click();
    cfg = await json('config-state');
    check(
      cfg.jsonData.targets.length === 1 && cfg.jsonData.targets[0].name === 'target-1',
      'remove target 1 keeps target-1'
    );
    check(!('vllm-a.bearerToken' in cfg.secureJsonData), 'unsaved token of the removed target is dropped');

    // Remote mode: @grafana/plugin-ui connection settings and a target selector.
    await page.getByLabel('Remote Prometheus').click();
    const remoteURL = page.getByPlaceholder('http://prometheus:9090');
    await remoteURL.fill('http://prometheus:9090');
    await remoteURL.blur();
    await page.getByLabel('Target 1 selector').fill('{job="vllm", instance="10.0.0.5:8000"}');
    cfg = await json('config-state');
    check(
      cfg.jsonData.mode === 'remote' &&
        cfg.url === 'http://prometheus:9090' &&
        cfg.jsonData.targets[0].selector === '{job="vllm", instance="10.0.0.5:8000"}',
      `remote mode: ${JSON.stringify({ mode: cfg.jsonData.mode, url: cfg.url, targets: cfg.jsonData.targets })}`
    );
    check((await page.getByLabel('Sample limit').count()) === 0, 'remote mode hides the scrape limits');

    // QueryEditor
    const typeSelect = page.getByLabel('Query type');
    await typeSelect.click();
    await page.getByRole('option', { name: /^GPU/ }).click();
    let q = await jsonWhen('query-state', (v) => v.queryType === 'gpu');
    check(q.queryType === 'gpu' && !('stages' in q), `switch to gpu: ${JSON.stringify(q)}`);
    await typeSelect.click();
    await page.getByRole('option', { name: /^Latency/ }).click();
    await page.getByRole('radio', { name: 'refined' }).click();
    const stats = page.getByLabel('Stats');
    await stats.click();
    await stats.fill('p99.9');
    await page.getByRole('option', { name: /^p99\.9/ }).click();
    q = await jsonWhen('query-state', (v) => v.estimator === 'refined' && (v.stats || []).includes('p99.9'));
    check(q.queryType === 'latency' && q.estimator === 'refined', `estimator refined: ${JSON.stringify(q)}`);
    check(
      JSON.stringify(q.stats) === JSON.stringify(['p50', 'p99', 'p99.9']),
      `custom quantile: ${JSON.stringify(q.stats)}`
    );

    // Raw: the metric picked from the names stored for the targets (GET /metricnames).
    await typeSelect.click();
    await page.getByRole('option', { name: /^Raw metric/ }).click();
    await page.getByLabel('Metric', { exact: true }).click();
    await page.getByRole('option', { name: 'vllm:num_requests_running' }).click();
    q = await jsonWhen('query-state', (v) => v.queryType === 'raw' && v.metric === 'vllm:num_requests_running');
    check(q.queryType === 'raw' && q.metric === 'vllm:num_requests_running', `raw metric picked: ${JSON.stringify(q)}`);

    // SLO profiles: edit the first default profile, with inline validation.
    await page.getByLabel('Profile 1 name').fill('chat-eu');
    const threshold = page.locator('#slo-0-0-threshold');
    await threshold.fill('0');
    check(
      await page.getByText('a positive number of seconds (0.5 for 500 ms)').isVisible(),
      'threshold 0 is flagged inline'
    );
    await threshold.fill('2');
    cfg = await json('config-state');
    const chat = cfg.jsonData.sloProfiles[0];
    check(
      chat.name === 'chat-eu' && chat.objectives[0].signal === 'ttft' && chat.objectives[0].threshold === 2,
      `profile edited: ${JSON.stringify(chat)}`
    );
    check(cfg.jsonData.sloProfiles.length === 4, 'the other default profiles are kept');

    // QueryEditor: an slo query on that profile.
    const runsBefore = Number(await page.locator('#query-runs').innerText());
    await typeSelect.click();
    await page.getByRole('option', { name: /^SLO table/ }).click();
    await page.getByLabel('Profile', { exact: true }).click();
    await page.getByRole('option', { name: 'chat-eu' }).click();
    await page.getByLabel('Objectives').click();
    await page.getByRole('option', { name: 'ttft-p99' }).click();
    const sloPicked = (q) =>
      q.queryType === 'slo' && q.profile === 'chat-eu' && JSON.stringify(q.objectives) === '["ttft-p99"]';
    q = await jsonWhen('query-state', sloPicked);
    check(sloPicked(q), `slo query: ${JSON.stringify(q)}`);
    check(!('stats' in q) && !('estimator' in q), 'latency-only fields dropped');
    check(Number(await page.locator('#query-runs').innerText()) > runsBefore, 'the slo query runs');

    await page.screenshot({ path: path.join(dist, 'screenshot.png'), fullPage: true });
  } catch (e) {
    await page.screenshot({ path: path.join(dist, 'failure.png'), fullPage: true }).catch(() => undefined);
    throw e;
  } finally {
    await browser.close();
    server.close();
  }
  check(errors.length === 0, `no page errors${errors.length ? ': ' + errors.join(' | ') : ''}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
