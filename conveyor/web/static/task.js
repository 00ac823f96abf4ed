// A task's page: reloaded when the event stream (or, failing that, a poll) says its status
// changed, so its attempts appear as they happen.
"use strict";

(function () {
  const body = document.body;
  const id = body.dataset.task;
  const indicator = document.getElementById("live");
  let status = body.dataset.status;

  async function check() {
    try {
      const response = await fetch(`/api/tasks/${id}`);
      if (!response.ok) return;
      const task = await response.json();
      if (task.status !== status) location.reload();
    } catch (err) { /* the next poll tries again */ }
  }

  const source = new EventSource(`/api/events?${new URLSearchParams({ agent: body.dataset.agent })}`);
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
    if (ids.some((x) => String(x) === id) || data.count != null) check();
  });
  source.addEventListener("refresh", check);
  setInterval(check, 10000);
})();
