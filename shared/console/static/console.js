// cairn console: progressive enhancement only — every page works without this file.
// A submitted form's buttons are disabled right after the browser has read the form, so a
// double click cannot send one decision twice.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!(form instanceof HTMLFormElement) || form.method.toLowerCase() !== "post") {
    return;
  }
  window.setTimeout(function () {
    form.querySelectorAll("button").forEach(function (button) {
      button.disabled = true;
    });
    form.setAttribute("aria-busy", "true");
  }, 0);
});
