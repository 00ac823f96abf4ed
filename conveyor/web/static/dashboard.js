// Conveyor's dashboard: numbers from the JSON API, kept fresh by the event stream, with a
// poll that always runs in case the stream's bytes are dropped somewhere on the way.
"use strict";

(function () {
  const body = document.body;
  const POLL_MS = Math.max(50, parseFloat(body.dataset.poll || "10") * 1000);
  const STALE_MS = 40000; // no event or heartbeat (every 15 s) for this long: not live
  const DEBOUNCE_MS = 250; // a burst of events is one re-read
  const RECENT = 15;
  const STATUSES = ["enqueued", "processing", "completed", "failed", "cancelled"];

  const form = document.getElementById("filters");
  const indicator = document.getElementById("live");
  const recentBody = document.querySelector("#recent tbody");
  const topLevel = document.getElementById("top-level");

  // -- filters: in the form, in the URL (shareable), in every request ----------------------

  function filters() {
    const out = {};
    const data = new FormData(form);
    for (const name of ["status", "agent", "tenant"]) {
      const value = (data.get(name) || "").trim();
      if (value) out[name] = value;
    }
    for (const name of ["since", "until"]) {
      const value = data.get(name);
      if (value) {
        const when = new Date(value); // datetime-local is local time
        if (!isNaN(when)) out[name] = when.toISOString();
      }
    }
    return out;
  }

  function query(extra) {
    const params = new URLSearchParams(Object.assign({}, filters(), extra || {}));
    return params.toString();
  }

  // The Recent tasks table's own query: the filters, and "top-level only" when ticked (a
  // list option, not a filter of the numbers above it; kept in the URL as top_level=1).
  function listQuery() {
    return query(Object.assign({ limit: RECENT }, topLevel.checked ? { top_level: "true" } : {}));
  }

  function loadFiltersFromUrl() {
    const params = new URLSearchParams(location.search);
    topLevel.checked = params.get("top_level") === "1";
    for (const name of ["status", "agent", "tenant"]) {
      if (params.get(name)) form.elements[name].value = params.get(name);
    }
    for (const name of ["since", "until"]) {
      const value = params.get(name);
      if (value && !isNaN(new Date(value))) form.elements[name].value = localInput(new Date(value));
    }
  }

  function localInput(date) {
    const pad = (n) => String(n).padStart(2, "0");
    return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  }

  function filtersChanged() {
    const params = new URLSearchParams(location.search);
    for (const name of ["since", "until", "status", "agent", "tenant"]) params.delete(name);
    for (const [name, value] of Object.entries(filters())) params.set(name, value);
    const search = params.toString();
    history.replaceState(null, "", search ? `?${search}` : location.pathname);
    document.getElementById("costs").replaceChildren();
    connect(); // the stream filters by agent and status too
    refresh();
  }

  form.addEventListener("change", filtersChanged);
  topLevel.addEventListener("change", () => {
    const params = new URLSearchParams(location.search);
    if (topLevel.checked) params.set("top_level", "1"); else params.delete("top_level");
    const search = params.toString();
    history.replaceState(null, "", search ? `?${search}` : location.pathname);
    refreshList();
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); filtersChanged(); });
  form.addEventListener("reset", () => setTimeout(filtersChanged, 0));

  // -- formatting ---------------------------------------------------------------------------

  const integer = new Intl.NumberFormat("en-US");
  const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

  function count(n) { return n == null ? "—" : (n >= 100000 ? compact.format(n) : integer.format(n)); }
  function usd(x) {
    if (x == null) return "—";
    if (x === 0) return "$0";
    if (x < 0.01) return "$" + x.toPrecision(2); // tiny, but not zero
    if (x < 1000) return "$" + x.toFixed(2);
    return "$" + compact.format(x);
  }
  function duration(ms) {
    if (ms == null) return "—";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
    if (ms < 7200000) return (ms / 60000).toFixed(1) + " min";
    return (ms / 3600000).toFixed(1) + " h";
  }
  function when(iso) {
    if (!iso) return "—";
    const date = new Date(iso);
    const today = new Date().toDateString() === date.toDateString();
    return today ? date.toLocaleTimeString() : date.toLocaleString();
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
    return node;
  }

  // -- the numbers ----------------------------------------------------------------------------

  function tile(name, text) {
    document.querySelector(`[data-tile="${name}"] .value`).textContent = text;
  }

  function renderMetrics(m) {
    const tasks = m.tasks || {};
    tile("total", count(tasks.total));
    for (const s of STATUSES) tile(s, count(tasks[s]));
    tile("input_tokens", count(m.tokens && m.tokens.input));
    tile("output_tokens", count(m.tokens && m.tokens.output));
    tile("llm_usd", usd(m.cost && m.cost.llm_usd));
    tile("compute_usd", usd(m.cost && m.cost.compute_usd));
    tile("p50_ms", duration(m.response_time_ms && m.response_time_ms.p50));
    const conf = m.confidence || {};
    tile("confidence", conf.mean == null ? "—" : conf.mean.toFixed(2));
    renderAgents(m.agents || []);
    renderChart((m.series && m.series.points) || [], m.series && m.series.bucket);
  }

  function meter(used, limit) {
    if (limit == null) return el("span", { class: "meter" }, el("small", {}, `${count(used)} · no limit`));
    const share = limit > 0 ? Math.min(1, used / limit) : 1;
    const fill = el("span", { class: share >= 0.9 ? "fill hot" : "fill" });
    // Through the CSSOM, not a style attribute: the page's CSP allows no inline styles.
    fill.style.width = `${Math.round(share * 100)}%`;
    return el("span", { class: "meter", title: `${used} of ${limit}` },
      el("span", { class: "track" }, fill), el("small", {}, `${count(used)} / ${count(limit)}`));
  }

  function renderAgents(agents) {
    const tbody = document.querySelector("#agents tbody");
    const names = document.getElementById("agent-names");
    names.replaceChildren(...agents.map((a) => el("option", { value: a.agent })));
    if (!agents.length) {
      tbody.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no agents")));
      return;
    }
    tbody.replaceChildren(...agents.map((a) => {
      const limits = a.limits || {}, usage = a.usage || {};
      return el("tr", { "data-agent": a.agent },
        el("td", {}, a.agent),
        el("td", { class: "num" }, count(a.in_flight)),
        el("td", { class: "num" }, count(a.queued)),
        el("td", {}, meter(usage.concurrent || 0, limits.max_concurrent)),
        el("td", {}, meter(usage.tpm || 0, limits.max_tpm)),
        el("td", {}, meter(usage.rpm || 0, limits.max_rpm)),
        el("td", { class: "num" }, usd(a.cost_usd)));
    }));
  }

  function renderChart(points, bucket) {
    const box = document.getElementById("chart");
    document.getElementById("bucket").textContent = bucket ? `per ${bucket}` : "";
    if (!points.length) {
      box.replaceChildren(el("p", { class: "empty" }, "no finished tasks in this range"));
      return;
    }
    const W = Math.max(300, box.clientWidth || 600), H = 190, L = 36, R = 52, T = 8, B = 22;
    const NS = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("role", "img");
    const add = (tag, attrs, text) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      if (text != null) node.textContent = text;
      svg.append(node);
      return node;
    };
    const maxTasks = Math.max(1, ...points.map((p) => (p.completed || 0) + (p.failed || 0)));
    const maxCost = Math.max(1e-9, ...points.map((p) => p.cost_usd || 0));
    const step = (W - L - R) / points.length;
    const y = (v) => T + (H - T - B) * (1 - v / maxTasks);
    for (const f of [0, 0.5, 1]) {
      add("line", { x1: L, x2: W - R, y1: y(maxTasks * f), y2: y(maxTasks * f), class: "grid" });
      add("text", { x: L - 4, y: y(maxTasks * f) + 3, "text-anchor": "end", class: "axis" }, count(Math.round(maxTasks * f)));
    }
    add("text", { x: W - R + 4, y: T + 8, class: "axis" }, usd(maxCost));
    const line = [];
    points.forEach((p, i) => {
      const w = Math.max(1, Math.min(step * 0.7, 28)), x = L + i * step + (step - w) / 2;
      const done = p.completed || 0, failed = p.failed || 0;
      const title = `${when(p.t)}: ${done} completed, ${failed} failed, ${usd(p.cost_usd)}`;
      const bar = add("rect", { x, y: y(done), width: w, height: y(0) - y(done), class: "bar-completed" });
      bar.append(Object.assign(document.createElementNS(NS, "title"), { textContent: title }));
      add("rect", { x, y: y(done + failed), width: w, height: y(done) - y(done + failed), class: "bar-failed" });
      line.push([x + w / 2, T + (H - T - B) * (1 - (p.cost_usd || 0) / maxCost)]);
    });
    add("polyline", { points: line.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(" "), class: "cost-line" });
    for (const [px, py] of line) add("circle", { cx: px.toFixed(1), cy: py.toFixed(1), r: 2.5, class: "cost-dot" });
    const label = (iso) => bucket === "hour"
      ? new Date(iso).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" })
      : new Date(iso).toLocaleDateString();
    add("text", { x: L, y: H - 6, class: "axis" }, label(points[0].t));
    if (points.length > 1) {
      add("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "axis" }, label(points[points.length - 1].t));
    }
    box.replaceChildren(svg);
  }

  // -- recent tasks ---------------------------------------------------------------------------

  function badge(status) { return el("span", { class: `badge s-${status}` }, status); }

  // A parent: its children done / total (failed ones said apart); a child: its parent.
  function family(t) {
    const c = t.children;
    if (c) {
      const fill = el("span", { class: c.failed ? "fill hot" : "fill" });
      fill.style.width = `${Math.round((c.total ? (c.done + c.failed) / c.total : 1) * 100)}%`;
      const text = `${count(c.done)} / ${count(c.total)}` + (c.failed ? ` · ${count(c.failed)} failed` : "");
      return el("span", { class: "meter", title: `${c.running} running, ${c.queued} queued` },
        el("span", { class: "track" }, fill), el("small", {}, text));
    }
    if (t.parent_id != null) return el("a", { href: `/tasks/${t.parent_id}`, class: "parent" }, `of #${t.parent_id}`);
    return "";
  }

  function cost(t) {
    const tree = t.tree_cost || {}, own = t.cost || {};
    const title = t.children ? `its own ${usd(own.total_usd)}, with its children ${usd(tree.total_usd)}` : "";
    return el("td", { class: "num cost", title }, usd(tree.total_usd));
  }

  function taskRow(t) {
    return el("tr", { "data-task": t.id, "data-status": t.status },
      el("td", {}, el("a", { href: `/tasks/${t.id}` }, `#${t.id}`)),
      el("td", {}, t.agent),
      el("td", { class: "status" }, badge(t.status)),
      el("td", { class: "children" }, family(t)),
      el("td", { class: "num" }, t.attempts),
      cost(t),
      el("td", {}, when(t.created_at)),
      el("td", { class: "finished" }, when(t.finished_at)),
      el("td", { class: "err", title: t.error || "" }, (t.error || "").split("\n")[0]));
  }

  function renderRecent(items) {
    // While a listed parent has children still to end, their events count for this table
    // whatever the filters say (a child can be of another agent, or in another status).
    const open = items.some((t) => t.children && t.children.done + t.children.failed < t.children.total);
    if (open !== watchFamilies) {
      watchFamilies = open;
      const f = filters();
      if (f.agent || f.status) connect();
    }
    if (!items.length) {
      recentBody.replaceChildren(el("tr", {}, el("td", { colspan: 9, class: "empty" }, "no tasks")));
      return;
    }
    recentBody.replaceChildren(...items.map(taskRow));
  }

  // A task event patches its row at once; the re-read that follows fills in the rest.
  // An event names one task ("id"), several ("ids", under heavy fan-out) or only a count.
  function patchRow(data) {
    for (const id of data.ids || (data.id == null ? [] : [data.id])) {
      const row = recentBody.querySelector(`tr[data-task="${id}"]`);
      if (!row) continue;
      row.dataset.status = data.status;
      row.querySelector(".status").replaceChildren(badge(data.status));
      row.classList.remove("flash"); void row.offsetWidth; row.classList.add("flash");
    }
  }

  // -- fetching ---------------------------------------------------------------------------------

  let generation = 0, listGeneration = 0;
  async function refresh() {
    const mine = ++generation, mineList = ++listGeneration;
    try {
      const [metrics, tasks] = await Promise.all([
        fetch(`/api/metrics?${query()}`).then(ok),
        fetch(`/api/tasks?${listQuery()}`).then(ok),
      ]);
      if (mine !== generation) return; // a newer read (other filters) overtook this one
      renderMetrics(metrics);
      if (mineList === listGeneration) renderRecent(tasks.items || []);
      body.dataset.updated = String(Date.now());
    } catch (err) {
      console.warn("dashboard: refresh failed", err);
    }
  }

  // The table alone: for a child's event that the filters would not count in the numbers.
  async function refreshList() {
    const mine = ++listGeneration;
    try {
      const tasks = await fetch(`/api/tasks?${listQuery()}`).then(ok);
      if (mine === listGeneration) renderRecent(tasks.items || []);
    } catch (err) {
      console.warn("dashboard: refresh of the tasks failed", err);
    }
  }

  async function ok(response) {
    if (response.status === 401) { location.href = "/login"; throw new Error("signed out"); }
    const json = await response.json();
    if (!response.ok) throw new Error(json.error ? json.error.message : response.statusText);
    return json;
  }

  let pending = null, pendingList = null;
  function soon() {
    if (pending) return;
    pending = setTimeout(() => { pending = null; refresh(); }, DEBOUNCE_MS);
  }
  function soonList() {
    if (pending || pendingList) return; // a whole refresh reads the table too
    pendingList = setTimeout(() => { pendingList = null; refreshList(); }, DEBOUNCE_MS);
  }

  // -- live: the event stream, and the indicator ---------------------------------------------

  let source = null, lastHeard = 0, watchFamilies = false;
  // An event the filters select: the numbers may have moved.
  function selected(data) {
    const f = filters();
    return (!f.agent || data.agent === f.agent) && (!f.status || data.status === f.status);
  }

  function connect() {
    if (source) source.close();
    const f = filters(), params = new URLSearchParams();
    if (f.agent && !watchFamilies) params.set("agent", f.agent);
    if (f.status && !watchFamilies) params.set("status", f.status);
    source = new EventSource(`/api/events?${params}`);
    source.onopen = () => { lastHeard = Date.now(); showState(); soon(); };
    source.onerror = () => showState(); // EventSource retries on its own
    source.addEventListener("task", (e) => {
      lastHeard = Date.now(); showState();
      const data = JSON.parse(e.data);
      patchRow(data);
      if (selected(data)) soon(); else soonList();
    });
    source.addEventListener("refresh", () => { lastHeard = Date.now(); showState(); soon(); });
    source.addEventListener("ping", () => { lastHeard = Date.now(); showState(); });
  }

  function showState() {
    const live = source && source.readyState === EventSource.OPEN && Date.now() - lastHeard < STALE_MS;
    const state = live ? "live" : "polling";
    if (indicator.dataset.state !== state) {
      indicator.dataset.state = state;
      indicator.textContent = state;
    }
  }

  // -- the cost breakdown, on request ---------------------------------------------------------

  const costsButton = document.getElementById("costs-run");
  const costsBox = document.getElementById("costs");
  const costsCsv = document.getElementById("costs-csv");
  function updateCsvLink() { costsCsv.href = `/api/costs?${query({ group_by: "agent,day", format: "csv" })}`; }
  form.addEventListener("change", updateCsvLink);

  costsButton.addEventListener("click", async () => {
    costsButton.disabled = true;
    costsButton.textContent = "Loading…";
    costsBox.setAttribute("aria-busy", "true");
    try {
      const data = await fetch(`/api/costs?${query({ group_by: "agent,day" })}`).then(ok);
      const rows = data.rows || [];
      const head = el("tr", {}, ...["Agent", "Day", "Tasks", "Attempts", "Input tokens", "Output tokens", "LLM", "Compute", "Total", "Median per task"]
        .map((h, i) => el("th", i > 1 ? { class: "num" } : {}, h)));
      const line = (r, label) => el("tr", {},
        el("td", {}, label ? el("b", {}, label) : (r.agent ?? "—")), el("td", {}, label ? "" : (r.day ?? "—")),
        ...[count(r.tasks), count(r.attempts), count(r.input_tokens), count(r.output_tokens),
          usd(r.llm_usd), usd(r.compute_usd), usd(r.total_usd), usd(r.median_task_usd)]
          .map((v) => el("td", { class: "num" }, v)));
      const table = el("table", { id: "costs-table" }, el("thead", {}, head),
        el("tbody", {}, ...(rows.length ? rows.map((r) => line(r)) : [el("tr", {}, el("td", { colspan: 10, class: "empty" }, "no costs in this range"))]),
          ...(data.totals && rows.length ? [line(data.totals, "Total")] : [])));
      costsBox.replaceChildren(table);
    } catch (err) {
      costsBox.replaceChildren(el("p", { class: "error" }, `The breakdown failed: ${err.message}`));
    } finally {
      costsButton.disabled = false;
      costsButton.textContent = "Break costs down";
      costsBox.removeAttribute("aria-busy");
    }
  });

  // -- start ------------------------------------------------------------------------------------

  loadFiltersFromUrl();
  updateCsvLink();
  showState();
  refresh();
  connect();
  setInterval(refresh, POLL_MS); // always: the fallback when the stream is silently broken
  setInterval(showState, 1000);
})();
