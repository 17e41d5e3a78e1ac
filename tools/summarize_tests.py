#!/usr/bin/env python3
"""Summarises a `bazel test` run from its build event (BEP) JSON file.

Prints the log of every failed test target, the targets that failed to
build, and finally one plain line "N passed, N failed" that counts test cases
(from each target's test.xml). A target that failed without reporting a
failed case (a crash, a timeout, a build failure) counts as one failed case.
Exits 1 when anything failed.
"""

import json
import sys
import urllib.parse
import xml.etree.ElementTree as ElementTree

LOG_TAIL_LINES = 200


def local_path(uri):
    parsed = urllib.parse.urlparse(uri)
    return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else None


def count_cases(xml_path):
    """(passed, failed) test cases in a JUnit XML file, or None."""
    try:
        root = ElementTree.parse(xml_path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    passed = failed = 0
    for case in root.iter("testcase"):
        if case.get("status") == "notrun" or case.find("skipped") is not None:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    return passed, failed


def print_log_tail(label, log_path):
    print(f"==================== log of {label} ====================")
    try:
        with open(log_path, errors="replace") as log:
            lines = log.readlines()
    except OSError as error:
        print(f"(no log: {error})")
        return
    if len(lines) > LOG_TAIL_LINES:
        print(f"... ({len(lines) - LOG_TAIL_LINES} earlier lines omitted)")
    sys.stdout.writelines(lines[-LOG_TAIL_LINES:])
    print()


def main(events_path):
    results = {}  # label -> list of (status, files by name)
    build_failures = set()
    try:
        with open(events_path) as events:
            for line in events:
                event = json.loads(line)
                ident = event.get("id", {})
                if "testResult" in ident and "testResult" in event:
                    files = {f["name"]: local_path(f.get("uri", ""))
                             for f in event["testResult"].get("testActionOutput", [])}
                    results.setdefault(ident["testResult"]["label"], []).append(
                        (event["testResult"].get("status", "NO_STATUS"), files))
                elif "targetCompleted" in ident:
                    completed = event.get("completed")
                    aborted = event.get("aborted")
                    # SKIPPED: incompatible with this build (CUDA-only
                    # targets without --config=cuda), not a failure.
                    if (aborted and aborted.get("reason") != "SKIPPED") or (
                            completed is not None and not completed.get("success", False)):
                        build_failures.add(ident["targetCompleted"]["label"])
    except OSError as error:
        print(f"no build events ({error}): the build did not start")
        print("0 passed, 1 failed")
        return 1

    passed = failed = 0
    failed_labels = []
    for label in sorted(results):
        for status, files in results[label]:
            counts = count_cases(files["test.xml"]) if files.get("test.xml") else None
            case_passed, case_failed = counts if counts else (0, 0)
            if status != "PASSED" and case_failed == 0:
                case_failed = 1  # crashed, timed out or was killed
            passed += case_passed
            failed += case_failed
            if status != "PASSED":
                failed_labels.append(label)
                if files.get("test.log"):
                    print_log_tail(label, files["test.log"])

    not_built = sorted(build_failures - set(results))
    for label in not_built:
        print(f"FAILED TO BUILD: {label}")
    failed += len(not_built)

    for label in failed_labels:
        print(f"FAILED: {label}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
