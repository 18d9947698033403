// Replays a terminal's output (the bytes a program wrote to a
// pseudo-terminal) in xterm.js, in Debian's chromium through
// playwright-core, and saves the screen as a PNG.
// Usage: node terminal.mjs OUTPUT_BYTES COLUMNS ROWS PNG
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const [input, cols, rows, png] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const xtermJS = require.resolve('@xterm/xterm/lib/xterm.js');
const xtermCSS = require.resolve('@xterm/xterm/css/xterm.css');
const data = readFileSync(input).toString('base64');

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ deviceScaleFactor: 1 });
  await page.setContent('<!doctype html><html><body style="margin:0;background:#1e1e1e"><div id="t" style="display:inline-block;padding:12px"></div></body></html>');
  await page.addStyleTag({ path: xtermCSS });
  await page.addScriptTag({ path: xtermJS });
  await page.evaluate(async ({ data, cols, rows }) => {
    const term = new window.Terminal({
      cols, rows, convertEol: true, cursorBlink: false, cursorStyle: 'bar', fontSize: 14,
      fontFamily: 'DejaVu Sans Mono, monospace', theme: { background: '#1e1e1e', foreground: '#d4d4d4' },
    });
    term.open(document.getElementById('t'));
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    await new Promise((resolve) => term.write(bytes, resolve));
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  }, { data, cols: Number(cols), rows: Number(rows) });
  await page.locator('#t').screenshot({ path: png });
} finally {
  await browser.close();
}
