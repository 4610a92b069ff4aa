// The book's page helpers (loaded on every page; see gpubook/plot.py for the rule).
// 1. A figure wider than the column can show at 70% of its width (COLUMN_PX / 0.7
//    natural px: a figure drawn full width) gets the theme's full-width cell.
// 2. Tapping an output figure opens the image file at full size (phones).
// 3. Output tables scroll inside their own box, their first column fixed.
// 4. On a narrow window (gpubook.css) a figure is shown no narrower than keeps its
//    smallest text (MIN_POINTS points at DPI) at PHONE_CSS_PX CSS px, and scrolls
//    sideways in its own box (div.gpubook-figure) where that is wider than the column.
//    The stored PNGs stay as they are; tests/test_site.py checks it at 390 px.
(function () {
  // gpubook/plot.py's constants (tests/test_site.py checks that they agree)
  const COLUMN_PX = 676, MIN_SCALE = 0.7, DPI = 140, MIN_POINTS = 7, PHONE_CSS_PX = 7;
  function widen(img) {
    const cell = img.closest("div.cell");
    if (cell && img.naturalWidth > COLUMN_PX / MIN_SCALE) cell.classList.add("full-width", "gpubook-wide");
    // the shown width (CSS px) at which MIN_POINTS-point text is PHONE_CSS_PX CSS px
    const phone = Math.ceil(img.naturalWidth * PHONE_CSS_PX * 72 / (MIN_POINTS * DPI));
    if (phone) img.style.setProperty("--gpubook-phone-width", phone + "px");
  }
  function setUp() {
    document.querySelectorAll(".cell_output img").forEach(function (img) {
      if (!img.closest("a")) {
        const link = document.createElement("a");
        link.href = img.currentSrc || img.src;
        link.className = "gpubook-zoom";
        link.title = "Open the figure at full size";
        img.parentNode.insertBefore(link, img);
        link.appendChild(img);
      }
      const link = img.closest("a");
      if (!link.parentElement.classList.contains("gpubook-figure")) {
        const box = document.createElement("div");
        box.className = "gpubook-figure";
        link.parentNode.insertBefore(box, link);
        box.appendChild(link);
      }
      if (img.complete && img.naturalWidth) widen(img);
      else img.addEventListener("load", function () { widen(img); });
    });
    document.querySelectorAll(".cell_output table").forEach(function (table) {
      const parent = table.parentElement;
      if (parent.classList.contains("gpubook-scroll")) return;
      const box = document.createElement("div");
      box.className = "gpubook-scroll";
      parent.insertBefore(box, table);
      box.appendChild(table);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
