#!/usr/bin/env python3
"""Generates the bad-input corpus under tests/bad_inputs/ (docs/reliability.md).

Standard library only: ONNX models are written as protobuf bytes by hand with
the tiny encoder below (no onnx package), profiles as JSON text.

Each case is a folder tests/bad_inputs/<case>/ with
  cmd      shell fragment run by tests/bad_inputs/run.sh in an empty temp
           folder holding copies of the case's input files; `planner` runs the
           binary under test
  setup    (optional) shell fragment run there first (sparse files, FIFOs)
  expect   line 1: the exit status; line 2: a substring the one-line error on
           stderr must contain (for status 0: a substring of stdout);
           optional line 3 "names: TEXT": the error must also contain TEXT
           (by default the first input file's name, for status 2);
           optional "creates: FILE": the file a successful command writes
  inputs   every other file

Usage:
  tools/make_bad_inputs.py [--out DIR]     (re)write the corpus (default tests/bad_inputs)
  tools/make_bad_inputs.py --check         exit 1 if the committed corpus differs

The generator is deterministic: same script, same bytes. Folders it does not
generate (fuzz_found/) and run.sh are left alone.
"""

import argparse
import json
import os
import random
import shutil
import struct
import sys
import tempfile

# --------------------------------------------------------------------------
# Protobuf encoding: varints and length-delimited fields, nothing else.

VARINT, LEN = 0, 2


