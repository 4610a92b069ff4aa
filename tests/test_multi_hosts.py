"""Chapter 10 beyond one host, stood in for on one machine: a scheduler, and two
worker processes started the way the running page starts one per GPU on each
host (`dask worker ADDRESS --resources GPU=1`), each with its own PYOPENCL_CTX
(two names of PoCL's one CPU device, as two hosts would each name their own
GPU). The covariance over them is checked against float64 NumPy. Skipped where
dask.distributed cannot start worker processes here."""
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from gpubook import stream as oc, xtx as cv

distributed = pytest.importorskip("distributed")
from gpubook.chapters.multi import cluster, store as rowstore  # noqa: E402

TILE = cv.shape(64, 4, 4, 16)
TOL = 1e-4
SPECS = ("0:0", "0")  # two PYOPENCL_CTX values, one per stand-in host
START = 25            # seconds the workers may take to join


def _worker(address, spec, name):
    env = dict(os.environ, PYOPENCL_CTX=spec, OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--resources", "GPU=1",
           "--nthreads", "2", "--nworkers", "1", "--no-dashboard", "--name", name]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def two_hosts():
    try:
        scheduler = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=":0",
                                             silence_logs=logging.ERROR)
    except Exception as err:  # noqa: BLE001 - no processes, no sockets: nothing to test here
        pytest.skip(f"dask.distributed cannot start a scheduler here ({type(err).__name__}: {err})")
    workers = [_worker(scheduler.scheduler_address, spec, f"host{i}") for i, spec in enumerate(SPECS)]
    client = None
    try:
        client = cluster.start(scheduler.scheduler_address, timeout=START)
        try:
            client.wait_for_workers(len(SPECS), timeout=START)
        except (TimeoutError, OSError) as err:
            gone = [w.poll() for w in workers]
            pytest.skip(f"the worker processes did not join within {START} s (exit codes {gone}): {err}")
        yield client
    finally:
        if client is not None:
            client.close()
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
        scheduler.close()


def test_two_worker_processes_on_their_own_devices_give_the_float64_covariance(two_hosts, tmp_path):
    client = two_hosts
    specs = client.run(lambda: os.environ.get("PYOPENCL_CTX"))
    assert sorted(specs.values()) == sorted(SPECS)          # each worker kept its own PYOPENCL_CTX
    assert len(cluster.devices(client)) == 2                # and opened a device with it
    d = cv.make_data(1_200, 40, seed=7)
    store = rowstore.save_rows(str(tmp_path / "x.npy"), d.x)
    t0 = time.perf_counter()
    c, root = cluster.covariance(client, store, 4, oc.stream_bytes(40, 128), TILE)
    assert cv.error(c, cv.reference(d.x)) < TOL
    assert {w for w, what, *_ in root.spans if what == "rows"} == {"host0", "host1"}  # both did rows
    assert time.perf_counter() - t0 < 30
