// The newcomer's path through the console, driven by
// console_graph_browser_test.go:
//   node graph.mjs BASE_URL TOKEN PROJECT_ID SCREENSHOT_DIR FOLDER
// It signs in, drops FOLDER (nested folders of documents) on the
// documents page and waits, without reloading, for every document to be
// parsed and its extraction to end (the jobs page, live); uploads the same
// folder again with the "upload a folder" input (all already uploaded);
// opens the graph from the project page, searches the object the Go test
// names, opens it, reads its provenance quotes and the drawing of its
// neighbours (the page's Cytoscape instance), clicks a neighbour's node,
// and follows a relationship link. It prints a JSON report on stdout.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { openConsole } from "./lib.mjs";

const { base, project, args, page, report, shot, step, signIn, sseOpen, run } = await openConsole();
const [folder] = args;

// tree reads a folder as the entries a drop gives: {name, children} for a
// folder, {name, content} for a file.
function tree(path) {
  return readdirSync(path).sort().map((name) => {
    const p = join(path, name);
    return statSync(p).isDirectory() ? { name, children: tree(p) } : { name, content: readFileSync(p, "utf8") };
  });
}

await run(async () => {
  await signIn();
  await page.click(`a[href="/projects/${project}"]`);
  await page.click(`a[href="/projects/${project}/documents"]`);
  await page.waitForSelector("#upload-folder");
  await sseOpen("#documents");
  await page.evaluate(() => {
    window.notReloaded = true;
    window.sseMessages = 0;
    document.body.addEventListener("htmx:sseMessage", () => { window.sseMessages++; });
  });

  // A dropped folder: script cannot make the browser's directory entries
  // (FileSystemDirectoryEntry), so the drop event carries entries with
  // their interface (isFile, isDirectory, fullPath, file(), and a reader
  // whose readEntries answers one entry per batch, then an empty batch)
  // over real File objects.
  const root = { name: folder.split("/").pop(), children: tree(folder) };
  await page.evaluate((root) => {
    const entry = (node, parent) => {
      const fullPath = parent + "/" + node.name;
      if (!node.children) {
        return {
          isFile: true, isDirectory: false, name: node.name, fullPath,
          file: (ok) => setTimeout(() => ok(new File([node.content], node.name, { type: "text/markdown" })), 0),
        };
      }
      const children = node.children.map((c) => entry(c, fullPath));
      return {
        isFile: false, isDirectory: true, name: node.name, fullPath,
        createReader: () => {
          let next = 0;
          return { readEntries: (ok) => setTimeout(() => ok(children.slice(next, ++next)), 0) };
        },
      };
    };
    const drop = new DragEvent("drop", { bubbles: true, cancelable: true });
    Object.defineProperty(drop, "dataTransfer", {
      value: { items: [{ kind: "file", webkitGetAsEntry: () => entry(root, "") }], files: [] },
    });
    document.querySelector("#upload").dispatchEvent(drop);
  }, root);
  const files = (function count(nodes) {
    return nodes.reduce((n, c) => n + (c.children ? count(c.children) : 1), 0);
  })(root.children);
  await page.waitForFunction((n) => document.querySelectorAll("#upload-progress li[data-state=done]").length === n, files);
  report.dropped = await page.$$eval("#upload-progress li", (items) =>
    items.map((i) => ({ path: i.querySelector("span").textContent, state: i.querySelector(".upload-state").textContent })));
  await page.waitForFunction((n) => document.querySelectorAll("#document-rows [data-status=parsed]").length === n, files);
  await page.waitForFunction((n) => window.sseMessages >= n, files);

  // The same folder by the folder input: every file already uploaded.
  await page.setInputFiles("#upload-folder", folder);
  await page.waitForFunction((n) => document.querySelectorAll("#upload-progress li[data-state=done]").length === 2 * n, files);
  report.folderInput = await page.$$eval("#upload-progress li", (items) =>
    items.slice(items.length / 2).map((i) => ({ path: i.querySelector("span").textContent, state: i.querySelector(".upload-state").textContent })));
  report.documents = await page.$$eval("#document-rows tr", (rows) =>
    rows.map((r) => ({ name: r.querySelector("a").textContent, status: r.querySelector("[data-status]").dataset.status })));
  report.notReloaded = await page.evaluate(() => window.notReloaded === true);
  await shot("graph-documents");

  // Extraction, watched live on the jobs page.
  await page.click(".crumbs a:nth-child(2)");
  await page.click(`a[href="/projects/${project}/jobs"]`);
  await page.waitForSelector("#job-rows");
  await sseOpen("#jobs");
  await page.evaluate(() => { window.jobsNotReloaded = true; });
  await page.waitForFunction((n) => document.querySelectorAll(
    "#job-rows [data-status=completed], #job-rows [data-status=requires_review]").length === n, files, { timeout: 90000 });
  report.jobsNotReloaded = await page.evaluate(() => window.jobsNotReloaded === true);
  report.jobs = await page.$$eval("#job-rows [data-status]", (s) => s.map((e) => e.dataset.status));
  await shot("graph-jobs");

  await page.click(".crumbs a:nth-child(2)");
  await page.waitForSelector("#graph-count");
  report.graphCount = (await page.textContent("#graph-count")).trim();
  await shot("graph-project");

  // The explorer: search the object the Go test names, open it.
  const [objectID, objectName] = (await step("object")).split("\t");
  await page.click(`.sections a[href="/projects/${project}/graph"]`);
  await page.waitForSelector("#objects");
  report.listed = await page.$$eval("#objects tbody tr", (rows) => rows.length);
  await page.fill("#object-search input[name=q]", objectName);
  await page.click("#object-search button");
  await page.waitForSelector(`#object-${objectID}`);
  report.searchURL = new URL(page.url()).search;
  report.found = await page.$$eval("#objects tbody tr a", (a) => a.map((e) => e.textContent));
  await shot("graph-search");
  await page.click(`#object-${objectID} a`);
  await page.waitForSelector("#object-name");
  report.objectURL = new URL(page.url()).pathname;
  report.objectType = (await page.textContent("#object-type")).trim();
  report.provenanceText = await page.$$eval("section", (ss) => ss.filter((s) => s.querySelector("h2")?.textContent === "Provenance")
    .map((s) => s.textContent.replace(/\s+/g, " ").trim()).join(" | "));
  report.quotes = await page.$$eval("#provenance blockquote", (q) => q.map((e) => e.textContent.replace(/\s+/g, " ").trim()));
  report.quoteMarks = await page.$$eval("#provenance mark", (m) => m.map((e) => e.textContent));
  report.sources = await page.$$eval("#provenance a", (a) => a.map((e) => e.getAttribute("href")));

  // The drawing: the page's Cytoscape instance, laid out on a canvas.
  await page.waitForFunction(() => window.graphmillGraph && window.graphmillGraph.nodes().length > 0);
  const drawn = await page.evaluate(() => {
    const cy = window.graphmillGraph;
    return {
      nodes: cy.nodes().map((n) => ({ id: n.id(), label: n.data("label"), center: n.hasClass("center") })),
      edges: cy.edges().length,
      canvases: document.querySelectorAll("#graph-canvas canvas").length,
    };
  });
  report.drawn = drawn;
  report.relationships = await page.$$eval("#relationships tbody tr", (rows) => rows.map((r) => r.id));
  await shot("graph-object");

  // Click a neighbour's node on the canvas: its object's page opens.
  const target = drawn.nodes.find((n) => !n.center);
  const canvas = page.locator("#graph-canvas");
  await canvas.scrollIntoViewIfNeeded();
  // Two frames: the drawing is on screen where it was scrolled to.
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
  const at = await page.evaluate((id) => window.graphmillGraph.$id(id).renderedPosition(), target.id);
  await canvas.click({ position: { x: at.x, y: at.y } });
  await page.waitForURL(`**/graph/objects/${target.id}`);
  report.clicked = { id: target.id, url: new URL(page.url()).pathname, name: (await page.textContent("#object-name")).trim() };
  await shot("graph-neighbour");

  // Follow a relationship by its link (no script needed).
  const link = page.locator("#relationships tbody tr:first-child td:nth-child(3) a");
  const href = await link.getAttribute("href");
  await Promise.all([page.waitForURL(`**${href}`), link.click()]);
  report.followed = { href, url: new URL(page.url()).pathname, name: (await page.textContent("#object-name")).trim() };
});
