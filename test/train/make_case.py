#!/usr/bin/python3
"""Builds one training test case: a small PyTorch model exported to ONNX, a
dataset of K steps, and the weights torch.optim reaches after those K steps
from the same initial weights (the reference popc's training must match).

usage: make_case.py OUT_DIR CASE [--steps K]

CASE is MODEL_OPTIMIZER[_accumA][_replR][_shardN|_ipusN][_pipe][_half], MODEL in mlp (cross-entropy inside
the model), mlpnll (softmax output; popc adds --loss nll:probs,label), cnn;
OPTIMIZER in sgd, momentum, nesterov, adam, adamw. With _accumA and/or _replR
the model takes micro-batches of BATCH/(A*R): popc accumulates A of them per
update (--accumulation-factor A) on each of R replicas that all-reduce their
gradients (--replication-factor R), which must equal torch's batch of BATCH. Writes OUT_DIR/model.onnx, data.npz,
expected_weights.npz (initializer names), losses.npy, expected_loss.npz
(the last step's loss) and flags.txt (the
popc-onnx training flags of the case).
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

BATCH = 8
CLASSES = 4


class Mlp(torch.nn.Module):
    def __init__(self, with_loss=True):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.fc2 = torch.nn.Linear(16, CLASSES)
        self.with_loss = with_loss

    def forward(self, x, label):
        logits = self.fc2(torch.relu(self.fc1(x)))
        if self.with_loss:
            return F.cross_entropy(logits, label)
        return torch.softmax(logits, dim=1)


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(8 * 2 * 2, CLASSES)

    def forward(self, x, label):
        y = F.max_pool2d(torch.relu(self.conv1(x)), 2)      # 8x8 -> 4x4
        y = torch.relu(self.conv2(y))                        # 4x4 -> 2x2
        y = F.avg_pool2d(y, 1) + y                           # AveragePool's rule too
        logits = self.fc(torch.flatten(y, 1))
        return F.cross_entropy(logits, label)


class Transformer(torch.nn.Module):
    """A Transformer encoder layer (self-attention, LayerNorm, GELU MLP) over a
    short sequence, mean-pooled into a classifier."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(6, 16)
        self.layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0,
                                                      activation="gelu", batch_first=True)
        self.head = torch.nn.Linear(16, CLASSES)
        # LayerNorm's ones and zeros would be one tied initializer after the
        # export's de-duplication: give every norm its own values.
        with torch.no_grad():
            for p in (self.layer.norm1.weight, self.layer.norm2.weight):
                p.uniform_(0.8, 1.2)
            for p in (self.layer.norm1.bias, self.layer.norm2.bias):
                p.uniform_(-0.1, 0.1)

    def forward(self, x, label):
        y = self.layer(self.embed(x))
        return F.cross_entropy(self.head(y.mean(1)), label)


