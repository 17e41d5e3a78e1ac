"""A Python client of a real ps_server: create, push, pull, errors, shutdown.

Uses only Debian's python3-grpcio and stubs generated from proto/ (see
BUILD.bazel), so it shows what a client in another language needs: the
.proto files and the raw little-endian tensor encoding.
"""

import array
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402
from proto import ps_service_pb2 as pb  # noqa: E402
from proto import ps_service_pb2_grpc as pb_grpc  # noqa: E402
from proto import variable_pb2 as var_pb  # noqa: E402

PS_SERVER = "ps_server/ps_server"
TIMEOUT = 30


def float32_tensor(values, shape):
    data = array.array("f", values)
    assert data.itemsize == 4 and sys.byteorder == "little"
    return var_pb.Tensor(dtype=var_pb.FLOAT32, shape=shape,
                         data=data.tobytes())


def floats_of(tensor):
    data = array.array("f")
    data.frombytes(tensor.data)
    return list(data)


class PsClientPythonTest(unittest.TestCase):

    def setUp(self):
        env = dict(os.environ)
        # Under ThreadSanitizer (tools/tsan_test.sh), ps_server loads Abseil
        # built with TSan; run_python_test.sh kept it from the interpreter.
        tsan_abseil = env.get("DISTRT_TSAN_ABSEIL_LIB")
        if tsan_abseil:
            env["LD_LIBRARY_PATH"] = tsan_abseil
        env["TF_CONFIG"] = json.dumps({
            "cluster": {"ps": ["127.0.0.1:2"]},
            "task": {"type": "ps", "index": 0},
        })
        self.server = subprocess.Popen(
            [PS_SERVER, "--port=0", "--bind_host=127.0.0.1"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self._stop_server)
        line = self.server.stdout.readline()
        self.assertIn("serving on 127.0.0.1:", line)
        port = int(line.split("serving on 127.0.0.1:")[1].split()[0])
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.addCleanup(self.channel.close)
        self.stub = pb_grpc.ParameterServerStub(self.channel)

    def _stop_server(self):
        if self.server.poll() is None:
            self.server.kill()
        self.server.communicate(timeout=TIMEOUT)

    def test_push_and_pull_a_variable(self):
        spec = var_pb.VariableSpec(
            name="w", dtype=var_pb.FLOAT32, shape=[3, 2],
            initializer=var_pb.InitializerConfig(
                kind=var_pb.InitializerConfig.CONSTANT, value=1.5),
            optimizer=var_pb.OptimizerConfig(
                kind=var_pb.OptimizerConfig.SGD, learning_rate=0.5))
        info = self.stub.CreateVariable(
            pb.CreateVariableRequest(spec=spec), timeout=TIMEOUT)
        self.assertEqual(info.rows_held.end, 3)
        self.assertEqual(info.bytes, 3 * 2 * 4)

        grad = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        self.stub.PushDense(
            pb.PushDenseRequest(name="w", values=float32_tensor(grad, [3, 2])),
            timeout=TIMEOUT)
        pulled = self.stub.PullDense(pb.PullDenseRequest(name="w"),
                                     timeout=TIMEOUT)
        self.assertEqual(list(pulled.values.shape), [3, 2])
        self.assertEqual(floats_of(pulled.values),
                         [1.5 - 0.5 * g for g in grad])

        rows = self.stub.PullDense(
            pb.PullDenseRequest(name="w", rows=var_pb.RowRange(begin=1, end=2)),
            timeout=TIMEOUT)
        self.assertEqual(floats_of(rows.values), [0.0, -0.5])

        ids = var_pb.Tensor(dtype=var_pb.INT64, shape=[2],
                            data=array.array("q", [2, 0]).tobytes())
        sparse = self.stub.PullSparse(pb.PullSparseRequest(name="w", ids=ids),
                                      timeout=TIMEOUT)
        self.assertEqual(floats_of(sparse.values), [-1.0, -1.5, 1.0, 0.5])

        status = self.stub.GetStatus(pb.GetStatusRequest(), timeout=TIMEOUT)
        self.assertEqual(status.num_variables, 1)
        self.assertEqual(status.requests["PullDense"], 2)

    def test_errors_carry_codes_and_names(self):
        with self.assertRaises(grpc.RpcError) as missing:
            self.stub.PullDense(pb.PullDenseRequest(name="nope"),
                                timeout=TIMEOUT)
        self.assertEqual(missing.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn('"nope"', missing.exception.details())

        spec = var_pb.VariableSpec(name="v", shape=[2])
        self.stub.CreateVariable(pb.CreateVariableRequest(spec=spec),
                                 timeout=TIMEOUT)
        with self.assertRaises(grpc.RpcError) as wrong:
            self.stub.PushDense(
                pb.PushDenseRequest(name="v",
                                    values=float32_tensor([1.0] * 3, [3])),
                timeout=TIMEOUT)
        self.assertEqual(wrong.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("has 3 values, expected 2", wrong.exception.details())

    def test_shutdown_ends_the_server(self):
        self.stub.Shutdown(pb.ShutdownRequest(reason="python test"),
                           timeout=TIMEOUT)
        out, _ = self.server.communicate(timeout=TIMEOUT)
        self.assertEqual(self.server.returncode, 0)
        self.assertIn("stopping (python test)", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
