#!/usr/bin/env python3
"""Reads `go test -json` on stdin, prints what a plain `go test` run prints (the
output of failed and skipped tests and each package's result line), and writes
a skip mark for every skipped test: target/tmp/skipped/go-LABEL-PKG-TEST-WHY,
which make test's closing line counts (go test shows a skip only with -v).

Usage: go test -json ./... | scripts/go-test-marks.py LABEL
(LABEL tells runs of the same tests apart, e.g. race and cgocheck2). Under
pipefail the pipeline fails with go test; this script fails if it cannot write
a mark or reads no test event at all.
"""

import json
import pathlib
import re
import sys

MARKS = pathlib.Path(__file__).resolve().parent.parent / "target" / "tmp" / "skipped"


def slug(text: str, words: int = 5) -> str:
    """The first few words of `text` as a file-name part."""
    parts = re.findall(r"[A-Za-z0-9]+", text)[:words]
    return "_".join(parts).lower() or "no_reason"


def skip_reason(lines: list[str]) -> str:
    """The t.Skip message: the test's log lines, without go test's own."""
    said = []
    for line in lines:
        s = line.strip()
        if not s or s.startswith(("=== ", "--- ")):
            continue
        # "file_test.go:29: message" as t.Skip prints it.
        said.append(re.sub(r"^\S+\.go:\d+: ", "", s))
    return " ".join(said)


def main() -> int:
    label = sys.argv[1] if len(sys.argv) > 1 else "test"
    out: dict[tuple[str, str], list[str]] = {}
    events = 0
    for raw in sys.stdin:
        try:
            ev = json.loads(raw)
        except json.JSONDecodeError:
            # Build errors and the like come as plain text.
            sys.stdout.write(raw)
            continue
        events += 1
        pkg, test, action = ev.get("Package", ""), ev.get("Test"), ev.get("Action")
        if test is None:
            # Package-level lines: "ok pkg 1.2s", "FAIL", "? pkg [no test files]", build output.
            if action in ("output", "build-output") and "Output" in ev:
                sys.stdout.write(ev["Output"])
            continue
        key = (pkg, test)
        if action == "output":
            out.setdefault(key, []).append(ev.get("Output", ""))
        elif action == "fail":
            sys.stdout.write("".join(out.pop(key, [])))
        elif action == "skip":
            lines = out.pop(key, [])
            sys.stdout.write("".join(lines))
            reason = skip_reason(lines)
            name = "-".join(
                [
                    "go",
                    label,
                    pkg.rsplit("/", 1)[-1],
                    re.sub(r"[^A-Za-z0-9_]", "_", test),
                    slug(reason),
                ]
            )
            MARKS.mkdir(parents=True, exist_ok=True)
            (MARKS / name).write_text(f"{pkg} {test}: {reason}\n")
            print(f"SKIPPED {name}: {reason}")
        elif action == "pass":
            out.pop(key, None)
    if events == 0:
        print("go-test-marks: no go test -json events on stdin", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
