#!/usr/bin/env bash
# Proves the GPU kit on a machine without a GPU (CI runs it after the CUDA
# build; needs root for the mount namespaces):
#
#   0. the runner's pieces pass their unit tests (kit_unit_test.py);
#   1. make.sh makes the kit, and it is under 60 MiB;
#   2. every kit binary starts on a "bare machine": in a mount namespace
#      where /usr/lib holds only glibc, libstdc++ and libgcc_s (and
#      ld.so.cache is empty), with LD_LIBRARY_PATH naming only the kit's
#      lib/ and the CUDA toolkit's libraries; and the same check FAILS for
#      copies of the kit with a library taken out;
#   3. run.sh --allow_no_gpu runs here: GPU tests skip with their reason,
#      gpu_check, the GPU jobs and gpu_bench skip, the CPU training jobs and
#      cpu_bench run; with a failing and a crashing test binary it exits 1
#      naming both; without --allow_no_gpu it refuses (exit 2); SIGTERM
#      during a job exits 143 with the summary written and no task left;
#   4. run.sh refuses to start, exit 2 and a message naming the library,
#      when the CUDA 13 libraries are missing and only a CUDA 12 one is
#      there;
#   5. run.sh finds and loads the CUDA libraries where PyTorch's CUDA 13
#      wheels put them (a venv's nvidia/cu13/lib and nvidia/nccl/lib).
#
#   bash tools/gpu_kit/kit_test.sh        ends with "gpu kit: N passed, N failed"
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" -ne 0 ]; then
  echo "kit_test: needs root (mount namespaces); run it as root, as CI does" >&2
  exit 1
fi

work="$(mktemp -d -t distrt-kit-test.XXXXXX)"
trap 'rm -rf "$work"' EXIT
kit="$work/kit"
passed=0
failed=0
check() {  # check NAME STATUS [DETAIL]
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1)); echo "PASS $1"
  else
    failed=$((failed + 1)); echo "FAIL $1${3:+: $3}"
  fi
}

# The libraries a bare CUDA machine has anyway: glibc, libstdc++, libgcc_s.
system_libs=(ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libmvec.so.1
  libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libutil.so.1
  libanl.so.1 libstdc++.so.6 libgcc_s.so.1)
system_dir=/usr/lib/x86_64-linux-gnu
cuda_lib_dir="$(readlink -f /usr/local/cuda/lib64)"

