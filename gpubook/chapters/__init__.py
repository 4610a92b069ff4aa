"""The chapters' own code, one package per chapter or family of chapters, named
as its kernels/<name>/ folder is; each package's figures are in its own
`figures.py`. The shared floor (devices, kernels, timing, plots, records,
limits, the register tiles, the tensor cores, the vendor libraries, the
problems two chapters share) lives one level up, in `gpubook`, and never
imports from here; no chapter imports another.

- logreg: chapters 1-4, logistic regression in one work-group
- reduction: chapter 3's device-wide sums
- transpose: chapter 5
- covariance: chapter 6 (in core, out of core, tensor cores)
- scan: chapter 7
- lsq: chapter 8 (row updates, blocked and tiled QR, TSQR, CholeskyQR2)
- machine: chapter 0's machine page (the memory hierarchy's microbenchmarks)
- across: chapter 9 (reading the records; tables, roofline and figures)
- multi: chapter 10 (every device of a host; the store; Dask)
"""
