#!/usr/bin/env bash
# The architecture invariants of ARCHITECTURE.md, one check each, over every
# module (run from the repository root). A check greps the module's sources
# and public headers; a failure prints the offending lines.
# Usage: tests/architecture/invariants.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
failures=0
checks=0
# no NAME REGEX DIRS...: no line of the files under DIRS matches REGEX.
no() {
  local name=$1 re=$2
  shift 2
  checks=$((checks + 1))
  local hits
  hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' --include='*.h' -- "$re" "$@" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "FAIL $name:"
    echo "$hits" | head -20
    failures=$((failures + 1))
  fi
}
mod() { echo "src/$1 include/planner/$1"; }
inc() { printf '#include *[<"](%s)' "$1"; }  # an include of any of the |-separated paths

ONNX='onnx/|onnx\.pb|google/protobuf'
CUDA='cuda|cublas|nccl\.h|cuda_runtime'
MPI='mpi\.h'
# Profile tables: only cost (and cluster, which defines them, calibrate,
# which writes them, and the runtimes that measure) read them.
PROFILE='\.device\(\)|gemm_table|elementwise_table|attention_efficiency|achievable_hbm_bandwidth|memory_bound_efficiency|gemm_precision_factor|peak_by_precision|\.launch_overhead'

# core: the standard library and fmt only.
no "core includes only std and fmt" "$(inc 'planner/[a-z_]+/[a-z_]+' | sed 's#\[a-z_\]+/\[a-z_\]+#(graph|ops|layout|sharding|search|cost|cluster|estimate|plan|onnx|runtime)[a-z_]*/#')" $(mod core)
# graph: the boundary every later stage works from.
no "graph includes no ONNX, CUDA or MPI header" "$(inc "$ONNX|$CUDA|$MPI")" $(mod graph)
no "graph includes no later stage" "$(inc 'planner/(ops|layout|sharding|search|cost|cluster|estimate|onnx|executor|runtime)')" $(mod graph)
# ops: graph and layout only.
no "ops depends on graph and layout only" "$(inc 'planner/(sharding|search|cost|cluster|estimate|onnx|sim|plan|executor|runtime)')" $(mod ops)
# only onnx and modelgen include ONNX or protobuf.
for m in core graph ops layout sharding sharding_milp sim cost cluster estimate search plan exporters report gate validate \
  runtime runtime_mpi runtime_cpu runtime_cuda calibrate executor cli; do
  no "$m includes no ONNX or protobuf header (only onnx and modelgen do)" "$(inc "$ONNX")" $(mod "$m")
done
# layout: structure only, no costs or profiles.
no "layout holds no costs or profiles" "$(inc 'planner/(cost|cluster|estimate|sharding|search|sim)')" $(mod layout)
no "layout depends on core only (element types are core::DType, not graph's)" "$(inc 'planner/graph/')" $(mod layout)
# sharding (op-level), sharding_milp, estimate, search (layouts): costs only through CostModel; no ONNX, CLI or
# profile tables.
for m in sharding sharding_milp estimate search; do
  no "$m includes no CLI or CUDA header" "$(inc "planner/cli|$CUDA|$MPI")" $(mod "$m")
  no "$m reads no profile table (costs through cost::CostModel, rates through cost/fastest.hpp)" "$PROFILE" $(mod "$m")
done
no "sharding, estimate and search include no cluster header (profiles reach them as cost models)" "$(inc 'planner/cluster/')" $(mod sharding) $(mod sharding_milp) $(mod estimate) $(mod search)
# planning: the search stage's glue (graphs, cost models, plans); the CLI
# keeps flags, printing and exit codes; profiles reach it only as cost models.
no "planning includes no CLI, cluster, CUDA or MPI header" "$(inc "planner/cli|planner/cluster/|$CUDA|$MPI")" $(mod planning)
no "planning reads no profile table" "$PROFILE" $(mod planning)
no "planning includes no ONNX or protobuf header (it imports through onnx::import_file)" "$(inc "$ONNX")" $(mod planning)
no "library errors name config fields, not flags (the CLI writes flags: cli/flag_names.hpp)" \
  '(make_error|Error\{|fmt::format)\("[^"]*--(devices|dp|tp|pp|cp|ep|vp|micro-batch|global-batch|zero|sp|schedule)\b' \
  $(mod estimate) $(mod search) $(mod planning)
