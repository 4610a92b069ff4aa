"""Published peak figures for devices the book's reference runs use.

Vendors' datasheet numbers (FP32 without tensor cores, memory bandwidth);
a measured limit is compared against them to say what share was reached.
"""
PUBLISHED = [
    # (piece of the OpenCL device name, memory GB/s, FP32 GFLOP/s, source)
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
