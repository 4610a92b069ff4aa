# The book's commands. `make book` and `make test` are all a newcomer needs.
VENV := .venv
VPY := $(VENV)/bin/python
# The reference run happens on a GPU host that may have no venv: use python3 there.
PY ?= $(if $(wildcard $(VPY)),$(VPY),python3)
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# The CPU device recorded as the second reference (PoCL's platform on the GPU host).
CPU_CTX ?= portable

.PHONY: book test fuzz time-test test-devices run lab reference check-reference kernel-builds check-kernels clean venv

venv: $(VENV)/.installed

# The pins, then the helper package itself, editable (pyproject.toml), built with the
# pinned setuptools already in the venv: no download of a build backend. The rm drops
# the gpubook.pth path file that older venvs of the book used instead.
$(VENV)/.installed: requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	rm -f $(VENV)/lib/python*/site-packages/gpubook.pth
	$(VPY) -m pip install -qq --no-deps --no-build-isolation -e .
	touch $@

## book: build the site into _build/html from the stored (reference) outputs
book: venv
	python3 tools/set_repository.py --site-config _build/site_config.yml
	$(VENV)/bin/jupyter-book build . -W -n --keep-going --config _build/site_config.yml

## test: unit tests, nbval over every notebook on your device (small scale), site checks
# The chapters with shaped launches (3 to 8, and 10) run as on a small GPU: PoCL limited to
# 32 work-items per work-group (POCL_MAX_WORK_GROUP_SIZE; other drivers ignore it), where
# every launch shape must come from the device and the checked outputs must still equal
# the stored ones. The other notebooks run with the device's own limits.
# Tests run in TEST_WORKERS processes (pytest-xdist; a notebook's cells stay together on one
# worker, --dist loadscope): most of a first run is PoCL compiling kernels, one core each.
SMALL_DEVICE_NOTEBOOKS := $(addprefix notebooks/,03_reduction.ipynb 04_vector_types.ipynb 05_transpose.ipynb 06_1_covariance.ipynb 06_2_out_of_core.ipynb 06_3_tensor_cores.ipynb 07_scan.ipynb 08_1_qr_updates.ipynb 08_2_subsets.ipynb 08_3_cholqr2.ipynb 10_multi_gpu.ipynb \
	03_going_further.ipynb 04_going_further.ipynb 05_going_further.ipynb 06_going_further.ipynb 07_going_further.ipynb \
	08_going_further.ipynb 10_going_further.ipynb)
TEST_WORKERS ?= 2
PYTEST := $(VPY) -m pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope
test: venv
	GPUBOOK_SCALE=small $(PYTEST) tests $(filter-out $(SMALL_DEVICE_NOTEBOOKS),$(NOTEBOOKS)) --nbval-lax --nbval-current-env
	POCL_MAX_WORK_GROUP_SIZE=32 GPUBOOK_SCALE=small $(PYTEST) $(SMALL_DEVICE_NOTEBOOKS) --nbval-lax --nbval-current-env

## fuzz: the property tests (tests/test_properties*.py) with Hypothesis's "fuzz" profile: random
## seeds, no deadline, GPUBOOK_FUZZ_FACTOR (25) times the examples of `make test`'s fixed-seed run
## (over 50,000 inputs); prints how many inputs each entry point tried and how many were compared.
FUZZ_COUNT := _build/fuzz_count.txt
fuzz: venv
	mkdir -p _build && rm -f $(FUZZ_COUNT)
	HYPOTHESIS_PROFILE=fuzz GPUBOOK_FUZZ_COUNT=$(CURDIR)/$(FUZZ_COUNT) GPUBOOK_SCALE=small \
		$(PYTEST) tests/test_properties.py tests/test_properties_fit.py -W ignore::RuntimeWarning
	@$(PY) -c "import sys; rows = open(sys.argv[1]).read().split(chr(10)); rows = [r for r in rows if r]; \
		print(chr(10).join(rows)); print('inputs tried:', sum(int(r.split()[0]) for r in rows))" $(FUZZ_COUNT)

## time-test: time `make venv`, `make book` and `make test` in a fresh clone with an empty
## PoCL cache, and append the times to book/data/test_times.csv (the maintainers' page)
time-test:
	python3 tools/time_make_test.py

## test-devices: run the notebooks under nbval (small scale) on each OpenCL implementation
## installed here: PoCL at 32 and at 16 work-items per work-group, Intel's OpenCL CPU runtime
## (pip wheels intel-opencl-rt, registered through OCL_ICD_VENDORS) and Mesa's rusticl on
## llvmpipe; prints per implementation the cells passed and failed and the time, and skips
## the ones not installed with the reason (tools/test_devices.py). DEVICE_NOTEBOOKS picks
## notebooks; the logs go to _build/test_devices/.
DEVICE_NOTEBOOKS ?= $(NOTEBOOKS)
test-devices: venv
	$(VPY) tools/test_devices.py --workers $(TEST_WORKERS) $(DEVICE_NOTEBOOKS)

## kernel-builds: record every kernel build that `make test` makes (files, -D options,
## preamble) into tests/data/kernel_builds.json, which tests/test_strict_compile.py
## compiles strictly. Entries of other OpenCL platforms (a GPU host's run) are kept.
BUILD_LOG := _build/kernel_builds.log
kernel-builds: venv
	mkdir -p _build && rm -f $(BUILD_LOG)
	-GPUBOOK_BUILD_LOG=$(CURDIR)/$(BUILD_LOG) $(MAKE) test
	$(PY) tools/kernel_builds.py merge $(BUILD_LOG)

## check-kernels: run each portable kernel at tiny sizes under Oclgrind (data races,
## out-of-bounds and uninitialised values), one test per process; expects no report.
## CHECK=--quick runs the subset CI may run; CHECK="scan-1 lsq-2" runs some cases.
CHECK ?=
check-kernels: venv
	$(PY) tools/check_kernels.py $(CHECK)

## run: execute every notebook on your device and build a site of your own outputs
run: venv
	rm -rf _build/local && mkdir -p _build/local/notebooks
	cp -r _config.yml _toc.yml book _build/local/
	$(VPY) tools/run_notebooks.py --out _build/local/notebooks $(NOTEBOOKS)
	$(VENV)/bin/jupyter-book build _build/local
	@echo "your site: _build/local/_build/html/index.html"

## lab: JupyterLab on the notebooks with the book's venv (no browser is opened: follow the
## printed link). LAB_PORT picks the port; when it is taken, tools/lab.py says so and
## starts on a free one.
LAB_PORT ?= 8888
lab: venv
	$(VPY) tools/lab.py --port $(LAB_PORT)

## reference: record the host CPU (PoCL), the vendor's libraries on the GPU where PyTorch has CUDA
## (results/<gpu>/vendor.json), then the GPU reference run (outputs stored in place)
## The CPU goes first so that the GPU's stored plots show its curves beside the GPU's;
## a host without a CPU OpenCL device still gets the GPU run.
reference:
	-PYOPENCL_CTX=$(CPU_CTX) $(PY) tools/run_notebooks.py --record-only $(NOTEBOOKS)
	-GPUBOOK_RECORD=1 GPUBOOK_SCALE=full $(PY) -m gpubook.vendor
	GPUBOOK_SCALE=full $(PY) tools/run_notebooks.py --reference $(NOTEBOOKS)
	$(PY) tools/stored_pages.py

## check-reference: name every notebook whose stored outputs are stale
check-reference:
	@$(PY) tools/check_reference.py

clean:
	rm -rf _build
