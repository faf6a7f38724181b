#!/usr/bin/python3
"""Export PyTorch/torchvision models to ONNX as test models for the importer.

Run with Debian's interpreter, which has python3-torch 1.13,
python3-torchvision 0.14 and python3-onnx 1.12:

    /usr/bin/python3 tools/export_torch_models.py --out-dir models/torch

Writes, at opset 14 with dynamic axes:

  resnet50.onnx   torchvision.models.resnet50(weights=None)
                  input  "input"     f32 [batch, 3, 224, 224]
  vit_b16.onnx    torchvision.models.vit_b_16(weights=None)
                  input  "input"     f32 [batch, 3, 224, 224]
  bert_like.onnx  BertLike below (4 layers, hidden 256, 4 heads, vocab 1000)
                  input  "input_ids" i64 [batch, seq]

Nothing is downloaded: every model is built with random initialisation
(torch.manual_seed(0)), in eval mode, exported with do_constant_folding=True
and training=TrainingMode.PRESERVE (so BatchNormalization is NOT folded into
the convolutions and the parameter count stays the one torch reports).

Why the weights are dropped
---------------------------
The planner only needs the graph structure, the dims and the dtype of every
initializer: it never reads weight values. Full exports are ~100 MB (ResNet-50)
and ~330 MB (ViT-B/16), far too large for the repository. So every
floating-point initializer is converted to EXTERNAL data
(onnx.external_data_helper.convert_model_to_external_data, size_threshold=0,
location "<name>.onnx.data"), the .onnx is saved, and the .onnx.data file is
deleted. The .onnx keeps each initializer's name, dims, dtype and its
external_data entry (location/offset/length), which is what the importer reads;
loading such a file with onnx.load() (which wants the data) fails, use
onnx.load(path, load_external_data=False).

Integer initializers are kept inline on purpose: constant folding turns parts
of the Shape->Gather->Concat->Reshape chains (the static pieces of a target
shape, Unsqueeze axes, ...) into small int64 initializers, and the importer's
value tracking must read them. They are a few hundred bytes in all.

The parameter count of each model (sum of numel over torch parameters) is
printed; it equals the sum over the float initializers of the export except
BatchNormalization running mean/variance (buffers, not parameters).
"""

import argparse
import hashlib
import io
import math
import os
import sys

import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import external_data_helper

OPSET = 14


class SelfAttention(nn.Module):
    """Hand-written multi-head self-attention. The x.view(x.size(0), x.size(1),
    heads, -1) calls export as Shape->Gather->(Unsqueeze)->Concat->Reshape."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        q = self.q(x).view(x.size(0), x.size(1), self.heads, -1).transpose(1, 2)
        k = self.k(x).view(x.size(0), x.size(1), self.heads, -1).transpose(1, 2)
        v = self.v(x).view(x.size(0), x.size(1), self.heads, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).contiguous()
        ctx = ctx.view(x.size(0), x.size(1), -1)
        return self.out(ctx)


class EncoderLayer(nn.Module):
    """Post-LN BERT layer: attention, add & norm, GELU FFN, add & norm."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


class BertLike(nn.Module):
    """Token + learned position embeddings, N encoder layers, MLM head."""

    def __init__(self, vocab=1000, hidden=256, heads=4, layers=4, ffn=1024, max_pos=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_pos, hidden)
        self.emb_ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList([EncoderLayer(hidden, heads, ffn) for _ in range(layers)])
        self.head_dense = nn.Linear(hidden, hidden)
        self.head_ln = nn.LayerNorm(hidden)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        x = self.emb_ln(self.tok(input_ids) + self.pos(positions))
        for layer in self.layers:
            x = layer(x)
        x = self.head_ln(torch.nn.functional.gelu(self.head_dense(x)))
        return self.decoder(x)


def distinct_values(model):
    """Refills every parameter and floating buffer with random values.

    The default init leaves many tensors equal (BatchNorm/LayerNorm weights
    all ones, biases and running means all zeros, ViT's zero-initialised head
    and class token), and the exporter de-duplicates equal initializers into
    one initializer read through Identity nodes, which would hide parameters
    from the importer. Values never matter to the planner."""
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.1, 0.1)
        for name, b in model.named_buffers():
            if b.is_floating_point():
                b.uniform_(0.5, 1.5)  # running_var must stay positive
    return model


def build_models():
    """(file stem, model, example input, input name, input axes, output axes)."""
    torch.manual_seed(0)
    resnet = distinct_values(torchvision.models.resnet50(weights=None))
    torch.manual_seed(0)
    vit = distinct_values(torchvision.models.vit_b_16(weights=None))
    torch.manual_seed(0)
    bert = distinct_values(BertLike())
    image = torch.randn(2, 3, 224, 224)
    tokens = torch.randint(0, 1000, (2, 16), dtype=torch.int64)
    return [
        ("resnet50", resnet, image, "input", {0: "batch"}, {0: "batch"}),
        ("vit_b16", vit, image, "input", {0: "batch"}, {0: "batch"}),
        ("bert_like", bert, tokens, "input_ids", {0: "batch", 1: "seq"}, {0: "batch", 1: "seq"}),
    ]


def export(stem, model, example, input_name, in_axes, out_axes, out_dir):
    model.eval()
    n_params = sum(p.numel() for p in model.parameters())
    buf = io.BytesIO()
    # Not under torch.no_grad(): with grad enabled nn.MultiheadAttention (ViT)
    # stays off its fused fast path (aten::_native_multi_head_attention),
    # which has no ONNX export.
    torch.onnx.export(
        model, (example,), buf,
        opset_version=OPSET,
        input_names=[input_name],
        output_names=["output"],
        dynamic_axes={input_name: in_axes, "output": out_axes},
        do_constant_folding=True,
        training=torch.onnx.TrainingMode.PRESERVE,
        export_params=True,
    )
    model_proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model_proto)

    float_types = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                   onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
    data_name = f"{stem}.onnx.data"
    # convert_model_to_external_data(all tensors, size_threshold=0) on a graph
    # holding only the float initializers: the int64 shape pieces stay inline.
    int_inits = [t for t in model_proto.graph.initializer if t.data_type not in float_types]
    float_inits = [t for t in model_proto.graph.initializer if t.data_type in float_types]
    del model_proto.graph.initializer[:]
    model_proto.graph.initializer.extend(float_inits)
    external_data_helper.convert_model_to_external_data(
        model_proto, all_tensors_to_one_file=True, location=data_name, size_threshold=0)
    model_proto.graph.initializer.extend(int_inits)

    path = os.path.join(out_dir, f"{stem}.onnx")
    onnx.save_model(model_proto, path)
    data_path = os.path.join(out_dir, data_name)
    if os.path.exists(data_path):
        os.remove(data_path)

    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    float_numel = sum(math.prod(t.dims) for t in float_inits)
    print(f"{path}: {os.path.getsize(path)} bytes, sha256 {digest}")
    print(f"  torch parameters: {n_params:,}; float initializers: {len(float_inits)} "
          f"({float_numel:,} elements); int initializers kept inline: {len(int_inits)}")
    return n_params


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), os.pardir, "models", "torch"),
        help="output folder (default: models/torch in the repository)")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"onnx {onnx.__version__}, opset {OPSET}")
    for spec in build_models():
        export(*spec, out_dir=args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
