// The Review page: the backlog by agent and tenant and the reviews waiting, oldest first.
// Live over the event stream (a `review` event re-reads both, debounced), with a poll that
// always runs in case the stream's bytes are dropped on the way.
"use strict";

(function () {
  const body = document.body;
  const POLL_MS = Math.max(50, parseFloat(body.dataset.poll || "10") * 1000);
  const DEBOUNCE_MS = 250;
  const PAGE = 50;
  const form = document.getElementById("review-filters");
  const indicator = document.getElementById("live");
  const queueBody = document.querySelector("#queue tbody");
  const backlogBody = document.querySelector("#backlog tbody");
  const more = document.getElementById("more");
  let cursor = null;
  let shown = PAGE;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
    return node;
  }
  function when(iso) { return iso ? new Date(iso).toLocaleString() : "—"; }
  function score(x) { return x == null ? "—" : x.toFixed(2); }

  function filters() {
    const out = {};
    const data = new FormData(form);
    for (const name of ["agent", "tenant"]) {
      const value = (data.get(name) || "").trim();
      if (value) out[name] = value;
    }
    return out;
  }

  function loadFiltersFromUrl() {
    const params = new URLSearchParams(location.search);
    for (const name of ["agent", "tenant"]) {
      if (params.get(name)) form.elements[name].value = params.get(name);
    }
  }

  async function getJson(url) {
    const response = await fetch(url, { headers: { accept: "application/json" } });
    if (!response.ok) throw new Error(`${url}: ${response.status}`);
    return response.json();
  }

  function renderBacklog(data) {
    document.getElementById("pending-total").textContent = `${data.pending} pending`;
    const rows = data.groups.map((g) => el("tr", {},
      el("td", {}, g.agent), el("td", {}, g.tenant || "—"),
      el("td", { class: "num" }, g.pending), el("td", {}, when(g.oldest))));
    backlogBody.replaceChildren(...(rows.length ? rows
      : [el("tr", {}, el("td", { colspan: "4", class: "empty" }, "nothing waits for review"))]));
  }

  function row(r) {
    return el("tr", { "data-task": String(r.task_id) },
      el("td", {}, el("a", { href: `/tasks/${r.task_id}` }, r.task_id)),
      el("td", {}, r.agent), el("td", {}, r.tenant || "—"),
      el("td", { class: "num" }, score(r.confidence)), el("td", { class: "num" }, score(r.review_below)),
      el("td", {}, when(r.created_at)),
      el("td", {}, el("a", { href: `/reviews/${r.task_id}`, class: "review-link" }, "Review")));
  }

  function seconds(s) {
    if (s == null) return "—";
    if (s < 120) return `${Math.round(s)} s`;
    if (s < 7200) return `${(s / 60).toFixed(1)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }

  function renderMetrics(m) {
    const rows = Object.entries(m.agents).filter(([, a]) => a.reviewed > 0).map(([agent, a]) => {
      const fields = Object.entries(a.fields)
        .sort((x, y) => (x[1].accuracy ?? 1) - (y[1].accuracy ?? 1))
        .map(([f, v]) => `${f} ${Math.round((v.accuracy ?? 0) * 100)}% of ${v.reviewed}`);
      return el("tr", { "data-agent": agent },
        el("td", {}, agent), el("td", { class: "num" }, a.reviewed), el("td", { class: "num" }, a.corrected),
        el("td", { class: "num" }, a.fields_corrected), el("td", { class: "num" }, seconds(a.time_to_review_p50_s)),
        el("td", { class: "fields-accuracy" }, fields.join(", ") || "—"));
    });
    document.querySelector("#review-metrics tbody").replaceChildren(...(rows.length ? rows
      : [el("tr", {}, el("td", { colspan: "6", class: "empty" }, "nothing reviewed yet"))]));
  }

  async function refresh() {
    try {
      const [backlog, page] = await Promise.all([
        getJson("/api/reviews/backlog"),
        getJson(`/api/reviews?${new URLSearchParams(Object.assign({ limit: String(shown) }, filters()))}`),
      ]);
      getJson("/api/reviews/metrics").then(renderMetrics, () => {});
      renderBacklog(backlog);
      const rows = page.items.map(row);
      queueBody.replaceChildren(...(rows.length ? rows
        : [el("tr", {}, el("td", { colspan: "7", class: "empty" }, "nothing waits for review"))]));
      cursor = page.next_cursor;
      more.hidden = !cursor;
    } catch (err) { /* the next event or poll tries again */ }
  }

  more.addEventListener("click", async () => {
    if (!cursor) return;
    const params = new URLSearchParams(Object.assign({ limit: String(PAGE), cursor }, filters()));
    const page = await getJson(`/api/reviews?${params}`);
    queueBody.append(...page.items.map(row));
    shown += page.items.length;
    cursor = page.next_cursor;
    more.hidden = !cursor;
  });

  let pending = null;
  function soon() {
    if (pending) return;
    pending = setTimeout(() => { pending = null; refresh(); }, DEBOUNCE_MS);
  }

  function filtersChanged() {
    const params = new URLSearchParams(filters());
    const search = params.toString();
    history.replaceState(null, "", search ? `?${search}` : location.pathname);
    shown = PAGE;
    refresh();
  }
  form.addEventListener("change", filtersChanged);
  form.addEventListener("submit", (e) => { e.preventDefault(); filtersChanged(); });
  form.addEventListener("reset", () => setTimeout(filtersChanged, 0));

  const source = new EventSource("/api/events");
  const show = () => {
    const state = source.readyState === EventSource.OPEN ? "live" : "polling";
    indicator.dataset.state = state;
    indicator.textContent = state;
  };
  source.onopen = () => { show(); soon(); };
  source.onerror = show;
  source.addEventListener("review", soon);
  source.addEventListener("refresh", soon);

  loadFiltersFromUrl();
  refresh();
  setInterval(refresh, POLL_MS);
})();
