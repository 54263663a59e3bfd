// The dashboard's one script. Pages work without it; it only asks before destructive actions: a form
// with data-confirm submits once the person confirms.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
