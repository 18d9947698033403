// The console's identity provider sign-in, driven by
// console_auth_browser_test.go:
//   node auth.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR
// The provider runs on another site (localhost) than the console
// (127.0.0.1). The script follows the sign-in page's link to the
// provider, which signs the user in at once and sends the browser back;
// the callback's page moves on to the projects, where the SameSite=Strict
// session cookie must arrive (a redirect from the provider's navigation
// would not carry it). Then the project the Go test made the user a
// member of, its documents with the live stream keeping the last event's
// id in its URL, and sign-out.
import { openConsole } from "./lib.mjs";

const { base, project, context, page, report, shot, step, sseOpen, run } = await openConsole();
await run(async () => {
  await page.goto(base + "/");
  report.signinURL = new URL(page.url()).pathname;
  report.button = (await page.textContent(".signin-oidc a")).trim();
  await shot("signin-oidc");

  const hosts = [];
  page.on("request", (r) => {
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) {
      hosts.push(new URL(r.url()).hostname + new URL(r.url()).pathname);
    }
  });
  await page.click(".signin-oidc a");
  // Signed in: the projects page (none yet) with the sign-out button.
  await page.waitForSelector(".signout button");
  report.navigations = [...hosts];
  report.afterSigninURL = new URL(page.url()).pathname;
  report.scriptCookies = await page.evaluate(() => document.cookie);
  const cookie = (await context.cookies()).find((c) => c.name === "graphmill_session");
  report.cookie = cookie && { httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, secure: cookie.secure };
  await shot("projects-oidc");

  await step("member");
  await page.reload();
  await page.click(`a[href="/projects/${project}"]`);
  await page.waitForSelector("#document-count");
  report.projectURL = new URL(page.url()).pathname;
  await shot("project-oidc");

  // The documents stream keeps the last event's id in its URL, so that
  // a new EventSource (after a refused reconnect) replays from there.
  await page.click(`a[href="/projects/${project}/documents"]`);
  await sseOpen("#documents");
  report.streamURLBefore = await page.getAttribute("#documents", "sse-connect");
  const eventID = await step("upload");
  await page.waitForFunction((id) =>
    document.querySelector("#documents").getAttribute("sse-connect").endsWith("?lastEventId=" + id), eventID);
  report.streamURLAfter = await page.getAttribute("#documents", "sse-connect");

  await page.click(".signout button");
  await page.waitForSelector(".signin-oidc");
  report.afterSignoutURL = new URL(page.url()).pathname;
  await page.goto(base + "/");
  report.afterSignoutVisit = new URL(page.url()).pathname;
});
