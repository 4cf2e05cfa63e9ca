// Measures the status page as Chromium lays it out, for tests/cli/status_layout.rs.
// Usage: node status_layout.js PLAYWRIGHT_CORE CHROMIUM JOBS_JSON
// JOBS_JSON: [{"url": "...", "width": 1280, "height": 800, "screenshot": "path or null"}, ...]
// Prints one JSON array, one entry per job, with what a person would notice: whether the page
// scrolls sideways, and for each pin card whether its status and served model are on screen.
const [playwrightPath, chromiumPath, jobsJson] = process.argv.slice(2);
const { chromium } = require(playwrightPath);

async function measure(page) {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const width = doc.clientWidth;
    const onScreen = (el) => {
      if (!el) return false;
      const r = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      return r.width > 0 && r.height > 0 && r.left >= -0.5 && r.right <= width + 0.5 &&
        style.visibility !== 'hidden' && style.display !== 'none';
    };
    const cards = [...document.querySelectorAll('article.pin')].map((card) => {
      const status = card.querySelector('.head .st');
      const served = [...card.querySelectorAll('.facts div')]
        .find((d) => d.querySelector('dt').textContent === 'Served now');
      const codes = served ? [...served.querySelectorAll('dd code')] : [];
      const what = card.querySelector('.what');
      const marks = [...card.querySelectorAll('.strip a')];
      const hit = (a) => {
        a.scrollIntoView({ block: 'center' });
        const r2 = a.getBoundingClientRect();
        return document.elementFromPoint(r2.left + r2.width / 2, r2.top + r2.height / 2) === a;
      };
      return {
        pin: card.dataset.pin,
        status: status ? status.textContent : null,
        status_visible: onScreen(status),
        served: codes.map((c) => c.getAttribute('title') || c.textContent),
        served_visible: codes.length > 0 && codes.every(onScreen),
        card_width: card.getBoundingClientRect().width,
        findings_width: what ? what.getBoundingClientRect().width : null,
        card_height: card.getBoundingClientRect().height,
        marks: marks.length,
        mark_min_width: Math.min(...marks.map((a) => a.getBoundingClientRect().width)),
        mark_min_height: Math.min(...marks.map((a) => a.getBoundingClientRect().height)),
        marks_clickable: marks.every(hit),
      };
    });
    window.scrollTo(0, 0);
    return { scroll_width: doc.scrollWidth, client_width: width, cards };
  });
}

(async () => {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = [];
  try {
    for (const job of JSON.parse(jobsJson)) {
      const context = await browser.newContext({
        viewport: { width: job.width, height: job.height },
        colorScheme: job.dark ? 'dark' : 'light',
      });
      const page = await context.newPage();
      const answer = await page.goto(job.url, { waitUntil: 'load' });
      const result = await measure(page);
      result.url = job.url;
      result.width = job.width;
      result.status = answer ? answer.status() : null;
      if (job.screenshot) {
        await page.screenshot({ path: job.screenshot, fullPage: false });
      }
      out.push(result);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
