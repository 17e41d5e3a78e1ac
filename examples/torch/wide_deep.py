"""A wide & deep click-through model of your own with its embedding tables
on the parameter servers, saved as TorchScript (docs/torchscript.md):

  /usr/bin/python3 examples/torch/wide_deep.py --out=/tmp/wide_deep.pt
  bazel-bin/deploy/launch --ps=2 --workers=2 --chief -- \
      --model=torchscript --torchscript_file=/tmp/wide_deep.pt \
      --loss=sigmoid_cross_entropy --train_data=ctr.train.svm \
      --eval_data=ctr.eval.svm --optimizer=adagrad --learning_rate=0.1

A module that exports embedding_dims() -> List[int] declares one embedding
table per entry, of that many values per row. Each table is looked up with
every sparse feature id of an example (LIBSVM data), and forward gets, per
table, the rows of the example's ids weighted by the features' values and
summed: [batch, dim] (TensorFlow's embedding_column with combiner "sum").
The tables live in hash tables on the ps tasks; a step pulls only its
batch's rows and pushes only their gradients.

Here the wide part is a table of dim 1 (a weight per feature id) and the
deep part a table of dim --dim feeding an MLP.
"""
import argparse
from typing import List

import torch


class WideDeep(torch.nn.Module):
    def __init__(self, dim: int, hidden: List[int]):
        super().__init__()
        self.dim = dim
        layers: List[torch.nn.Module] = []
        width = dim
        for units in hidden:
            layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
            width = units
        layers.append(torch.nn.Linear(width, 1))
        self.deep = torch.nn.Sequential(*layers)
        self.bias = torch.nn.Parameter(torch.zeros(1))

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return [1, self.dim]  # wide, deep

    def forward(self, embeddings: List[torch.Tensor]) -> torch.Tensor:
        wide, deep = embeddings[0], embeddings[1]
        return wide + self.deep(deep) + self.bias  # one logit: [batch, 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--hidden", default="32,16",
                        help="hidden layer widths, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    hidden = [int(h) for h in args.hidden.split(",") if h]
    model = WideDeep(args.dim, hidden)
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}: {sum(p.numel() for p in model.parameters())} "
          f"dense parameters, embedding tables of dims {model.embedding_dims()}")


if __name__ == "__main__":
    main()
