// Graphmill console: the upload zone (drag and drop, a progress bar per
// file). Everything else is htmx. Loaded as a file: the Content-Security-
// Policy allows no inline script.
"use strict";

(function () {
  // At most uploadsAtOnce uploads run at a time (a dropped folder may
  // hold thousands of files); the others wait their turn, listed as
  // queued. A 429 is tried again after its Retry-After.
  var uploadsAtOnce = 4;
  var retriesMax = 5;
  var running = 0;
  var waiting = [];

  function upload(zone, file, path) {
    var list = zone.querySelector("#upload-progress");
    var item = document.createElement("li");
    var name = document.createElement("span");
    name.textContent = path || file.webkitRelativePath || file.name;
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    var state = document.createElement("span");
    state.className = "upload-state";
    state.textContent = "queued";
    item.dataset.state = "queued";
    item.append(name, " ", bar, " ", state);
    list.append(item);
    waiting.push(function () { send(zone, file, item, bar, state, 0); });
    pump();
  }

  function pump() {
    while (running < uploadsAtOnce && waiting.length > 0) {
      running++;
      waiting.shift()();
    }
  }

  function finished() {
    running--;
    pump();
  }

  // retryAfter is a 429's Retry-After in milliseconds (seconds or a date;
  // one second when absent).
  function retryAfter(xhr) {
    var v = xhr.getResponseHeader("Retry-After") || "";
    var n = Number(v);
    if (v !== "" && !isNaN(n)) {
      return Math.max(n, 0) * 1000;
    }
    var at = Date.parse(v);
    return isNaN(at) ? 1000 : Math.max(at - Date.now(), 0);
  }

  function send(zone, file, item, bar, state, tries) {
    state.textContent = "uploading";
    item.dataset.state = "uploading";
    var body = new FormData();
    body.append("file", file, file.name);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", zone.dataset.uploadUrl);
    xhr.setRequestHeader("X-CSRF-Token", zone.dataset.csrf);
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) {
        bar.value = Math.round((e.loaded / e.total) * 100);
      }
    });
    xhr.addEventListener("load", function () {
      if (xhr.status === 200 || xhr.status === 201) {
        bar.value = 100;
        state.textContent = xhr.status === 200 ? "already uploaded" : "uploaded";
        item.dataset.state = "done";
        htmx.trigger("#document-rows", "uploaded");
        finished();
        return;
      }
      if (xhr.status === 401 && xhr.getResponseHeader("HX-Redirect")) {
        window.location.assign(xhr.getResponseHeader("HX-Redirect"));
        return;
      }
      if (xhr.status === 429 && tries < retriesMax) {
        // The slot is kept: the rate limit is for every upload.
        var wait = retryAfter(xhr);
        bar.value = 0;
        state.textContent = "rate limited: trying again in " + Math.ceil(wait / 1000) + " s";
        item.dataset.state = "retrying";
        setTimeout(function () { send(zone, file, item, bar, state, tries + 1); }, wait);
        return;
      }
      var detail = "upload failed (" + xhr.status + ")";
      try {
        detail = JSON.parse(xhr.responseText).detail || detail;
      } catch (e) {
        // not a problem body
      }
      state.textContent = detail;
      item.dataset.state = "failed";
      finished();
    });
    xhr.addEventListener("error", function () {
      state.textContent = "network error";
      item.dataset.state = "failed";
      finished();
    });
    xhr.send(body);
  }

  // hidden is a path with a part starting with "." (.git, .DS_Store):
  // never uploaded from a folder.
  function hidden(path) {
    return path.split("/").some(function (part) { return part.charAt(0) === "."; });
  }

  function setup(zone) {
    var input = zone.querySelector("input[type=file]");
    input.addEventListener("change", function () {
      Array.prototype.forEach.call(input.files, function (f) { upload(zone, f); });
      input.value = "";
    });
    zone.addEventListener("dragover", function (e) {
      e.preventDefault();
      zone.classList.add("dragging");
    });
    zone.addEventListener("dragleave", function () {
      zone.classList.remove("dragging");
    });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      zone.classList.remove("dragging");
      dropped(zone, e.dataTransfer);
    });
    var folder = zone.querySelector("#upload-folder");
    if (folder) {
      folder.addEventListener("change", function () {
        Array.prototype.forEach.call(folder.files, function (f) {
          if (!hidden(f.webkitRelativePath || f.name)) {
            upload(zone, f);
          }
        });
        folder.value = "";
      });
    }
  }

  // dropped uploads what was dropped: files, and every file of dropped
  // folders, nested ones too (the entries API), each with its path.
  function dropped(zone, dt) {
    var entries = [];
    if (dt.items) {
      Array.prototype.forEach.call(dt.items, function (item) {
        var entry = item.kind === "file" && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
        if (entry) {
          entries.push(entry);
        }
      });
    }
    if (entries.length === 0) {
      Array.prototype.forEach.call(dt.files, function (f) { upload(zone, f); });
      return;
    }
    entries.forEach(function (entry) { walk(zone, entry); });
  }

  // walk uploads a file entry, or every file under a folder entry.
  function walk(zone, entry) {
    if (entry.name.charAt(0) === ".") {
      return; // a hidden file or folder (.git, .DS_Store)
    }
    if (entry.isFile) {
      entry.file(function (f) {
        upload(zone, f, entry.fullPath.replace(/^\//, ""));
      }, function (err) { failed(zone, entry.fullPath, err); });
      return;
    }
    if (!entry.isDirectory) {
      return;
    }
    var reader = entry.createReader();
    // readEntries answers in batches until an empty one.
    var next = function () {
      reader.readEntries(function (batch) {
        if (batch.length === 0) {
          return;
        }
        batch.forEach(function (child) { walk(zone, child); });
        next();
      }, function (err) { failed(zone, entry.fullPath, err); });
    };
    next();
  }

  function failed(zone, path, err) {
    var item = document.createElement("li");
    item.dataset.state = "failed";
    item.textContent = path + ": " + (err && err.message ? err.message : "cannot be read");
    zone.querySelector("#upload-progress").append(item);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".dropzone").forEach(setup);
  });

  // A refused htmx action (cancel, retry): show the server's message.
  document.addEventListener("htmx:responseError", function (e) {
    var flash = document.getElementById("flash");
    if (flash) {
      flash.textContent = e.detail.xhr.responseText || ("request failed (" + e.detail.xhr.status + ")");
      flash.hidden = false;
    }
  });
})();

