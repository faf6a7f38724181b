#!/usr/bin/env python3
"""Writes a shape-only ONNX model with a given number of ops, for scale tests.

A residual MLP of `--layers` identical blocks, four ops each:

    h = MatMul(x, W_i); h = Add(h, b_i); h = Relu(h); x = Add(x, h)

ending in ReduceMean (the loss stand-in). Weights are declared as external
data (never written, never opened by the planner), so the file stays small:
about 70 bytes per op. `--ops N` picks the layer count for about N ops
(1,000,000 ops: 250,000 layers, about 70 MB).

Standard library only; reuses the protobuf encoder of make_bad_inputs.py.

Usage: tools/make_big_model.py --ops 1000000 -o big.onnx [--width 64] [--batch 8]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_bad_inputs import T, f_bytes, f_int, G, M, model, node, opset, tensor, value_info  # noqa: E402


def build(layers, width, batch, out):
    """Streams the model to `out` (a binary file): the graph body is written
    in pieces so a million ops never sit in one Python bytes object twice."""
    parts = []
    x = "x"
    for i in range(layers):
        h0, h1, h2, nx = "l%d/mm" % i, "l%d/bias" % i, "l%d/act" % i, "l%d/out" % i
        parts.append(f_bytes(G.node, node("MatMul", [x, "l%d/W" % i], [h0], name="l%d/MatMul" % i)))
        parts.append(f_bytes(G.node, node("Add", [h0, "l%d/b" % i], [h1], name="l%d/AddBias" % i)))
        parts.append(f_bytes(G.node, node("Relu", [h1], [h2], name="l%d/Relu" % i)))
        parts.append(f_bytes(G.node, node("Add", [x, h2], [nx], name="l%d/Residual" % i)))
        x = nx
    parts.append(f_bytes(G.node, node("ReduceMean", [x], ["loss"], name="loss")))
    parts.append(f_bytes(G.name, "big"))
    for i in range(layers):
        parts.append(f_bytes(G.initializer, tensor("l%d/W" % i, [width, width], external=[("location", "big.data")])))
        parts.append(f_bytes(G.initializer, tensor("l%d/b" % i, [width], external=[("location", "big.data")])))
    parts.append(f_bytes(G.input, value_info("x", [batch, width])))
    parts.append(f_bytes(G.output, value_info("loss", [], elem=T.FLOAT)))
    body = b"".join(parts)
    head = model(b"")  # ir_version, producer, opset, then an empty graph field
    head = head[: head.rindex(f_bytes(M.graph, b""))]
    out.write(head)
    out.write(f_bytes(M.graph, body))
    return 4 * layers + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, help="about this many ops (sets --layers)")
    ap.add_argument("--layers", type=int, default=1000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    layers = max(1, (a.ops - 1) // 4) if a.ops else a.layers
    with open(a.output, "wb") as f:
        n = build(layers, a.width, a.batch, f)
    print("wrote %d ops (%d layers) to %s (%d bytes)" % (n, layers, a.output, os.path.getsize(a.output)))


if __name__ == "__main__":
    main()
