"""The command line of a reference module that writes its own golden file (kv_cache.py, paged.py,
quant.py): regenerate, --check (exit 1 naming what differs) or --selftest.

    sys.exit(golden_file.main(sys.argv, OUT, ROOT, build, dump, selftest, difference, summary))
"""
import os
import sys


def main(argv, out, root, build, dump, selftest, difference=None, summary=None):
    """build() makes the object, dump(obj) its text; difference(obj, out) names what differs from
    the file (default: "differs (or is missing)"); summary(obj) adds to the "wrote" line."""
    if argv[1:] == ["--selftest"]:
        selftest()
        return 0
    if argv[1:] not in ([], ["--check"]):
        print("usage: %s [--check | --selftest]" % argv[0], file=sys.stderr)
        return 2
    obj = build()
    text = dump(obj)
    rel = os.path.relpath(out, root)
    if argv[1:] == ["--check"]:
        same = os.path.exists(out) and open(out, encoding="utf-8").read() == text
        why = difference(obj, out) if difference and not same else "differs (or is missing)"
        print("%s %s" % (rel, "matches" if same else why))
        return 0 if same else 1
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s%s" % (rel, " (%s)" % summary(obj) if summary else ""))
    return 0
