#!/usr/bin/env bash
# One call of the device tool (GPU host, repo root; carry [".device"], made here by ../shared/device/prepare):
#   [VENDOR=1] [CPU=1] [CPU_LIMIT=s] [CPU_FULL="NB..."] [LIMIT=s] [LANES=n] bash tools/device_pass.sh record|reference|counters TAG NB...
# record: results only; reference: outputs stored in place + digests; counters: each notebook
# run with its launches captured (in RAM), then replayed and profiled by tools/counters.py,
# whose rows go into the chapter's record (a capture run's timings are not the page's). CPU=1 first records
# the host CPU (PoCL, platform 1) at the default scale; VENDOR=1 measures the vendor libraries.
# The tarball $OUT/TAG.tgz holds all of results/ as carried plus the notebooks run: back here,
# take from it only the files this call changed (two calls in a row each hold the other's old copy).
mode=$1 tag=$2; shift 2
source .device/setup.sh > "$OUT/setup_$tag.log" 2>&1 || { cat "$OUT/setup_$tag.log"; exit 1; }
cat "$OUT/setup_$tag.log"
lim=${LIMIT:-540}
t0=$(date +%s)
if [ "${CPU:-0}" = 1 ]; then
  PYOPENCL_CTX=1 timeout ${CPU_LIMIT:-200} python3 tools/run_notebooks.py --record-only "$@"; echo "cpu rc=$? $(( $(date +%s)-t0 )) s"
fi
# CPU_FULL="notebooks/00_device.ipynb": those notebooks recorded on the host CPU again, at full
# scale (chapter 9 takes a device's limits only from a full-scale chapter 0)
if [ -n "${CPU_FULL:-}" ]; then
  PYOPENCL_CTX=1 GPUBOOK_SCALE=full timeout ${CPU_FULL_LIMIT:-240} python3 tools/run_notebooks.py --record-only $CPU_FULL
  echo "cpu full rc=$? $(( $(date +%s)-t0 )) s"
fi
if [ "${VENDOR:-0}" = 1 ]; then
  PYOPENCL_CTX=0 GPUBOOK_RECORD=1 GPUBOOK_SCALE=full timeout 240 python3 -m gpubook.vendor; echo "vendor rc=$? $(( $(date +%s)-t0 )) s"
fi
left=$(( lim - ($(date +%s)-t0) ))
cap=/dev/shm/gpubook-capture; [ -d /dev/shm ] || cap=/tmp/gpubook-capture
# counters: the captures run CAPTURE_JOBS (3) at a time on the one GPU (a capture run is
# not timed), within the first CAPTURE_SHARE (45) % of the time; then tools/counters.py replays and profiles
# them one notebook after another (those are timed), writing each notebook's rows as it goes.
if [ "$mode" = counters ]; then
  rm -rf "$cap"; mkdir -p "$cap"; jobs_max=${CAPTURE_JOBS:-3}
  for nb in "$@"; do
    name=$(basename "$nb" .ipynb)
    to=$(( t0 + lim * ${CAPTURE_SHARE:-45} / 100 - $(date +%s) )); [ $to -gt 10 ] || { echo "$nb: no time to capture"; continue; }
    ( s=$(date +%s); PYOPENCL_CTX=0 GPUBOOK_SCALE=full timeout $to \
        python3 tools/run_notebooks.py --capture "$cap" "$nb" > "$OUT/capture_$name.log" 2>&1
      echo "$nb capture rc=$? $(( $(date +%s)-s )) s" ) &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 1; done
  done
  wait
  left=$(( lim - ($(date +%s)-t0) ))
  PYOPENCL_CTX=0 timeout $left python3 tools/counters.py "$cap" --record > "$OUT/counters_$tag.log" 2>&1
  echo "counters rc=$? $(( $(date +%s)-t0 )) s"; grep -E '^wrote|ncu gave' "$OUT/counters_$tag.log"
  rm -rf "$cap"
  set --
