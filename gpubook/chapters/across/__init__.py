"""Chapter 9: every chapter's results across devices, read from results/."""
from .records import (Limit, Vendor, Chapter, MACHINE, COPY, FP32, FP64, LAUNCH, TRANSPOSE_STEPS, CHAPTERS,
                      load, limits, mma_roof, name, chapter_files, inventory, kind, by_file, present, steps,
                      step_figures, headline, vendor_entry, vendor_figure, ratios, recorded_numbers, fmt, pct,
                      with_shares, at_full_scale, share_refusals, scale_note, limit_label, roof)  # noqa: F401
from .tables import (headline_rows, vendor_rows, vendor_label, vendor_ratio, ratio_rows, LIMIT_ROWS, MMA_ROWS,
                     limit_rows, MACHINE_ROWS, machine_rows, multi_rows)  # noqa: F401
from . import figures, records, roofline, tables  # noqa: F401
