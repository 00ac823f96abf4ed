// A task's page: reloaded when the event stream (or, failing that, a poll) says its status
// changed, so its attempts appear as they happen. A parent's progress (its children done /
// total, the cost of its tree) is read from the same answer and shown as it moves: while
// it has children, any task event may be one of theirs, so the page listens to all
// agents and reads the task again at most twice a second.
"use strict";

(function () {
  const body = document.body;
  const id = body.dataset.task;
  const indicator = document.getElementById("live");
  const progress = document.getElementById("task-children");
  const treeCost = document.getElementById("task-tree-cost");
  let status = body.dataset.status;
  let source = null;
  let family = false;
  let pending = null;

  function showChildren(children) {
    if (!children) return;
    if (children.parent_id != null && children.total === 0) {
      progress.innerHTML = "";
      const link = document.createElement("a");
      link.href = `/tasks/${children.parent_id}`;
      link.textContent = `child ${children.key} of task ${children.parent_id}`;
      progress.appendChild(link);
      progress.dataset.state = "child";
    } else if (children.total > 0) {
      const parts = [`${children.done} / ${children.total} done`];
      if (children.running) parts.push(`${children.running} running`);
      if (children.queued) parts.push(`${children.queued} queued`);
      if (children.failed) parts.push(`${children.failed} failed`);
      if (children.waiting) parts.push("waiting");
      progress.textContent = parts.join(" · ");
      progress.dataset.state = children.waiting ? "waiting" : "done";
    }
    const cost = Number(children.llm_cost_usd) + Number(children.compute_cost_usd);
    treeCost.textContent = `${children.input_tokens} / ${children.output_tokens} tokens · $${cost.toFixed(4)}`;
  }

  async function check() {
    try {
      const response = await fetch(`/api/tasks/${id}`);
      if (!response.ok) return;
      const task = await response.json();
      if (task.status !== status) location.reload();
      showChildren(task.children);
      const isParent = Boolean(task.children && task.children.total > 0);
      if (isParent !== family) {
        family = isParent;
        listen();
      }
    } catch (err) { /* the next poll tries again */ }
  }

  function soon() {
    if (pending === null) pending = setTimeout(() => { pending = null; check(); }, 500);
  }

  function listen() {
    if (source) source.close();
    const filter = family ? "" : `?${new URLSearchParams({ agent: body.dataset.agent })}`;
    source = new EventSource(`/api/events${filter}`);
    const show = () => {
      const state = source.readyState === EventSource.OPEN ? "live" : "polling";
      indicator.dataset.state = state;
      indicator.textContent = state;
    };
    source.onopen = () => { show(); check(); };
    source.onerror = show;
    source.addEventListener("task", (e) => {
      const data = JSON.parse(e.data);
      const ids = data.ids || (data.id == null ? [] : [data.id]);
      if (family) soon();
      else if (ids.some((x) => String(x) === id) || data.count != null) check();
    });
    source.addEventListener("refresh", check);
  }

  listen();
  check();
  setInterval(check, 10000);
})();
