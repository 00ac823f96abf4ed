// The review screen: the document's pages with the words behind each field outlined, the
// fields with the machine's confidence, the failed cross-checks; accept, or correct fields.
// A decision names the version it was based on: if someone else decided first, the server
// answers 409 and the screen says so (and shows what they decided).
"use strict";

(function () {
  const id = document.body.dataset.task;
  const indicator = document.getElementById("live");
  const message = document.getElementById("message");
  const fieldsBody = document.querySelector("#fields tbody");
  const sheets = document.getElementById("sheets");
  const formEl = document.getElementById("review-form");
  let current = null; // the review as last read

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
    return node;
  }
  function when(iso) { return iso ? new Date(iso).toLocaleString() : "—"; }
  function shown(value) { return value == null ? "" : String(value); }
  function say(text, kind) { message.textContent = text; message.dataset.kind = kind || "info"; }

  function renderSheets(data) {
    const pages = (data.document && data.document.pages) || [];
    if (!pages.length) return;
    sheets.replaceChildren(...pages.map((p) => {
      const sheet = el("div", { class: "sheet", "data-page": String(p.number) },
        el("img", { src: `/api/tasks/${id}/pages/${p.number}.png`, alt: `page ${p.number}` }));
      for (const f of data.fields) {
        for (const b of f.boxes.filter((b) => b.page === p.number)) {
          const box = el("div", { class: "box", "data-field": f.field, title: f.field });
          // Widths through the CSSOM: the page's policy allows no inline style attribute.
          box.style.left = `${(b.x0 / p.width) * 100}%`;
          box.style.top = `${(b.y0 / p.height) * 100}%`;
          box.style.width = `${((b.x1 - b.x0) / p.width) * 100}%`;
          box.style.height = `${((b.y1 - b.y0) / p.height) * 100}%`;
          sheet.append(box);
        }
      }
      return sheet;
    }));
  }

  function highlight(field, on) {
    for (const box of sheets.querySelectorAll(".box")) {
      if (box.dataset.field === field) box.classList.toggle("focus", on);
    }
  }

  function renderFields(data) {
    const pendingReview = data.review.status === "pending";
    fieldsBody.replaceChildren(...data.fields.map((f) => {
      const input = el("input", { name: f.field, "data-original": shown(f.value), "aria-label": f.field });
      input.value = shown(f.value);
      input.disabled = !pendingReview;
      input.addEventListener("focus", () => highlight(f.field, true));
      input.addEventListener("blur", () => highlight(f.field, false));
      const low = f.confidence != null && f.confidence < data.review.review_below;
      const located = f.boxes.length ? "" : " (not found on the page)";
      return el("tr", { "data-field": f.field, class: low ? "low" : "" },
        el("th", { scope: "row" }, f.field),
        el("td", {}, input),
        el("td", { class: "num", title: `machine's confidence${located}` },
          f.confidence == null ? "—" : f.confidence.toFixed(2)));
    }));
    const checks = data.checks.map((c) => el("li", {}, c));
    document.getElementById("checks").replaceChildren(...(checks.length ? checks : [el("li", { class: "empty" }, "none")]));
    document.getElementById("accept").disabled = !pendingReview;
    document.getElementById("correct").disabled = !pendingReview;
  }

  function renderFacts(data) {
    const r = data.review;
    const badge = document.getElementById("review-status");
    badge.textContent = r.status;
    badge.className = `badge r-${r.status}`;
    const facts = [
      ["Agent", r.agent], ["Tenant", r.tenant || "—"],
      ["Confidence", `${r.confidence.toFixed(2)} (below ${r.review_below})`],
      ["Version", String(r.version)], ["Waiting since", when(r.created_at)],
    ];
    if (r.reviewed_at) facts.push(["Reviewed", `${r.status} by ${r.reviewed_by}, ${when(r.reviewed_at)}`]);
    document.getElementById("review-facts").replaceChildren(
      ...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  }

  function renderVersions(data) {
    const items = data.versions.map((v) => {
      const changes = Object.entries(v.corrections || {}).map(([field, c]) =>
        el("li", {}, el("code", {}, field), `: ${shown(c.from) || "(none)"} → ${shown(c.to) || "(none)"}`));
      return el("li", { "data-version": String(v.version) },
        `version ${v.version}: ${v.action === "machine" ? "the machine's" : `${v.action} by ${v.made_by}`}, ${when(v.made_at)}`,
        changes.length ? el("ul", {}, ...changes) : "");
    });
    const r = data.review;
    if (r.status === "accepted") items.push(el("li", {}, `accepted by ${r.reviewed_by}, ${when(r.reviewed_at)}`));
    document.getElementById("versions").replaceChildren(
      ...(items.length ? items : [el("li", { class: "empty" }, "version 1: the machine's, not reviewed yet")]));
  }

  async function load() {
    const response = await fetch(`/api/tasks/${id}/review`, { headers: { accept: "application/json" } });
    const data = await response.json();
    if (!response.ok) { say(data.error ? data.error.message : `error ${response.status}`, "error"); return; }
    const first = current === null;
    current = data;
    renderFacts(data);
    if (first) renderSheets(data);
    renderFields(data);
    renderVersions(data);
  }

  function corrections() {
    const out = {};
    for (const input of fieldsBody.querySelectorAll("input")) {
      if (input.value !== input.dataset.original) out[input.name] = input.value.trim() === "" ? null : input.value.trim();
    }
    return out;
  }

  // While this page's own decision is on its way (and its answer being shown), a review
  // event is its own echo, not news: the answer says what happened.
  let deciding = false;

  async function decide(action) {
    if (deciding) return;
    deciding = true;
    try { await send(action); } finally { deciding = false; }
  }

  async function send(action) {
    const changes = action === "correct" ? corrections() : {};
    if (action === "correct" && !Object.keys(changes).length) { say("Nothing was changed: accept instead, or edit a field.", "error"); return; }
    const response = await fetch(`/api/tasks/${id}/review`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ action, version: current.review.version, corrections: changes }),
    });
    const data = await response.json();
    if (response.ok) {
      const n = Object.keys(data.changes).length;
      say(action === "accept" ? "Accepted." : `Saved: ${n} field${n === 1 ? "" : "s"} corrected (version ${data.version}).`, "ok");
      await load();
      return;
    }
    const text = data.error ? data.error.message : `error ${response.status}`;
    say(response.status === 409 ? `Conflict: ${text}` : text, "error");
    if (response.status === 409) {
      const kept = corrections();
      await load(); // show what the other reviewer decided
      say(`Conflict: ${text}`, "error");
      for (const [field, value] of Object.entries(kept)) {
        const input = fieldsBody.querySelector(`input[name="${CSS.escape(field)}"]`);
        if (input) input.dataset.unsaved = shown(value);
      }
    }
  }

  document.getElementById("accept").addEventListener("click", () => decide("accept"));
  formEl.addEventListener("submit", (e) => { e.preventDefault(); decide("correct"); });

  const source = new EventSource("/api/events");
  const show = () => {
    const state = source.readyState === EventSource.OPEN ? "live" : "polling";
    indicator.dataset.state = state;
    indicator.textContent = state;
  };
  source.onopen = show;
  source.onerror = show;
  source.addEventListener("review", (e) => {
    const event = JSON.parse(e.data);
    // Said, not reloaded: what this reviewer typed stays; saving it gets the conflict.
    if (deciding) return;
    if (String(event.id) === id && current && current.review.status === "pending" && event.review !== "pending") {
      say(`This review was just ${event.review} by ${event.by || "someone"}: reload to see it.`, "error");
    }
  });
  load();
})();
