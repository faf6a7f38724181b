// Hand-computed redistributions: the Megatron tensor/sequence-parallel cases
// and the orderings the header promises. Bytes follow the header's
// convention (the S of the BRIEF §3 formulas).

#include <catch2/catch.hpp>

#include "planner/layout/redistribute.hpp"

using namespace planner;
using namespace planner::layout;
using core::DType;
using Shape64 = std::vector<std::int64_t>;

namespace {
DeviceMesh mesh_of(std::string_view text) {
  auto m = DeviceMesh::parse(text);
  REQUIRE(m.ok());
  return *m;
}
// The steps between two layouts given as text, one line per step.
std::vector<std::string> steps_of(std::string_view from, std::string_view to, const Shape64& shape, DType t,
                                  const DeviceMesh& m) {
  auto a = parse_layout(from, m);
  auto b = parse_layout(to, m);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<std::string> out;
  for (const CommStep& s : redistribute(*a, *b, shape, t, m)) out.push_back(to_string(s, m));
  return out;
}
using Lines = std::vector<std::string>;
}  // namespace

TEST_CASE("Megatron tensor parallelism: row-parallel output and sequence parallelism", "[layout][redistribute]") {
  // b=2, s=8, h=16 activations in bf16: b*s*h*2 = 512 bytes.
  DeviceMesh m = mesh_of("mesh(tp=4)");
  Shape64 bsh{2, 8, 16};
  MeshAxis tp(0);

  SECTION("row-parallel MatMul output, partial over tp -> replicated: all-reduce of b*s*h*2") {
    auto steps = redistribute(TensorLayout::partial(3, tp), TensorLayout::replicated(3), bsh, DType::bf16, m);
    REQUIRE(steps.size() == 1);
    CHECK(steps[0].kind == core::Collective::all_reduce);
    CHECK(steps[0].axis == tp);
    CHECK(steps[0].group_size == 4);
    CHECK(steps[0].bytes == Bytes(2 * 8 * 16 * 2));
    CHECK_FALSE(steps[0].gather_dim);
    CHECK_FALSE(steps[0].scatter_dim);
    CHECK(steps[0].result == TensorLayout::replicated(3));
  }
  SECTION("partial -> split on the sequence dim: reduce-scatter of the full input") {
    auto steps = redistribute(TensorLayout::partial(3, tp), TensorLayout::split(3, 1, tp), bsh, DType::bf16, m);
    REQUIRE(steps.size() == 1);
    CHECK(steps[0].kind == core::Collective::reduce_scatter);
    CHECK(steps[0].scatter_dim == 1);
    CHECK(steps[0].bytes == Bytes(512));
  }
  SECTION("split on the sequence dim -> replicated: all-gather of the full output") {
    auto steps = redistribute(TensorLayout::split(3, 1, tp), TensorLayout::replicated(3), bsh, DType::bf16, m);
    REQUIRE(steps.size() == 1);
    CHECK(steps[0].kind == core::Collective::all_gather);
    CHECK(steps[0].gather_dim == 1);
    CHECK(steps[0].bytes == Bytes(512));
  }
  SECTION("replicated -> split: a local slice, no bytes") {
    CHECK(steps_of("[-,-,-]", "[-,tp,-]", bsh, DType::bf16, m) ==
          Lines{"local_slice(tp x4) dim 1: 0 B -> [-,tp,-]"});
  }
  SECTION("sequence split -> hidden split: all-to-all of the local buffer (512/4)") {
    CHECK(steps_of("[-,tp,-]", "[-,-,tp]", bsh, DType::bf16, m) ==
          Lines{"all_to_all(tp x4) dim 1->2: 128 B -> [-,-,tp]"});
  }
  SECTION("RS + AG move what one all-reduce moves (ring: (n-1)/n S each, 2(n-1)/n S)") {
    auto rs = redistribute(TensorLayout::partial(3, tp), TensorLayout::split(3, 1, tp), bsh, DType::bf16, m);
    auto ag = redistribute(TensorLayout::split(3, 1, tp), TensorLayout::replicated(3), bsh, DType::bf16, m);
    CHECK(rs[0].bytes == ag[0].bytes);
    CHECK(total_bytes(rs) + total_bytes(ag) == Bytes(1024));
  }
  SECTION("equal layouts need nothing") {
    CHECK(redistribute(TensorLayout::split(3, 1, tp), TensorLayout::split(3, 1, tp), bsh, DType::bf16, m).empty());
  }
}

