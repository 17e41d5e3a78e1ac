#!/usr/bin/python3
"""Lists the C++ functions of a tree that are at least LIMIT lines long.

    /usr/bin/python3 tools/long_functions.py [ROOT] [LIMIT]   (. and 80)

One line per function, longest first: lines, file, first line, name; then
the count. A reading aid for reviews ("split what does several things"),
not a gate: a table of cases may rightly be long. The scan is lexical:
comments and string literals are blanked, then a brace whose statement
head holds a ')' and is not a control statement, class or namespace opens
a function body; lambdas inside it count toward it. Bazel's output links,
.git and third_party/ are skipped.
"""

import os
import re
import sys

NOT_A_FUNCTION = re.compile(
    r"\b(namespace|class|struct|enum|union)\b|=\s*$|\bif\b|\bfor\b|"
    r"\bwhile\b|\bswitch\b")


def blank_comments_and_strings(source):
    """Replaces comments and literals by empty ones, keeping line breaks."""
    keep_lines = lambda m: '""' + "\n" * m.group(0).count("\n")
    source = re.sub(r"//[^\n]*", "", source)
    source = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                    source, flags=re.S)
    source = re.sub(r'R"(\w*)\(.*?\)\1"', keep_lines, source, flags=re.S)
    source = re.sub(r'"(\\.|[^"\\\n])*"', '""', source)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", source)


def functions(path):
    """Yields (lines, first line, name) of each outermost function body."""
    with open(path, errors="replace") as f:
        source = blank_comments_and_strings(f.read())
    open_braces = []  # (opens a function, line, statement head)
    head_start, line, depth_in_function = 0, 1, 0
    for i, c in enumerate(source):
        if c == "\n":
            line += 1
        elif c == "{":
            head = source[head_start:i]
            opens_function = (depth_in_function == 0 and ")" in head and
                              not NOT_A_FUNCTION.search(head))
            open_braces.append((opens_function, line, head))
            depth_in_function += opens_function
            head_start = i + 1
        elif c == "}":
            if open_braces:
                opens_function, first, head = open_braces.pop()
                if opens_function:
                    depth_in_function -= 1
                    names = re.findall(r"([\w:~]+)\s*\(", head)
                    yield line - first + 1, first, names[0] if names else "?"
            head_start = i + 1
        elif c == ";":
            head_start = i + 1


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    limit = int(argv[2]) if len(argv) > 2 else 80
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [
            d for d in subdirectories
            if not d.startswith(("bazel-", ".git")) and d != "third_party"
        ]
        for name in files:
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(directory, name)
            for length, first, function in functions(path):
                if length >= limit and not function.startswith("TEST"):
                    found.append((length, path, first, function))
    for length, path, first, function in sorted(found, reverse=True):
        print(length, path, first, function)
    print(len(found), "functions of", limit, "lines or more")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