# Starts every binary of kit $1 where only the system libraries above, the
# kit's lib/ and the CUDA libraries exist: the whole of /usr/lib (Debian
# puts libraries in /usr/lib too, e.g. libgloo; /lib is a link to it) is
# replaced by a tree holding only those. Prints one line per binary that
# does not start; returns non-zero if any.
bare_start() {
  local kit_dir="$1" bare="$work/bare-usr-lib"
  rm -rf "$bare" && mkdir -p "$bare/x86_64-linux-gnu"
  for lib in "${system_libs[@]}"; do
    [ -e "$system_dir/$lib" ] && cp -L "$system_dir/$lib" "$bare/x86_64-linux-gnu/$lib"
  done
  : >"$work/empty-ld.so.cache"
  # Only bash builtins and the loader run after the second mount: every
  # other program of this machine would itself miss its libraries.
  unshare -m --propagation private bash -c '
    kit_dir=$1 bare=$2 cuda=$3 cache=$4
    mount --bind "$cache" /etc/ld.so.cache || exit 3
    mount --bind "$bare" /usr/lib || exit 3
    unset LD_PRELOAD
    export LD_LIBRARY_PATH="$kit_dir/lib:$cuda" LD_BIND_NOW=1
    bad=0
    shopt -s globstar
    for bin in "$kit_dir"/bin/**; do
      [ -f "$bin" ] || continue
      case "$bin" in *_test) flag=--gtest_list_tests ;; *) flag=--helpshort ;; esac
      out=$("$bin" $flag 2>&1); rc=$?
      if [ $rc -eq 127 ] || [[ "$out" == *"error while loading shared libraries"* ]] ||
         [[ "$out" == *"symbol lookup error"* ]] ||
         [[ "$out" == *" not found (required by"* ]]; then
        read -r first_line <<<"$out"
        echo "  does not start: ${bin#$kit_dir/}: $first_line"
        bad=1
      fi
    done
    exit $bad' bare_start "$kit_dir" "$bare" "$cuda_lib_dir" \
    "$work/empty-ld.so.cache"
}

echo "== 0. the runner's pieces (kit_unit_test.py)"
PYTHONDONTWRITEBYTECODE=1 python3 tools/gpu_kit/kit_unit_test.py
check "kit_unit_test.py" $?

echo "== 1. make the kit"
start=$SECONDS
if bash tools/gpu_kit/make.sh "$kit"; then made=0; else made=1; fi
check "make.sh makes the kit ($((SECONDS - start)) s)" "$made"
if [ "$made" -ne 0 ]; then
  echo "gpu kit: $passed passed, $failed failed"
  exit 1
fi
size_bytes=$(du -sb "$kit" | cut -f1)
[ "$size_bytes" -lt $((60 << 20)) ]
check "the kit is under 60 MiB ($((size_bytes >> 20)) MiB)" $?
for name in run.sh kit_run.py cuda_libraries.py kit_summary.py \
  torch_compare.py manifest.json; do
  [ -f "$kit/$name" ]
  check "the kit has $name" $?
done

echo "== 2. every binary starts with only the kit's and the allowed libraries"
bare_start "$kit"
check "every kit binary starts on a bare system" $?
# Taken out of a copy of the kit, each must make the check fail: one
# Debian puts in /usr/lib/x86_64-linux-gnu, one it puts in /usr/lib.
for lib in libprotobuf.so libgloo.so; do
  cp -a "$kit" "$work/broken-kit"
  rm "$work"/broken-kit/lib/$lib.*
  broken_out="$(bare_start "$work/broken-kit")"
  broken_rc=$?
  echo "$broken_out" | head -2
  [ "$broken_rc" -ne 0 ] && [[ "$broken_out" == *"$lib"* ]]
  check "the bare-system check fails for a kit without $lib" $?
  rm -rf "$work/broken-kit"
done

echo "== 3. run.sh here (no GPU: GPU parts skip, CPU parts run)"
out="$work/out"
bash "$kit/run.sh" "$out" --quick --allow_no_gpu
run_rc=$?
check "run.sh exits 0" "$run_rc"
python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s["parts"]
problems = []
def expect(ok, what):
    if not ok:
        problems.append(what)
expect(s["setup"]["status"] == "passed", "setup passed")
t = p["tests"]
expect(t["failed"] == 0 and t["skipped"] > 0 and
       all(b["skip_reasons"] and "GPU" in " ".join(b["skip_reasons"])
           for b in t["binaries"]),
       "every gpu test binary ran and skipped saying why")
expect(p["gpu_check"]["status"] == "skipped" and
       "no usable GPU" in p["gpu_check"]["reason"], "gpu_check skipped")
jobs = p["training"]["jobs"]
expect(p["training"]["status"] == "passed" and
       all(jobs[j]["eval_accuracy"] >= 0.8 for j in
           ("parameter_servers_cpu", "multi_worker_mirrored_cpu")) and
       p["training"]["skipped"], "CPU jobs trained, GPU jobs skipped")
expect(p["gpu_bench"]["status"] == "skipped", "gpu_bench skipped")
expect(p["torch"]["status"] in ("skipped", "passed"), "torch ran or skipped")
expect(p["cpu_bench"]["status"] == "passed" and
       any(f["name"].startswith("dense/push") for f in
           p["cpu_bench"]["figures"]), "cpu_bench gave dense figures")
for what in problems:
    print("summary.json: expected: " + what)
sys.exit(1 if problems else 0)
PY
check "summary.json says what ran and what skipped, and why" $?
[ -s "$out/summary.txt" ] && ls "$out"/tests/*.xml >/dev/null 2>&1
check "summary.txt and the tests' XML are written" $?

echo "== 3b. a failing and a crashing gpu test fail the run"
# Two of the kit's test binaries replaced by scripts: one reports a failed
# case in its gtest XML, the other dies by a signal before writing any.
cp -a "$kit" "$work/failing-kit"
mapfile -t test_paths < <(python3 -c '
import json, sys
print("\n".join(t["path"] for t in json.load(open(sys.argv[1]))["tests"]))
' "$kit/manifest.json")
cat >"$work/failing-kit/${test_paths[0]}" <<'SH'
#!/usr/bin/env bash
xml="${!#}"; xml="${xml#--gtest_output=xml:}"
cat >"$xml" <<XML
<testsuites><testsuite name="Fake"><testcase name="Passes" classname="Fake" status="run" result="completed"/><testcase name="Fails" classname="Fake" status="run" result="completed"><failure message="expected 1, got 2"/></testcase></testsuite></testsuites>
XML
exit 1
SH
printf '#!/usr/bin/env bash
kill -SEGV $$
' >"$work/failing-kit/${test_paths[1]}"
bash "$work/failing-kit/run.sh" "$work/out-failing" --only tests \
  --allow_no_gpu >/dev/null
failing_rc=$?
python3 - "$work/out-failing/summary.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["parts"]["tests"]
fake, crashed = t["binaries"][0], t["binaries"][1]
ok = (t["status"] == "failed" and fake["passed"] == 1 and fake["failed"] == 1
      and "expected 1, got 2" in fake["failures"][0] and crashed["failed"] == 1
      and "exited" in crashed["failures"][0])
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] && [ "$failing_rc" -eq 1 ]
check "run.sh exits 1 and reports the failed case and the crash" $?
rm -rf "$work/failing-kit"

echo "== 3c. without a GPU and without --allow_no_gpu, set-up fails"
nogpu_out="$(bash "$kit/run.sh" "$work/out-nogpu" --only tests 2>&1)"
nogpu_rc=$?
echo "$nogpu_out" | grep FAILED
[ "$nogpu_rc" -eq 2 ] && [[ "$nogpu_out" == *"no usable GPU"*"--allow_no_gpu"* ]]
check "run.sh exits 2 without a GPU unless --allow_no_gpu" $?

echo "== 3d. SIGTERM during a training job: exit 143, summary, no task left"
bash "$kit/run.sh" "$work/out-stopped" --only training --allow_no_gpu \
  >"$work/stopped.log" 2>&1 &
runner_pid=$!
job_log="$work/out-stopped/logs/training/parameter_servers_cpu.log"
for _ in $(seq 1 600); do  # up to 60 s for the job to start
  grep -q "launch: job dir" "$job_log" 2>/dev/null && break
  sleep 0.1
done
# run.sh execs python: the runner is $runner_pid itself.
kill -TERM "$runner_pid"
wait "$runner_pid"
stopped_rc=$?
# launch's tasks die with it (PR_SET_PDEATHSIG), a moment after.
for _ in $(seq 1 100); do  # up to 10 s
  left="$(pgrep -f "$kit/bin/" || true)"
  [ -z "$left" ] && break
  sleep 0.1
done
python3 - "$work/out-stopped/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s.get("stopped_by_signal") == 15 and s["exit_status"] == 143
         and s["parts"]["training"]["status"] == "not run" else 1)
PY
summary_ok=$?
[ "$stopped_rc" -eq 143 ] && [ "$summary_ok" -eq 0 ] && [ -z "$left" ]
check "SIGTERM: exit 143, training 'not run' in summary.json, no process left (left: ${left:-none})" $?
[ -n "$left" ] && kill -KILL $left 2>/dev/null

echo "== 4. run.sh without the CUDA 13 libraries (only a libcudart.so.12)"
# The CUDA toolkit's library folder replaced by one holding only a CUDA 12
# runtime (an empty file: run.sh only looks for it).
missing_out="$(unshare -m --propagation private bash -c '
  mount -t tmpfs tmpfs "$1" && touch "$1/libcudart.so.12" &&
  env -u LD_LIBRARY_PATH -u CUDA_HOME -u CUDA_PATH bash "$2/run.sh" "$3" --only tests
' missing "$cuda_lib_dir" "$kit" "$work/out-missing" 2>&1)"
missing_rc=$?
echo "$missing_out" | tail -2
[ "$missing_rc" -eq 2 ] &&
  [[ "$missing_out" == *"libcudart.so.13 not found; there is only"*"libcudart.so.12: another major version"* ]]
check "run.sh exits 2 naming the missing CUDA 13 library and the CUDA 12 one" $?

echo "== 5. run.sh finds the CUDA libraries in PyTorch's wheels"
# A Python virtual environment laid out as PyTorch's CUDA 13 wheels are
# (nvidia/cu13/lib, nvidia/nccl/lib), whose links lead to the toolkit's
# libraries at a place of their own; the toolkit's folder itself is hidden.
venv="$work/venv"
python3 -m venv --without-pip "$venv"
site="$("$venv/bin/python3" -c 'import site; print(site.getsitepackages()[0])')"
mkdir -p "$site/nvidia/cu13/lib" "$site/nvidia/nccl/lib" "$work/real-cuda"
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  ln -s "$work/real-cuda/$lib" "$site/nvidia/cu13/lib/$lib"
done
ln -s "$work/real-cuda/libnccl.so.2" "$site/nvidia/nccl/lib/libnccl.so.2"
wheels_out="$(unshare -m --propagation private bash -c '
  mount --bind "$1" "$2" && mount -t tmpfs tmpfs "$1" &&
  env -u LD_LIBRARY_PATH -u CUDA_HOME -u CUDA_PATH \
    bash "$3/run.sh" "$4" --only tests --allow_no_gpu --python "$5"
' wheels "$cuda_lib_dir" "$work/real-cuda" "$kit" "$work/out-wheels" \
  "$venv/bin/python3" 2>&1)"
wheels_rc=$?
echo "$wheels_out" | grep -E '^\[setup\] lib' | head -4
[ "$wheels_rc" -eq 0 ] && python3 - "$work/out-wheels/summary.json" \
  "$work/real-cuda" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
libraries = s["setup"]["cuda_libraries"]
sys.exit(0 if len(libraries) == 4 and all(
    p.startswith(sys.argv[2] + "/") for p in libraries.values()) else 1)
PY
check "run.sh loads the CUDA libraries of a venv's nvidia/*/lib" $?

echo "gpu kit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
