#!/usr/bin/python3
"""Export PyTorch/torchvision models to ONNX as test models for the importer.

Run with Debian's interpreter, which has python3-torch 1.13,
python3-torchvision 0.14 and python3-onnx 1.12:

    /usr/bin/python3 tools/export_torch_models.py --out-dir models/torch

Writes, at opset 14, with dynamic axes:

  resnet50.onnx   torchvision.models.resnet50(weights=None)
                  input  "input"     f32 [batch, 3, 224, 224]
  vit_b16.onnx    torchvision.models.vit_b_16(weights=None)
                  input  "input"     f32 [batch, 3, 224, 224]
  bert_like.onnx  BertLike below (4 layers, hidden 256, 4 heads, vocab 1000)
                  input  "input_ids" i64 [batch, seq]

and, with a STATIC batch of 8 and in TRAINING mode (model.train(),
training=TrainingMode.TRAINING: BatchNormalization with its running-statistics
outputs, Dropout and stochastic depth kept), as a user exporting for training
would:

  resnet50_b8_train.onnx            torchvision resnet50
  vit_b_16_b8_train.onnx            torchvision vit_b_16
  swin_t_b8_train.onnx              torchvision swin_t
  convnext_tiny_b8_train.onnx       torchvision convnext_tiny
  efficientnet_b0_b8_train.onnx     torchvision efficientnet_b0
  mobilenet_v3_large_b8_train.onnx  torchvision mobilenet_v3_large
                  input  "input"     f32 [8, 3, 224, 224]
  mha_encoder_b8_train.onnx         MhaEncoder below (nn.MultiheadAttention,
                                           sequence-first layout, 2 layers)
                  input  "input_ids" i64 [8, 64]

and a small Llama-style decoder in plain PyTorch (RMSNorm, rotary embeddings,
grouped-query attention with 16 query and 4 key/value heads, SwiGLU, causal
mask, cross-entropy loss; 4 layers, hidden 1024), training mode, dynamic
batch and sequence (traced at 2 x 256), in both spellings of grouped-query
attention:

  llama_gqa_repeat_interleave.onnx  k.repeat_interleave(4, dim=2) on [b, s, kv, d]
                                    (torch 1.13 lowers it to SplitToSequence, a
                                    Loop of SequenceInsert, ConcatFromSequence)
  llama_gqa_expand.onnx             k[:, :, None].expand(..).reshape(..), as
                                    Hugging Face's repeat_kv
                  inputs "input_ids", "labels" i64 [batch, seq]; output "loss" f32 []

Nothing is downloaded: every model is built with random initialisation
(torch.manual_seed(0)). The dynamic-axes models are exported in eval mode with
do_constant_folding=True and training=TrainingMode.PRESERVE (so
BatchNormalization is NOT folded into the convolutions and the parameter
count stays the one torch reports); the static ones in train mode with
training=TrainingMode.TRAINING and torch's default constant folding, which
turns every size the model reads (x.size(0), x.shape) into a constant: the
batch of 8 is then written into Reshape targets, Expand shapes and random
masks, which is what the importer's static-batch rebinding must see through.

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
import onnx.numpy_helper
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


class MhaLayer(nn.Module):
    """Post-LN encoder layer on nn.MultiheadAttention in its default
    sequence-first layout ([seq, batch, hidden]): the batch is axis 1."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(hidden, heads, dropout=0.1)
        self.ln1 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x):
        a, _ = self.attn(x, x, x, need_weights=False)
        x = self.ln1(x + a)
        return self.ln2(x + self.fc2(torch.relu(self.fc1(x))))


