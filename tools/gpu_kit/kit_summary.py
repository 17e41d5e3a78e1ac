"""Reading the kit's results (gtest XML, figures) and writing its summary."""

import json
import math
import xml.etree.ElementTree as ElementTree


def gtest_results(xml_path):
    """Counts and reasons of one gtest XML file (gtest 1.12's format).

    Returns passed/failed/skipped counts, the distinct skip reasons, the
    failures' messages, and `cases`: how many test cases the file had (0
    when it is missing or unreadable)."""
    result = {"passed": 0, "failed": 0, "skipped": 0, "skip_reasons": [],
              "failures": [], "cases": 0}
    try:
        root = ElementTree.parse(xml_path).getroot()
    except (OSError, ElementTree.ParseError):
        return result
    for case in root.iter("testcase"):
        result["cases"] += 1
        name = "%s.%s" % (case.get("classname"), case.get("name"))
        failure = case.find("failure")
        skipped = case.find("skipped")
        if failure is not None:
            result["failed"] += 1
            result["failures"].append("%s: %s" % (
                name, (failure.get("message") or "")[:500]))
        elif skipped is not None or case.get("result") == "skipped":
            result["skipped"] += 1
            message = ((skipped.get("message") if skipped is not None
                        else "") or "").strip()
            # gtest puts "file:line" first; the reason is the last line.
            reason = message.splitlines()[-1] if message else ""
            if reason not in result["skip_reasons"]:
                result["skip_reasons"].append(reason)
        elif case.get("status", "run") == "run":
            result["passed"] += 1
    return result


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail(text, lines=6):
    """The last lines of a log, on one line."""
    return " | ".join(l.strip() for l in text.strip().splitlines()[-lines:])


def number(value, spec="%.4g"):
    """`value` formatted, or "?" for None or NaN (a figure that went wrong)."""
    if isinstance(value, (int, float)) and not math.isnan(value):
        return spec % value
    return "?"


def text_lines(summary, manifest, parts):
    """The short text summary: machine, set-up, one line per part, ratios
    and figures under their part."""
    lines = ["GPU kit, commit %s, CUDA %s, %s s" % (
        manifest["commit"], manifest["cuda_version"],
        number(summary.get("seconds"), "%.0f"))]
    machine = summary.get("machine", {})
    lines.append("machine: %s cores (%s); GPUs: %s" % (
        machine.get("cpus"), machine.get("cpu_model", "?"),
        "; ".join(machine.get("gpus", [])) or "none"))
    setup = summary.get("setup", {})
    lines.append("setup: %s%s" % (setup.get("status"), (
        ": " + setup["reason"]) if "reason" in setup else ""))
    if "stopped_by_signal" in summary:
        lines.append("STOPPED by signal %d before the end" %
                     summary["stopped_by_signal"])
    for name in parts:
        part = summary["parts"].get(name)
        if part is None:
            continue
        lines.append("%-10s %-8s %s" % (name, part["status"],
                                        part.get("reason", "")))
        for key, ratio in part.get("ratios", {}).items():
            lines.append("           %s: ours %s vs PyTorch %s %s = %sx "
                         "(target %s)" % (
                             key, number(ratio.get("ours")),
                             number(ratio.get("torch")), ratio.get("unit"),
                             number(ratio.get("ratio"), "%.2f"),
                             ratio.get("target")))
        figures = part.get("figures")
        for figure in figures if isinstance(figures, list) else []:
            lines.append("           %-40s %10s %-10s %sx %s" % (
                figure.get("name"), number(figure.get("value")),
                figure.get("unit"), number(figure.get("ratio"), "%.2f"),
                figure.get("baseline")))
    if "exit_status" in summary:
        lines.append("exit status %d" % summary["exit_status"])
    return lines
