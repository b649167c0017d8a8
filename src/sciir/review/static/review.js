// The review pages' keyboard: a key presses the button that carries it (data-key: the scale's digits, u for
// undo); z shows the image at full resolution and back. A form is sent once: later presses wait for the page.
"use strict";
let sending = false;
document.addEventListener("submit", (event) => {
  if (sending) {
    event.preventDefault();
  }
  sending = true;
});
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey || target instanceof HTMLInputElement) {
    return;
  }
  if (event.key === "z") {
    const figure = document.getElementById("figure");
    if (figure) {
      figure.classList.toggle("zoomed");
    }
    return;
  }
  const button = document.querySelector(`button[data-key="${CSS.escape(event.key)}"]`);
  if (button && !button.disabled && !sending) {
    event.preventDefault();
    button.click();
  }
});
// The shortcuts are live (a test waits for this before pressing keys).
document.documentElement.dataset.keys = "ready";
