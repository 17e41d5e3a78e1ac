"""PyTorch's own training loop for the torchscript bench family: the same
TorchScript module file, data and batch as the worker's job, trained with
torch.optim.SGD and softmax cross-entropy (the loss summed over the batch
and divided by its size, as the worker does). Prints one line,
"examples/s N", for the timed steps (after --warmup untimed ones). The
data is read into one tensor before timing, as the worker reads its shard
before its training loop.

  /usr/bin/python3 bench/torch_baseline.py --module=mlp.pt \
      --data=train.svm --features=128 --batch=256 --steps=300
"""
import argparse
import os
import time

import torch


def read_libsvm(path, features):
    labels, rows = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            labels.append(int(float(parts[0])))
            row = [0.0] * features
            for item in parts[1:]:
                index, value = item.split(":")
                row[int(index) - 1] = float(value)
            rows.append(row)
    return torch.tensor(rows), torch.tensor(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--features", type=int, required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(0)
    x, y = read_libsvm(args.data, args.features)
    module = torch.jit.load(args.module)
    module.train()
    optimizer = torch.optim.SGD(module.parameters(), lr=args.learning_rate)
    order = torch.randperm(len(y))
    position = 0

    def step():
        nonlocal position
        if position + args.batch > len(y):
            position = 0
        index = order[position:position + args.batch]
        position += args.batch
        loss = torch.nn.functional.cross_entropy(module(x[index]), y[index],
                                                 reduction="sum") / args.batch
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = time.perf_counter() - start
    print(f"examples/s {args.steps * args.batch / seconds:.1f}")


if __name__ == "__main__":
    main()
