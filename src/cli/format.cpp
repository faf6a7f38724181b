#include "planner/cli/format.hpp"

#include <cmath>

#include <fmt/format.h>

namespace planner::cli {

std::string human_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e12) return fmt::format("{:.2f} T", n / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string human_bytes(Bytes b) {
  const double v = b.value;
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double x = v;
  while (std::fabs(x) >= 1024.0 && u < 5) { x /= 1024.0; ++u; }
  return u == 0 ? fmt::format("{:.0f} B", x) : fmt::format("{:.2f} {}", x, units[u]);
}

std::string human_flops(Flops f) {
  const double v = f.value;
  const char* units[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int u = 0;
  double x = v;
  while (std::fabs(x) >= 1000.0 && u < 6) { x /= 1000.0; ++u; }
  return fmt::format("{:.2f} {}", x, units[u]);
}

}  // namespace planner::cli
