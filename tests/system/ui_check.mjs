// Drives headless Chromium (Debian's package) with playwright-core: logs into the Airflow UI with
// its login form, opens "Delivery reconciliation" from the navigation, checks the charts (the
// verdicts per run, the delivery latency and the source -> topic -> sink funnel) and the
// discrepancies of one pipeline inside the page's frame, and saves screenshots.
//
// Input (environment): RECON_UI_BASE_URL, RECON_UI_USER, RECON_UI_PASSWORD, RECON_UI_PIPELINE,
// RECON_UI_PLAN_ID (a repair plan of that pipeline),
// RECON_UI_SCREENSHOT (the UI view), RECON_UI_SCREENSHOT_FULL (the page alone, full length),
// RECON_UI_SCREENSHOT_FUNNEL (the funnel part alone), RECON_UI_ARTIFACTS (where the screenshots
// at 1280 and 1920 px go), RECON_UI_HOSTILE_ID (a messageId that is markup),
// RECON_UI_ALERT_LINK (an alert's link to the page, from the root),
// RECON_UI_USER_DATA_DIR (fresh, empty), RECON_NODE_DIR (where playwright-core is installed),
// CHROMIUM (default /usr/bin/chromium).
// Output: one JSON line on stdout, {"ok": true, ...} or {"ok": false, "error": ..., "step": ...}.
import { createRequire } from 'node:module';
import path from 'node:path';

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
};
const base = env('RECON_UI_BASE_URL').replace(/\/$/, '');
const pipeline = env('RECON_UI_PIPELINE');
const require = createRequire(path.join(env('RECON_NODE_DIR'), 'package.json'));
const { chromium } = require('playwright-core');