TEST_CASE("Megatron with data parallelism: the batch split stays put", "[layout][redistribute]") {
  // mesh(dp=2,tp=4), b=2 split over dp: local b=1, so 1*8*16*2 = 256 bytes.
  DeviceMesh m = mesh_of("mesh(dp=2,tp=4)");
  Shape64 bsh{2, 8, 16};
  CHECK(steps_of("[dp,-,-]partial(tp)", "[dp,-,-]", bsh, DType::bf16, m) ==
        Lines{"all_reduce(tp x4): 256 B -> [dp,-,-]"});
  CHECK(steps_of("[dp,-,-]partial(tp)", "[dp,tp,-]", bsh, DType::bf16, m) ==
        Lines{"reduce_scatter(tp x4) dim 1: 256 B -> [dp,tp,-]"});
  CHECK(steps_of("[dp,tp,-]", "[dp,-,-]", bsh, DType::bf16, m) ==
        Lines{"all_gather(tp x4) dim 1: 256 B -> [dp,-,-]"});
  // Gradient all-reduce over dp of a tp-split weight [h, 4h/tp], f32: 16*16*4 B.
  CHECK(steps_of("[-,tp]partial(dp)", "[-,tp]", Shape64{16, 64}, DType::f32, m) ==
        Lines{"all_reduce(dp x2): 1024 B -> [-,tp]"});
  // ZeRO-3 style weight gather over dp of [dp,tp]: output 8x16 f32 per device.
  CHECK(steps_of("[dp,tp]", "[-,tp]", Shape64{16, 64}, DType::f32, m) ==
        Lines{"all_gather(dp x2) dim 0: 1024 B -> [-,tp]"});
}

