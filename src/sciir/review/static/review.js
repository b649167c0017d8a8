// The review pages' keyboard. A key presses the element that carries it (data-key: the scale's digits, the
// decisions' letters, u for undo; a checkbox is ticked or cleared); a key named by data-zoom shows those
// images at full resolution and back (z: the item's image); a key named by data-focus-key puts the cursor in
// that field. In a field, keys type: Escape (or Enter, where the field says data-enter="leave") leaves it and
// the keys are live again. A button with data-reveal shows the next hidden element its selector names (a new
// question's row) and puts the cursor in it. A form is sent once: later presses wait for the page.
"use strict";
let sending = false;
document.addEventListener("submit", (event) => {
  if (sending) {
    event.preventDefault();
  }
  sending = true;
});
function typing(target) {
  return (
    target instanceof HTMLInputElement ||
    target instanceof HTMLTextAreaElement ||
    target instanceof HTMLSelectElement
  );
}
function reveal(button) {
  const selector = button.dataset.reveal;
  const spare = document.querySelector(`${selector}[hidden]`);
  if (spare) {
    spare.hidden = false;
    const first = spare.querySelector("textarea") || spare.querySelector("input");
    if (first) {
      first.focus();
    }
  }
  if (!document.querySelector(`${selector}[hidden]`)) {
    button.disabled = true;
  }
}
document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-reveal]") : null;
  if (button) {
    event.preventDefault();
    reveal(button);
  }
});
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (typing(target)) {
    if (event.key === "Escape" || (event.key === "Enter" && target.dataset.enter === "leave")) {
      event.preventDefault();
      target.blur();
    }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  const key = CSS.escape(event.key);
  const zoomed = document.querySelectorAll(`[data-zoom="${key}"]`);
  if (zoomed.length > 0) {
    zoomed.forEach((element) => element.classList.toggle("zoomed"));
    return;
  }
  const field = document.querySelector(`[data-focus-key="${key}"]`);
  if (field instanceof HTMLElement) {
    event.preventDefault();
    field.focus();
    return;
  }
  const pressed = document.querySelector(`[data-key="${key}"]`);
  if (pressed instanceof HTMLElement && !pressed.disabled && !sending) {
    event.preventDefault();
    pressed.click();
  }
});
// The shortcuts are live (a test waits for this before pressing keys).
document.documentElement.dataset.keys = "ready";
