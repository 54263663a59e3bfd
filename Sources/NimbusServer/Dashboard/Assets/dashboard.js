// The dashboard's one script. Pages work without it: it asks before destructive actions (a form with
// data-confirm submits once the person confirms), and keeps the activity page's list of changes and
// errors live from the server's event stream. It writes text only, never HTML.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

document.addEventListener("DOMContentLoaded", () => {
  const list = document.getElementById("live-events");
  if (!list || !window.EventSource) return;
  const state = document.getElementById("live-state");
  const source = new EventSource(list.dataset.source);
  source.addEventListener("open", () => { if (state) state.textContent = "(live)"; });
  source.addEventListener("error", () => { if (state) state.textContent = "(reconnecting…)"; });
  source.addEventListener("message", (message) => {
    const event = JSON.parse(message.data);
    const item = document.createElement("li");
    item.className = event.kind === "error" ? "error" : "change";
    const time = document.createElement("time");
    time.textContent = event.time;
    const status = document.createElement("strong");
    status.textContent = String(event.status);
    const route = document.createElement("code");
    route.textContent = event.route;
    item.append(time, " ", status, " " + event.method + " ", route);
    list.prepend(item);
    while (list.children.length > 50) list.lastElementChild.remove();
  });
});
