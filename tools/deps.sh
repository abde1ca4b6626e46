#!/usr/bin/env bash
# tools/deps.sh: installs the Debian packages a task needs, when missing.
#
#   tools/deps.sh build|test|bench|fuzz|valgrind|demo|cudacpu|all
#
# As root it runs apt-get itself; otherwise it uses sudo when that works
# without a password, and else prints the command to run and fails.
set -eu

build=(gcc make libc6-dev libxxhash-dev libjansson-dev libpcre2-dev libutf8proc-dev)
test=("${build[@]}" bsdutils python3)
bench=("${build[@]}" libzstd-dev liblz4-dev libsnappy-dev libbrotli-dev liblzma-dev gnuplot-nox zstd)
fuzz=("${build[@]}" clang libclang-rt-14-dev)
valgrind=("${build[@]}" valgrind)
demo=("${build[@]}" zstd)
cudacpu=("${build[@]}" g++)

case "${1:-build}" in
    build) want=("${build[@]}") ;;
    test) want=("${test[@]}") ;;
    bench) want=("${bench[@]}") ;;
    fuzz) want=("${fuzz[@]}") ;;
    valgrind) want=("${valgrind[@]}") ;;
    demo) want=("${demo[@]}") ;;
    cudacpu) want=("${cudacpu[@]}") ;;
    all) want=("${test[@]}" "${bench[@]}" "${fuzz[@]}" "${valgrind[@]}" "${cudacpu[@]}") ;;
    *) echo "usage: tools/deps.sh build|test|bench|fuzz|valgrind|demo|cudacpu|all" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# one entry per package
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u | sed '/^$/d')
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
elif sudo -n true 2>/dev/null; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "glyd: missing packages; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
