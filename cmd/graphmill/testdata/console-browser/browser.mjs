// The console's browser test, driven by console_browser_test.go:
//   node browser.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR
// It signs in, opens the projects and the project, uploads a document by
// the file input and one by drag and drop and waits, without reloading,
// for both rows to show "parsed", opens a document's chunks, checks that
// script cannot read the session cookie and that the page raised no
// Content-Security-Policy violation, and signs out. It prints a JSON
// report on stdout; the Go test asserts it and the server's state.
import { openConsole } from "./lib.mjs";

const { base, token, project, context, page, report, shot, step, sseOpen, run } = await openConsole();
await run(async () => {
  await page.goto(base + "/");
  report.signinURL = new URL(page.url()).pathname;
  await shot("signin");
  await page.fill("#token", "not-a-token");
  await page.click("button[type=submit]");
  report.badTokenAlert = (await page.textContent(".signin [role=alert]")).trim();
  await page.fill("#token", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("#projects");
  report.afterSigninURL = new URL(page.url()).pathname;
  report.scriptCookies = await page.evaluate(() => document.cookie);
  const cookie = (await context.cookies()).find((c) => c.name === "graphmill_session");
  report.cookie = cookie && { httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, secure: cookie.secure };
  await shot("projects");

  await page.click(`a[href="/projects/${project}"]`);
  await page.waitForSelector("#document-count");
  await shot("project");

  await page.click(`a[href="/projects/${project}/documents"]`);
  await page.waitForSelector("#upload");
  // Wait for the event stream to connect before uploading.
  await sseOpen("#documents");
  await page.evaluate(() => {
    window.notReloaded = true;
    window.sseMessages = 0;
    document.body.addEventListener("htmx:sseMessage", () => { window.sseMessages++; });
  });
  await page.setInputFiles("#upload-files", {
    name: "looms.md", mimeType: "text/markdown",
    buffer: Buffer.from("# Looms\n\nThe Jacquard loom reads punched cards.\n\nIt wove patterns in silk."),
  });
  await page.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(["# Bakery\n\nThe Cobblestone bakery opens at six."], "bakery.md", { type: "text/markdown" }));
    document.querySelector("#upload").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  // The two uploads run at once and may end in either order: wait for both.
  await page.waitForSelector("#upload-progress li:nth-child(1)[data-state=done]");
  await page.waitForSelector("#upload-progress li:nth-child(2)[data-state=done]");
  report.progress = await page.$$eval("#upload-progress progress", (bars) => bars.map((b) => b.value));
  for (const name of ["looms.md", "bakery.md"]) {
    await page.waitForSelector(`#document-rows tr:has(a:text-is("${name}")) [data-status=parsed]`);
  }
  // Both documents' parsing reached the page through the event stream.
  await page.waitForFunction(() => window.sseMessages >= 2);
  report.sseMessages = await page.evaluate(() => window.sseMessages);
  report.notReloaded = await page.evaluate(() => window.notReloaded === true);
  report.rows = await page.$$eval("#document-rows tr", (rows) =>
    rows.map((r) => ({ name: r.querySelector("a").textContent, status: r.querySelector("[data-status]").dataset.status })));
  await shot("documents");

  await page.click('#document-rows a:text-is("looms.md")');
  await page.waitForSelector("#chunks");
  report.chunks = await page.$$eval("#chunks pre", (c) => c.map((e) => e.textContent));
  await shot("document");

  // Jobs: the extraction queue is paused; the Go test has made the
  // bakery job failed and answers the two job ids.
  const [loomsJob, bakeryJob] = (await step("jobs")).split(" ");
  await page.click('.crumbs a:nth-child(2)');
  await page.click(`a[href="/projects/${project}/jobs"]`);
  await page.waitForSelector(`#job-${loomsJob} [data-status=queued]`);
  await sseOpen("#jobs");
  await shot("jobs");
  await page.evaluate(() => { window.jobsNotReloaded = true; });
  await page.click(`#job-${loomsJob} button.cancel`);
  await page.waitForSelector(`#job-${loomsJob} [data-status=cancelled]`);
  await page.click(`#job-${bakeryJob} button.retry`);
  await page.waitForSelector(`#job-${bakeryJob} [data-status=queued]`);
  report.jobActions = await page.$$eval("#job-rows tr", (rows) =>
    rows.map((r) => r.querySelector("[data-status]").dataset.status).sort());
  // The queue resumes: the retried job's end reaches the page by the
  // event stream.
  await step("resume");
  await page.waitForSelector(`#job-${bakeryJob} [data-status=completed]`);
  report.jobsNotReloaded = await page.evaluate(() => window.jobsNotReloaded === true);
  await page.selectOption("#job-filters select[name=status]", "cancelled");
  await page.click("#job-filters button");
  await page.waitForSelector(`#job-${loomsJob}`);
  report.filteredURL = new URL(page.url()).search;
  report.filtered = await page.$$eval("#job-rows tr", (rows) => rows.map((r) => r.id));
  await page.click(`#job-${loomsJob} a`);
  await page.waitForSelector("#job-logs");
  report.jobLog = await page.$$eval("#job-logs tbody tr", (rows) => rows.map((r) => r.textContent));
  await shot("job");

  // Review tasks: the Go test creates a pending one and answers its id.
  const taskID = (await step("tasks")).trim();
  await page.click('.crumbs a:nth-child(2)');
  await page.click(`a[href="/projects/${project}/tasks"]`);
  await page.waitForSelector(`#task-${taskID} [data-status=pending]`);
  await shot("tasks");
  await page.click(`#task-${taskID} button.accept`);
  await page.waitForSelector(`#task-${taskID} [data-status=accepted]`);
  report.taskAccepted = true;

  await page.click('.crumbs a:nth-child(2)');
  await page.click(`a[href="/projects/${project}/search"]`);
  await page.fill("#search-form input[name=q]", "jacquard");
  await page.click("#search-form button");
  await page.waitForSelector("#hits mark");
  report.searchMarks = await page.$$eval("#hits mark", (m) => m.map((e) => e.textContent));
  await shot("search");

  await page.click(".signout button");
  await page.waitForSelector("#token");
  report.afterSignoutURL = new URL(page.url()).pathname;
  await page.goto(base + `/projects/${project}/documents`);
  report.afterSignoutVisit = new URL(page.url()).pathname;
});
