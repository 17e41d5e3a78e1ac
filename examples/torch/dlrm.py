"""A DLRM-style click-through model of your own, one embedding table per
categorical feature on the parameter servers, saved as TorchScript
(docs/torchscript.md), with the feature spec that names its inputs:

  /usr/bin/python3 examples/torch/dlrm.py --num_dense 13 --num_tables 26 \\
      --dim 16 --out=/tmp/dlrm.pt --spec_out=/tmp/dlrm_spec.json
  bazel-bin/deploy/launch --ps=2 --workers=2 --chief -- \\
      --model=torchscript --torchscript_file=/tmp/dlrm.pt \\
      --features=/tmp/dlrm_spec.json --loss=sigmoid_cross_entropy \\
      --train_data=criteo.train.tfrecord --optimizer=adagrad \\
      --learning_rate=0.05

DLRM (Naumov et al., 2019): a bottom MLP turns the numeric features into a
vector of the embeddings' width; each categorical feature looks up its own
table; the pairwise dot products of those vectors (the upper triangle of
their Gram matrix) and the bottom MLP's output feed a top MLP, which gives
one logit for sigmoid cross entropy.

With a feature spec's embedding groups, forward takes
(dense: Tensor[batch, num_dense], embeddings: List[Tensor]): the numeric
features and, per group in the spec's order, the group's ids' rows pooled
with its combiner, [batch, dim]. embedding_dims() must return the groups'
dims. The tables, named after the groups, live in hash tables on the ps
tasks; a step pulls only its batch's rows and pushes only their gradients.

The spec written by --spec_out has Criteo's shape: label "label", numeric
features I1..I<num_dense> (missing: 0) and categorical features
C1..C<num_tables> kept whole ("hashed": int64 ids, or strings by
Fingerprint64), each its own group of dim --dim, combiner "sum".
"""
import argparse
import json
from typing import List

import torch


def mlp(widths: List[int], last_relu: bool) -> torch.nn.Sequential:
    layers: List[torch.nn.Module] = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2 or last_relu:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class Dlrm(torch.nn.Module):
    def __init__(self, num_dense: int, num_tables: int, dim: int,
                 bottom: List[int], top: List[int]):
        super().__init__()
        self.dims = [dim] * num_tables
        # The numeric features to one more vector of the tables' width.
        self.bottom = mlp([num_dense] + bottom + [dim], last_relu=True)
        vectors = num_tables + 1
        # The pairs (i < j) of the vectors whose dot products interact:
        # a constant buffer, which forward only reads.
        pairs = torch.triu_indices(vectors, vectors, offset=1)
        self.register_buffer("left", pairs[0].clone())
        self.register_buffer("right", pairs[1].clone())
        interactions = vectors * (vectors - 1) // 2
        self.top = mlp([dim + interactions] + top + [1], last_relu=False)

    @torch.jit.export
    def embedding_dims(self) -> List[int]:
        return self.dims

    def forward(self, dense: torch.Tensor,
                embeddings: List[torch.Tensor]) -> torch.Tensor:
        x = self.bottom(dense)                                # [batch, dim]
        vectors = torch.stack([x] + embeddings, dim=1)        # [b, n+1, dim]
        gram = torch.bmm(vectors, vectors.transpose(1, 2))    # [b, n+1, n+1]
        dots = gram[:, self.left, self.right]                 # [b, pairs]
        return self.top(torch.cat([x, dots], dim=1))          # [batch, 1]


def feature_spec(num_dense: int, num_tables: int, dim: int) -> dict:
    """Criteo's shape as a feature spec (docs/input.md)."""
    return {
        "label": "label",
        "numeric": [{"name": f"I{i + 1}", "default": 0.0}
                    for i in range(num_dense)],
        "categorical": [{"name": f"C{t + 1}", "kind": "hashed"}
                        for t in range(num_tables)],
        "embedding_groups": [{"name": f"C{t + 1}", "features": [f"C{t + 1}"],
                              "dim": dim, "combiner": "sum"}
                             for t in range(num_tables)],
    }


def widths(text: str) -> List[int]:
    return [int(w) for w in text.split(",") if w]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num_dense", type=int, default=13,
                        help="numeric features (>= 1)")
    parser.add_argument("--num_tables", type=int, default=26,
                        help="categorical features, one table each (>= 1)")
    parser.add_argument("--dim", type=int, default=16,
                        help="the tables' width, and the bottom MLP's output")
    parser.add_argument("--bottom", default="64",
                        help="the bottom MLP's hidden widths, comma-separated")
    parser.add_argument("--top", default="64,32",
                        help="the top MLP's hidden widths, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--spec_out",
                        help="also write the feature spec (JSON) here")
    args = parser.parse_args()
    if args.num_dense < 1 or args.num_tables < 1 or args.dim < 1:
        parser.error("--num_dense, --num_tables and --dim must be >= 1")
    torch.manual_seed(args.seed)
    model = Dlrm(args.num_dense, args.num_tables, args.dim,
                 widths(args.bottom), widths(args.top))
    torch.jit.script(model).save(args.out)
    if args.spec_out:
        with open(args.spec_out, "w") as f:
            json.dump(feature_spec(args.num_dense, args.num_tables, args.dim),
                      f, indent=1)
    print(f"wrote {args.out}: {sum(p.numel() for p in model.parameters())} "
          f"dense parameters, {args.num_tables} embedding tables of dim "
          f"{args.dim}")


if __name__ == "__main__":
    main()
