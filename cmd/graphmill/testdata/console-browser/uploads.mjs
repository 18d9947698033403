// The console's own script under strain (console_uploads_browser_test.go):
// a folder of many files is uploaded at most four at a time, hidden
// entries (.git, .DS_Store) left out, a 429 tried again after its
// Retry-After; a chat turn whose stream ends with neither done nor error
// is marked failed, not left streaming; a signed-out turn (401 with
// HX-Redirect) goes to the sign-in page.
//   args: FOLDER FILES SESSION
import { openConsole } from "./lib.mjs";

const { base, project, args, page, report, shot, signIn, run } = await openConsole();
const [folder, files, session] = args;

await run(async () => {
  await signIn();

  // Uploads: every POST is held 300 ms (so that they overlap); the first
  // is refused with 429, Retry-After 1. The uploads in flight are counted
  // in the page, from send to readyState 4 (which comes before the load
  // handler that starts the next): Playwright's requestfinished events
  // reach this script after the page has already sent the next request,
  // so counting them here read five at once under load.
  const uploadURL = `${base}/projects/${project}/documents`;
  const isUpload = (r) => r.method() === "POST" && r.url() === uploadURL;
  let refused = false;
  report.posts = 0;
  page.on("request", (r) => {
    if (isUpload(r)) {
      report.posts++;
    }
  });
  await page.addInitScript(() => {
    window.uploadsInflight = 0;
    window.uploadsMaxInflight = 0;
    const open = XMLHttpRequest.prototype.open;
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.open = function (method, url, ...rest) {
      this.countedUpload = method === "POST" && new URL(url, location.href).pathname.endsWith("/documents");
      return open.call(this, method, url, ...rest);
    };
    XMLHttpRequest.prototype.send = function (...args) {
      if (this.countedUpload) {
        window.uploadsInflight++;
        window.uploadsMaxInflight = Math.max(window.uploadsMaxInflight, window.uploadsInflight);
        this.addEventListener("readystatechange", () => {
          if (this.readyState === 4) {
            window.uploadsInflight--;
          }
        });
      }
      return send.apply(this, args);
    };
  });
  await page.route(uploadURL, async (route) => {
    if (route.request().method() !== "POST") {
      return route.continue();
    }
    await new Promise((r) => setTimeout(r, 300));
    if (!refused) {
      refused = true;
      return route.fulfill({
        status: 429, headers: { "Retry-After": "1", "Content-Type": "application/problem+json" },
        body: JSON.stringify({ detail: "too many requests" }),
      });
    }
    return route.continue();
  });
  await page.goto(`${base}/projects/${project}/documents`);
  await page.setInputFiles("#upload-folder", folder);
  report.queued = await page.$$eval("#upload-progress li[data-state=queued]", (l) => l.length);
  await page.waitForSelector("#upload-progress li[data-state=retrying]");
  await page.waitForFunction((n) => document.querySelectorAll("#upload-progress li[data-state=done]").length === n, Number(files));
  report.names = await page.$$eval("#upload-progress li > span:first-child", (l) => l.map((e) => e.textContent).sort());
  report.failed = await page.$$eval("#upload-progress li[data-state=failed]", (l) => l.length);
  report.maxInflight = await page.evaluate(() => window.uploadsMaxInflight);
  await shot("uploads");
  await page.unroute(uploadURL);

  // A chat turn whose stream stops short, then one that is signed out.
  let turns = 0;
  await page.route(`**/stream/projects/${project}/chat/${session}/messages`, async (route) => {
    turns++;
    if (turns === 1) {
      return route.fulfill({
        status: 200, headers: { "Content-Type": "text/event-stream" },
        body: 'event: delta\ndata: {"text":"Half an ans"}\n\n',
      });
    }
    return route.fulfill({ status: 401, headers: { "HX-Redirect": "/signin", "Content-Type": "text/plain" }, body: "signed out" });
  });
  await page.goto(`${base}/projects/${project}/chat/${session}`);
  await page.fill("#chat-send textarea", "Will this be cut?");
  await page.click("#chat-send button[type=submit]");
  await page.waitForSelector("#chat-send[data-state=failed]");
  report.cutReply = await page.$eval("#chat-messages li.chat-assistant:last-child", (li) => ({ classes: li.className, text: li.textContent }));
  report.cutFlash = await page.textContent("#flash");
  await shot("chat-cut");
  await page.fill("#chat-send textarea", "And now?");
  await page.click("#chat-send button[type=submit]");
  await page.waitForURL(`${base}/signin`);
  report.signedOutURL = page.url();
});