// Graph explorer (graph.templ): draws an object and its neighbours with
// Cytoscape.js from the elements in the canvas's data-elements; a click
// on a node opens that object. The drawing is window.graphmillGraph.
(function () {
  // Cytoscape adds an inline <style> unless an element with this id
  // exists; the strict CSP refuses inline styles, so the page's own
  // stylesheet carries that rule (console.css) and this marker stops it.
  var marker = "__________cytoscape_stylesheet";

  document.addEventListener("DOMContentLoaded", function () {
    var canvas = document.getElementById("graph-canvas");
    if (!canvas || typeof cytoscape === "undefined") {
      return;
    }
    if (!document.getElementById(marker)) {
      var m = document.createElement("meta");
      m.id = marker;
      document.head.append(m);
    }
    var elements = JSON.parse(canvas.dataset.elements || "[]");
    var cy = cytoscape({
      container: canvas,
      elements: elements,
      wheelSensitivity: 0.3,
      style: [
        { selector: "node", style: {
          "label": "data(label)", "background-color": "#7a9cc6", "color": "#1d2329",
          "font-size": 11, "text-valign": "bottom", "text-margin-y": 4, "width": 22, "height": 22,
        } },
        { selector: "node.center", style: { "background-color": "#2457a6", "width": 32, "height": 32, "font-weight": "bold" } },
        { selector: "edge", style: {
          "label": "data(label)", "font-size": 9, "color": "#5b6670", "width": 1.5, "line-color": "#b5c0cb",
          "target-arrow-color": "#b5c0cb", "target-arrow-shape": "triangle", "curve-style": "bezier",
          "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 1,
        } },
      ],
      layout: { name: "concentric", concentric: function (n) { return n.hasClass("center") ? 2 : 1; },
        levelWidth: function () { return 1; }, minNodeSpacing: 40, animate: false },
    });
    cy.on("tap", "node", function (e) {
      var url = e.target.data("url");
      if (url && !e.target.hasClass("center")) {
        window.location.assign(url);
      }
    });
    window.graphmillGraph = cy;
  });
})();

