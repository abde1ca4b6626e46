#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes a CSV table as a MySQL dump does (mysqldump's defaults): a
CREATE TABLE, then INSERTs of many rows a line, strings quoted with
backslash escapes, lines of at most about 1 MB (its net_buffer_length).

    bench/sql_dump.py TABLE.csv NAME > NAME.sql
"""
import csv
import sys

LINE_MAX = 1 << 20


def quote(field):
    out = field.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return "'" + out + "'"


def value(field):
    try:
        float(field)
        return field if field.strip() == field and field else quote(field)
    except ValueError:
        return quote(field)


def main():
    path, name = sys.argv[1], sys.argv[2]
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    out = sys.stdout
    out.write("DROP TABLE IF EXISTS `%s`;\n" % name)
    out.write("CREATE TABLE `%s` (\n" % name)
    out.write(",\n".join("  `%s` text" % h.replace("`", "") for h in header) + "\n);\n")
    line, size = [], 0
    for row in rows:
        text = "(" + ",".join(value(v) for v in row) + ")"
        if line and size + len(text) > LINE_MAX:
            out.write("INSERT INTO `%s` VALUES %s;\n" % (name, ",".join(line)))
            line, size = [], 0
        line.append(text)
        size += len(text) + 1
    if line:
        out.write("INSERT INTO `%s` VALUES %s;\n" % (name, ",".join(line)))


if __name__ == "__main__":
    main()
