#pragma once
/// Strong unit types. No bare double crosses a module boundary for a
/// physical quantity: FLOPs, bytes, seconds and rates each have their own
/// type, and only the meaningful mixed operations are defined
/// (Flops / FlopsPerSecond = Seconds, Bytes / BytesPerSecond = Seconds, ...).

#include <compare>
#include <cstdint>

namespace planner {

/// A double tagged with its unit. Same-unit +, -, comparison; scaling by a
/// dimensionless factor; same-unit division yields a ratio.
template <typename Tag>
struct Quantity {
  double value = 0.0;

  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : value(v) {}

  constexpr Quantity& operator+=(Quantity o) { value += o.value; return *this; }
  constexpr Quantity& operator-=(Quantity o) { value -= o.value; return *this; }
  constexpr Quantity& operator*=(double k) { value *= k; return *this; }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value + b.value); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value - b.value); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value / b.value; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;
  friend constexpr bool operator==(Quantity a, Quantity b) = default;
};

struct FlopsTag {};
struct BytesTag {};
struct SecondsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};

/// Floating-point operations (a multiply-add counts 2).
using Flops = Quantity<FlopsTag>;
/// Bytes of memory or of traffic.
using Bytes = Quantity<BytesTag>;
/// Wall-clock time.
using Seconds = Quantity<SecondsTag>;
/// A bandwidth.
using BytesPerSecond = Quantity<BytesPerSecondTag>;
/// A compute rate.
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value / r.value); }
constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value / r.value); }
constexpr FlopsPerSecond operator/(Flops f, Seconds s) { return FlopsPerSecond(f.value / s.value); }
constexpr BytesPerSecond operator/(Bytes b, Seconds s) { return BytesPerSecond(b.value / s.value); }
constexpr Flops operator*(FlopsPerSecond r, Seconds s) { return Flops(r.value * s.value); }
constexpr Bytes operator*(BytesPerSecond r, Seconds s) { return Bytes(r.value * s.value); }

constexpr Bytes gib(double n) { return Bytes(n * 1024.0 * 1024.0 * 1024.0); }

}  // namespace planner
