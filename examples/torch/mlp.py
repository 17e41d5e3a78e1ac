"""A PyTorch model of your own, saved as TorchScript for distrt to train
(docs/torchscript.md):

  /usr/bin/python3 examples/torch/mlp.py --features=20 --classes=4 \
      --out=/tmp/mlp.pt
  bazel-bin/deploy/launch --ps=2 --workers=2 --chief -- \
      --model=torchscript --torchscript_file=/tmp/mlp.pt \
      --loss=softmax_cross_entropy --train_data=... --eval_data=...

forward(x) takes x, float32 [batch, features], and returns one logit per
class, [batch, classes]. Any torch.nn.Module that torch.jit.script accepts
and that keeps that contract trains the same way; its parameters become the
job's variables.
"""
import argparse

import torch


class Mlp(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.hidden = torch.nn.Linear(features, hidden)
        self.logits = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits(torch.relu(self.hidden(x)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--features", type=int, required=True)
    parser.add_argument("--classes", type=int, required=True)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = Mlp(args.features, args.hidden, args.classes)
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}: {sum(p.numel() for p in model.parameters())} "
          f"parameters")


if __name__ == "__main__":
    main()
