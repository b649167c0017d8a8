"""What the browser tests read from a page (Playwright's ``locator.evaluate``), once the page has it."""

from __future__ import annotations

# An <img>'s natural width once it has loaded, 0 when it fails. A page's own scripts can have run (its
# ``data-keys=ready``) before its images arrive, most of all on a busy machine: reading ``naturalWidth`` at
# once would read 0 for an image that is still on its way.
LOADED_IMAGE_WIDTH = """img => img.complete && img.naturalWidth > 0 ? img.naturalWidth : new Promise(resolve => {
  img.addEventListener("load", () => resolve(img.naturalWidth));
  img.addEventListener("error", () => resolve(0));
  if (img.complete) resolve(img.naturalWidth);
})"""
