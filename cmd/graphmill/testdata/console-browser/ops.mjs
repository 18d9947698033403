// The superadmin pages' browser test, driven by console_ops_browser_test.go:
//   node ops.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR
// Signed in as the superadmin, it opens the queues, watches a sync job go
// pending (the sync queue's word for queued) -> completed without
// reloading (the sync queue announces no start) (the Go test resumes the queue, then lets the feed
// answer), cancels another sync job, retries a failed parsing job with
// the bulk action, opens the sync job's log, creates a user and mints a
// token for them, and opens the organizations and the audit log. It
// prints a JSON report on stdout; the Go test asserts it and the
// server's state.
import { openConsole } from "./lib.mjs";

const { base, page, report, shot, step, signIn, sseOpen, run } = await openConsole();
await run(async () => {
  const [liveJob, spareJob, parseJob] = (await step("fixtures")).split(" ");
  await signIn();
  await page.click("#nav-admin");
  await page.waitForSelector("#queues");
  report.syncQueueState = await page.$eval("#queue-integration_sync .queue-state [data-status]", (e) => e.dataset.status);
  await shot("queues");

  await page.click('#queue-integration_sync a[href="/admin/queues/integration_sync"]');
  await page.waitForSelector(`#qjob-${liveJob}[data-status=pending]`);
  await page.waitForSelector(`#qjob-${spareJob}[data-status=pending]`);
  await sseOpen("#queue-jobs");
  // Every status the live job's row shows, in order, and no reload.
  await page.evaluate((id) => {
    window.notReloaded = true;
    window.seen = ["pending"];
    document.body.addEventListener("htmx:afterSwap", () => {
      const row = document.getElementById("qjob-" + id);
      if (row && window.seen[window.seen.length - 1] !== row.dataset.status) {
        window.seen.push(row.dataset.status);
      }
    });
  }, liveJob);
  await shot("queue");

  await page.click(`#qjob-${spareJob} button.cancel`);
  await page.waitForSelector(`#qjob-${spareJob}[data-status=cancelled]`);
  report.cancelMessage = (await page.textContent("#ops-message")).trim();

  // The sync queue announces no job.started (its jobs' starts are no
  // wider than their ends, and it publishes no job.completed): the row
  // stays pending while the job runs, and shows its end live.
  await step("resume");
  await step("running");
  await shot("queue-running");
  await step("release");
  await page.waitForSelector(`#qjob-${liveJob}[data-status=completed]`);
  report.seen = await page.evaluate(() => window.seen);
  report.notReloaded = await page.evaluate(() => window.notReloaded === true);
  await shot("queue-completed");

  await page.click(`#qjob-${liveJob} a[href$="/jobs/${liveJob}"]`);
  await page.waitForSelector("#job-logs");
  report.jobLog = await page.$$eval("#job-logs tbody tr", (rows) => rows.map((r) => r.textContent));
  await shot("queue-job");

  await page.goto(base + "/admin/queues/document_parsing?status=failed");
  await page.waitForSelector(`#qjob-${parseJob}[data-status=failed]`);
  await shot("queue-parsing");
  await page.check(`#qjob-${parseJob} input[name=ids]`);
  await page.click("#queue-bulk button.bulk-retry");
  await page.waitForFunction(() => document.getElementById("ops-message").textContent.includes("retried"));
  report.retryMessage = (await page.textContent("#ops-message")).trim();

  await page.click('.admin-nav a[href="/admin/users"]');
  await page.waitForSelector("#users");
  await shot("users");
  await page.click("details.create summary");
  await page.fill("#user-create input[name=primaryEmail]", "grace@example.com");
  await page.fill("#user-create input[name=displayName]", "Grace Hopper");
  await page.click("#user-create button");
  await page.waitForSelector("#ops-message");
  report.createMessage = (await page.textContent("#ops-message")).trim();
  const row = 'tr:has(td:text-is("grace@example.com"))';
  await page.click(`${row} details summary`);
  await page.fill(`${row} input[name=name]`, "grace-ci");
  await page.selectOption(`${row} select[name=scopes]`, ["admin:read", "documents:read"]);
  await page.click(`${row} form.mint button`);
  await page.waitForSelector("#minted-token");
  report.token = (await page.textContent("#minted-token")).trim();
  await shot("users-token");

  await page.click('.admin-nav a[href="/admin/organizations"]');
  await page.waitForSelector("#organizations");
  report.orgs = await page.$$eval("#organizations tbody tr td:first-child", (c) => c.map((e) => e.textContent));
  await shot("organizations");

  await page.click('.admin-nav a[href="/admin/audit"]');
  await page.waitForSelector("#audit");
  report.audit = await page.$$eval("#audit tbody tr", (rows) => rows.map((r) => r.dataset.action));
  await page.selectOption("#audit-filters select[name=action]", "sync_jobs.cancel");
  await page.click("#audit-filters button");
  await page.waitForURL(/action=sync_jobs.cancel/);
  report.auditFiltered = await page.$$eval("#audit tbody tr", (rows) => rows.map((r) => r.dataset.action));
  await shot("audit");
});
