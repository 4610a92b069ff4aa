"""The chapters' own code, one module per chapter or part of one; the shared
concerns (devices, kernels, timing, plots, records, limits, the register-tile
kernel, the vendor libraries) live one level up, in `gpubook`, and never
import from here.

- logreg: chapters 1-4, logistic regression in one work-group
- reduction: chapter 3's device-wide sums
- transpose: chapter 5
- covariance, outofcore: chapter 6 (in core; streamed and tile pairs)
- scan: chapter 7
- lsq, blocked_qr, tiled_qr, subsets: chapter 8
- across, across_plots: chapter 9 (reading the records; drawing them)
- multi, cluster: chapter 10 (every device of a host; Dask)
"""
