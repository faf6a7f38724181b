#pragma once
/// How the CPU backend's process keeps host memory between steps.


namespace planner::runtime_cpu {

/// Makes the C library keep the memory a step frees for the next step
/// instead of returning it to the kernel (glibc malloc: no heap trimming,
/// allocations below 32 MiB served from the heap). The kernels allocate
/// their outputs per call; with glibc's defaults every step gave back the
/// top of its heap and faulted it in again, page by page, which cost 6 to
/// 10 times the step's arithmetic on a small GPT (docs/executor.md,
/// "Host memory"). This is what a caching allocator does for a GPU
/// framework (PyTorch keeps freed blocks cached). Process-wide: the CLI
/// calls it once, before the first step; nothing else should.
/// True when the C library took both settings. False is not an error: an
/// allocator that replaces glibc's (ASan and the other sanitizers,
/// jemalloc, tcmalloc) refuses mallopt and keeps its own policy, and steps
/// run at that allocator's speed; without glibc it is false and does
/// nothing.
bool retain_freed_memory();

}  // namespace planner::runtime_cpu
