// Host memory between steps (header: runtime_cpu/host_memory.hpp).

#include "planner/runtime_cpu/host_memory.hpp"

#include <climits>  // first: a libc header defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace planner::runtime_cpu {

bool retain_freed_memory() {
#if defined(__GLIBC__)
  // M_TRIM_THRESHOLD at its largest: free() never shrinks the heap.
  // M_MMAP_THRESHOLD at glibc's largest (32 MiB on 64-bit): blocks below it
  // come from the heap and are reused, not mapped and unmapped per call.
  // Setting either ends glibc's dynamic threshold, so both are set.
  // Under a sanitizer, mallopt is intercepted and answers 0 (refused).
  const bool trim = mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1;
  return trim && mmap;
#else
  return false;
#endif
}

}  // namespace planner::runtime_cpu
