#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail

# Builds a second benchmark corpus, about 80 MB of real files taken from a
# fixed list of Debian packages, laid out as build/bench expects:
# text/ (man pages, documentation, C and Python source), logs/ (changelogs),
# tables/ (CSV, fixed-width tables, JSON, XML) and bin/ (executables,
# shared libraries, a binary database). The result depends only on the
# package versions, which it prints and writes to VERSIONS; MANIFEST holds
# every file's size and SHA-256.
#
#   bench/debian_corpus.sh [DEST]     (default build/debian-corpus)
#   build/bench --corpus DEST         (or: make bench-debian)
#
# Needs apt-get (with its package lists), dpkg-deb, tar and gzip.

dest=${1:-build/debian-corpus}

packages=(
    dpkg gdb geoip-database git-man ieee-data iso-codes libicu72
    libpython3.11-stdlib libsqlite3-0 linux-libc-dev manpages manpages-dev
    perl-doc shared-mime-info unicode-data
)

for tool in apt-get dpkg-deb tar gzip sha256sum; do
    command -v "$tool" >/dev/null || { echo "debian_corpus.sh: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs" "$work/root"
chmod a+rwx "$work/debs"   # apt-get downloads as _apt where it can

echo "debian_corpus.sh: downloading ${#packages[@]} packages" >&2
(cd "$work/debs" && apt-get download -q "${packages[@]}") >&2 || {
    echo "debian_corpus.sh: apt-get download failed (run apt-get update first?)" >&2
    exit 1
}
for deb in "$work"/debs/*.deb; do
    dpkg-deb -x "$deb" "$work/root"
done

out="$dest.tmp"
rm -rf "$out"
mkdir -p "$out/text" "$out/logs" "$out/tables" "$out/bin"
r="$work/root"

# A tar of the regular files a find expression selects under $r, gunzipped,
# with names sorted and owners and times fixed, so that it is reproducible.
stage=0
tar_of() {
    local name=$1; shift
    stage=$((stage + 1))
    local s="$work/stage$stage"
    mkdir -p "$s"
    (cd "$r" && find "$@" -type f | LC_ALL=C sort) | while IFS= read -r f; do
        mkdir -p "$s/$(dirname "$f")"
        case $f in
            *.gz) gzip -dc "$r/$f" > "$s/${f%.gz}" ;;
            *)    cp "$r/$f" "$s/$f" ;;
        esac
    done
    LC_ALL=C tar -C "$s" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
        --mode=a=rX,u+w --format=gnu -cf "$out/$name" .
}

# text: English man pages of system calls, file formats and overviews; the
# Perl documentation; the Python standard library; the Linux UAPI headers;
# Unicode's annotated names list.
tar_of text/man-pages.tar usr/share/man/man2 usr/share/man/man5 usr/share/man/man7
tar_of text/perl-pod.tar usr/share/perl -name '*.pod'
tar_of text/python-stdlib.tar usr/lib/python3.11 -name '*.py'
tar_of text/linux-headers.tar usr/include -name '*.h'
cp "$r/usr/share/unicode/NamesList.txt" "$out/text/"

# logs: Debian and upstream changelogs, dated entries by many authors.
gzip -dc "$r/usr/share/doc/linux-libc-dev/changelog.Debian.gz" > "$out/logs/linux.changelog"
gzip -dc "$r/usr/share/doc/git-man/changelog.gz" > "$out/logs/git.changelog"
tar_of logs/other-changelogs.tar usr/share/doc -name 'changelog*.gz' \
    ! -path '*/linux-libc-dev/*' ! -path '*/git-man/*'

# tables: the IEEE registries as CSV and as fixed-width text, ISO codes as
# JSON, the MIME database as XML, Unicode's character table and collation
# keys.
for f in oui.csv oui.txt iab.csv mam.csv; do cp "$r/usr/share/ieee-data/$f" "$out/tables/"; done
tar_of tables/iso-codes-json.tar usr/share/iso-codes/json
cp "$r/usr/share/mime/packages/freedesktop.org.xml" "$out/tables/"
cp "$r/usr/share/unicode/UnicodeData.txt" "$r/usr/share/unicode/allkeys.txt" "$out/tables/"

# bin: an executable, shared libraries, and the GeoIP databases.
cp "$r/usr/bin/gdb" "$out/bin/"
for f in libicui18n.so.72.1 libicuuc.so.72.1 libsqlite3.so.0.8.6; do
    cp "$r/usr/lib/x86_64-linux-gnu/$f" "$out/bin/"
done
cp "$r/usr/share/GeoIP/GeoIP.dat" "$r/usr/share/GeoIP/GeoIPv6.dat" "$out/bin/"

for deb in "$work"/debs/*.deb; do
    dpkg-deb --showformat='${Package} ${Version} ${Architecture}\n' -W "$deb"
done | LC_ALL=C sort > "$out/VERSIONS"
(cd "$out" && find text logs tables bin -type f | LC_ALL=C sort | xargs sha256sum) > "$out/MANIFEST"
chmod -R a+rX,go-w "$out"

rm -rf "$dest"
mv "$out" "$dest"

echo "debian_corpus.sh: packages used:"
sed 's/^/  /' "$dest/VERSIONS"
echo "debian_corpus.sh: $(du -sb "$dest"/{text,logs,tables,bin} | awk '{s += $1} END {printf "%.1f MB", s / 1e6}') in $(wc -l < "$dest/MANIFEST") files, in $dest"
