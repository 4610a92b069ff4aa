"""Which of Hopper's instructions NVIDIA's OpenCL compiler accepts as inline PTX
(gpubook.ptx_probe, part 6.3's tensor cores), with the default build options and
with each of ptx_probe.OPTIONS.

    PYOPENCL_CTX=0 python3 tools/probe_wgmma.py [--csv book/data/wgmma_probe_h100.csv]

On a device that is not NVIDIA's it says so in one line and builds nothing."""
import argparse
import csv
import datetime
import sys

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from gpubook.ptx_probe import OPTIONS, from_binary, open_nvidia, probe  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", help="write the rows to this file too")
    args = parser.parse_args()
    opened = open_nvidia("inline PTX does not apply, nothing built")
    if opened is None:
        return 0
    device, ctx, queue = opened
    rows = [(opt, *row) for opt, flags in OPTIONS.items() for row in probe(ctx, device, flags)]
    driver = device.driver_version.strip()
    print(f"{device.name.strip()}, driver {driver}")
    for row in rows:
        print(" | ".join(row))
    binary = from_binary(ctx, device, queue)
    for row in binary:
        print("as a program binary | " + " | ".join(row))
    rows += [("as a program binary", what, "sm_90a", build, ran) for what, build, ran in binary]
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(["date", "device", "driver", "options", "instruction", "PTX ISA target", "build",
                          "the program's .target, or the first error"])
            for row in rows:
                out.writerow([datetime.date.today().isoformat(), device.name.strip(), driver, *row])
    return 0


if __name__ == "__main__":
    sys.exit(main())
