#!/usr/bin/env bash
# tools/dask_wheels.sh - download Dask and dask.distributed, with what they need, as wheels into
# .whl/ (git-ignored), for a GPU machine that cannot download: CPython 3.12, x86-64 Linux.
#
#   bash tools/dask_wheels.sh            # here, where PyPI is reachable
#
# There (the folder carried along with the checkout), before the tests or bench_dask.py:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# The versions are the ones gpuscan.dask was tested with (tests/test_dask.py, CI installs the
# newest through the test extra); pure-Python wheels except PyYAML, msgpack, psutil, tornado
# and MarkupSafe, fetched for manylinux.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY="${PYTHON:-python3}"
WHEELS=(
    dask==2026.8.0 distributed==2026.8.0
    cloudpickle==3.1.2 toolz==1.2.0 partd==1.4.2 locket==1.0.0 fsspec==2026.9.0
    click==8.5.1 pyyaml==6.0.3 packaging==26.3
    msgpack==1.2.4 psutil==7.2.2 sortedcontainers==2.4.0 tblib==3.2.2 tornado==6.6.1
    zict==3.0.0 jinja2==3.1.6 markupsafe==3.0.4
)
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64 manylinux_2_5_x86_64; do
    PLATFORMS+=(--platform "$p")
done
mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${PLATFORMS[@]}" -d .whl "${WHEELS[@]}"
ls -1 .whl
du -sh .whl