def varint(n):
    """Base-128 varint; negative numbers as 64-bit two's complement (10 bytes)."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def f_int(field, n):
    return key(field, VARINT) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return key(field, LEN) + varint(len(data)) + data


# ONNX field numbers (onnx.proto3 / onnx-ml.proto).
class M:  # ModelProto
    ir_version, producer_name, producer_version, graph, opset_import = 1, 2, 3, 7, 8


class G:  # GraphProto
    node, name, initializer, input, output, value_info = 1, 2, 5, 11, 12, 13


class N:  # NodeProto
    input, output, name, op_type, attribute, domain = 1, 2, 3, 4, 5, 7


class A:  # AttributeProto
    name, g, type = 1, 6, 20
    GRAPH = 5


class T:  # TensorProto
    dims, data_type, int64_data, name, raw_data, external_data, data_location = 1, 2, 7, 8, 9, 13, 14
    FLOAT, INT64, EXTERNAL = 1, 7, 1


def opset(version, domain=""):
    body = (f_bytes(1, domain) if domain else b"") + f_int(2, version)
    return f_bytes(M.opset_import, body)


def dim(d):
    if isinstance(d, str):
        return f_bytes(1, f_bytes(2, d))
    return f_bytes(1, f_int(1, d))


def value_info(name, shape, elem=T.FLOAT):
    shape_msg = b"".join(dim(d) for d in shape)
    tensor_type = f_int(1, elem) + f_bytes(2, shape_msg)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def tensor(name, dims, elem=T.FLOAT, raw=None, external=None, int64s=None):
    b = b"".join(f_int(T.dims, d) for d in dims) + f_int(T.data_type, elem)
    if int64s is not None:
        b += b"".join(f_int(T.int64_data, v) for v in int64s)
    b += f_bytes(T.name, name)
    if raw is not None:
        b += f_bytes(T.raw_data, raw)
    if external is not None:
        for k, v in external:
            b += f_bytes(T.external_data, f_bytes(1, k) + f_bytes(2, v))
        b += f_int(T.data_location, T.EXTERNAL)
    return b


def attr_graph(name, graph_body):
    return f_bytes(A.name, name) + f_bytes(A.g, graph_body) + f_int(A.type, A.GRAPH)


def node(op, inputs, outputs, name=None, domain=None, attrs=()):
    b = b"".join(f_bytes(N.input, i) for i in inputs)
    b += b"".join(f_bytes(N.output, o) for o in outputs)
    if name is not None:
        b += f_bytes(N.name, name)
    b += f_bytes(N.op_type, op)
    for a in attrs:
        b += f_bytes(N.attribute, a)
    if domain is not None:
        b += f_bytes(N.domain, domain)
    return b


def graph(nodes=(), inputs=(), outputs=(), initializers=(), value_infos=(), name="g"):
    b = b"".join(f_bytes(G.node, n) for n in nodes)
    b += f_bytes(G.name, name)
    b += b"".join(f_bytes(G.initializer, t) for t in initializers)
    b += b"".join(f_bytes(G.input, v) for v in inputs)
    b += b"".join(f_bytes(G.output, v) for v in outputs)
    b += b"".join(f_bytes(G.value_info, v) for v in value_infos)
    return b


def model(graph_body, opsets=((17, ""),), ir_version=8):
    b = f_int(M.ir_version, ir_version) + f_bytes(M.producer_name, "make_bad_inputs")
    b += b"".join(opset(v, d) for v, d in opsets)
    b += f_bytes(M.graph, graph_body)  # last, so a truncation lands inside it
    return b


def floats(n, seed=0):
    r = random.Random(seed)
    return struct.pack("<%df" % n, *(r.uniform(-1, 1) for _ in range(n)))


# A small valid model: x[2,4] -> MatMul(W[4,3]) -> Relu -> y[2,3].
def base_graph(**over):
    g = dict(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"), node("Relu", ["h"], ["y"], name="relu")],
        inputs=[value_info("x", [2, 4])],
        outputs=[value_info("y", [2, 3])],
        initializers=[tensor("W", [4, 3], raw=floats(12))],
    )
    g.update(over)
    return graph(**g)


def base_model(**over):
    return model(base_graph(**over))


# --------------------------------------------------------------------------
# Profiles: a minimal valid profile, then one defect per case.

def sv(v, source="tools/make_bad_inputs.py"):
    return {"value": v, "source": source}


def table(x, rows):
    return {"x": x, "source": "tools/make_bad_inputs.py", "rows": rows}


def base_profile(name="p"):
    return {
        "schema_version": 1,
        "name": name,
        "system": "bad-input corpus base profile",
        "source": "tools/make_bad_inputs.py",
        "device": {
            "name": "test device",
            "peak_tflops": {"bf16": sv(100), "fp32": sv(20)},
            "hbm_GB": sv(80),
            "visible_GiB": sv(79),
            "cuda_context_GiB": sv(0.9),
            "communicator_GiB": sv(1.5),
            "hbm_GBps": sv(2000),
            "hbm_efficiency": sv(0.9),
            "elementwise_efficiency": table("bytes", [[1e3, 0.1], [1e9, 0.9]]),
            "launch_overhead_us": sv(5),
            "gemm_efficiency": table("flops", [[1e6, 0.1], [1e12, 0.8]]),
            "gemm_skinny_efficiency": table("min_dim", [[1, 0.1], [1024, 1]]),
            "gemm_misaligned_factor": sv(0.8),
            "gemm_alignment_bytes": sv(16),
        },
        "interconnect": {
            "levels": [
                {"name": "nvlink", "fabric": "test", "devices_per_group": sv(8), "bandwidth_GBps": sv(300),
                 "latency_us": sv(2), "efficiency": {"ring": table("message_bytes", [[1e3, 0.1], [1e9, 0.8]])}},
                {"name": "ib", "fabric": "test", "nics_per_node": sv(8), "nic_GBps": sv(25),
                 "latency_us": sv(5), "efficiency": {"ring": table("message_bytes", [[1e3, 0.1], [1e9, 0.8]])}},
            ]
        },
    }


def profile_text(p):
    return json.dumps(p, indent=1, sort_keys=False) + "\n"


# --------------------------------------------------------------------------
# The cases.

class Case:
    def __init__(self, name, cmd, status, substring, files=None, setup=None, names=None, why="", creates=None):
        self.name, self.cmd, self.status, self.substring = name, cmd, status, substring
        self.files = files or {}
        self.setup, self.names, self.why, self.creates = setup, names, why, creates


def onnx_case(name, data, substring, status=2, cmd=None, fname=None, **kw):
    fname = fname or "model.onnx"
    return Case(name, cmd or "planner inspect %s" % fname, status, substring, files={fname: data}, **kw)


# Profiles are read by `planner estimate --profile FILE` on the base model
# (x is [2,4]: the batch is static, so the micro-batch is 2). The base profile
# has no attention table, so the cases ask for unfused attention.
ESTIMATE_BASE = "planner estimate model.onnx --devices 1 --micro-batch 2 --global-batch 2"


def profile_case(name, text, substring, status=2, **kw):
    if isinstance(text, dict):
        text = profile_text(text)
    if isinstance(text, str):
        text = text.encode("utf-8")
    kw.setdefault("names", "p.json" if status else None)
    return Case(name, ESTIMATE_BASE + " --attention unfused --profile p.json", status, substring,
                files={"p.json": text, "model.onnx": base_model()}, **kw)


def model_case(name, args, substring, **kw):
    return Case(name, "planner model " + args, 2, substring, names="", **kw)


def onnx_cases():
    cases = []
    valid = base_model()

    # ---- not a model at all
    cases.append(onnx_case("onnx_empty", b"", "empty", why="zero-byte file"))
    cases.append(onnx_case("onnx_random_bytes", bytes(random.Random(7).getrandbits(8) for _ in range(4096)),
                           "not a valid ONNX model", why="4 KiB of random bytes"))
    cases.append(onnx_case("onnx_truncated", valid[: len(valid) * 2 // 3], "truncated",
                           why="a valid model cut at two thirds (inside the graph field)"))
    cases.append(onnx_case("onnx_text_file", b"this is not a model\n", "not a valid ONNX model",
                           why="a text file named .onnx"))
    cases.append(Case("onnx_over_2gib", "planner inspect big.onnx", 2, "2 GiB", setup="truncate -s 2147483649 big.onnx",
                      names="big.onnx", why="a sparse single file of 2 GiB + 1 byte, made at test time"))
    cases.append(onnx_case("onnx_no_graph", f_int(M.ir_version, 8) + opset(17), "no graph",
                           why="a ModelProto without a graph"))
    cases.append(Case("onnx_directory", "planner inspect dir.onnx", 2, "is a directory", setup="mkdir dir.onnx",
                      names="dir.onnx", why="a folder named .onnx"))

    # ---- graph structure
    cases.append(onnx_case("onnx_cycle", model(graph(
        nodes=[node("Add", ["x", "b"], ["a"], name="first"), node("Relu", ["a"], ["b"], name="second"),
               node("Relu", ["a"], ["y"], name="out")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [2, 4])])), "cycle",
        why="Add reads the output of a Relu that reads the Add"))
    cases.append(onnx_case("onnx_self_loop", model(graph(
        nodes=[node("Add", ["x", "y"], ["y"], name="loop")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [2, 4])])), "cycle",
        why="an op that reads its own output"))
    cases.append(onnx_case("onnx_dangling_input", base_model(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"), node("Add", ["h", "nowhere"], ["y"], name="add")]),
        "nowhere", why="an op reads a tensor nothing defines"))
    cases.append(onnx_case("onnx_dangling_output", base_model(outputs=[value_info("ghost", [2, 3])]),
                           "ghost", why="a graph output nothing produces"))
    cases.append(onnx_case("onnx_duplicate_node_output", base_model(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"), node("Relu", ["h"], ["y"], name="relu"),
               node("Sigmoid", ["h"], ["y"], name="sig")]),
        "written by op", why="two ops write tensor y"))
    cases.append(onnx_case("onnx_output_shadows_input", base_model(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"), node("Relu", ["h"], ["y"], name="relu"),
               node("Relu", ["h"], ["x"], name="clobber")]),
        "both a graph input", why="an op writes a graph input"))
    cases.append(onnx_case("valid_duplicate_graph_output", base_model(
        outputs=[value_info("y", [2, 3]), value_info("y", [2, 3])]),
        "MatMul", status=0, why="graph output y listed twice: onnx.checker accepts it, so must the planner"))
    cases.append(onnx_case("onnx_duplicate_initializer", base_model(
        initializers=[tensor("W", [4, 3], raw=floats(12)), tensor("W", [4, 3], raw=floats(12, 1))]),
        "defined twice", why="initializer W twice"))
    cases.append(onnx_case("onnx_duplicate_input", base_model(
        inputs=[value_info("x", [2, 4]), value_info("x", [2, 4])]),
        "listed twice", why="graph input x twice"))
    cases.append(onnx_case("onnx_nameless_input", base_model(
        inputs=[value_info("x", [2, 4]), value_info("", [2, 4])]),
        "no name", why="a graph input with an empty name"))

    # ---- dims
    cases.append(onnx_case("onnx_negative_input_dim", base_model(inputs=[value_info("x", [-3, 4])]),
                           "-3", why="graph input x has dim -3"))
    cases.append(onnx_case("onnx_negative_initializer_dim", base_model(
        initializers=[tensor("W", [4, -3], raw=floats(12))]), "-3", why="initializer W has dims [4,-3]"))
    cases.append(onnx_case("onnx_dim_above_2_40", base_model(inputs=[value_info("x", [(1 << 41), 4])]),
                           str(1 << 41), why="graph input dim 2^41"))
    cases.append(onnx_case("onnx_dim_int64_max", base_model(inputs=[value_info("x", [(1 << 63) - 1, 4])]),
                           str((1 << 63) - 1), why="graph input dim 2^63-1"))
    cases.append(onnx_case("onnx_initializer_dim_above_2_40", base_model(
        initializers=[tensor("W", [4, 1 << 41], external=[("location", "w.data")])]),
        str(1 << 41), why="external initializer with dim 2^41 (no data needed to declare it)"))
    # Each dim is allowed (2^40), their product (2^80 elements) overflows int64.
    cases.append(onnx_case("onnx_dims_product_overflow", model(graph(
        nodes=[node("Relu", ["x"], ["y"], name="relu")],
        inputs=[value_info("x", [1 << 40, 1 << 40])], outputs=[value_info("y", [1 << 40, 1 << 40])])),
        "too many elements", why="x is [2^40, 2^40]: each dim in range, 2^80 elements overflow int64 byte counts"))
    cases.append(onnx_case("onnx_params_product_overflow", model(graph(
        nodes=[node("MatMul", ["x", "W"], ["y"], name="mm")],
        inputs=[value_info("x", [2, 1 << 40])], outputs=[value_info("y", [2, 1 << 40])],
        initializers=[tensor("W", [1 << 40, 1 << 40], external=[("location", "w.data")])])),
        "too many elements", why="a weight of 2^80 elements (external data, so the file is tiny)"))

    # ---- opsets
    cases.append(onnx_case("onnx_opset_1", model(base_graph(), opsets=((1, ""),)),
                           "opset", why="ai.onnx opset 1 (the importer's rules assume opset 7+)"))
    cases.append(onnx_case("onnx_opset_99", model(base_graph(), opsets=((99, ""),)), "opset 99",
                           why="ai.onnx opset 99 does not exist"))
    cases.append(onnx_case("onnx_no_opset", model(base_graph(), opsets=()), "opset",
                           why="no opset_import at all (IR version set)"))

    # ---- external data
    ext = lambda loc: base_model(initializers=[tensor("W", [4, 3], external=[("location", loc), ("offset", "0"),
                                                                               ("length", "48")])])
    cases.append(Case("onnx_external_parent", "planner inspect m/model.onnx", 2, "outside the model's folder",
                      files={"m/model.onnx": ext("../outside.bin")}, setup="mkfifo outside.bin",
                      names="m/model.onnx",
                      why="location ../outside.bin; it is a FIFO, so opening it would hang the test"))
    cases.append(Case("onnx_external_nested_parent", "planner inspect m/model.onnx", 2, "outside the model's folder",
                      files={"m/model.onnx": ext("sub/../../outside.bin")}, setup="mkfifo outside.bin",
                      names="m/model.onnx", why="location sub/../../outside.bin (a FIFO)"))
    cases.append(onnx_case("onnx_external_absolute", ext("/etc/passwd"), "outside the model's folder",
                           why="location /etc/passwd"))
    cases.append(onnx_case("onnx_external_backslash", ext("..\\outside.bin"), "outside the model's folder",
                           why="Windows-style ..\\outside.bin"))
    cases.append(onnx_case("onnx_external_no_location", base_model(
        initializers=[tensor("W", [4, 3], external=[("offset", "0")])]), "no location",
        why="external data without a location key"))

    # ---- names
    bad = b"x\xff\xfe\xc0"
    nonutf8 = model(graph(
        nodes=[node(b"MatMul", [bad, b"W"], [b"h"], name=b"mm\xff"), node("Relu", ["h"], ["y"], name="relu")],
        inputs=[value_info(bad, [2, 4])], outputs=[value_info("y", [2, 3])],
        initializers=[tensor("W", [4, 3], raw=floats(12))]))
    cases.append(onnx_case("onnx_non_utf8_names", nonutf8, "UTF-8",
                           why="tensor and op names with bytes ff fe c0 (proto2 strings are not checked)"))
    cases.append(onnx_case("onnx_non_utf8_names_json", nonutf8, "UTF-8", cmd="planner inspect model.onnx --json",
                           why="the same model with --json (JSON output needs valid UTF-8)"))
    cases.append(onnx_case("onnx_non_utf8_op_type_json", model(graph(
        nodes=[node(b"Re\xfflu", ["x"], ["y"], name="r")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [2, 4])])), "UTF-8",
        cmd="planner inspect model.onnx --json", why="an op type with byte ff, --json (the op histogram is keyed by it)"))
    # Found by fuzz_onnx_import: names are echoed raw into the one-line error.
    cases.append(onnx_case("onnx_newline_in_name", base_model(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"),
               node("Add", ["h", "line1\nline2\x1b[31m"], ["y"], name="add")]),
        "no op, graph input or initializer defines",
        why="a dangling tensor name holding a newline and an ANSI escape: the error must stay one line"))
    cases.append(onnx_case("onnx_non_utf8_op_type", model(graph(
        nodes=[node(b"Re\xfflu", ["x"], ["y"], name="r")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [2, 4])])), "UTF-8",
        why="an op type with byte ff"))

    # ---- contents
    cases.append(onnx_case("onnx_bad_elem_type", base_model(inputs=[value_info("x", [2, 4], elem=999)]),
                           "999", why="graph input of element type 999"))
    cases.append(onnx_case("onnx_reshape_short_raw_data", model(graph(
        nodes=[node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [8])],
        initializers=[tensor("shape", [4], elem=T.INT64, raw=struct.pack("<q", 8))])),
        "raw_data", why="Reshape target int64[4] whose raw_data holds one value (8 of 32 bytes); y declared [8]"))
    cases.append(onnx_case("onnx_short_raw_data_undeclared", model(graph(
        nodes=[node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        inputs=[value_info("x", [2, 4])], outputs=[f_bytes(1, "y")],
        initializers=[tensor("shape", [4], elem=T.INT64, raw=struct.pack("<q", 8))])),
        "raw_data", why="the same with no declared shape for y: the error must blame the short raw_data"))
    cases.append(onnx_case("onnx_reshape_negative_target", model(graph(
        nodes=[node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [8])],
        initializers=[tensor("shape", [2], elem=T.INT64, int64s=[-4, -2])])),
        "reshape", why="Reshape target [-4,-2]"))
    # Each If level is three protobuf message levels (graph, node, attribute), so
    # protobuf's recursion limit (100) refuses about 33 levels of If, before the
    # importer's own limit of 64 nested subgraphs is reached.
    cases.append(onnx_case("onnx_control_flow_nested_30", nested_if_model(30), "nested more than 16 deep",
                           why="If subgraphs nested 30 deep: within protobuf's limit, above the importer's 16"))
    cases.append(onnx_case("onnx_subgraphs_nested_40", nested_if_model(40), "not a valid ONNX model",
                           why="If subgraphs nested 40 deep (120 protobuf levels)"))
    # ---- valid edge cases: must keep working
    cases.append(onnx_case("valid_missing_external_data", base_model(
        initializers=[tensor("W", [4, 3], external=[("location", "weights.data"), ("offset", "0"),
                                                    ("length", "48")])]),
        "external data", status=0, why="initializer in weights.data, which is absent"))
    cases.append(onnx_case("valid_unknown_domain_op", model(graph(
        nodes=[node("MatMul", ["x", "W"], ["h"], name="mm"),
               node("Frobnicate", ["h"], ["y"], name="frob", domain="com.example.custom")],
        inputs=[value_info("x", [2, 4])], outputs=[value_info("y", [2, 3])],
        initializers=[tensor("W", [4, 3], raw=floats(12))]), opsets=((17, ""), (1, "com.example.custom"))),
        "Frobnicate", status=0, why="an op of an unknown domain, output shape declared"))
    cases.append(onnx_case("valid_nested_subgraphs_10", nested_if_model(10), "If", status=0,
                           why="If subgraphs nested 10 deep"))
    cases.append(onnx_case("valid_base_model", valid, "MatMul", status=0,
                           why="the model the other cases are mutated from"))
    return cases


def nested_if_model(depth):
    """If ops whose then/else branches hold the next If, `depth` levels.

    Each level has one real branch and one trivial one, so the file grows
    linearly with the depth."""
    leaf = graph(nodes=[node("Identity", ["x"], ["o"], name="leaf")], outputs=[value_info("o", [2, 4])], name="leaf")
    g = leaf
    for k in range(depth):
        g = graph(nodes=[node("If", ["c"], ["o"], name="if%d" % k,
                              attrs=[attr_graph("then_branch", g), attr_graph("else_branch", leaf)])],
                  outputs=[value_info("o", [2, 4])], name="level%d" % k)
    top = graph(nodes=[node("If", ["c"], ["y"], name="top",
                            attrs=[attr_graph("then_branch", g), attr_graph("else_branch", leaf)])],
                inputs=[value_info("c", [], elem=9), value_info("x", [2, 4])],
                outputs=[value_info("y", [2, 4])])
    return model(top)


def model_cmd_cases():
    c = []
    c.append(model_case("model_layers_zero", "gpt --layers 0 -o out.onnx", "--layers 0"))
    c.append(model_case("model_hidden_negative", "gpt --hidden -5 -o out.onnx", "--hidden"))
    c.append(model_case("model_heads_zero", "gpt --heads 0 -o out.onnx", "--heads 0"))
    c.append(model_case("model_vocab_int64_max", "gpt --vocab 9223372036854775807 -o out.onnx", "--vocab"))
    c.append(model_case("model_vocab_above_int64", "gpt --vocab 99999999999999999999 -o out.onnx", "--vocab"))
    c.append(model_case("model_layers_above_int", "gpt --layers 4294967297 -o out.onnx", "--layers"))
    c.append(model_case("model_layers_huge", "gpt --layers 100000000 -o out.onnx", "--layers"))
    c.append(model_case("model_scores_overflow", "gpt --batch 1048576 --heads 65536 --hidden 65536 --seq 1048576 -o out.onnx",
                        "exceed"))
    c.append(model_case("model_widedeep_table_overflow", "widedeep --rows 1099511627776 --dim 65536 -o out.onnx",
                        "exceed"))
    c.append(model_case("model_moe_topk_above_experts", "moe --experts 4 --top-k 8 -o out.onnx", "--top-k"))
    c.append(model_case("model_moe_experts_zero", "moe --experts 0 -o out.onnx", "--experts"))
    c.append(model_case("model_resnet_depth", "resnet --depth 51 -o out.onnx", "--depth 51"))
    c.append(model_case("model_seq_not_a_number", "gpt --seq 1e3 -o out.onnx", "--seq"))
    c.append(model_case("model_unknown_arch", "gpt5 -o out.onnx", "gpt5"))
    c.append(model_case("model_with_weights_too_big", "gpt --with-weights --layers 48 -o out.onnx", "--with-weights"))
    c.append(Case("model_output_folder_missing", "planner model mlp --layers 2 --width 8 -o nodir/out.onnx", 2,
                  "does not exist", names="nodir"))
    c.append(Case("model_output_exists", "planner model mlp --layers 2 --width 8 -o out.onnx", 2, "--force",
                  files={"out.onnx": b"keep me\n"}, names="out.onnx"))
    return c


def profile_cases():
    c = []
    p = base_profile
    c.append(profile_case("valid_profile", p(), "step time", status=0, why="the base profile the others mutate"))
    c.append(profile_case("profile_empty", b"", "not valid JSON"))
    c.append(profile_case("profile_random_bytes", bytes(random.Random(11).getrandbits(8) for _ in range(2048)),
                          "not valid JSON"))
    c.append(profile_case("profile_truncated", profile_text(p())[:700], "not valid JSON"))

    x = p(); del x["device"]["hbm_GBps"]
    c.append(profile_case("profile_missing_number", x, "device.hbm_GBps: missing key"))
    x = p(); x["device"]["hbm_GBps"] = {"source": "s"}
    c.append(profile_case("profile_missing_value", x, "device.hbm_GBps.value: missing key"))
    x = p(); x["device"]["hbm_GBps"] = sv(-2000)
    c.append(profile_case("profile_negative", x, "device.hbm_GBps.value: must be > 0"))
    x = p(); x["device"]["launch_overhead_us"] = sv(-1)
    c.append(profile_case("profile_negative_overhead", x, "device.launch_overhead_us.value: must be >= 0"))
    x = p(); x["device"]["visible_GiB"] = sv(0)
    c.append(profile_case("profile_zero", x, "device.visible_GiB.value: must be > 0"))
    x = p(); x["device"]["hbm_efficiency"] = sv(0)
    c.append(profile_case("profile_zero_efficiency", x, "device.hbm_efficiency.value: must be in (0, 1]"))
    x = p(); x["interconnect"]["levels"][0]["devices_per_group"] = sv(0)
    c.append(profile_case("profile_zero_devices", x, "interconnect.levels[0].devices_per_group.value: must be > 0"))
    x = p(); x["interconnect"]["levels"][1]["nics_per_node"] = sv(1e300)
    c.append(profile_case("profile_huge_count", x, "interconnect.levels[1].nics_per_node.value: must be a whole number"))
    x = p(); x["interconnect"]["levels"][1]["oversubscription"] = sv(2)
    c.append(profile_case("profile_half_fabric", x,
                          "interconnect.levels[1].nodes_per_leaf: missing key: nodes_per_leaf and oversubscription"))
    x = p(); x["interconnect"]["levels"][1]["oversubscription"] = sv(0.5); x["interconnect"]["levels"][1]["nodes_per_leaf"] = sv(4)
    c.append(profile_case("profile_undersubscribed", x, "interconnect.levels[1].oversubscription.value: must be >= 1"))
    x = p(); x["interconnect"]["levels"][1]["collnet"] = {"latency_us": sv(31), "efficiency": sv(0)}
    c.append(profile_case("profile_collnet_zero", x, "interconnect.levels[1].collnet.efficiency.value: must be in (0, 1]"))
    x = p(); x["device"]["hbm_GBps"] = sv(None)
    c.append(profile_case("profile_null_number", x, "device.hbm_GBps.value: expected a number"))
    x = p(); x["device"]["peak_tflops"]["bf16"] = sv(12345.678)
    c.append(profile_case("profile_infinite", profile_text(x).replace("12345.678", "1e999"),
                          "device.peak_tflops.bf16.value: number is not finite"))
    x = p(); x["device"]["gemm_efficiency"]["rows"][1][0] = 12345.678
    c.append(profile_case("profile_infinite_table", profile_text(x).replace("12345.678", "-1e999"),
                          "device.gemm_efficiency.rows[1][0]: number is not finite"))
    x = p(); x["device"]["hbm_GBps"] = sv("2000")
    c.append(profile_case("profile_string_number", x, "device.hbm_GBps.value: expected a number"))
    x = p(); x["device"]["gemm_efficiency"]["rows"][0][1] = "0.1"
    c.append(profile_case("profile_string_in_table", x, "device.gemm_efficiency.rows[0][1]: expected a number"))
    x = p(); x["device"]["hbm_GBps"] = 2000
    c.append(profile_case("profile_bare_number", x, "device.hbm_GBps: number without a source"))
    x = p(); x["device"]["hbm_efficiency"] = sv(1.5)
    c.append(profile_case("profile_efficiency_above_1", x, "device.hbm_efficiency.value: must be in (0, 1]"))
    x = p(); x["device"]["gemm_efficiency"]["rows"] = [[1e12, 0.8], [1e6, 0.1]]
    c.append(profile_case("profile_table_unsorted", x, "device.gemm_efficiency.rows[1]: rows not sorted"))
    x = p(); x["device"]["gemm_efficiency"]["rows"] = []
    c.append(profile_case("profile_table_empty", x, "device.gemm_efficiency.rows: table has no rows"))
    x = p(); x["device"]["cuda_context_GiB"] = sv(100)
    c.append(profile_case("profile_context_above_visible", x, "device.cuda_context_GiB"))
    x = p(); x["interconnect"]["levels"] = x["interconnect"]["levels"][:1]
    c.append(profile_case("profile_one_level", x, "interconnect.levels"))
    x = p(); x["name"] = "q"
    c.append(profile_case("profile_name_mismatch", x, "differs from the file name"))
    x = p(); x["schema_version"] = 2
    c.append(profile_case("profile_schema_version", x, "schema_version: expected 1"))
    # Found by fuzz_profile: keys and strings are echoed raw into the error.
    x = p(); x["bad\nkey"] = 1
    c.append(profile_case("profile_newline_in_key", x, "unknown key", why="a key holding a newline"))
    c.append(profile_case("profile_newline_in_string", '"\\n"\n', "expected an object",
                          why="the JSON string \"\\n\" as the whole profile"))
    c.append(profile_case("profile_syntax_error_after_newline_key", '{"schema_versio\\n": [1, }\n', "not valid JSON",
                          why="found by fuzz_profile: the parser's path held the key's newline"))
    x = p(); x["device"]["hbm_GBs"] = x["device"].pop("hbm_GBps")
    c.append(profile_case("profile_misspelt_key", x, "device.hbm_GBs: unknown key"))
    x = p(); x["system"] = "SYSTEM"
    c.append(profile_case("profile_non_utf8", profile_text(x).encode().replace(b"SYSTEM", b"sys\xff\xfetem"),
                          "UTF-8"))
    # "notes" is allowed everywhere and never read: a deeply nested value there
    # passes validation and reaches the canonical-JSON hash (json::dump, recursive).
    x = p(); x["device"]["notes"] = "NOTES"
    depth = 100000
    c.append(profile_case("profile_deep_notes",
                          profile_text(x).replace('"NOTES"', "[" * depth + "]" * depth),
                          "notes", why="device.notes nested 100000 arrays deep (200 KB)"))
    x = p(); x["device"]["notes"] = 5
    c.append(profile_case("profile_notes_not_string", x, "device.notes: expected a string"))
    x = p(); x["device"]["gemm_efficiency"]["notes"] = {"a": [1, 2]}
    c.append(profile_case("profile_table_notes_not_string", x, "device.gemm_efficiency.notes: expected a string"))
    x = p(); x["notes"] = "NOTES"
    c.append(profile_case("profile_deep_nesting_invalid",
                          profile_text(x).replace('"NOTES"', "[" * 100000), "not valid JSON",
                          why="100000 unclosed arrays"))
    return c


# --------------------------------------------------------------------------

def layout_cases():
    """Device counts, degrees and batches for `estimate` and `search`."""
    c = []
    files = {"model.onnx": base_model()}

    def est(name, args, substring, status=2, names="", **kw):
        return Case(name, "planner estimate model.onnx " + args, status, substring, files=dict(files),
                    names=names if status else None, **kw)

    def srch(name, args, substring, status=2, names="", **kw):
        if status == 0:
            kw.setdefault("creates", "plan.json")
        return Case(name, "planner search model.onnx -o plan.json " + args, status, substring, files=dict(files),
                    names=names if status else None, **kw)

    c.append(est("estimate_devices_zero", "--devices 0 --micro-batch 2 --global-batch 2", "--devices must be at least 1 (got 0)"))
    c.append(est("estimate_devices_negative", "--devices -4 --micro-batch 2 --global-batch 2",
                 "--devices must be at least 1 (got -4)"))
    c.append(est("estimate_devices_1e9", "--devices 1000000000 --micro-batch 2 --global-batch 2000000000",
                 "--devices 1000000000 is above the planner's limit",
                 why="10^9 devices: used to run for minutes in the estimate"))
    c.append(est("estimate_degrees_not_dividing", "--devices 8 --tp 3 --micro-batch 2 --global-batch 16",
                 "--devices 8 is not divisible by tp*pp*cp = 3*1*1 = 3"))
    c.append(est("estimate_degrees_product", "--devices 8 --tp 2 --dp 3 --micro-batch 2 --global-batch 12",
                 "dp*tp*pp*cp = 3*2*1*1 = 6 but --devices is 8"))
    c.append(est("estimate_global_batch_not_dividing", "--devices 4 --micro-batch 2 --global-batch 12",
                 "--global-batch 12 is not divisible by micro-batch * dp = 2 * 4 = 8"))
    c.append(est("estimate_global_batch_zero", "--devices 1 --micro-batch 2 --global-batch 0",
                 "--global-batch must be at least 1 (got 0)"))
    c.append(est("estimate_micro_batches_above_limit", "--devices 1 --micro-batch 2 --global-batch 4294967296",
                 "above the planner's limit", why="2^31 micro-batches per step: the pipeline simulation would hold them all"))
    c.append(Case("estimate_output_exists", "planner estimate model.onnx --devices 1 --micro-batch 2 --global-batch 2 "
                  "-o plan.json", 2, "--force", files=dict(files, **{"plan.json": b"keep me\n"}), names="plan.json",
                  why="an existing plan file is left untouched without --force"))
    c.append(Case("estimate_output_folder_force", "planner estimate model.onnx --devices 1 --micro-batch 2 "
                  "--global-batch 2 -o out.json --force", 2, "not a regular file", files=dict(files),
                  setup="mkdir out.json", names="out.json", why="--force replaces files, never a folder"))
    c.append(srch("search_devices_zero", "--devices 0", "--devices must be at least 1 (got 0)"))
    c.append(srch("search_devices_negative", "--devices -1", "--devices must be at least 1 (got -1)"))
    c.append(srch("search_devices_1e9", "--devices 1000000000", "--devices 1000000000 is above the planner's limit",
                  why="10^9 devices: used to grow past 9 GiB of memory"))
    c.append(srch("search_fix_degrees_not_dividing", "--devices 8 --fix tp=3", "no layout of 8 devices"))
    c.append(srch("search_global_batch_not_dividing", "--devices 8 --global-batch 12 --fix dp=8",
                  "no layout of 8 devices", why="12 sequences cannot be split over 8 data-parallel replicas"))
    c.append(srch("search_global_batch_zero", "--devices 8 --global-batch 0", "--global-batch must be at least 1 (got 0)",
                  why="used to be taken as 'not given'"))
    c.append(srch("search_global_batch_huge", "--devices 8 --global-batch 9223372036854775807",
                  "above the planner's limit", why="2^63-1 sequences"))
    c.append(srch("search_threads_negative", "--devices 8 --threads -2", "--threads must be at least 1 (got -2)"))
    c.append(Case("search_output_exists", "planner search model.onnx --devices 2 -o plan.json", 2, "--force",
                  files=dict(files, **{"plan.json": b"keep me\n"}), names="plan.json"))
    # ---- valid edge cases: odd device counts
    for n in (3, 7):
        c.append(est("valid_estimate_devices_%d" % n, "--devices %d --micro-batch 2 --global-batch %d" % (n, 2 * n),
                     "step time", status=0))
        c.append(srch("valid_search_devices_%d" % n, "--devices %d" % n, "best layout", status=0))
    return c


# Plan cases: the setup makes a 2-layer GPT and a plan for it (tp 2, pp 2 on 4
# devices) with `planner estimate -o`, then edits the plan as a person would.
PLAN_SETUP = """"$PLANNER" model gpt --layers 2 --hidden 32 --heads 2 --seq 8 --vocab 50 -o model.onnx >/dev/null
"$PLANNER" estimate model.onnx --devices 4 --tp 2 --pp 2 --micro-batch 1 --global-batch 8 -o plan.json >/dev/null
python3 - <<'EDIT'
import json
text = open("plan.json").read()
p = json.loads(text)
%s
open("plan.json", "w").write(text if p is None else json.dumps(p, indent=2))
EDIT
"""


def plan_cases():
    c = []

    def plan(name, edit, substring, status=2, why=""):
        return Case(name, "planner estimate --plan plan.json", status, substring, setup=PLAN_SETUP % edit,
                    names="plan.json" if status else None, why=why)

    c.append(plan("plan_wrong_degrees", 'p["layout"]["tp"] = 3', "dp*tp*pp*cp = 1*3*2*1 = 6 but cluster.devices is 4",
                  why="tp edited from 2 to 3"))
    c.append(plan("plan_devices_1e9", 'p["cluster"]["devices"] = 10**9', "cluster.devices is 1000000000"))
    c.append(plan("plan_degree_string", 'p["layout"]["tp"] = "2"', "layout.tp: expected an integer"))
    c.append(plan("plan_degree_zero", 'p["layout"]["pp"] = 0', "layout.pp: must be >= 1"))
    c.append(plan("plan_unknown_op", 'name = p["layout"]["chunks"][0]["ops"][0]\n'
                  'p = None\ntext = text.replace(json.dumps(name), json.dumps("no/such/op"))',
                  "'no/such/op' is not an op of model.onnx",
                  why="an op renamed everywhere in the plan (chunks and strategies agree), so only the model can tell"))
    c.append(plan("plan_unknown_strategy_op", 'p["layout"]["strategies"][0]["ops"][0] = "no/such/op"',
                  "'no/such/op' is not an op of any chunk"))
    c.append(plan("plan_format_v2", 'p["format"] = "planner.plan/v2"', "format 'planner.plan/v2' is not supported"))
    c.append(plan("plan_format_missing", 'del p["format"]', "format: missing required field"))
    c.append(plan("plan_global_batch_not_dividing", 'p["training"]["global_batch"] = 9',
                  "training.global_batch: 9 != micro_batch * dp * micro_batches"))
    c.append(plan("plan_chunk_layers", 'p["layout"]["chunks"][0]["last_layer"] = 99', "pipeline chunks",
                  why="a chunk's layer range past the model's layers: the error must name the plan"))
    c.append(plan("plan_schedule_unknown", 'p["layout"]["schedule"] = "zigzag"', "layout.schedule: 'zigzag'"))
    c.append(plan("plan_overrides_negative", 'p["cluster"]["overrides"] = "gpus_per_node=-4"', "-4"))
    c.append(plan("plan_infinite_number", 'p = None\ntext = text.replace(\'"global_batch": 8\', \'"global_batch": 1e999\')',
                  "training.global_batch: number is not finite"))
    c.append(plan("plan_truncated", 'p = None\ntext = text[: len(text) // 2]', "syntax error"))
    c.append(plan("valid_plan_rescored", "pass", "step time", status=0, why="the unedited plan re-scores"))
    return c


def all_cases():
    return onnx_cases() + model_cmd_cases() + profile_cases() + layout_cases() + plan_cases()


def write_case(root, case):
    d = os.path.join(root, case.name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cmd"), "w") as f:
        f.write(case.cmd + "\n")
    if case.setup:
        with open(os.path.join(d, "setup"), "w") as f:
            f.write(case.setup + "\n")
    with open(os.path.join(d, "expect"), "w") as f:
        f.write("%d\n%s\n" % (case.status, case.substring))
        if case.names is not None:
            f.write("names: %s\n" % case.names)
        if case.creates:
            f.write("creates: %s\n" % case.creates)
        if case.why:
            f.write("why: %s\n" % case.why)
    for name, data in case.files.items():
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def generate(root):
    cases = all_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    os.makedirs(root, exist_ok=True)
    for c in cases:
        shutil.rmtree(os.path.join(root, c.name), ignore_errors=True)
        write_case(root, c)
    return cases


def tree(root):
    out = {}
    for c in all_cases():
        base = os.path.join(root, c.name)
        for dirpath, _, files in os.walk(base):
            for f in files:
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "bad_inputs"))
    ap.add_argument("--check", action="store_true", help="compare with the corpus in --out instead of writing")
    args = ap.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            generate(tmp)
            want, have = tree(tmp), tree(args.out)
        diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        for k in diff:
            print("differs: %s" % k)
        print("bad_inputs corpus: %s" % ("up to date" if not diff else "%d file(s) differ" % len(diff)))
        return 1 if diff else 0
    cases = generate(args.out)
    print("wrote %d cases to %s" % (len(cases), os.path.normpath(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
