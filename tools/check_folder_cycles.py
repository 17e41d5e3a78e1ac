#!/usr/bin/python3
"""Fails when two packages (folders with a BUILD file) depend on each other.

A package depends on another when a label in its BUILD file names a target
there (deps, data, srcs, a $(location) in a genrule: any string that is a
label, except visibility), or when one of its C++ files includes a header
that lives there. Layers hold only when the dependencies between folders go
one way: runtime/gpu may use runtime/device, not also the reverse. Bazel
itself only forbids cycles between targets, so a cycle between folders
(target a in one folder -> b in the other -> c back in the first) builds
fine and goes unnoticed; this check notices it.

Tests (rules named *_test, and the sources they compile) are left out: a
test sits at the top of the graph whatever folder holds it, and may use
what is built on its folder (client's tests start a real ps_server).
Test-only libraries do count.

Usage: check_folder_cycles.py [ROOT]
ROOT defaults to the repository that holds this script. Prints each cycle
with the BUILD lines and #include lines that make it, and exits 1; prints
the number of packages and exits 0 when there is none. Folders holding a
WORKSPACE file of their own (local repositories, examples built outside
this workspace) and bazel-* output links are not part of this workspace and
are skipped.
"""

import ast
import collections
import os
import re
import sys

BUILD_FILES = ("BUILD.bazel", "BUILD")
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".inc")
# "//pkg/sub:target", "//pkg/sub" (target named after the package) and the
# same inside a string, e.g. "$(location //proto:variable.proto)".
LABEL_RE = re.compile(r"(?<![@\w])//([\w./-]*)(?::([\w./+-]+))?")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
# Visibility names packages that may depend on this one, not the reverse.
VISIBILITY_TARGETS = ("__pkg__", "__subpackages__")


def _is_other_workspace(path, root):
    return path != root and any(
        os.path.isfile(os.path.join(path, name))
        for name in ("WORKSPACE", "WORKSPACE.bazel"))


def find_packages(root):
    """Returns {package: directory}, package being the path from ROOT."""
    packages = {}
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(
            d for d in subdirs
            if not d.startswith((".", "bazel-")) and
            not _is_other_workspace(os.path.join(directory, d), root))
        if any(name in files for name in BUILD_FILES):
            package = os.path.relpath(directory, root)
            packages["" if package == "." else package] = directory
    return packages


def package_of(path, packages):
    """The package holding file `path` (relative to the root), or None."""
    directory = os.path.dirname(path)
    while True:
        if directory in packages:
            return directory
        if not directory:
            return None
        directory = os.path.dirname(directory)


def _strings(node):
    """Every string constant under an ast node."""
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child.lineno, child.value


def _names(node):
    return {c.id for c in ast.walk(node) if isinstance(c, ast.Name)}


def _rule_kind(statement):
    """"cc_test" for `cc_test(...)`, None for a statement that is no call."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value,
                                                      ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def _is_test_rule(kind):
    return kind is not None and kind.endswith("_test")


def _keyword(call, name):
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def read_build_file(build_path):
    """(labels, test_files) of a BUILD file.

    labels: (line, string) of every string that may hold labels, from rules
    other than tests (and from the variables those rules use); test_files:
    the files named in the srcs of test rules. BUILD files are Starlark,
    which Python's parser reads."""
    with open(build_path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), build_path)
    variables = {}  # name -> assigned value, for `deps = COMMON_DEPS + [...]`
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    variables[target.id] = statement.value
    labels, test_files = [], set()
    for statement in tree.body:
        kind = _rule_kind(statement)
        if kind is None or kind == "load":
            continue
        call = statement.value
        if _is_test_rule(kind):
            srcs = _keyword(call, "srcs")
            if srcs is not None:
                test_files.update(v for _, v in _strings(srcs))
            continue
        pending, seen = [call], set()
        while pending:
            node = pending.pop()
            labels.extend(_strings(node))
            for name in _names(node) - seen:
                seen.add(name)
                if name in variables:
                    pending.append(variables[name])
    return labels, test_files


