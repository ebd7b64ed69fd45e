#!/usr/bin/env bash
# GPU check (issue #16, part 5; #27): the CUDA-marked tests, then the kernel, influence,
# attack and training benchmarks at GPU scale, and the batched trainer (#27): its FLOP rate
# against a matmul probe, influence_check at its defaults over 3 seeds, and one seed
# separate vs batched (wall time and the largest change per column), and the fused
# closed-form step (#37) against autograd per network-step on CUDA: not run yet (no GPU
# was lent); there a step is launch-bound, so stacking B networks in one step (bmm)
# should pay more than on the CPU; CUDA graphs / torch.compile are not tried. One table each.
#
#   bash benchmarks/gpu_check.sh            # needs CUDA; exits 3 with one line without it
#   bash benchmarks/gpu_check.sh --cpu-smoke  # the same steps at toy sizes on the CPU (checks the script)
#   STEPS=tests,batched bash benchmarks/gpu_check.sh   # only these steps (default: all of
#                           # tests,batched,fused,ntk,influence,attacks,sweep,separate)
#
# Needs the project installed with a CUDA build of torch (pip install -e ".[dev]").
# Data: MNIST from $MALLEABILITY_DATA_DIR (default ../shared/data/mnist); without it the
# training sweep runs on the embedded digits (10 classes, n 1000).
# Writes its tables to stdout and the sweep's run directory under ${OUT:-/tmp/gpu_check}.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
smoke=0
[ "${1:-}" = "--cpu-smoke" ] && smoke=1
STEPS=${STEPS:-tests,batched,fused,ntk,influence,attacks,sweep,separate}
want() { [[ ",$STEPS," == *",$1,"* ]]; }
status=0
step() {  # step SECONDS TITLE CMD...: one timed step; a failure is reported and the rest go on
  local limit=$1 title=$2
  shift 2
  echo "== $title"
  local t0=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  [ $rc -ne 0 ] && { echo "!! $title: exit $rc"; status=1; }
  echo "-- $title: $((SECONDS - t0)) s"
}

if [ $smoke -eq 0 ]; then
  if ! python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)"; then
    echo "gpu_check: no CUDA device (torch.cuda.is_available() is False); --cpu-smoke checks the script"
    exit 3
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  dev=cuda epochs=500 widths=4,8,16,32,64,128,256,512,1024,2048,4096 n=1000 ntk_args=(--gpu-scale)
  inf_args=() att_args=(--n 10000)
else
  dev=cpu epochs=2 widths=8,16 n=100 ntk_args=(--quick --no-jacobian) inf_args=(--quick)
  att_args=(--quick)
fi
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"

if [ $smoke -eq 0 ] && want tests; then
  step 90 "CUDA-marked tests" python -m pytest -q -p no:cacheprovider -m gpu tests/engine/test_device.py
fi
if want batched; then
  if [ $smoke -eq 0 ]; then
    flop_args=(--widths 16,64,256,1024,4096 --networks 64 --repeat 1)
  else
    flop_args=(--widths 16 --networks 2 --repeat 1)
  fi
  step 90 "batched trainer: FLOP rate vs the matmul probe ($dev)" \
    python benchmarks/bench_batched.py --device "$dev" --parts flops "${flop_args[@]}"
  if [ $smoke -eq 0 ]; then  # influence_check at its defaults: minutes on a CPU, skipped in the smoke
    step 150 "batched trainer: influence_check, MNIST 3 vs 8, seeds 0,1,2 ($dev)" \
      python benchmarks/bench_batched.py --device "$dev" --parts influence --seeds 0,1,2 --runs batched
  fi
fi
if want fused; then  # the closed-form step (engine.train.fused) on the device: per network-step vs autograd
  if [ $smoke -eq 0 ]; then fused_args=(--widths 16,64,256,1024,4096 --repeat 3); else fused_args=(--widths 16 --repeat 1); fi
  step 120 "fused step vs autograd, B = 1 and 6 ($dev)" \
    python benchmarks/bench_fused_step.py --device "$dev" --parts step "${fused_args[@]}"
fi
want ntk && step 90 "NTK kernels ($dev)" python benchmarks/bench_ntk.py --device "$dev" "${ntk_args[@]}"
want influence && step 60 "influence ($dev)" python benchmarks/bench_influence.py --device "$dev" "${inf_args[@]}"
want attacks && step 60 "attacks ($dev)" python benchmarks/bench_attacks.py --device "$dev" "${att_args[@]}"
data=${MALLEABILITY_DATA_DIR:-../shared/data/mnist}
if [ -d "$data" ]; then
  sweep=(--dataset mnist --data-dir "$data")
else
  echo "note: no MNIST at $data; the training sweep uses the embedded digits"
  sweep=(--dataset digits)
fi
if want sweep; then
  rm -rf "$OUT/sweep"
  step 150 "training sweep: widths $widths, $epochs epochs, n $n ($dev)" \
    malleability headless "${sweep[@]}" --experiment train --widths "$widths" --seeds 0 \
    --epochs "$epochs" --n-train "$n" --n-test 200 --device "$dev" --out "$OUT/sweep"
fi
if [ $smoke -eq 0 ] && want separate; then  # last: the separate trainer is the slow one
  step 240 "batched trainer: influence_check seed 0, separate vs batched ($dev)" \
    python benchmarks/bench_batched.py --device "$dev" --parts influence --seeds 0 --runs batched,separate
fi
exit $status
