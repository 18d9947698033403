// The console's chat, notifications and agent run pages in the browser,
// driven by console_chat_browser_test.go:
//   node chat.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR DOCUMENT_ID AGENT_ID
// The Go test has seeded a parsed document and an agent. The script signs
// in, starts a chat with the agent (chosen in the new chat form), asks a
// question and reads the streamed answer, opens its citation (the cited
// chunk on the document's page), watches a notification arrive in the
// inbox without a reload and marks it read, then starts an agent run
// whose question it answers in the run's page, which follows the run to
// its end live, and changes the agent in its page. It prints a JSON
// report.
import { openConsole } from "./lib.mjs";

const { base, project, args, page, report, shot, step, signIn, sseOpen, run } = await openConsole();
const [documentID, agentID] = args;
await run(async () => {
  await signIn();
  // The layout's badge: loaded after the page, with its own stream.
  await page.waitForSelector("#unread-badge .badge");
  report.badgeBefore = await page.getAttribute("#unread-badge .badge", "data-unread");

  await page.goto(`${base}/projects/${project}`);
  await page.click(`a[href="/projects/${project}/chat"]`);
  await page.waitForSelector("#chat-new");
  await page.fill("#chat-new input[name=title]", "Turbines");
  await page.selectOption("#chat-new select[name=agentId]", agentID);
  await page.click("#chat-new button[type=submit]");
  await page.waitForSelector("#chat-send");
  report.chatTitle = (await page.textContent("#chat-title")).trim();
  report.chatAgent = (await page.textContent("#chat-agent")).trim();
  await shot("chat-new");

  // A turn: the question shows at once, the answer streams into the page
  // (the text grows in a .streaming item) and is replaced by the stored
  // answer with its citations; no reload.
  await page.evaluate(() => { window.chatNotReloaded = true; });
  await page.fill("#chat-send textarea", "How often do quillwort bearings need lubrication?");
  await page.click("#chat-send button[type=submit]");
  await page.waitForSelector("#chat-send[data-state=done]");
  await page.waitForSelector(".chat-assistant .citation");
  report.chatNotReloaded = await page.evaluate(() => window.chatNotReloaded === true);
  report.deltas = Number(await page.getAttribute("#chat-send", "data-deltas"));
  report.answer = (await page.textContent(".chat-assistant .chat-content")).trim();
  report.chatQuestion = (await page.textContent(".chat-user .chat-content")).trim();
  report.markers = await page.$$eval(".chat-assistant a.marker", (as) => as.map((a) => a.getAttribute("href")));
  report.citationHref = await page.getAttribute(".chat-assistant a.citation", "href");
  await shot("chat-session");

  // The marker leads to the citation; the citation to the cited chunk.
  await page.click(".chat-assistant a.marker");
  report.markerTarget = await page.evaluate(() => document.querySelector(":target") && document.querySelector(":target").id);
  await page.click(".chat-assistant a.citation");
  await page.waitForSelector("#chunks");
  report.citationURL = new URL(page.url()).pathname + new URL(page.url()).hash;
  report.citedChunk = await page.evaluate(() => {
    const t = document.querySelector(":target");
    return t ? t.textContent : "";
  });
  await shot("chat-citation");

  // A turn already running: the page says so (the Go test holds the
  // session's turn).
  await page.goBack();
  await page.waitForSelector("#chat-send");
  await step("busy");
  await page.fill("#chat-send textarea", "And the grease?");
  await page.click("#chat-send button[type=submit]");
  await page.waitForSelector("#chat-send[data-state=failed]");
  report.busyFlash = (await page.textContent("#flash")).trim();
  report.busyKept = await page.inputValue("#chat-send textarea");
  await shot("chat-busy");

  // Notifications: one arrives live; the badge counts it; mark it read.
  await page.click("#nav-badge");
  await page.waitForSelector("#inbox");
  await sseOpen("#inbox-live");
  await sseOpen("#nav-badge");
  await page.evaluate(() => { window.inboxNotReloaded = true; });
  await shot("notifications-empty");
  const note = await step("notify");
  await page.waitForSelector(`#notification-${note}[data-read=false]`);
  await page.waitForSelector('#unread-badge .badge[data-unread="1"]');
  report.inboxNotReloaded = await page.evaluate(() => window.inboxNotReloaded === true);
  report.tabs = await page.$$eval("#inbox-tabs a", (as) => as.map((a) => a.textContent.replace(/\s+/g, " ").trim()));
  await shot("notifications");
  await page.click(`#notification-${note} button.mark-read`);
  await page.waitForSelector(`#notification-${note}[data-read=true]`);
  await page.waitForSelector('#unread-badge .badge[data-unread="0"]');
  report.badgeAfter = await page.getAttribute("#unread-badge .badge", "data-unread");
  await page.click("#unread-filter");
  await page.waitForSelector("#unread-filter.current");
  report.unreadList = await page.$$eval("#notifications li", (ls) => ls.length);
  await shot("notifications-read");

  // Agents: the list, the agent, a run started in the page that asks a
  // question, answered in the page; the run's page follows it live.
  await page.goto(`${base}/projects/${project}`);
  await page.click(`a[href="/projects/${project}/agents"]`);
  await page.waitForSelector(`#agent-${agentID}`);
  await shot("agents");
  await page.click(`#agent-${agentID} a`);
  await page.waitForSelector("#agent-start");
  await sseOpen("#agent-runs");
  await shot("agent");
  await page.fill("#agent-input", "Who founded Acme?\nASK: Which name should the founder's record have?\nCALL: graph_create_object {\"type\":\"Person\",\"name\":\"Ada Lovelace\"}");
  await page.click("#agent-start button[type=submit]");
  await page.waitForSelector("#run");
  await sseOpen("#run-live");
  await page.evaluate(() => { window.runNotReloaded = true; });
  await page.waitForSelector("#answer-form");
  report.runURL = new URL(page.url()).pathname;
  report.question = (await page.textContent("#question-text")).trim();
  await shot("agent-run-question");
  await page.fill("#answer-form textarea", "Ada Lovelace");
  await page.click("#answer-form button[type=submit]");
  await page.waitForSelector("#run[data-status=completed]");
  report.runNotReloaded = await page.evaluate(() => window.runNotReloaded === true);
  report.steps = await page.$$eval("#run-steps > li > strong", (ss) => ss.map((s) => s.textContent));
  report.output = (await page.textContent("#run-output")).trim();
  await shot("agent-run");

  // The agent's runs list shows the run's end.
  await page.click(`.crumbs a[href="/projects/${project}/agents/${agentID}"]`);
  await page.waitForSelector("#agent-run-rows [data-status=completed]");
  report.runRows = await page.$$eval("#agent-run-rows tr", (rs) => rs.map((r) => r.id));
  await shot("agent-runs");

  // The agent changed in its page: the form opens with the agent's
  // values; two fields changed, saved (the others as the browser sends
  // them: the textareas with CRLF line ends); the page shows the change.
  await page.click("details.agent-edit > summary");
  await page.waitForSelector("#agent-edit input[name=maxSteps]");
  report.editInstructions = await page.inputValue("#agent-edit textarea[name=instructions]");
  await shot("agent-edit");
  await page.fill("#agent-edit input[name=maxSteps]", "7");
  await page.fill("#agent-edit textarea[name=description]", "finds founders, and more");
  await page.click("#agent-edit button[type=submit]");
  await page.waitForFunction(() => document.querySelector("dl.facts")?.textContent.includes("finds founders, and more"));
  report.agentFacts = await page.$$eval("dl.facts dt", (ds) => ds.map((d) => `${d.textContent}: ${d.nextElementSibling.textContent}`));
  await shot("agent-edited");
});