class MhaEncoder(nn.Module):
    """Token embedding, transpose to [seq, batch, hidden], 2 MhaLayers,
    mean over the sequence, classifier."""

    def __init__(self, vocab=1000, hidden=256, heads=8, layers=2, ffn=1024, classes=10):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([MhaLayer(hidden, heads, ffn) for _ in range(layers)])
        self.head = nn.Linear(hidden, classes)

    def forward(self, input_ids):
        x = self.tok(input_ids).transpose(0, 1)
        for layer in self.layers:
            x = layer(x)
        return self.head(x.mean(dim=0))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    """Grouped-query attention with rotary embeddings and a causal mask."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, gqa: str):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.gqa = gqa
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def repeat_kv(self, x):
        """Hugging Face's repeat_kv on [b, kv, s, d]: expand + reshape."""
        rep = self.heads // self.kv_heads
        b, kv, s, d = x.shape
        return x[:, :, None, :, :].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim)
        k = self.k_proj(x).view(b, s, -1, self.head_dim)
        v = self.v_proj(x).view(b, s, -1, self.head_dim)
        if self.gqa == "repeat_interleave":
            # On [b, s, kv, d], as Meta's reference code repeats: with the
            # batch and sequence dynamic torch 1.13 does not know the kv dim
            # and exports SplitToSequence + a Loop of SequenceInsert +
            # ConcatFromSequence. (On [b, kv, s, d] its Loop reshapes to
            # [0, -1, 0, 0] after an Unsqueeze, which ONNX reads index by
            # index: a wrong shape, not an importable graph.)
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.gqa == "expand":
            k, v = self.repeat_kv(k), self.repeat_kv(v)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        probs = torch.softmax(scores.float(), dim=-1).type_as(q)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
        return self.o_proj(ctx)


class LlamaMLP(nn.Module):
    def __init__(self, hidden: int, inter: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, inter, gqa):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden)
        self.self_attn = LlamaAttention(hidden, heads, kv_heads, gqa)
        self.post_attention_layernorm = RMSNorm(hidden)
        self.mlp = LlamaMLP(hidden, inter)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaLike(nn.Module):
    """Llama-style decoder: token embedding, N pre-RMSNorm layers, final norm,
    untied LM head, next-token cross-entropy against `labels`."""

    def __init__(self, gqa, vocab=32000, hidden=1024, heads=16, kv_heads=4, layers=4, inter=2816,
                 max_seq=2048):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([LlamaLayer(hidden, heads, kv_heads, inter, gqa) for _ in range(layers)])
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        head_dim = hidden // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)
        self.vocab = vocab

    def forward(self, input_ids, labels):
        s = input_ids.shape[1]
        cos, sin = self.cos_cached[:s], self.sin_cached[:s]
        mask = torch.full((s, s), float("-inf")).triu(1)[None, None]
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return nn.functional.cross_entropy(logits.reshape(-1, self.vocab), labels.reshape(-1))


def exportable_stochastic_depth(input, p, mode, training=True):
    """torchvision.ops.stochastic_depth with the mask drawn by torch.rand:
    torch 1.13 cannot export its in-place bernoulli_ ("out parameter is not
    supported for bernoulli"). Same meaning: in training, each sample (mode
    "row") or the whole batch survives with probability 1 - p, scaled by
    1 / (1 - p). Exports as RandomUniform -> Less -> Cast -> Div -> Mul, the
    mask's shape [batch, 1, ..., 1] a constant."""
    if not training or p == 0.0:
        return input
    survival = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = (torch.rand(size, dtype=input.dtype, device=input.device) < survival).to(input.dtype)
    if survival > 0.0:
        noise = noise / survival
    return input * noise


# StochasticDepth.forward calls the module-level function by name.
sys.modules["torchvision.ops.stochastic_depth"].stochastic_depth = exportable_stochastic_depth


class Spec:
    """One export: file stem, model, example inputs, input names, dynamic axes
    per input (None: every dim static), output names and whether the model is
    exported in training mode."""

    def __init__(self, stem, model, inputs, names, axes, outputs=("output",), train=False):
        self.stem, self.model, self.inputs, self.names = stem, model, inputs, names
        self.axes, self.outputs, self.train = axes, list(outputs), train


def seeded(make):
    torch.manual_seed(0)
    return distinct_values(make())


