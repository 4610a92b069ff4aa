"""Data-sheet figures of the devices the book's reference runs use, with their sources.

One table per reference device (the H200 and the H100 SXM): the L2 cache, local
memory per compute unit and per work-group, the FP32 and FP64 FMA peaks, the TF32
and FP64 tensor-core peaks and the memory bandwidth. Pages set their measurements
against these lines; a measured roof that matches the wrong line is a finding.
`published_peaks` keeps the short form (memory GB/s, FP32 GFLOP/s, source) that
chapter 0 and chapter 9 read.
"""
KIB, MIB = 2**10, 2**20

_HOPPER_GUIDE = "NVIDIA Hopper Tuning Guide (CUDA 12), section 'Occupancy' and 'L1 data cache'"
_WHITEPAPER = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (GH100, SXM5)"
_OPENCL = ("NVIDIA's OpenCL driver, CL_DEVICE_LOCAL_MEM_SIZE on the H200 and the H100 "
           "(chapter 0's records: 48 KiB)")
_TENSOR_NOTE = "dense; the data sheet's 989 TFLOP/s for TF32 is with 2:4 sparsity"

# Hopper SXM as the two reference devices have it: the same GH100 compute (132 SMs
# enabled), two memory systems. Figures in bytes, GB/s and GFLOP/s.
_HOPPER_SXM = {
    "l2_bytes": (50 * MIB, _WHITEPAPER + " (50 MB L2); the CUDA runtime reports 52,428,800 bytes "
                 "(l2CacheSize) on the H100"),
    "local_per_cu_bytes": (228 * KIB, _HOPPER_GUIDE + ": 228 KiB of shared memory per SM"),
    "local_per_group_cuda_bytes": (227 * KIB, _HOPPER_GUIDE + ": at most 227 KiB per thread block in CUDA"),
    "local_per_group_opencl_bytes": (48 * KIB, _OPENCL),
    "fp32_fma_gflops": (67_000.0, "data sheet: FP32 67 TFLOP/s"),
    "fp64_fma_gflops": (34_000.0, "data sheet: FP64 34 TFLOP/s"),
    "tf32_tensor_gflops": (494_500.0, "data sheet: TF32 Tensor Core 989 TFLOP/s halved, " + _TENSOR_NOTE),
    "fp64_tensor_gflops": (67_000.0, "data sheet: FP64 Tensor Core 67 TFLOP/s"),
}

DATASHEETS = {
    # piece of the OpenCL device name -> {figure: (value, source)}
    "H200": {**_HOPPER_SXM,
             "memory_gbs": (4800.0, "NVIDIA H200 Tensor Core GPU data sheet (SXM): 4.8 TB/s HBM3e"),
             "l2_bytes": (50 * MIB, _WHITEPAPER + ": the H200 is the same GH100 die (50 MB L2)")},
    "H100 80GB HBM3": {**_HOPPER_SXM,
                       "memory_gbs": (3350.0, "NVIDIA H100 Tensor Core GPU data sheet (SXM): 3.35 TB/s HBM3")},
}

# the short form: (piece of the OpenCL device name, memory GB/s, FP32 GFLOP/s, source)
PUBLISHED = [
    ("H200", 4800.0, 67000.0, "NVIDIA H200 SXM datasheet"),
    ("H100 80GB HBM3", 3350.0, 67000.0, "NVIDIA H100 SXM datasheet"),
    ("H100 PCIe", 2000.0, 51000.0, "NVIDIA H100 PCIe datasheet"),
]


def published_peaks(device_name):
    """(memory GB/s, FP32 GFLOP/s, source) for a known device, else None."""
    for piece, gbs, gflops, src in PUBLISHED:
        if piece.lower() in device_name.lower():
            return gbs, gflops, src
    return None


def datasheet(device_name):
    """{figure: value} of the data-sheet table for a reference device, else None."""
    sheet = _sheet(device_name)
    return None if sheet is None else {k: v for k, (v, _) in sheet.items()}


def datasheet_sources(device_name):
    """{figure: source} of the same table, else None."""
    sheet = _sheet(device_name)
    return None if sheet is None else {k: s for k, (_, s) in sheet.items()}


def datasheet_value(device_name, figure):
    """One figure of the table (e.g. 'l2_bytes'), or None where the device is not in it."""
    sheet = datasheet(device_name)
    return None if sheet is None else sheet.get(figure)


def _sheet(device_name):
    name = device_name if isinstance(device_name, str) else device_name.name
    for piece, sheet in DATASHEETS.items():
        if piece.lower() in name.lower():
            return sheet
    return None


_LABELS = {  # figure -> (what it is, unit, divisor)
    "l2_bytes": ("L2 cache", "MiB", MIB),
    "local_per_cu_bytes": ("local (shared) memory per compute unit", "KiB", KIB),
    "local_per_group_cuda_bytes": ("local memory per work-group, CUDA", "KiB", KIB),
    "local_per_group_opencl_bytes": ("local memory per work-group, OpenCL", "KiB", KIB),
    "fp32_fma_gflops": ("FP32 FMA peak", "TFLOP/s", 1e3),
    "fp64_fma_gflops": ("FP64 FMA peak", "TFLOP/s", 1e3),
    "tf32_tensor_gflops": ("TF32 tensor-core peak", "TFLOP/s", 1e3),
    "fp64_tensor_gflops": ("FP64 tensor-core peak", "TFLOP/s", 1e3),
    "memory_gbs": ("memory bandwidth", "GB/s", 1),
}


def datasheet_rows(device_name):
    """[[figure, value, source], ...] of the device's data-sheet table, a header first,
    for gpubook.markdown_table; None where the device is not in the book's table."""
    sheet = _sheet(device_name)
    if sheet is None:
        return None
    rows = [["data sheet", "value", "source"]]
    for key, (what, unit, div) in _LABELS.items():
        if key in sheet:
            value, source = sheet[key]
            rows.append([f"{what} ({unit})", f"{value / div:,.1f}".removesuffix(".0"), source])
    return rows
