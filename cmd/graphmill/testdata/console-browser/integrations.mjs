// The console's MCP server, integration and discovery pages in the
// browser, driven by console_integrations_browser_test.go:
//   node integrations.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR MCP_URL MCP_SECRET
// It adds the test's MCP server (a secret header) and refreshes its
// tools; adds an integration of the test's notes connector and runs a
// sync that the page sees complete through the event stream; uploads a
// document, starts a discovery on it and watches it complete live, then
// finalizes it into a new template pack. It prints a JSON report on
// stdout; the Go test asserts it and the server's state.
import { openConsole } from "./lib.mjs";

const { base, project, args, page, report, shot, step, signIn, sseOpen, run } = await openConsole();
const [mcpURL, mcpSecret] = args;
const P = `${base}/projects/${project}`;

// watchReloads marks the page: a full reload drops the mark.
const watchReloads = () => page.evaluate(() => { window.notReloaded = true; });
const notReloaded = () => page.evaluate(() => window.notReloaded === true);

await run(async () => {
  await signIn();
  await page.goto(P);
  report.sections = await page.$$eval(".sections a", (as) => as.map((a) => a.textContent));

  // MCP servers: add the test's server with its secret header.
  await page.click(`a[href="/projects/${project}/mcp"]`);
  await page.waitForSelector("#mcp-add");
  await page.fill("#mcp-add input[name=name]", "notes");
  await page.selectOption("#mcp-add select[name=type]", "http");
  await page.fill("#mcp-add input[name=url]", mcpURL);
  await page.fill("#mcp-add textarea[name=headers]", `Authorization: ${mcpSecret}`);
  await page.click("#mcp-add button[type=submit]");
  await page.waitForSelector("#mcp-sync");
  report.mcpServerPath = new URL(page.url()).pathname;
  report.mcpSecretShown = (await page.content()).includes(mcpSecret);
  await page.click("#mcp-sync");
  await page.waitForSelector("#mcp-synced");
  report.mcpSynced = (await page.textContent("#mcp-synced")).trim();
  report.mcpTools = await page.$$eval("#mcp-tool-list tr[data-tool]", (rows) => rows.map((r) => r.dataset.tool));
  await page.click("#mcp-inspect");
  await page.waitForSelector("#mcp-live-tools li");
  report.mcpLive = await page.$$eval("#mcp-live-tools code", (cs) => cs.map((c) => c.textContent));
  await page.click('#mcp-tool-list tr[data-tool=add] button.toggle');
  await page.waitForSelector('#mcp-tool-list tr[data-tool=add] [data-status=disabled]');
  await shot("mcp-server");
  await page.goto(`${P}/mcp`);
  report.mcpServers = await page.$$eval("#mcp-servers tbody tr td:first-child a", (as) => as.map((a) => a.textContent));
  report.mcpListSecretShown = (await page.content()).includes(mcpSecret);
  await shot("mcp-servers");

  // Integrations: the notes connector, with a write-only secret.
  await page.goto(`${P}/integrations`);
  await page.click('#available a[href$="provider=notes"]');
  await page.waitForSelector("#integration-add");
  await page.fill("#integration-add input[name=name]", "kb");
  await page.fill("#integration-add input[name=display_name]", "Knowledge");
  await page.fill('#integration-add input[name="config.endpoint"]', "https://notes.example.com");
  await page.fill('#integration-add input[name="config.api_key"]', "notes-secret-5555");
  await shot("integration-new");
  await page.click("#integration-add button[type=submit]");
  await page.waitForSelector("#sync-now");
  report.integrationSecretShown = (await page.content()).includes("notes-secret-5555");
  await sseOpen("#syncs");
  await watchReloads();
  // The sync queue is paused: the sync shows pending, then completes
  // live once the Go test resumes the queue.
  await page.click("#sync-now");
  await page.waitForSelector("#sync-rows [data-status=pending]");
  await step("resume-sync");
  await page.waitForSelector("#sync-rows [data-status=completed]");
  report.syncNotReloaded = await notReloaded();
  report.syncRow = (await page.textContent("#sync-rows tr")).replace(/\s+/g, " ").trim();
  await shot("integration");
  await page.click("#sync-rows a");
  await page.waitForSelector("#sync-logs");
  report.syncLog = await page.$$eval("#sync-logs tbody tr td:nth-child(3)", (cs) => cs.map((c) => c.textContent));
  await shot("sync");
  await page.goto(`${P}/integrations`);
  report.integrations = await page.$$eval("#integrations tbody tr", (rows) => rows.map((r) => r.id));
  await shot("integrations");

  // Discovery: a document uploaded here, then a job on it.
  await page.goto(`${P}/documents`);
  await sseOpen("#documents");
  await page.setInputFiles("#upload-files", {
    name: "team.md", mimeType: "text/markdown",
    buffer: Buffer.from("# Team\n\nAda Lovelace works at Analytical Engines Ltd in London. " +
      "Charles Babbage founded Analytical Engines Ltd. Ada Lovelace wrote the first program for the Analytical Engine."),
  });
  await page.waitForSelector('#document-rows tr:has(a:text-is("team.md")) [data-status=parsed]');
  await step("embedded");
  await page.goto(`${P}/discovery`);
  await page.click("#discovery-new");
  await page.waitForSelector("#discovery-start");
  await page.check('#discovery-documents tr:has(label:text-is("team.md")) input[type=checkbox]');
  await page.fill("#discovery-start input[name=max_iterations]", "1");
  await shot("discovery-new");
  await page.click("#discovery-start button[type=submit]");
  await page.waitForSelector("#discovery-live[data-status=pending]");
  report.discoveryPath = new URL(page.url()).pathname;
  await sseOpen("#discovery-job");
  await watchReloads();
  await step("resume-discovery");
  await page.waitForSelector("#discovery-live[data-status=completed]", { timeout: 60000 });
  report.discoveryNotReloaded = await notReloaded();
  report.types = await page.$$eval("#discovered-types input[name=type]", (is) => is.map((i) => i.value));
  await shot("discovery-job");
  await page.fill("#discovery-finalize input[name=packName]", "Team types");
  await page.click("#discovery-finalize button[type=submit]");
  await page.waitForSelector("#finalized");
  report.finalized = (await page.textContent("#finalized")).trim();
  await shot("discovery-finalized");
  await page.goto(`${P}/discovery`);
  report.discoveryRows = await page.$$eval("#discovery-rows tr [data-status]", (ss) => ss.map((s) => s.dataset.status));
  await shot("discovery");
});