def build_file_edges(package, build_path, packages):
    """(to_package, reason) for each label in a BUILD file's rules."""
    labels, _ = read_build_file(build_path)
    name = os.path.basename(build_path)
    where = os.path.join(package, name) if package else name
    for line, value in labels:
        for match in LABEL_RE.finditer(value):
            target_package, target = match.group(1), match.group(2) or ""
            if target in VISIBILITY_TARGETS or target_package == package:
                continue
            if target_package in packages:
                yield target_package, "%s:%d: %s" % (where, line,
                                                     match.group(0))


def include_edges(root, package, directory, packages, test_files):
    """(to_package, reason) for each #include of a file in another package.

    Only the package's own files count, not those of packages below it, and
    not its tests' sources (`test_files`, relative to the package)."""
    for current, subdirs, files in os.walk(directory):
        subdirs[:] = sorted(
            d for d in subdirs
            if not any(os.path.isfile(os.path.join(current, d, b))
                       for b in BUILD_FILES))
        for name in sorted(files):
            path = os.path.join(current, name)
            if (not name.endswith(SOURCE_SUFFIXES) or
                    os.path.relpath(path, directory) in test_files):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for match in INCLUDE_RE.finditer(text):
                target_package = package_of(match.group(1), packages)
                if target_package is None or target_package == package:
                    continue
                line = text.count("\n", 0, match.start()) + 1
                yield target_package, "%s:%d: %s" % (os.path.relpath(
                    path, root), line, match.group(0).strip())


def dependency_graph(root):
    """{package: {to_package: [reasons]}} for ROOT's packages."""
    packages = find_packages(root)
    graph = {p: collections.defaultdict(list) for p in packages}
    for package, directory in packages.items():
        test_files = set()
        for build in BUILD_FILES:
            build_path = os.path.join(directory, build)
            if os.path.isfile(build_path):
                test_files |= read_build_file(build_path)[1]
                for to, reason in build_file_edges(package, build_path,
                                                   packages):
                    graph[package][to].append(reason)
        for to, reason in include_edges(root, package, directory, packages,
                                        test_files):
            graph[package][to].append(reason)
    return graph


def strongly_connected_components(graph):
    """Tarjan's algorithm, iterative; components in a deterministic order."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return sorted(components)


def find_cycles(graph):
    """The groups of packages that depend on each other, each sorted."""
    return [c for c in strongly_connected_components(graph) if len(c) > 1]


def describe_cycle(component, graph, examples=3):
    """Lines naming the cycle and, for each edge in it, what makes it."""
    members = set(component)
    lines = ["folder cycle between %s:" % ", ".join(
        p or "(root)" for p in component)]
    for package in component:
        for to in sorted(set(graph[package]) & members):
            reasons = graph[package][to]
            lines.append("  %s -> %s" % (package or "(root)", to or "(root)"))
            for reason in reasons[:examples]:
                lines.append("      " + reason)
            if len(reasons) > examples:
                lines.append("      ... and %d more" %
                             (len(reasons) - examples))
    return lines


def main(argv):
    if len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(
        os.path.dirname(os.path.realpath(__file__)))
    root = os.path.abspath(root)
    if not any(os.path.isfile(os.path.join(root, name))
               for name in ("WORKSPACE", "WORKSPACE.bazel")):
        print("%s has no WORKSPACE file: not the root of a Bazel workspace" %
              root, file=sys.stderr)
        return 2
    graph = dependency_graph(root)
    cycles = find_cycles(graph)
    for component in cycles:
        print("\n".join(describe_cycle(component, graph)))
    if cycles:
        print("%d folder cycle(s) under %s: make each pair of folders depend "
              "one way only (move the target that sits on the wrong side)" %
              (len(cycles), root))
        return 1
    print("no folder cycles among %d packages under %s" % (len(graph), root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
