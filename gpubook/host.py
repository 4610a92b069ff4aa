"""The host that runs the NumPy baselines: its cores, its BLAS and the threads it uses.

Every CPU baseline in the book is NumPy, and NumPy's speed on a matrix product
depends on the BLAS it was built with and on how many threads that BLAS runs.
`host_baseline()` says both in one line, for the page and the record;
`use_all_cores()` makes the BLAS use every core this process may run on (the
default of OpenBLAS, unless an environment variable lowered it).
"""
import os

_NAMES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS", "flexiblas": "FlexiBLAS",
          "accelerate": "Accelerate", "scipy-openblas": "OpenBLAS"}


def host_cores():
    """The cores this process may run on (its CPU affinity), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _short_version(version):
    """'0.3.31.188.0' -> '0.3.31'; anything else as given."""
    parts = str(version).split(".")
    return ".".join(parts[:3]) if len(parts) > 3 and all(p.isdigit() for p in parts[:3]) else str(version)


def _blas_pools():
    """threadpoolctl's BLAS entries, or None without threadpoolctl."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    try:
        return [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
    except Exception:  # a BLAS it cannot inspect: say it is not known, never fail a baseline
        return None


def _blas_from_numpy():
    """(name, version) of NumPy's BLAS from numpy.show_config, or (None, None)."""
    try:
        import numpy as np
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # old NumPy without mode="dicts", or a build without the section
        return None, None
    name = str(blas.get("name", "")).lower()
    return _NAMES.get(name, blas.get("name")), blas.get("version")


def _env_threads():
    """The BLAS thread count an environment variable sets, with the variable's name."""
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value), var
    return None, None


def blas_info():
    """{'blas', 'version', 'threads', 'cores', 'source'} for the host's NumPy BLAS.

    threads is what the BLAS reports through threadpoolctl; without it, the
    count an environment variable sets, else the BLAS's default (the cores),
    and `source` says which of these it is.
    """
    cores = host_cores()
    pools = _blas_pools()
    if pools:
        pool = pools[0]
        api = str(pool.get("internal_api", ""))
        return {"blas": _NAMES.get(api, api or "a BLAS"), "version": _short_version(pool.get("version")),
                "threads": int(pool.get("num_threads") or 0) or None, "cores": cores,
                "source": "threadpoolctl"}
    name, version = _blas_from_numpy()
    threads, var = _env_threads()
    source = f"{var}; numpy.show_config" if var else "the BLAS's default: the cores; numpy.show_config"
    return {"blas": name or "an unknown BLAS", "version": _short_version(version) if version else None,
            "threads": threads or cores, "cores": cores, "source": source}


def host_baseline():
    """One line naming NumPy, its BLAS and the threads it runs on this host.

    e.g. "NumPy 2.4.6 with OpenBLAS 0.3.31, 16 threads on 16 cores (threadpoolctl)".
    Never raises: what cannot be found is said to be unknown.
    """
    try:
        import numpy as np
        numpy = f"NumPy {np.__version__}"
    except ImportError:
        numpy = "NumPy (not installed)"
    try:
        info = blas_info()
    except Exception as err:  # the line is a caption: it must not stop a chapter
        return f"{numpy}, BLAS not known ({type(err).__name__}), {host_cores()} cores"
    blas = info["blas"] + (f" {info['version']}" if info["version"] else "")
    count = info["threads"]
    threads = f"{count} thread{'s' if count != 1 else ''}" if count else "threads not known"
    return f"{numpy} with {blas}, {threads} on {info['cores']} cores ({info['source']})"


def use_all_cores():
    """Let the BLAS run one thread per core of this process; return the thread count it has then.

    OpenBLAS starts with one thread per core already; this undoes a lower limit
    set earlier in the process (needs threadpoolctl; without it, the count is
    what blas_info() says and nothing changes).
    """
    cores = host_cores()
    try:
        import threadpoolctl
        threadpoolctl.threadpool_limits(limits=cores, user_api="blas")
    except Exception:  # no threadpoolctl, or a BLAS it cannot drive: keep what the BLAS has
        pass
    return blas_info()["threads"]
