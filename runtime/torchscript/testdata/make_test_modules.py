"""Writes the TorchScript modules torchscript_model_test loads, and what
PyTorch computes for them on a fixed batch (expected.json), so that the C++
adapter is checked against PyTorch itself.

  /usr/bin/python3 make_test_modules.py OUT_DIR
"""
import json
import os
import sys
import zipfile

from typing import List

import torch


class Mlp(torch.nn.Module):
    def __init__(self, outputs: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


class ReluMlp(torch.nn.Module):
    """The built-in mlp's architecture (ReLU hidden layer, logits)."""
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class Raises(torch.nn.Module):
    """Fails in forward on an example with a feature beyond 1000."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x.abs() > 1000.0).any()):
            raise ValueError("an example with a feature beyond 1000")
        return self.fc(x)


class Unused(torch.nn.Module):
    """A parameter forward never reads: its gradient is zeros."""
    def __init__(self):
        super().__init__()
        self.used = torch.nn.Linear(4, 1)
        self.unused = torch.nn.Parameter(torch.ones(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x)


class Frozen(torch.nn.Module):
    """A parameter frozen with requires_grad=False: not a variable."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)
        self.scale = torch.nn.Parameter(torch.tensor([2.0]),
                                        requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


class Double(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.double()).float()


class Flat(torch.nn.Module):
    """Returns [batch] instead of [batch, outputs]."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).squeeze(1)


class WideDeep(torch.nn.Module):
    """Embedding tables: a wide one of dim 1 and a deep one of dim 3."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return [1, 3]

    def forward(self, embeddings: List[torch.Tensor]) -> torch.Tensor:
        return embeddings[0] + self.fc(torch.tanh(embeddings[1]))


class BadEmbeddingDims(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return [2, 0]

    def forward(self, embeddings: List[torch.Tensor]) -> torch.Tensor:
        return self.fc(embeddings[0])


class Groups(torch.nn.Module):
    """Feature groups, linear so that the test computes what it must give
    in closed form: dense of 3 columns, groups of dims 2 and 3."""
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(3, 1)
        self.group0 = torch.nn.Linear(2, 1, bias=False)
        self.group1 = torch.nn.Linear(3, 1, bias=False)

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return [2, 3]

    def forward(self, dense: torch.Tensor,
                embeddings: List[torch.Tensor]) -> torch.Tensor:
        return (self.dense(dense) + self.group0(embeddings[0]) +
                self.group1(embeddings[1]))


class GroupsOtherDims(torch.nn.Module):
    """forward(dense, embeddings) with tables of dims [2, 4]."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 1)

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return [2, 4]

    def forward(self, dense: torch.Tensor,
                embeddings: List[torch.Tensor]) -> torch.Tensor:
        return self.fc(torch.cat([embeddings[0], embeddings[1]], 1))


class GroupsNoDims(torch.nn.Module):
    """forward(dense, embeddings) without embedding_dims()."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)

    def forward(self, dense: torch.Tensor,
                embeddings: List[torch.Tensor]) -> torch.Tensor:
        return self.fc(dense)


class BatchNorm(torch.nn.Module):
    """Batch norm's running statistics: buffers forward changes."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.bn = torch.nn.BatchNorm1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.fc(x))


class ConstantBuffer(torch.nn.Module):
    """A buffer forward only reads: allowed, kept as saved."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)
        self.register_buffer("offset", torch.tensor([0.5, -0.5]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + self.offset


class TwoArguments(torch.nn.Module):
    """forward with an argument the contract does not give."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + y


class DoubleOutput(torch.nn.Module):
    """float32 parameters, a float64 result."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).double()


class NoParameters(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


X = [[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.5, 1.0], [0.0, 0.0, 1.0, -2.0]]
LOSSES = {
    "softmax_cross_entropy": ("mlp3", [2.0, 0.0, 1.0]),
    "sigmoid_cross_entropy": ("mlp1", [1.0, 0.0, 1.0]),
    "mean_squared_error": ("mlp1", [0.3, -1.2, 2.5]),
}


def expected(module, loss_name, labels):
    x = torch.tensor(X)
    y = torch.tensor(labels)
    out = module(x)
    if loss_name == "softmax_cross_entropy":
        loss = torch.nn.functional.cross_entropy(out, y.long(), reduction="sum")
        predictions = torch.softmax(out, 1)
    elif loss_name == "sigmoid_cross_entropy":
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            out.squeeze(1), y, reduction="sum")
        predictions = torch.sigmoid(out.squeeze(1))
    else:
        loss = ((out.squeeze(1) - y) ** 2).sum()
        predictions = out.squeeze(1)
    module.zero_grad()
    loss.backward()
    return {
        "labels": labels,
        "loss_sum": loss.item(),
        "predictions": predictions.detach().flatten().tolist(),
        "gradients": {n: p.grad.flatten().tolist()
                      for n, p in module.named_parameters()
                      if p.requires_grad},
        "values": {n: p.detach().flatten().tolist()
                   for n, p in module.named_parameters()
                   if p.requires_grad},
    }


# A sparse batch: example i's features are (id, value) pairs.
SPARSE = [[(3, 1.0), (10, 0.5)], [(10, 2.0)], [(7, -1.0), (3, 1.0), (42, 1.5)]]
SPARSE_LABELS = [1.0, 0.0, 1.0]


def expected_embeddings(module):
    """Each table's rows for the batch's ids (random), and PyTorch's loss and
    gradients, pooling with its own embedding_bag (mode "sum", per-sample
    weights), independent of the adapter's gather and scatter."""
    ids = sorted({i for example in SPARSE for i, _ in example})
    flat_ids = torch.tensor([i for ex in SPARSE for i, _ in ex])
    weights = torch.tensor([v for ex in SPARSE for _, v in ex])
    offsets = torch.tensor([0] + [len(ex) for ex in SPARSE][:-1]).cumsum(0)
    position = {i: k for k, i in enumerate(ids)}
    local = torch.tensor([position[int(i)] for i in flat_ids])
    tables = [torch.randn(len(ids), dim, requires_grad=True)
              for dim in module.embedding_dims()]
    pooled = [torch.nn.functional.embedding_bag(
        local, t, offsets, mode="sum", per_sample_weights=weights)
        for t in tables]
    out = module(pooled)
    y = torch.tensor(SPARSE_LABELS)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(
        out.squeeze(1), y, reduction="sum")
    module.zero_grad()
    loss.backward()
    return {
        "examples": SPARSE,
        "labels": SPARSE_LABELS,
        "ids": ids,
        "tables": [t.detach().flatten().tolist() for t in tables],
        "table_gradients": [t.grad.flatten().tolist() for t in tables],
        "loss_sum": loss.item(),
        "predictions": torch.sigmoid(out.squeeze(1)).detach().tolist(),
        "gradients": {n: p.grad.flatten().tolist()
                      for n, p in module.named_parameters()},
        "values": {n: p.detach().flatten().tolist()
                   for n, p in module.named_parameters()},
    }


def main():
    out_dir = sys.argv[1]
    torch.manual_seed(7)
    modules = {"mlp3": Mlp(3), "mlp1": Mlp(1), "unused": Unused(),
               "double": Double(), "flat": Flat(), "frozen": Frozen(),
               "no_parameters": NoParameters(), "wide_deep": WideDeep(),
               "bad_embedding_dims": BadEmbeddingDims(),
               "batch_norm": BatchNorm(), "constant_buffer": ConstantBuffer(),
               "relu_mlp": ReluMlp(), "raises": Raises(),
               "two_arguments": TwoArguments(),
               "double_output": DoubleOutput(), "groups": Groups(),
               "groups_other_dims": GroupsOtherDims(),
               "groups_no_dims": GroupsNoDims()}
    for name, module in modules.items():
        torch.jit.script(module).save(os.path.join(out_dir, name + ".pt"))
    result = {"x": X}
    for loss_name, (module_name, labels) in LOSSES.items():
        result[loss_name] = expected(modules[module_name], loss_name, labels)
    result["frozen"] = expected(modules["frozen"], "mean_squared_error",
                                [1.0, 2.0, 3.0])
    result["wide_deep"] = expected_embeddings(modules["wide_deep"])
    result["constant_buffer"] = expected(modules["constant_buffer"],
                                         "softmax_cross_entropy",
                                         [0.0, 1.0, 1.0])
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(result, f)
    with open(os.path.join(out_dir, "not_torchscript.pt"), "w") as f:
        f.write("not a zip archive\n")
    write_as_newer(os.path.join(out_dir, "mlp1.pt"),
                   os.path.join(out_dir, "newer.pt"))


def write_as_newer(src, dst):
    """`src` as a newer PyTorch would write it: its archive's format version
    raised beyond what this PyTorch (and so LibTorch 1.13) reads."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith("/version"):
                data = b"99\n"
            zout.writestr(item, data)


if __name__ == "__main__":
    main()