# only sharding_milp links CBC.
for m in sharding estimate search cost cli; do
  no "$m includes no CBC header (only sharding_milp)" "$(inc 'coin/|Cbc|OsiClp')" $(mod "$m")
done
# plan, exporters, report, gate: plans only.
for m in plan exporters report gate; do
  no "$m reads plans only (no graph, cost, ONNX or runtime header)" \
    "$(inc 'planner/(graph|ops|layout|cost|cluster|estimate|sharding|sharding_milp|search|onnx|sim|runtime|executor)')" $(mod "$m")
done
# validate: numbers in, numbers out.
no "validate depends on core only" "$(inc 'planner/(graph|ops|layout|cost|cluster|estimate|sharding|sharding_milp|search|planning|onnx|sim|plan|runtime|runtime_cpu|runtime_mpi|executor|cli)/')" $(mod validate)
# runtimes: MPI only in runtime_mpi's sources, CUDA/NCCL only in runtime_cuda's.
for m in runtime runtime_cpu executor calibrate cli; do
  no "$m includes no MPI header (only runtime_mpi's sources)" "$(inc "$MPI")" $(mod "$m")
  no "$m includes no CUDA or NCCL header (only runtime_cuda's sources)" "$(inc "$CUDA")" $(mod "$m")
done
no "runtime_mpi's public header includes no MPI header" "$(inc "$MPI")" include/planner/runtime_mpi
no "runtime_cuda's public headers include no CUDA or NCCL header" "$(inc "cublas|nccl\.h|cuda_runtime")" include/planner/runtime_cuda
no "runtime_cpu reads no ONNX" "$(inc "$ONNX")" $(mod runtime_cpu)
no "runtime_cpu's headers hold no BLAS type" "$(inc 'cblas|openblas')" include/planner/runtime_cpu
# calibrate: times kernels and collectives, never a model or a plan (it
# builds single-op graphs of its own to cost the kernels it times, through
# graph and ops; no importer, plan, estimate, search or executor).
no "calibrate reads no model or plan" "$(inc 'planner/(onnx|plan|estimate|search|executor)/')" $(mod calibrate)
# One vocabulary: the collectives (and, below, element types and
# precisions) are defined once, in core; no module brings back its own enum.
checks=$((checks + 1))
vocab=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' --include='*.h' \
  'enum class (Collective|CollectiveKind|CollKind|DType|Precision)\b' src include | grep -vE '^include/planner/core/')
# ... nor re-exports core's under its own name from a public header (a
# namespace-scope alias such as runtime::DType or cluster::Collective).
vocab+=$(grep -rnE --include='*.hpp' --include='*.h' \
  '^using (core::(Collective|DType|Precision|kCollectiveCount|kPrecisionCount|dtype_name|dtype_size|is_floating|precision_name)\b|(Collective|DType|Precision) *= *core::)' include | grep -vE '^include/planner/core/')
if [ -n "$vocab" ]; then
  echo "FAIL collectives, element types and precisions are defined in core only (core::Collective, core::DType, core::Precision):"
  echo "$vocab"
  failures=$((failures + 1))
fi
# Only main exits. runtime_mpi's abort_job is the one exception: after a rank
# detected a failure, MPI_Abort is the only way to end the other ranks, and
# _exit (never reached when MPI_Abort works) keeps the rank from running
# MPI_Finalize with peers gone (ARCHITECTURE.md, "Only main exits";
# docs/reliability.md).
checks=$((checks + 1))
exits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cu' '(^|[^a-z_.>])(std::)?(_exit|exit|quick_exit|abort)\s*\(' src include |
  grep -v '^src/cli/main\.cpp:' | grep -vE '^src/runtime_mpi/mpi_session\.cpp:[0-9]+:  _exit\(code\);')
if [ -n "$exits" ]; then
  echo "FAIL only main exits:"
  echo "$exits"
  failures=$((failures + 1))
fi
# No writes outside io::write_file.
checks=$((checks + 1))
writes=$(grep -rnE --include='*.cpp' 'std::ofstream|fopen\([^)]*"[wa]' src | grep -v '^src/core/io\.cpp:')
if [ -n "$writes" ]; then
  echo "FAIL files are written only by io::write_file:"
  echo "$writes"
  failures=$((failures + 1))
fi
echo "architecture invariants: $((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
