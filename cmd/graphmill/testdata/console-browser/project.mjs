// The project administration pages in the browser, driven by
// console_project_browser_test.go:
//   node project.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR JOB_ID SECRET
// It signs in, adds a member (the user the Go test makes), creates a
// project token (shown once: not on the next visit) and revokes it, sets
// the project's key-ai policy with an API key (never in the page after),
// opens the usage charts after an extraction, the extraction monitoring
// and the job's LLM calls with a payload unfolded. Screenshots of each.
import { openConsole } from "./lib.mjs";

const { base, project, args, page, report, shot, step, signIn, run } = await openConsole();
const [job, secret] = args;
const projectURL = `${base}/projects/${project}`;

await run(async () => {
  await signIn();
  await page.goto(projectURL);
  await page.waitForSelector(`a[href="/projects/${project}/members"]`);
  await shot("project");

  // Members: add the user the Go test made, as an editor.
  await page.click(`a[href="/projects/${project}/members"]`);
  await page.waitForSelector("#members");
  const user = await step("user");
  // A user id that names no one: the form comes back as typed, with why.
  const nobody = "0190a0a0-0000-7000-8000-000000000000";
  await page.fill("#add-member input[name=userId]", nobody);
  await page.selectOption("#add-member select[name=role]", "editor");
  await page.click("#add-member button[type=submit]");
  await page.waitForSelector("#problem");
  report.memberProblem = (await page.textContent("#problem")).trim();
  report.memberKept = [
    await page.inputValue("#add-member input[name=userId]"),
    await page.inputValue("#add-member select[name=role]"),
  ];
  await page.fill("#add-member input[name=userId]", user);
  await page.click("#add-member button[type=submit]");
  await page.waitForSelector(`#member-${user}[data-role=editor]`);
  report.memberNotice = (await page.textContent("#notice")).trim();
  await shot("members");

  // Tokens: create one (shown once), see it gone on the next visit, revoke.
  await page.goto(`${projectURL}/tokens`);
  await page.fill("#create-token input[name=name]", "browser");
  await page.check('#create-token input[name=scope][value="documents:read"]');
  await page.click("#create-token button[type=submit]");
  await page.waitForSelector("#new-token-value");
  report.token = await page.inputValue("#new-token-value");
  await shot("token-created");
  await page.goto(`${projectURL}/tokens`);
  await page.waitForSelector("#tokens tbody tr");
  report.tokenShownAgain = (await page.content()).includes(report.token);
  report.newTokenBoxAgain = (await page.$("#new-token")) !== null;
  await page.click("#tokens tbody tr button.revoke");
  await page.waitForSelector("#notice");
  report.revokeNotice = (await page.textContent("#notice")).trim();
  report.tokenRowsAfterRevoke = await page.$$eval("#tokens tbody tr", (rows) => rows.length);
  await shot("tokens");

  // Providers: a project key-ai key, write-only.
  await page.goto(`${projectURL}/providers`);
  await page.selectOption("#policy-form-key-ai select[name=policy]", "project");
  await page.fill("#policy-form-key-ai input[name=apiKey]", secret);
  await page.click("#policy-form-key-ai button[type=submit]");
  await page.waitForSelector("#notice");
  report.policyNotice = (await page.textContent("#notice")).trim();
  report.policy = await page.getAttribute("#policy-key-ai", "data-policy");
  const secretIn = async () => (await page.content()).includes(secret) ||
    (await page.$$eval("input", (inputs) => inputs.map((i) => i.value))).includes(secret);
  report.secretAfterSave = await secretIn();
  await page.goto(`${projectURL}/providers`);
  await page.waitForSelector("#policies");
  report.secretAfterVisit = await secretIn();
  await shot("providers");

  // Usage after the extraction: a chart with a bar for today.
  await page.goto(`${projectURL}/usage`);
  await page.waitForSelector("#tokens-chart svg rect.bar", { state: "attached" });
  report.usageBars = await page.$$eval("#tokens-chart rect.bar", (bars) => bars.length);
  report.usageNonEmptyBars = await page.$$eval("#tokens-chart rect.bar", (bars) => bars.filter((b) => Number(b.getAttribute("height")) > 0).length);
  report.usageRows = await page.$$eval("#usage tbody tr", (rows) => rows.map((r) => r.textContent.trim()));
  await shot("usage");

  // Extraction monitoring, then the job's LLM calls with a payload open.
  await page.goto(`${projectURL}/monitoring`);
  await page.waitForSelector(`#monitored-${job}`);
  await shot("monitoring");
  await page.goto(`${projectURL}/jobs/${job}`);
  await page.click("#job-llm-calls");
  await page.waitForSelector("#llm-calls .call");
  report.calls = await page.$$eval("#llm-calls .call", (calls) => calls.length);
  report.requestHidden = !(await page.isVisible("#llm-calls .call details.request pre"));
  await page.click("#llm-calls .call details.request summary");
  report.requestShown = await page.isVisible("#llm-calls .call details.request pre");
  report.request = (await page.textContent("#llm-calls .call details.request pre")).slice(0, 2000);
  await shot("llm-calls");
});
