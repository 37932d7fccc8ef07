#!/usr/bin/env python3
"""skips.py: reads `go test -json` on standard input, writes the test output
as go test without -v would (the packages' lines, and a failed test's
output), then a table of every skipped test with its reason, each
checked against an allow-list (.ci/skips.txt). A skip that is not on the
list fails CI: in CI every peer is installed, so a peer test that skips did
not run. Exits 1 on an unlisted skip or a failed test.

Allow-list lines: PACKAGE<TAB>REGEXP<TAB># why it may skip in CI. PACKAGE is
relative to the module ("." for the root); REGEXP is searched in the skip's
message.
"""
import json
import re
import sys

MODULE = "github.com/labbridge/bridge"


def main():
    allow = []
    with open(sys.argv[1]) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 3 or not parts[2].startswith("#"):
                sys.exit(f"skips.py: {sys.argv[1]}:{n}: want PACKAGE<TAB>REGEXP<TAB># reason")
            allow.append((parts[0], re.compile(parts[1]), parts[2][1:].strip()))
    out = {}
    skips = []
    failed = False
    for raw in sys.stdin:
        try:
            e = json.loads(raw)
        except ValueError:
            sys.stdout.write(raw)
            continue
        act, pkg, test = e.get("Action"), e.get("Package", ""), e.get("Test")
        if act == "output":
            # As go test without -v: a package's own lines at once, a
            # test's only if it fails.
            if test:
                out.setdefault((pkg, test), []).append(e.get("Output", ""))
            elif e.get("Output") != "PASS\n":
                sys.stdout.write(e.get("Output", ""))
        elif act == "fail":
            failed = True
            if test:
                sys.stdout.write("".join(out.get((pkg, test), [])))
        elif act == "skip" and test:
            lines = [o.strip() for o in out.get((pkg, test), [])
                     if o.strip() and not o.strip().startswith(("=== ", "--- SKIP"))]
            skips.append((pkg, test, " ".join(lines)))
        sys.stdout.flush()
    bad = 0
    print(f"\n== skipped tests: {len(skips)}")
    for pkg, test, msg in skips:
        rel = pkg[len(MODULE) + 1:] if pkg.startswith(MODULE + "/") else "."
        why = next((r for p, rx, r in allow if p == rel and rx.search(msg)), None)
        if why is None:
            bad += 1
        verdict = f"allowed: {why}" if why else "NOT ALLOWED"
        print(f"{rel:22} {test:44} {verdict}\n{'':22} {msg[:240]}")
    if bad:
        print(f"skips.py: {bad} skip(s) not on the allow-list (.ci/skips.txt): a test CI should run did not")
    if failed:
        print("skips.py: tests failed")
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