TEST_CASE("steps come in the documented order", "[layout][redistribute]") {
  DeviceMesh m = mesh_of("mesh(dp=2,tp=2)");
  Shape64 s44{4, 4};
  SECTION("slices before reductions, so the all-reduce carries half") {
    // After slicing dp the local buffer is 2x4 f32 = 32 B.
    CHECK(steps_of("[-,-]partial(tp)", "[dp,-]", s44, DType::f32, m) ==
          Lines{"local_slice(dp x2) dim 0: 0 B -> [dp,-]partial(tp)", "all_reduce(tp x2): 32 B -> [dp,-]"});
  }
  SECTION("slices before gathers") {
    // [dp,-] -> [-,tp]: slice tp (2x2 local), then gather dp: 4x2 f32 = 32 B.
    CHECK(steps_of("[dp,-]", "[-,tp]", s44, DType::f32, m) ==
          Lines{"local_slice(tp x2) dim 1: 0 B -> [dp,tp]", "all_gather(dp x2) dim 0: 32 B -> [-,tp]"});
  }
  SECTION("reordering the axes of one dim: gather then slice") {
    // [dp*tp] -> [tp*dp] on 8 f32: gather tp (4 elems, 16 B), gather dp (32 B), slice tp, slice dp.
    CHECK(steps_of("[dp*tp]", "[tp*dp]", Shape64{8}, DType::f32, m) ==
          Lines{"all_gather(tp x2) dim 0: 16 B -> [dp]", "all_gather(dp x2) dim 0: 32 B -> [-]",
                "local_slice(tp x2) dim 0: 0 B -> [tp]", "local_slice(dp x2) dim 0: 0 B -> [tp*dp]"});
    // Appending a minor axis keeps the major one: no communication.
    CHECK(steps_of("[dp]", "[dp*tp]", Shape64{8}, DType::f32, m) ==
          Lines{"local_slice(tp x2) dim 0: 0 B -> [dp*tp]"});
    // Dropping the major axis of two is a reorder too: [tp] is not a prefix.
    CHECK(steps_of("[dp*tp]", "[tp]", Shape64{8}, DType::f32, m).size() == 3);
  }
  SECTION("swapping two dims: one gather breaks the cycle, then an all-to-all") {
    CHECK(steps_of("[dp,tp]", "[tp,dp]", s44, DType::f32, m) ==
          Lines{"all_gather(dp x2) dim 0: 32 B -> [-,tp]", "all_to_all(tp x2) dim 1->0: 32 B -> [tp,-]",
                "local_slice(dp x2) dim 1: 0 B -> [tp,dp]"});
  }
  SECTION("an axis the target replicates is gathered before one it moves") {
    // [dp,tp] -> [-,dp]: gather tp (target replicated), then all-to-all dp.
    CHECK(steps_of("[dp,tp]", "[-,dp]", s44, DType::f32, m) ==
          Lines{"all_gather(tp x2) dim 1: 32 B -> [dp,-]", "all_to_all(dp x2) dim 0->1: 32 B -> [-,dp]"});
  }
  SECTION("into a partial layout: local, after a gather when split") {
    CHECK(steps_of("[-,-]", "[-,-]partial(tp)", s44, DType::f32, m) ==
          Lines{"local_slice(tp x2) partial: 0 B -> [-,-]partial(tp)"});
    CHECK(steps_of("[tp,-]", "[-,-]partial(tp)", s44, DType::f32, m) ==
          Lines{"all_gather(tp x2) dim 0: 64 B -> [-,-]", "local_slice(tp x2) partial: 0 B -> [-,-]partial(tp)"});
  }
  SECTION("a partial set shared by both layouts is left alone") {
    CHECK(steps_of("[-,-]partial(dp)", "[tp,-]partial(dp)", s44, DType::f32, m) ==
          Lines{"local_slice(tp x2) dim 0: 0 B -> [tp,-]partial(dp)"});
  }
  SECTION("partial over two axes, one reduce-scattered, one all-reduced") {
    CHECK(steps_of("[-,-]partial(dp,tp)", "[tp,-]", s44, DType::f32, m) ==
          Lines{"reduce_scatter(tp x2) dim 0: 64 B -> [tp,-]partial(dp)", "all_reduce(dp x2): 32 B -> [tp,-]"});
  }
}

TEST_CASE("axes of size 1 produce no steps", "[layout][redistribute]") {
  DeviceMesh m = mesh_of("mesh(pp=1,tp=2)");
  CHECK(steps_of("[pp,-]", "[-,pp]partial(tp)", Shape64{4, 4}, DType::f32, m) ==
        Lines{"local_slice(tp x2) partial: 0 B -> [-,pp]partial(tp)"});
  CHECK(steps_of("[pp,-]", "[-,-]", Shape64{4, 4}, DType::f32, m).empty());
}

TEST_CASE("collective kind names and totals", "[layout][redistribute]") {
  CHECK(comm_kind_name(core::Collective::reduce_scatter) == "reduce_scatter");
  CHECK(comm_kind_name(kLocalSlice) == "local_slice");
  CHECK(comm_kind_name(core::Collective::send_recv) == "send_recv");
  CHECK(is_local(kLocalSlice));
  CHECK_FALSE(is_local(core::Collective::all_to_all));
  CHECK(total_bytes(std::vector<CommStep>{}) == Bytes(0));
  std::vector<CommStep> two(2);
  two[0].bytes = Bytes(3);
  two[1].bytes = Bytes(4);
  CHECK(total_bytes(two) == Bytes(7));
}
