#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail

# Builds a second corpus for the log columns, beside ../shared/corpus:
# logs/ holds Debian's package-manager logs of this machine (dpkg.log,
# apt's term.log and history.log, alternatives.log: what installing
# Debian packages writes, on any Debian system), tables/ the CSV and
# fixed-width tables of bench/debian_corpus.sh (the IEEE registries,
# Unicode's character table and collation keys), built first if absent;
# dumps/ two of those registries as MySQL dumps write them (INSERTs of
# many rows a line, bench/sql_dump.py) and this machine's dpkg database as
# JSON lines (bench/dpkg_jsonl.py). The logs and the database differ from
# machine to machine; SIZES records what was taken.
#
#   bench/records_corpus.sh [DEST]     (default build/records-corpus)

dest=${1:-build/records-corpus}
debian=${DEBIAN_CORPUS:-build/debian-corpus}

[ -d "$debian/tables" ] || bash "$(dirname "$0")/debian_corpus.sh" "$debian"

out="$dest.tmp"
rm -rf "$out"
mkdir -p "$out/logs" "$out/tables" "$out/dumps"
for f in /var/log/dpkg.log /var/log/apt/term.log /var/log/apt/history.log /var/log/alternatives.log; do
    if [ -r "$f" ] && [ -s "$f" ]; then
        cp "$f" "$out/logs/"
    else
        echo "records_corpus.sh: $f missing or unreadable, left out" >&2
    fi
done
[ -n "$(ls -A "$out/logs")" ] || { echo "records_corpus.sh: no package-manager logs on this machine" >&2; exit 1; }
for f in oui.csv oui.txt iab.csv mam.csv UnicodeData.txt allkeys.txt; do cp "$debian/tables/$f" "$out/tables/"; done
here=$(dirname "$0")
for t in oui mam; do python3 "$here/sql_dump.py" "$debian/tables/$t.csv" "$t" > "$out/dumps/$t.sql"; done
python3 "$here/dpkg_jsonl.py" /var/lib/dpkg/status > "$out/dumps/dpkg-status.jsonl"
(cd "$out" && find logs tables dumps -type f | LC_ALL=C sort | xargs wc -c) > "$out/SIZES"

rm -rf "$dest"
mv "$out" "$dest"
echo "records_corpus.sh: $(tail -1 "$dest/SIZES" | awk '{printf "%.1f MB", $1 / 1e6}') in $dest"