// Chat: the send form posts the question and reads the reply's events
// from the response as they come (event: delta, done or error; data:
// JSON): the text grows in the page, then the stored answer (with its
// citation links, rendered by the server) takes its place. A refused turn
// (one already running, no model) shows the server's message.
(function () {
  function item(list, role, text) {
    var li = document.createElement("li");
    li.className = "chat-message chat-" + role;
    var div = document.createElement("div");
    div.className = "chat-content";
    div.textContent = text;
    li.append(div);
    list.append(li);
    return li;
  }

  function flash(text) {
    var el = document.getElementById("flash");
    if (el) {
      el.textContent = text;
      el.hidden = false;
    }
  }

  function frames(buffer, onEvent) {
    var i;
    while ((i = buffer.indexOf("\n\n")) >= 0) {
      var frame = buffer.slice(0, i);
      buffer = buffer.slice(i + 2);
      var name = "message";
      var data = "";
      frame.split("\n").forEach(function (line) {
        if (line.indexOf("event: ") === 0) {
          name = line.slice(7);
        } else if (line.indexOf("data: ") === 0) {
          data += line.slice(6);
        }
      });
      onEvent(name, data ? JSON.parse(data) : {});
    }
    return buffer;
  }

  async function send(form) {
    var list = document.getElementById("chat-messages");
    var box = form.querySelector("textarea");
    var button = form.querySelector("button");
    var content = box.value.trim();
    if (content === "") {
      return;
    }
    document.getElementById("flash").hidden = true;
    button.disabled = true;
    form.dataset.state = "streaming";
    form.dataset.deltas = "0";
    var question = item(list, "user", content);
    var reply = null;
    var failed = false;
    try {
      var res = await fetch(form.dataset.url, {
        method: "POST",
        headers: {
          "X-CSRF-Token": form.dataset.csrf,
          "Content-Type": "application/x-www-form-urlencoded",
          "Accept": "text/event-stream",
          "HX-Request": "true",
        },
        body: new URLSearchParams({ content: content }),
      });
      if (res.status === 401 && res.headers.get("HX-Redirect")) {
        // Signed out: to the sign-in page, as htmx does.
        window.location.assign(res.headers.get("HX-Redirect"));
        return;
      }
      if (!res.ok) {
        failed = true;
        question.remove();
        flash(await res.text() || ("request failed (" + res.status + ")"));
        return;
      }
      box.value = "";
      reply = item(list, "assistant", "");
      reply.classList.add("streaming");
      var text = reply.querySelector(".chat-content");
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buffer = "";
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) {
          break;
        }
        buffer = frames(buffer + decoder.decode(chunk.value, { stream: true }), function (name, data) {
          if (name === "delta") {
            text.textContent += data.text;
            form.dataset.deltas = String(Number(form.dataset.deltas || 0) + 1);
          } else if (name === "done") {
            reply.insertAdjacentHTML("afterend", data.html);
            reply.remove();
            reply = null;
          } else if (name === "error") {
            failed = true;
            reply.classList.remove("streaming");
            reply.classList.add("failed");
            reply = null;
            flash(data.message);
          }
        });
      }
      if (reply) {
        // The stream ended with neither done nor error (the server went
        // away): the reply is not left "streaming".
        failed = true;
        reply.classList.remove("streaming");
        reply.classList.add("failed");
        flash("the answer was cut off; reload the page to see what was kept");
      }
    } catch (e) {
      failed = true;
      flash("network error: " + e);
    } finally {
      button.disabled = false;
      form.dataset.state = failed ? "failed" : "done";
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form.chat-send").forEach(function (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        send(form);
      });
    });
  });
})();

// auth/streams: a stream resumes where it was. The browser's own
// reconnect (a dropped connection) sends Last-Event-ID; but after a
// refused reconnect (a proxy's 502 while the server restarts) the SSE
// extension opens a new EventSource, which sends none. Keeping the last
// event's id in the stream's URL (lastEventId, read by the API's stream)
// makes that one replay what the page missed too.
document.addEventListener("htmx:sseMessage", function (e) {
  var id = e.detail && e.detail.lastEventId;
  var source = e.target.closest && e.target.closest("[sse-connect]");
  if (!id || !source) {
    return;
  }
  var url = new URL(source.getAttribute("sse-connect"), window.location.href);
  url.searchParams.set("lastEventId", id);
  source.setAttribute("sse-connect", url.pathname + url.search);
});
