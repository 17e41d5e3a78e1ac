"""PyTorch's input pipeline for the input bench family: the same TFRecord
files of tf.Examples (Criteo's shape, as gen_data --shape=criteo writes
them) read by a torch.utils.data.IterableDataset in a DataLoader, each
record parsed with Python's protobuf (the example_pb2 module that protoc
--python_out writes from proto/example.proto) and batched into tensors: a
float32 [batch, numeric] tensor of the numeric features, one int64 tensor of
ids per categorical feature, and the labels. Prints one line,
"examples/s N", for one pass over the files (DataLoader start-up included,
as in a training job's first epoch).

  /usr/bin/python3 bench/input_pytorch_baseline.py --proto_dir=DIR \
      --files=a.tfrecord,b.tfrecord --batch=256 --num_workers=2

With workers, each takes whole files (file i goes to worker i % workers),
as our FILE sharding does. The framing's CRCs are not checked (Python's
standard library has no CRC32C, and checking them in Python would cost
PyTorch more than it costs TensorFlow's C++ reader); that favours PyTorch.
"""
import argparse
import importlib
import os
import struct
import sys
import time

import torch

NUMERIC = [f"I{i + 1}" for i in range(13)]
CATEGORICAL = [f"C{i + 1}" for i in range(26)]


def tfrecords(path):
    """Each record's bytes: uint64 length, uint32 CRC, data, uint32 CRC."""
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) != 12:
                raise ValueError(f"{path}: truncated record header")
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            if len(data) != length or len(f.read(4)) != 4:
                raise ValueError(f"{path}: truncated record")
            yield data


class CriteoTfRecordDataset(torch.utils.data.IterableDataset):
    def __init__(self, files, example_pb2):
        super().__init__()
        self.files = files
        self.example_pb2 = example_pb2

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        files = self.files
        if info is not None:
            files = files[info.id::info.num_workers]
        parse = self.example_pb2.Example.FromString
        for path in files:
            for record in tfrecords(path):
                feature = parse(record).features.feature
                yield (feature["label"].int64_list.value[0],
                       [feature[name].float_list.value[0]
                        for name in NUMERIC],
                       [list(feature[name].int64_list.value)
                        for name in CATEGORICAL])


def collate(examples):
    """The batch as tensors: labels, dense [batch, 13], and per feature its
    ids (one per example here) with offsets, as an EmbeddingBag takes."""
    labels = torch.tensor([e[0] for e in examples], dtype=torch.float32)
    dense = torch.tensor([e[1] for e in examples], dtype=torch.float32)
    ids, offsets = [], []
    for f in range(len(CATEGORICAL)):
        lists = [e[2][f] for e in examples]
        ids.append(torch.tensor([i for l in lists for i in l],
                                dtype=torch.int64))
        lengths = torch.tensor([len(l) for l in lists], dtype=torch.int64)
        offsets.append(torch.cumsum(lengths, 0) - lengths)
    return labels, dense, ids, offsets


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--proto_dir", required=True,
                        help="where protoc wrote example_pb2.py")
    parser.add_argument("--files", required=True,
                        help="comma-separated TFRecord files")
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--num_workers", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, args.proto_dir)
    example_pb2 = importlib.import_module("example_pb2")
    torch.set_num_threads(os.cpu_count() or 1)
    files = args.files.split(",")
    loader = torch.utils.data.DataLoader(
        CriteoTfRecordDataset(files, example_pb2), batch_size=args.batch,
        num_workers=args.num_workers, collate_fn=collate)
    examples = 0
    start = time.perf_counter()
    for labels, dense, ids, offsets in loader:
        examples += labels.shape[0]
    seconds = time.perf_counter() - start
    print(f"examples/s {examples / seconds:.1f}")
    print(f"examples {examples}", file=sys.stderr)


if __name__ == "__main__":
    main()