# The static batch of the training-mode exports.
STATIC_BATCH = 8


def build_models():
    image = torch.randn(2, 3, 224, 224)
    tokens = torch.randint(0, 1000, (2, 16), dtype=torch.int64)
    specs = [
        Spec("resnet50", seeded(lambda: torchvision.models.resnet50(weights=None)), (image,), ["input"],
             {"input": {0: "batch"}, "output": {0: "batch"}}),
        Spec("vit_b16", seeded(lambda: torchvision.models.vit_b_16(weights=None)), (image,), ["input"],
             {"input": {0: "batch"}, "output": {0: "batch"}}),
        Spec("bert_like", seeded(BertLike), (tokens,), ["input_ids"],
             {"input_ids": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}}),
    ]
    static_image = torch.randn(STATIC_BATCH, 3, 224, 224)
    for name in ["resnet50", "vit_b_16", "swin_t", "convnext_tiny", "efficientnet_b0", "mobilenet_v3_large"]:
        make = getattr(torchvision.models, name)
        specs.append(Spec(f"{name}_b{STATIC_BATCH}_train", seeded(lambda: make(weights=None)), (static_image,),
                          ["input"], None, train=True))
    static_tokens = torch.randint(0, 1000, (STATIC_BATCH, 64), dtype=torch.int64)
    specs.append(Spec(f"mha_encoder_b{STATIC_BATCH}_train", seeded(MhaEncoder), (static_tokens,), ["input_ids"],
                      None, train=True))
    ids = torch.randint(0, 32000, (2, 256), dtype=torch.int64)
    labels = torch.randint(0, 32000, (2, 256), dtype=torch.int64)
    for gqa in ["repeat_interleave", "expand"]:
        specs.append(Spec(f"llama_gqa_{gqa}", seeded(lambda: LlamaLike(gqa)), (ids, labels), ["input_ids", "labels"],
                          {"input_ids": {0: "batch", 1: "seq"}, "labels": {0: "batch", 1: "seq"}},
                          outputs=("loss",), train=True))
    return specs


def export(spec, out_dir):
    model = spec.model
    model.train(spec.train)
    n_params = sum(p.numel() for p in model.parameters())
    buf = io.BytesIO()
    # Not under torch.no_grad(): with grad enabled nn.MultiheadAttention (ViT)
    # stays off its fused fast path (aten::_native_multi_head_attention),
    # which has no ONNX export.
    torch.manual_seed(0)
    torch.onnx.export(
        model, spec.inputs, buf,
        opset_version=OPSET,
        input_names=spec.names,
        output_names=spec.outputs,
        dynamic_axes=spec.axes,
        do_constant_folding=True,
        training=torch.onnx.TrainingMode.TRAINING if spec.train else torch.onnx.TrainingMode.PRESERVE,
        export_params=True,
    )
    stem = spec.stem
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
    if spec.train:
        external_constants(model_proto, data_name, float_types)

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


def external_constants(model_proto, data_name, float_types):
    """Large float Constant nodes (torch writes rotary tables and causal masks
    computed at export time as Constants) as external data too: more than
    4096 elements, which the importer never reads the values of."""
    for node in model_proto.graph.node:
        if node.op_type != "Constant":
            continue
        for a in node.attribute:
            t = a.t
            if a.type != onnx.AttributeProto.TENSOR or t.data_type not in float_types or math.prod(t.dims) <= 4096:
                continue
            raw = onnx.numpy_helper.to_array(t).tobytes()
            for field in ("float_data", "double_data", "int32_data"):
                t.ClearField(field)
            t.raw_data = raw
            external_data_helper.set_external_data(t, location=data_name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), os.pardir, "models", "torch"),
        help="output folder (default: models/torch in the repository)")
    parser.add_argument("--only", nargs="*", help="export only these stems (default: all)")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"onnx {onnx.__version__}, opset {OPSET}")
    for spec in build_models():
        if args.only and spec.stem not in args.only:
            continue
        export(spec, out_dir=args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
