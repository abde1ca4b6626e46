#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes dpkg's database of installed packages (the status file, one
stanza a package) as JSON lines, one object a package, its fields in
their order: records of text, as an export or an API writes them.

    bench/dpkg_jsonl.py [/var/lib/dpkg/status] > status.jsonl
"""
import json
import sys


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/var/lib/dpkg/status"
    record, last = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if record:
                    print(json.dumps(record))
                record, last = {}, None
            elif line[0] in " \t" and last:
                record[last] += "\n" + line[1:]
            else:
                key, _, val = line.partition(":")
                record[key] = val.strip()
                last = key
    if record:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