const result = { ok: false, step: 'launch' };
const context = await chromium.launchPersistentContext(env('RECON_UI_USER_DATA_DIR'), {
  executablePath: env('CHROMIUM', '/usr/bin/chromium'),
  headless: true,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
  viewport: { width: 1440, height: 1600 },
  timeout: 60_000,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30_000);

  result.step = 'login';
  await page.goto(`${base}/`);
  await page.waitForURL(/\/auth\/login/);
  await page.locator('input[name="username"]').fill(env('RECON_UI_USER'));
  await page.locator('input[name="password"]').fill(env('RECON_UI_PASSWORD'));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => !url.pathname.startsWith('/auth/'));
  result.cookie = (await context.cookies(base)).some((c) => c.name === '_token');

  result.step = 'navigate';
  const nav = page.getByRole('link', { name: /Delivery reconciliation/ }).or(
    page.getByRole('button', { name: /Delivery reconciliation/ }),
  );
  await nav.first().click();
  await page.waitForURL(/\/plugin\/recon/);
  result.ui_url = page.url();

  result.step = 'overview';
  const frame = page.frameLocator('iframe[src*="/recon/"]');
  await frame.locator('h1', { hasText: 'Delivery reconciliation' }).waitFor();
  // one row per pipeline, and its name the link to its own page
  const rows = frame.locator('table.overview tbody tr');
  result.overview_rows = await rows.count();
  result.overview_pipelines = new Set(await rows.locator('td.name a').allInnerTexts()).size;
  result.overview_sections = await frame.locator('section.pipeline').count();
  result.overview_asset = (await rows.filter({ hasText: pipeline }).locator('td.asset').innerText()).trim();
  await rows.locator('td.name a', { hasText: pipeline }).first().click();

  result.step = 'page';
  const section = frame.locator(`section.pipeline[id="p-${encodeURIComponent(pipeline)}"]`);
  await section.waitFor();
  result.heading = (await section.locator('h2').innerText()).trim();
  result.bars = await section.locator('svg.chart rect.bar').count();
  result.legend_items = await section.locator('ul.legend li').count();
  result.discrepancy_rows = await section.locator('table.discrepancies tbody tr').count();
  result.verdicts = [
    ...new Set(await section.locator('svg.chart rect.bar').evaluateAll(
      (rects) => rects.map((r) => r.getAttribute('data-verdict')),
    )),
  ].sort();
  // The delivery-latency chart (issue 19): drawn when the pipeline's runs have recon.latency rows.
  const latency = section.locator('svg.chart[data-chart="latency"]');
  result.latency_charts = await latency.count();
  result.latency_points = await latency.locator('circle.point').count();
  result.latency_series = await latency.locator('path.series').evaluateAll(
    (paths) => paths.map((p) => p.getAttribute('data-series')),
  );
  result.latency_bound_ms = result.latency_charts
    ? await latency.locator('path.bound').first().getAttribute('data-bound-ms')
    : null;
  result.latency_partition_rows = await section.locator('table.latency tbody tr').count();
  if (result.latency_charts) {
    const box = await latency.first().boundingBox();
    result.latency_chart_height = box ? Math.round(box.height) : 0;
  }
  // The source -> topic -> sink funnel (three-way runs): drawn when a run has recon.runs.funnel.
  const funnel = section.locator('svg.chart[data-chart="funnel"]');
  result.funnel_charts = await funnel.count();
  if (result.funnel_charts) {
    result.funnel_run = await funnel.first().getAttribute('data-run');
    result.funnel_stages = await funnel.locator('rect.stage').evaluateAll(
      (rects) => rects.map((r) => [r.getAttribute('data-stage'), Number(r.getAttribute('data-count'))]),
    );
    result.funnel_counts = await funnel.locator('text.count').evaluateAll(
      (texts) => texts.map((t) => t.textContent.trim()),
    );
    // a label's own text, without its <title> tooltip
    result.funnel_drops = await funnel.locator('text.drop').evaluateAll(
      (texts) => texts.map((t) => t.firstChild.nodeValue.trim()),
    );
    result.funnel_bad_drops = await funnel.locator('text.drop.bad').evaluateAll(
      (texts) => texts.map((t) => t.getAttribute('data-drop')),
    );
    const box = await funnel.first().boundingBox();
    result.funnel_chart_height = box ? Math.round(box.height) : 0;
    result.funnel_note = (await section.locator('p.funnel-note').innerText()).trim();
    // a messageId that is markup stays text: no element made of it
    result.funnel_markup = await section.locator('div.funnel img, p.funnel-note img').count();
    await section.locator('div.funnel').screenshot({ path: env('RECON_UI_SCREENSHOT_FUNNEL') });
  }
  result.unpublished_rows = await section.locator('table.discrepancies tbody tr').evaluateAll(
    (rows) => rows.filter((r) => r.cells[0].innerText.trim().startsWith('unpublished'))
      .map((r) => r.innerText),
  );
  const plan = env('RECON_UI_PLAN_ID');
  result.repair_rows = await section.locator('table.repairs tbody tr').count();
  result.repair_links = await section.locator(`table.repairs a[href*="${plan}"]`).count();
  result.late_rows = await section.locator('table.discrepancies tbody tr td:nth-child(1)')
    .evaluateAll((cells) => cells.filter((c) => c.innerText.trim().startsWith('late')).length);
  await page.screenshot({ path: env('RECON_UI_SCREENSHOT') });

  result.step = 'direct';
  const direct = await context.newPage();
  await direct.goto(`${base}/recon/?pipeline=${encodeURIComponent(pipeline)}`);
  result.direct_bars = await direct.locator('svg.chart rect.bar').count();
  await direct.screenshot({ path: env('RECON_UI_SCREENSHOT_FULL'), fullPage: true });
  result.title_after = await direct.title();

  // The discrepancies: the hostile messageId found by the text filter, shown as text; an
  // alert's link (run and verdict) lands on its filtered view; the downloads are offered.
  result.step = 'filters';
  const hostile = env('RECON_UI_HOSTILE_ID');
  await direct.goto(`${base}/recon/?pipeline=${encodeURIComponent(pipeline)}&q=${encodeURIComponent(hostile)}`);
  result.hostile_rows = await direct.locator('table.discrepancies tbody tr').evaluateAll(
    (trs) => trs.map((tr) => tr.cells[1].innerText.trim()),
  );
  result.hostile_scripts = await direct.locator('main script').count();
  result.downloads = await direct.locator('a.download').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
  await direct.goto(`${base}${env('RECON_UI_ALERT_LINK')}`);
  result.alert_link_rows = await direct.locator('table.discrepancies tbody tr').evaluateAll(
    (trs) => trs.map((tr) => tr.cells[0].innerText.trim()),
  );
  result.alert_link_verdict = await direct.locator('form.filters select[name=verdict]').inputValue();

  // No element wider than the viewport, from 1024 to 1920 px: the overview and the pipeline's page.
  result.step = 'widths';
  result.widths = {};
  for (const width of [1024, 1280, 1920]) {
    await direct.setViewportSize({ width, height: 900 });
    for (const [name, url] of [['overview', `${base}/recon/`],
      ['pipeline', `${base}/recon/?pipeline=${encodeURIComponent(pipeline)}`]]) {
      await direct.goto(url);
      result.widths[`${name}@${width}`] = await direct.evaluate(() => {
        const vw = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().width > vw + 0.5);
        const name = (e) => `${e.tagName.toLowerCase()}.${e.getAttribute('class') ?? ''}`;
        return {
          viewport: vw, scroll: document.documentElement.scrollWidth,
          wide: wide.slice(0, 5).map(name),
          // wider ones that are not inside a box scrolling on its own
          outside: wide.filter((e) => !e.parentElement.closest('.scroll')).slice(0, 5).map(name),
        };
      });
      if (width !== 1024) {
        await direct.screenshot({
          path: path.join(env('RECON_UI_ARTIFACTS'), `recon-${name}-${width}.png`), fullPage: true,
        });
      }
    }
  }

  result.step = 'repair plan';
  await direct.goto(`${base}/recon/repairs/${encodeURIComponent(plan)}`);
  result.plan_summary = (await direct.locator('pre.plan').first().innerText()).trim();
  result.plan_forms = await direct.locator('form, button').count();

  result.ok = true;
  result.step = 'done';
} catch (err) {
  result.error = String(err?.message ?? err).split('\n').slice(0, 6).join('\n');
} finally {
  await context.close();
}
console.log(JSON.stringify(result));
