#pragma once
/// Module `layout`: device meshes, tensor layouts and redistribution. Pure
/// structure: no graph IR, no ONNX, no cost numbers (the cost model turns
/// CommSteps into time with cluster::collective_time).
///
/// Design note
///   - DeviceMesh (mesh.hpp) names the axes of the device grid and knows how
///     each axis's groups sit on nodes. MeshAxis is its strong index.
///   - TensorLayout (tensor_layout.hpp) is a value: per tensor dim the
///     ordered mesh axes splitting it, plus the axes it is a partial sum
///     over. It is independent of the mesh and the shape (like MindSpore's
///     tensor map), which are passed to validate(), local_shape() and the
///     text functions; so one layout can be checked against many shapes and
///     hashed cheaply in search tables. Its text form (`[dp*tp,-]partial(cp)`,
///     docs/layout-grammar.md) is the only one used in tests, logs and plan
///     JSON, and parses back to an equal value.
///   - redistribute() (redistribute.hpp) derives the CommSteps between two
///     layouts axis by axis; tests replay them as real collectives on small
///     integer tensors for every pair of layouts of small meshes.
///
///   layout:  [dp, -, tp]  partial(cp)      on mesh(dp=2,cp=2,tp=2)
///             |   |   |           |
///   dim 0 cut in 2 by dp  dim 2 cut in 2 by tp   the 2 cp members' pieces
///   dim 1 whole                                  add up to the tensor
///
/// Architecture invariant: layout depends on core and graph (DType) only;
/// search, cost and plan depend on it, never the reverse.

#include "planner/layout/mesh.hpp"
#include "planner/layout/redistribute.hpp"
#include "planner/layout/tensor_layout.hpp"