fi
# LANES=N (a host of N GPUs): chapter 0 first on the first GPU (the other chapters read its
# records), then the other notebooks split into N lanes by tools/lanes.py, each lane on its
# own GPU (CUDA_VISIBLE_DEVICES), its notebooks one after another. Logs: $OUT/lane_<i>.log.
# Chapter 10 uses every GPU of the host: its notebooks run after the lanes, with all in view.
flag=--record-only; [ "$mode" = reference ] && flag=--reference
if [ "${LANES:-1}" -gt 1 ]; then
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  first=(); rest=(); last=()
  for nb in "$@"; do
    case "$(basename "$nb")" in 00_*) ;; 10_*) last+=("$nb");; *) rest+=("$nb");; esac
  done
  # chapter 0 in the order its pages read each other: the device page (the copy figure and
  # the SM clock), the machine page (Little's law), then the other chapter 0 pages
  for want in 00_device 00_machine 00_; do
    for nb in "$@"; do
      b=$(basename "$nb"); case "$b" in "$want"*) case " ${first[*]} " in *" $nb "*) ;; *) first+=("$nb");; esac;; esac
    done
  done
  for nb in "${first[@]}"; do
    s=$(date +%s); CUDA_VISIBLE_DEVICES=0 PYOPENCL_CTX=0 GPUBOOK_SCALE=full timeout $left \
      python3 tools/run_notebooks.py $flag "$nb"; echo "$nb rc=$? $(( $(date +%s)-s )) s"
  done
  # NVIDIA's OpenCL is expected to list only the GPU that CUDA_VISIBLE_DEVICES names; where
  # it lists them all, the lane picks its GPU by index (PyTorch and CuPy still see one).
  seen=$(CUDA_VISIBLE_DEVICES=1 python3 -c "import pyopencl as cl; print(len(cl.get_platforms()[0].get_devices()))")
  echo "OpenCL devices under CUDA_VISIBLE_DEVICES=1: $seen"
  i=0
  while read -r lane; do
    [ -n "$lane" ] || { i=$((i+1)); continue; }
    ( for nb in $lane; do
        s=$(date +%s); left=$(( lim - ($(date +%s)-t0) ))
        ctx=0; [ "$seen" = 1 ] || ctx=0:$i
        CUDA_VISIBLE_DEVICES=$i PYOPENCL_CTX=$ctx GPUBOOK_SCALE=full timeout $left \
          python3 tools/run_notebooks.py $flag "$nb"; echo "$nb rc=$? $(( $(date +%s)-s )) s (GPU $i)"
      done ) > "$OUT/lane_$i.log" 2>&1 &
    i=$((i+1))
  done < <([ ${#rest[@]} -eq 0 ] || python3 tools/lanes.py "$LANES" "${rest[@]}")
  wait; cat "$OUT"/lane_*.log 2>/dev/null | grep ' rc='
  for nb in "${last[@]}"; do
    s=$(date +%s); left=$(( lim - ($(date +%s)-t0) ))
    PYOPENCL_CTX=0 GPUBOOK_SCALE=full timeout $left python3 tools/run_notebooks.py $flag "$nb"
    echo "$nb rc=$? $(( $(date +%s)-s )) s (all GPUs)"
  done
  tar czf "$OUT/$tag.tgz" results "$@"
  echo "total $(( $(date +%s)-t0 )) s"
  exit 0
fi
for nb in "$@"; do
  s=$(date +%s)
  PYOPENCL_CTX=0 GPUBOOK_SCALE=full timeout $left python3 tools/run_notebooks.py $flag "$nb"
  echo "$nb rc=$? $(( $(date +%s)-s )) s"
  left=$(( lim - ($(date +%s)-t0) ))
done
tar czf "$OUT/$tag.tgz" results "$@"
echo "total $(( $(date +%s)-t0 )) s"
