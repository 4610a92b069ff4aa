"""One Hopper wgmma product from an OpenCL program, checked against NumPy
(gpubook.ptx_probe.wgmma_product): kernels/tensor/wgmma_probe.cl is built as OpenCL C
(its markers are PTX comments), its PTX rewritten by gpubook.wgmma.rewrite (target
sm_90a, the markers made fence.proxy.async and one m64n8k8 TF32 wgmma.mma_async), and
the result handed to the driver as a program binary, then run on one warp group of 128
work-items on operands of small integers, exact in TF32.

On an H200 (2026-11-28) D matched NumPy exactly with the descriptors' leading byte
offset along K (128) and the stride along M or N (256); swapped, the launch failed
(OUT_OF_RESOURCES) and the context with it.

    PYOPENCL_CTX=0 python3 tools/probe_wgmma_product.py [--ptx DIR]

(--ptx DIR: write the compiler's PTX and the rewritten PTX there.) On a device that is
not NVIDIA's it says so in one line."""
import argparse
import pathlib
import sys

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from gpubook import ptx_probe  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptx", type=pathlib.Path)
    args = parser.parse_args()
    opened = ptx_probe.open_nvidia()
    if opened is None:
        return 0
    device = opened[0]
    if args.ptx:
        args.ptx.mkdir(parents=True, exist_ok=True)
    print(f"{device.name.strip()}: " + " | ".join(ptx_probe.wgmma_product(device, args.ptx)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
