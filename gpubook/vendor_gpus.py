"""Which CUDA device an OpenCL device is, for gpubook.vendor: the vendor's libraries
(PyTorch, CuPy, the CUB program) number their GPUs their own way, and a figure is
only the chapter's anchor when it runs on the same GPU as the chapter's OpenCL device."""
from .vendor_apart import first_line as _first_line


def not_nvidia(device):
    """The line that says the vendor figures do not cover this device."""
    return f"{device.name.strip()} is not an NVIDIA GPU; the vendor figures cover NVIDIA's libraries"


def same_gpu(device, gpus, who):
    """The CUDA index among `gpus` ([(index, name, PCI bus or None)]) that the OpenCL
    `device` is, or the reason there is none; `who` names what listed them."""
    name = device.name.strip().lower()
    same = [(i, bus) for i, gpu_name, bus in gpus if gpu_name.strip().lower() == name]
    if len(same) > 1:  # several GPUs of one model: tell them apart by PCI bus
        try:
            bus = device.pci_bus_id_nv
            same = [(i, b) for i, b in same if b is None or b == bus] or same[:1]
        except Exception:  # noqa: BLE001 - no bus id on this driver: keep the first of the model
            pass
    if not same:
        return None, f"{who} sees no CUDA device named {device.name.strip()!r}"
    return same[0][0], None


def cuda_index(device, torch):
    """The CUDA index of the GPU that the OpenCL `device` is, or the reason there is none."""
    if "nvidia" not in device.vendor.lower():
        return None, not_nvidia(device)
    if torch is None:
        return None, "PyTorch is not installed here"
    if not torch.cuda.is_available():
        return None, "PyTorch has no CUDA device here"
    gpus = [(i, torch.cuda.get_device_name(i), getattr(torch.cuda.get_device_properties(i), "pci_bus_id", None))
            for i in range(torch.cuda.device_count())]
    return same_gpu(device, gpus, "PyTorch")


def cupy_index(device, cupy):
    """cuda_index through CuPy."""
    if cupy is None:
        return None, "CuPy is not installed here"
    try:
        rt = cupy.cuda.runtime
        gpus = []
        for i in range(rt.getDeviceCount()):
            props = rt.getDeviceProperties(i)
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            gpus.append((i, name, props.get("pciBusID")))
    except Exception as err:  # noqa: BLE001 - no driver, no device: say so
        return None, f"CuPy has no CUDA device here ({_first_line(err)})"
    return same_gpu(device, gpus, "CuPy")
