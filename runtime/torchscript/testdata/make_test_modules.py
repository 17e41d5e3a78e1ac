"""Writes the TorchScript modules torchscript_model_test loads, and what
PyTorch computes for them on a fixed batch (expected.json), so that the C++
adapter is checked against PyTorch itself.

  /usr/bin/python3 make_test_modules.py OUT_DIR
"""
import json
import os
import sys

import torch


class Mlp(torch.nn.Module):
    def __init__(self, outputs: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


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


def main():
    out_dir = sys.argv[1]
    torch.manual_seed(7)
    modules = {"mlp3": Mlp(3), "mlp1": Mlp(1), "unused": Unused(),
               "double": Double(), "flat": Flat(), "frozen": Frozen(),
               "no_parameters": NoParameters()}
    for name, module in modules.items():
        torch.jit.script(module).save(os.path.join(out_dir, name + ".pt"))
    result = {"x": X}
    for loss_name, (module_name, labels) in LOSSES.items():
        result[loss_name] = expected(modules[module_name], loss_name, labels)
    result["frozen"] = expected(modules["frozen"], "mean_squared_error",
                                [1.0, 2.0, 3.0])
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(result, f)
    with open(os.path.join(out_dir, "not_torchscript.pt"), "w") as f:
        f.write("not a zip archive\n")


if __name__ == "__main__":
    main()
