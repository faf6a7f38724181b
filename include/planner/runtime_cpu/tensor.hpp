#pragma once
/// CPU kernels for the bundled executor (docs/executor-kernels.md): fp32
/// forward and backward of the ops `planner model` emits, the optimizers, a
/// counter-based RNG and a single-device interpreter over a graph::OpGraph.
///
/// Design note: a kernel is a free function from input tensors (and shape or
/// attribute arguments) to output tensors. It never reads the graph, so a
/// sharded executor calls the same kernels on shard shapes. Kernels state
/// their shape preconditions as `Requires:`; the op layer (op_kernels.hpp)
/// checks them against the graph and returns errors as values.
///
/// This header: the tensors the kernels read and write.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace planner::runtime_cpu {

using Shape = std::vector<std::int64_t>;

/// Elements of a shape (1 for a scalar, the empty shape).
std::int64_t numel(const Shape& s);
/// Row-major strides of a shape (elements).
Shape strides_of(const Shape& s);
/// "[2,3,4]".
std::string shape_str(const Shape& s);

/// An owning fp32 buffer with a shape (row-major, contiguous).
struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  /// Zero-filled tensor of `shape`.
  explicit Tensor(Shape s);
  /// Requires: values.size() == numel(s).
  Tensor(Shape s, std::vector<float> values);

  std::int64_t size() const { return static_cast<std::int64_t>(data.size()); }
  float& operator[](std::int64_t i) { return data[static_cast<std::size_t>(i)]; }
  float operator[](std::int64_t i) const { return data[static_cast<std::size_t>(i)]; }
  std::span<float> span() { return data; }
  std::span<const float> span() const { return data; }
};

/// An owning int64 buffer with a shape: token ids, labels, index tables.
struct IndexTensor {
  Shape shape;
  std::vector<std::int64_t> data;

  std::int64_t size() const { return static_cast<std::int64_t>(data.size()); }
  std::int64_t operator[](std::int64_t i) const { return data[static_cast<std::size_t>(i)]; }
};

}  // namespace planner::runtime_cpu
