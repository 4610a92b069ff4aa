// The book's page helpers (loaded on every page; see gpubook/plot.py for the rule).
// 1. A figure wider than the column can show at 70% of its width (COLUMN_PX / 0.7
//    natural px: a figure drawn full width) gets the theme's full-width cell.
// 2. Tapping an output figure opens the image file at full size (phones).
// 3. Output tables scroll inside their own box, their first column fixed.
(function () {
  const COLUMN_PX = 676, MIN_SCALE = 0.7;
  function widen(img) {
    const cell = img.closest("div.cell");
    if (cell && img.naturalWidth > COLUMN_PX / MIN_SCALE) cell.classList.add("full-width", "gpubook-wide");
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
