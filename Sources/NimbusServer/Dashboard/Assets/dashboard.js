// The dashboard's one script. Pages work without it: it asks before destructive actions (a form with
// data-confirm submits once the person confirms), shows how far a schema change has come in indexing the
// records already saved (a form with data-progress), and keeps the activity page's list of changes and
// errors live from the server's event stream. It writes text only, never HTML.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// A schema change answers once the records already saved are indexed, which can take a while: the form is
// sent in the background while the page polls the backfills' progress into its status line, then the
// answer's page is opened. Should anything go wrong, the form is sent as a plain form (a refused change
// changed nothing, so sending it again shows the refusal as the page always does).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.progress || event.defaultPrevented || !window.fetch) return;
  event.preventDefault();
  const status = document.getElementById("backfills");
  for (const button of form.querySelectorAll("button")) button.disabled = true;
  const poll = window.setInterval(async () => {
    try {
      const answer = await (await fetch(form.dataset.progress, { credentials: "same-origin" })).json();
      if (status) {
        status.textContent = answer.backfills.map((backfill) =>
          `Indexing the ${backfill.kind} records already saved (${backfill.environment}): about ${backfill.percent}%.`).join(" ");
      }
    } catch (_) {
      // The next poll tries again; the change itself goes on regardless.
    }
  }, 500);
  const plainly = () => HTMLFormElement.prototype.submit.call(form);
  fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin" }).then(
    (response) => {
      window.clearInterval(poll);
      if (response.ok && response.redirected) window.location.assign(response.url);
      else plainly();
    },
    () => { window.clearInterval(poll); plainly(); });
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
