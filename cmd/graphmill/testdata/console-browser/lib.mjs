// Shared by the console's browser scripts (browser.mjs and the others
// beside it), each driven by a Go test through runConsoleScript
// (console_browser_test.go):
//   node SCRIPT.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR [ARGS...]
// A script prints a JSON report on stdout; the Go test asserts it and the
// server's state.
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

// console opens chromium, signs nothing in, and returns what a script
// needs: the page, its report (pages, csp, errors are filled here), shot
// (a full-page screenshot recorded in report.pages), step (asks the Go
// test for a fixture: "step:NAME" on stderr, one line back on stdin),
// signIn (signs in with the token and waits for the projects page), and
// run (runs the script's body, screenshots and dumps the page on failure,
// prints the report).
export async function openConsole() {
  const [base, token, project, shots, ...args] = process.argv.slice(2);
  const lines = createInterface({ input: process.stdin });
  const stdin = lines[Symbol.asyncIterator]();
  const step = async (name) => {
    process.stderr.write(`step:${name}\n`);
    const { value } = await stdin.next();
    return value;
  };
  const report = { pages: [], csp: [], errors: [] };
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox"],
  });
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  page.on("console", (m) => {
    // Failed loads are refused requests the scripts make on purpose (a bad
    // token's 401) and the favicon (404).
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) {
      (/Content Security Policy/i.test(m.text()) ? report.csp : report.errors).push(m.text());
    }
  });
  page.on("pageerror", (e) => report.errors.push(String(e)));
  const shot = async (name) => {
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
    report.pages.push(name);
  };
  const signIn = async () => {
    await page.goto(base + "/");
    await page.fill("#token", token);
    await page.click("button[type=submit]");
    await page.waitForSelector("#projects");
  };
  // sseOpen waits until the element's htmx SSE source is connected and
  // the reload a live list makes when its stream opens has ended (a click
  // during that swap would land on a row being replaced).
  const sseOpen = async (selector) => {
    await page.waitForFunction((sel) => {
      const el = document.querySelector(sel);
      return el && el["htmx-internal-data"] && el["htmx-internal-data"].sseEventSource &&
        el["htmx-internal-data"].sseEventSource.readyState === 1;
    }, selector);
    await page.waitForTimeout(50);
    await page.waitForFunction(() => document.querySelector(".htmx-request, .htmx-settling, .htmx-swapping") === null);
  };
  const run = async (body) => {
    try {
      await body();
    } catch (e) {
      const pages = browser.contexts().flatMap((c) => c.pages());
      if (pages.length > 0) {
        await pages[0].screenshot({ path: `${shots}/failure.png`, fullPage: true });
        process.stderr.write(`at ${pages[0].url()}:\n${await pages[0].content()}\n`);
      }
      process.stderr.write(JSON.stringify(report) + "\n");
      throw e;
    } finally {
      lines.close();
      process.stdin.destroy();
      await browser.close();
    }
    process.stdout.write(JSON.stringify(report));
  };
  return { base, token, project, shots, args, browser, context, page, report, shot, step, signIn, sseOpen, run };
}
