// runtime_cpu::retain_freed_memory: glibc takes both settings; an allocator
// that intercepts malloc (ASan's, in the asan preset) refuses, and that is
// an answer, not an error the executor must stop on.

#include "planner/runtime_cpu/host_memory.hpp"

#include <catch2/catch.hpp>

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kReplacedAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kReplacedAllocator = true;
#else
constexpr bool kReplacedAllocator = false;
#endif
#else
constexpr bool kReplacedAllocator = false;
#endif

TEST_CASE("retain_freed_memory: glibc takes both settings, ASan refuses them", "[runtime_cpu][host_memory]") {
#if defined(__GLIBC__)
  CHECK(planner::runtime_cpu::retain_freed_memory() == !kReplacedAllocator);
  // Idempotent: a second call gets the same answer.
  CHECK(planner::runtime_cpu::retain_freed_memory() == !kReplacedAllocator);
#else
  CHECK_FALSE(planner::runtime_cpu::retain_freed_memory());
#endif
}

}  // namespace
