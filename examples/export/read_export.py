#!/usr/bin/python3
"""Serve the wide & deep model from `distctl export`'s files, with numpy only.

  bazel-bin/client/distctl export --checkpoint=/tmp/job/checkpoints \\
      --out=/tmp/wide_deep_export
  /usr/bin/python3 examples/export/read_export.py /tmp/wide_deep_export \\
      --libsvm=data/ctr.eval.svm --limit=5

prints the click probability of the first 5 examples of the file as the
built-in `--model=wide_deep` (LIBSVM ids, no feature spec) computes it:

  wide   = sum over the example's features of value * W[id] + b_wide
  pooled = sum over the example's features of value * E[id]
  deep   = MLP(pooled): each hidden layer relu(x @ kernel + bias), then
           x @ logit/kernel + logit/bias
  p      = sigmoid(wide + deep)

W is the variable "wide_deep/wide/weights" [num_features, 1], b_wide
"wide_deep/wide/bias", E the hash table "wide_deep/embedding" (its rows
looked up by id in the sorted ids), and the layers "wide_deep/dense_<i>/
kernel" and "/bias", then "wide_deep/logit/...". An id the table does not
hold (never trained, or not admitted or evicted by the table's policy) gets
a row of zeros, as the runtime's lookup of an id it did not admit does.

docs/export.md describes the files. load_export() and Table work for any
model's export; WideDeep is the wide & deep model's forward pass.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

FORMAT = "distrt-serving-export"
FORMAT_VERSION = 1


class Table:
    """A hash embedding table: ids sorted ascending, values[i] is ids[i]'s."""

    def __init__(self, name, ids, values, unknown_row):
        self.name = name
        self.ids = ids
        self.values = values
        self.dim = values.shape[1]
        self.unknown_row = unknown_row  # [dim]: what ids not held read

    def lookup(self, ids):
        """The rows of `ids` ([len(ids), dim], float64) and which were held."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.ids, ids)
        pos = np.minimum(pos, max(len(self.ids) - 1, 0))
        found = (np.asarray(self.ids[pos]) == ids) if len(self.ids) else (
            np.zeros(len(ids), dtype=bool))
        rows = np.tile(np.asarray(self.unknown_row, np.float64),
                       (len(ids), 1))
        if found.any():
            rows[found] = self.values[pos[found]]
        return rows, found


class Export:
    """What an export directory holds: manifest, tables and variables."""

    def __init__(self, path, manifest, tables, variables):
        self.path = path
        self.manifest = manifest
        self.tables = tables
        self.variables = variables

    @property
    def step(self):
        return self.manifest["step"]


def _load_array(path, dtype, shape):
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    if array.dtype != np.dtype(dtype) or list(array.shape) != list(shape):
        raise ValueError(
            "%s: %s %s, but the manifest says %s %s"
            % (path, array.dtype, list(array.shape), dtype, list(shape)))
    return array


def load_export(path):
    """Loads the export at `path` (memory-mapped: tables are not read whole)."""
    manifest_path = os.path.join(path, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError("%s is not a %s manifest" % (manifest_path, FORMAT))
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError("%s has format_version %s; this reader reads %d"
                         % (manifest_path, manifest.get("format_version"),
                            FORMAT_VERSION))
    tables = {}
    for t in manifest["hash_tables"]:
        ids = _load_array(os.path.join(path, t["ids"]), "<i8", [t["rows"]])
        values = _load_array(os.path.join(path, t["values"]), "<f4",
                             [t["rows"], t["dim"]])
        unknown_row = _load_array(os.path.join(path, t["unknown_row_values"]),
                                  "<f4", [t["dim"]])
        tables[t["name"]] = Table(t["name"], ids, values, unknown_row)
    variables = {}
    for v in manifest["variables"]:
        dtype = {"float32": "<f4", "int64": "<i8"}[v["dtype"]]
        variables[v["name"]] = _load_array(os.path.join(path, v["file"]),
                                           dtype, v["shape"])
    return Export(path, manifest, tables, variables)


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class WideDeep:
    """The built-in wide_deep model on LIBSVM ids (runtime/models/
    wide_deep_model.h), from an export of a job that trained it."""

    PREFIX = "wide_deep/"

    def __init__(self, export):
        v = export.variables
        for name in ("wide_deep/wide/weights", "wide_deep/wide/bias",
                     "wide_deep/logit/kernel", "wide_deep/logit/bias"):
            if name not in v:
                raise ValueError("%s: no variable %r: not an export of the "
                                 "wide_deep model on LIBSVM ids"
                                 % (export.path, name))
        if "wide_deep/embedding" not in export.tables:
            raise ValueError("%s: no hash table 'wide_deep/embedding': not an "
                             "export of the wide_deep model on LIBSVM ids "
                             "(the feature-spec form has a table per group)"
                             % export.path)
        self.wide = np.asarray(v["wide_deep/wide/weights"], np.float64)[:, 0]
        self.wide_bias = float(v["wide_deep/wide/bias"][0])
        self.embedding = export.tables["wide_deep/embedding"]
        self.layers = []  # (kernel, bias, relu after it)
        i = 0
        while "wide_deep/dense_%d/kernel" % i in v:
            self.layers.append(self._layer(v, "wide_deep/dense_%d" % i, True))
            i += 1
        self.layers.append(self._layer(v, "wide_deep/logit", False))

    @staticmethod
    def _layer(v, prefix, with_relu):
        return (np.asarray(v[prefix + "/kernel"], np.float64),
                np.asarray(v[prefix + "/bias"], np.float64), with_relu)

    @property
    def num_features(self):
        return len(self.wide)

    def logits(self, examples):
        """Per example (ids, values) of 0-based feature ids: its logit, and
        how many of its ids the embedding table did not hold."""
        logits, unknown = [], 0
        for ids, values in examples:
            ids = np.asarray(ids, dtype=np.int64)
            values = np.asarray(values, dtype=np.float64)
            if len(ids) and (ids.min() < 0 or ids.max() >= self.num_features):
                raise ValueError("feature id outside [0, %d)"
                                 % self.num_features)
            wide = float(values @ self.wide[ids]) + self.wide_bias
            rows, found = self.embedding.lookup(ids)
            unknown += int((~found).sum())
            x = values @ rows  # [dim]
            for kernel, bias, with_relu in self.layers:
                x = x @ kernel + bias
                if with_relu:
                    x = relu(x)
            logits.append(wide + float(x[0]))
        return np.array(logits), unknown

    def predict(self, examples):
        """Click probabilities of `examples` (see logits)."""
        logits, _ = self.logits(examples)
        return sigmoid(logits)


def log_loss(logits, labels):
    """Mean binary cross-entropy of sigmoid(logits), computed stably."""
    z = np.asarray(logits, np.float64)
    y = np.asarray(labels, np.float64)
    losses = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    return float(losses.mean()) if len(losses) else float("nan")


def read_libsvm(path, index_base="auto"):
    """[(label, ids, values, line)] with 0-based ids, as the runtime reads
    LIBSVM (runtime/input/libsvm_reader.h): the file is 0-based if an index
    0 appears anywhere in it, else 1-based; labels -1 and 0 are 0, +1 is 1."""
    rows = []
    saw_zero = False
    with open(path) as f:
        for number, line in enumerate(f, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tokens = line.split()
            label = float(tokens[0])
            ids, values = [], []
            for token in tokens[1:]:
                key, value = token.split(":", 1)
                if key == "qid":
                    continue
                ids.append(int(key))
                values.append(float(value))
            saw_zero = saw_zero or 0 in ids
            rows.append((1.0 if label > 0 else 0.0, ids, values, number))
    base = {"0": 0, "1": 1}.get(index_base, 0 if saw_zero else 1)
    return [(label, [i - base for i in ids], values, number)
            for label, ids, values, number in rows]


def parse_example(text):
    """"3:1.0 7:0.5" (0-based ids) as (ids, values)."""
    pairs = [token.split(":", 1) for token in text.split()]
    return [int(k) for k, _ in pairs], [float(v) for _, v in pairs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("export", help="the directory distctl export wrote")
    parser.add_argument("--libsvm", help="examples to predict (LIBSVM)")
    parser.add_argument("--index_base", default="auto",
                        choices=["auto", "0", "1"],
                        help="how the LIBSVM file numbers features")
    parser.add_argument("--limit", type=int, default=0,
                        help="predict only the first N examples (0: all)")
    parser.add_argument("--example", action="append", default=[],
                        help='one example as "id:value ..." (0-based ids)')
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of lines")
    args = parser.parse_args()

    export = load_export(args.export)
    model = WideDeep(export)
    examples, labels, lines = [], [], []
    if args.libsvm:
        for label, ids, values, line in read_libsvm(args.libsvm,
                                                    args.index_base):
            if args.limit and len(examples) >= args.limit:
                break
            examples.append((ids, values))
            labels.append(label)
            lines.append(line)
    examples += [parse_example(e) for e in args.example]
    logits, unknown = model.logits(examples)
    predictions = sigmoid(logits)
    loss = log_loss(logits, labels) if labels and len(labels) == len(
        examples) else None
    if args.json:
        json.dump({"step": export.step, "examples": len(examples),
                   "predictions": predictions.tolist(),
                   "logits": logits.tolist(), "lines": lines,
                   "mean_log_loss": loss, "unknown_ids": unknown},
                  sys.stdout)
        sys.stdout.write("\n")
        return
    print("export of step %d: %d hash table(s), %d variable(s); wide_deep "
          "with %d features, embedding dim %d, %d layer(s)"
          % (export.step, len(export.tables), len(export.variables),
             model.num_features, model.embedding.dim, len(model.layers)))
    for k, p in enumerate(predictions):
        where = ("line %d" % lines[k]) if k < len(lines) else "example"
        print("%s: p=%.7f logit=%.7f" % (where, p, logits[k]))
    if loss is not None:
        print("mean log loss %.7f over %d examples" % (loss, len(examples)))
    if unknown:
        print("%d feature id(s) not in the embedding table got zero rows"
              % unknown)


if __name__ == "__main__":
    main()
