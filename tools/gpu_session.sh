#!/usr/bin/env bash
# One batched run on the GPU machine (device tool): install the carried wheels, check every
# kernel, run the named experiments, then any extra python scripts; results and logs go to $OUT
# as one tarball (the device tool brings back at most 8 files).
#   bash tools/gpu_session.sh "exp1 exp2" "tools/tune_x.py tools/tune_y.py"
set -uo pipefail
out="${OUT:-/tmp/out}"
mkdir -p "$out/res"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1 TQDM_DISABLE=1
{
  python3 -m lab check || echo "CHECK FAILED"
  for exp in $1; do
    echo "== measure $exp"; python3 -m lab measure "$exp" --out "$out/res" || echo "MEASURE $exp FAILED"
  done
  for script in ${2:-}; do
    echo "== $script"; python3 "$script" || echo "SCRIPT $script FAILED"
  done
} 2>&1 | tee "$out/log.txt" | grep -vE "NumbaPerformanceWarning|warn\(errors" 
tar czf "$out/results.tgz" -C "$out/res" . 2>/dev/null
