"""A small convolutional network for 8x8 grey images given as 64 features
(row-major), saved as TorchScript for distrt to train (docs/torchscript.md).
With --data_dir it also writes a data set to try it on: four shapes (a
horizontal bar, a vertical bar, a diagonal, a hollow square) drawn at random
places with noise, one class each, as LIBSVM files.

  /usr/bin/python3 examples/torch/cnn.py --out=/tmp/cnn.pt --data_dir=/tmp/shapes
  bazel-bin/deploy/launch --ps=2 --workers=2 --chief -- \\
      --model=torchscript --torchscript_file=/tmp/cnn.pt \\
      --loss=softmax_cross_entropy --num_features=64 \\
      --train_data=/tmp/shapes/shapes.train.svm \\
      --eval_data=/tmp/shapes/shapes.eval.svm --optimizer=adam \\
      --learning_rate=0.01

forward(x) takes x, float32 [batch, 64], and shapes it into images itself.
"""
import argparse
import os
import random

import torch


class Cnn(torch.nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.logits = torch.nn.Linear(16 * 2 * 2, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        images = x.view(-1, 1, 8, 8)
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv1(images)), 2)
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv2(h)), 2)
        return self.logits(h.flatten(1))


def shape_image(label, rng):
    """64 pixel values: shape `label` at a random place, plus noise."""
    pixels = [[0.0] * 8 for _ in range(8)]
    if label == 0:  # horizontal bar
        r, c = rng.randrange(8), rng.randrange(4)
        for k in range(4):
            pixels[r][c + k] = 1.0
    elif label == 1:  # vertical bar
        r, c = rng.randrange(4), rng.randrange(8)
        for k in range(4):
            pixels[r + k][c] = 1.0
    elif label == 2:  # diagonal
        r, c = rng.randrange(5), rng.randrange(5)
        for k in range(4):
            pixels[r + k][c + k] = 1.0
    else:  # hollow 3x3 square
        r, c = rng.randrange(6), rng.randrange(6)
        for i in range(3):
            for j in range(3):
                if i != 1 or j != 1:
                    pixels[r + i][c + j] = 1.0
    return [v + rng.gauss(0.0, 0.3) for row in pixels for v in row]


def write_shapes(path, rows, rng):
    with open(path, "w") as f:
        for _ in range(rows):
            label = rng.randrange(4)
            features = " ".join(f"{i + 1}:{v:.4f}"
                                for i, v in enumerate(shape_image(label, rng)))
            f.write(f"{label} {features}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--data_dir", help="also write shapes.{train,eval}.svm")
    parser.add_argument("--rows", type=int, default=20000)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    model = Cnn(classes=4)
    torch.jit.script(model).save(args.out)
    print(f"wrote {args.out}: {sum(p.numel() for p in model.parameters())} "
          f"parameters")
    if args.data_dir:
        os.makedirs(args.data_dir, exist_ok=True)
        rng = random.Random(args.seed)
        train = os.path.join(args.data_dir, "shapes.train.svm")
        write_shapes(train, args.rows, rng)
        write_shapes(os.path.join(args.data_dir, "shapes.eval.svm"),
                     args.rows // 5, rng)
        print(f"wrote {args.rows} training and {args.rows // 5} evaluation "
              f"images to {args.data_dir}")


if __name__ == "__main__":
    main()