class CnnBn(torch.nn.Module):
    """Convolutions with BatchNormalization in training mode (batch statistics;
    exported at opset 14, where BatchNormalization has training_mode)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(6)
        self.conv2 = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, CLASSES)
        with torch.no_grad():  # distinct values: the export would tie equal initializers
            for bn in (self.bn1, self.bn2):
                bn.weight.uniform_(0.8, 1.2)
                bn.bias.uniform_(-0.1, 0.1)
                bn.running_mean.uniform_(-0.1, 0.1)
                bn.running_var.uniform_(0.9, 1.1)

    def forward(self, x, label):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return F.cross_entropy(self.fc(y.mean((2, 3))), label)


def to_float16(path):
    """The model in float16: float initializers, float Constant nodes, and float
    graph inputs and outputs."""
    import onnx
    from onnx import numpy_helper, TensorProto
    proto = onnx.load(path)
    g = proto.graph
    for i, init in enumerate(g.initializer):
        if init.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in g.node:
        for a in node.attribute:
            if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.save(proto, path)


OPTIMIZERS = {
    "sgd": (lambda p: torch.optim.SGD(p, lr=0.1), "--optimizer sgd --learning-rate 0.1"),
    "momentum": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
                 "--optimizer momentum --learning-rate 0.05 --momentum 0.9 --dampening 0.1 --weight-decay 0.01"),
    "nesterov": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
                 "--optimizer sgd --learning-rate 0.05 --momentum 0.8 --nesterov"),
    "adam": (lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.01),
             "--optimizer adam --learning-rate 0.01 --beta1 0.8 --beta2 0.99 --epsilon 1e-6 --weight-decay 0.01"),
    "adamw": (lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
              "--optimizer adamw --learning-rate 0.01 --weight-decay 0.1"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("case")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    parts = args.case.split("_")
    model_kind, opt_kind = parts[0], parts[1]
    accum = next((int(p[len("accum"):]) for p in parts[2:] if p.startswith("accum")), 1)
    repl = next((int(p[len("repl"):]) for p in parts[2:] if p.startswith("repl")), 1)
    # Sharding over IPUs: shardN = --auto-shard N; ipusN = the exported nodes
    # annotated __ipu_number in N contiguous groups, --num-ipus N.
    shard = next((int(p[len("shard"):]) for p in parts[2:] if p.startswith("shard")), 1)
    # _half: the exported model converted to float16 (weights, inputs, loss). The
    # reference trains in float32 from the same float16 values and rounds the
    # weights to float16 after every step, as popc stores them.
    float16 = "half" in parts[2:]
    ipus = next((int(p[len("ipus"):]) for p in parts[2:] if p.startswith("ipus")), 1)
    # _pipe: the shards (shardN / ipusN) pipelined, --pipeline.
    pipe = "pipe" in parts[2:]
    micro = BATCH // (accum * repl)
    torch.manual_seed(7)
    rng = np.random.default_rng(11)
    if model_kind == "cnn":
        model = Cnn()
        x_shape = (3, 8, 8)
    elif model_kind == "cnnbn":
        model = CnnBn()
        x_shape = (3, 8, 8)
    elif model_kind == "tfm":
        model = Transformer()
        x_shape = (5, 6)
    else:
        model = Mlp(with_loss=(model_kind == "mlp"))
        x_shape = (12,)
    # No dropout; batch norm (cnnbn) trains on batch statistics in both.
    training_mode = model_kind == "cnnbn"
    model.train(training_mode)
    steps = args.steps
    xs = rng.standard_normal((steps * BATCH,) + x_shape).astype(np.float32)
    ys = rng.integers(0, CLASSES, steps * BATCH).astype(np.int64)

    os.makedirs(args.out, exist_ok=True)
    out_names = ["loss"] if model_kind != "mlpnll" else ["probs"]
    torch.onnx.export(model, (torch.from_numpy(xs[:micro]), torch.from_numpy(ys[:micro])),
                      os.path.join(args.out, "model.onnx"), input_names=["x", "label"], output_names=out_names,
                      opset_version=14 if training_mode else 13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING if training_mode else torch.onnx.TrainingMode.EVAL)
    model.train(training_mode)  # the export may leave the module in another mode
    if float16:
        to_float16(os.path.join(args.out, "model.onnx"))
        xs = xs.astype(np.float16)
        with torch.no_grad():
            for prm in model.parameters():
                prm.copy_(prm.half().float())
    if ipus > 1:
        import onnx
        path = os.path.join(args.out, "model.onnx")
        proto = onnx.load(path)
        nodes = proto.graph.node
        for k, node in enumerate(nodes):
            node.attribute.append(onnx.helper.make_attribute("__ipu_number", k * ipus // len(nodes)))
        onnx.save(proto, path)
    # PopART's layout: [steps x accumulation, replicas, micro-batch, ...], without
    # the dims that are 1 (steps always lead: --iterations slices them).
    def layout(a):
        if accum == 1 and repl == 1:
            return a
        inner = (micro,) if repl == 1 or accum == 1 else (repl, micro)
        return a.reshape((-1,) + inner + a.shape[1:])
    np.savez(os.path.join(args.out, "data.npz"), x=layout(xs), label=layout(ys))
    split = steps // 2 * BATCH  # the dataset in two halves: resuming from saved weights
    np.savez(os.path.join(args.out, "data_a.npz"), x=layout(xs[:split]), label=layout(ys[:split]))
    np.savez(os.path.join(args.out, "data_b.npz"), x=layout(xs[split:]), label=layout(ys[split:]))

    make_opt, flags = OPTIMIZERS[opt_kind]
    opt = make_opt(model.parameters())
    losses = []
    for k in range(steps):
        x = torch.from_numpy(xs[k * BATCH:(k + 1) * BATCH].astype(np.float32))
        y = torch.from_numpy(ys[k * BATCH:(k + 1) * BATCH])
        opt.zero_grad()
        if training_mode and accum > 1:
            # Batch statistics are per micro-batch: torch accumulates the same
            # micro-batches' mean gradients (and updates the running stats per
            # micro-batch, as popc does).
            for j in range(accum):
                out = model(x[j * micro:(j + 1) * micro], y[j * micro:(j + 1) * micro])
                (out / accum).backward()
            loss = out
        else:
            out = model(x, y)
            loss = out if model_kind != "mlpnll" else F.nll_loss(torch.log(out), y)
            loss.backward()
        opt.step()
        if float16:
            with torch.no_grad():
                for prm in model.parameters():
                    prm.copy_(prm.half().float())
        losses.append(loss.item())
    expected = {name: p.detach().numpy().astype(np.float16 if float16 else np.float32)
                for name, p in model.named_parameters()}
    # Running means too (running variances differ by definition: ONNX's
    # BatchNormalization averages the population variance, torch the unbiased one).
    expected.update({name: b.numpy().astype(np.float16 if float16 else np.float32) for name, b in model.named_buffers()
                     if name.endswith("running_mean")})
    np.savez(os.path.join(args.out, "expected_weights.npz"), **expected)
    np.save(os.path.join(args.out, "losses.npy"), np.array(losses, dtype=np.float32))
    # The last step's loss, under the name of popc's loss output.
    loss_name = "loss" if model_kind != "mlpnll" else "nll_loss"
    # (with accumulation, popc returns each micro-batch's loss: their mean is torch's)
    expected_loss = {loss_name: np.array(losses[-1], dtype=np.float16 if float16 else np.float32)} \
        if accum * repl == 1 else {}
    if float16:  # float16 forward and backward passes: a few float16 steps of the weights' scale
        with open(os.path.join(args.out, "tolerance.txt"), "w") as f:
            # (batch normalisation divides by the batch's spread: its float16 gradients, twice that)
            f.write("--rtol 2e-3 --atol 1e-3\n" if model_kind == "cnnbn" else "--rtol 2e-3 --atol 5e-4\n")
    np.savez(os.path.join(args.out, "expected_loss.npz"), **expected_loss)
    loss_flag = "--loss loss" if model_kind != "mlpnll" else "--loss nll:probs,label"
    with open(os.path.join(args.out, "flags.txt"), "w") as f:
        accum_flag = f" --accumulation-factor {accum}" if accum > 1 else ""
        accum_flag += f" --replication-factor {repl}" if repl > 1 else ""
        accum_flag += f" --auto-shard {shard}" if shard > 1 else ""
        accum_flag += f" --num-ipus {ipus}" if ipus > 1 else ""
        accum_flag += " --pipeline" if pipe else ""
        f.write(f"--train {loss_flag} {flags}{accum_flag}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
