#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/build/library_test.sh: the libraries as a user gets them. libglyd
# needs nothing beyond libc, libm, pthreads and libxxhash and exports the
# codec alone; libglyd-llm exports packed models and the engine; a program
# that includes only glyd.h links from `pkg-config glyd` after `make
# install`; plain `make` names a missing library and installs nothing; the
# layers include one way; every source file carries its licence line.
#
#   tests/build/library_test.sh BUILD_DIR
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "${1:-$REPO/build}" && pwd)
CAP=$(mktemp -d)
GLYD=$BUILD/glyd
trap 'rm -rf "$CAP"' EXIT
# shellcheck source=../cli/testlib.sh
. "$REPO/tests/cli/testlib.sh"
FIXTURE=$REPO/../shared/fixtures/stories260K

# The names a header declares with GLYD_API, one a line, sorted; from the
# line matching FROM (a heading) up to the one matching TO, where given.
api_of() {
    local header=$1 from=${2:-} to=${3:-}
    awk -v from="$from" -v to="$to" '
        from != "" && !on && index($0, from) { on = 1 }
        from == "" { on = 1 }
        to != "" && on && index($0, to) { exit }
        on { print }' "$header" |
        tr '\n' ' ' | grep -oE 'GLYD_API [^;{]*\(' | sed -E 's/.*[^A-Za-z0-9_]([A-Za-z0-9_]+) *\($/\1/' |
        LC_ALL=C sort -u
}
exports_of() { nm -D --defined-only "$1" | awk '$2 == "T" { print $3 }' | LC_ALL=C sort -u; }
needed_of() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | LC_ALL=C sort -u; }

# 1. What libglyd.so needs and exports
begin "libglyd.so needs only libc, libm, libpthread and libxxhash"
extra=$(needed_of "$BUILD/libglyd.so" | grep -vxE 'libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libxxhash\.so\.0')
[ -z "$extra" ] || WHY="it also needs: $(echo "$extra" | tr '\n' ' ')"
needed_of "$BUILD/libglyd.so" | grep -qx 'libxxhash.so.0' || WHY=${WHY:-"readelf shows no libxxhash: did the check read anything?"}
finish

codec_api=$( { api_of "$REPO/include/glyd.h"; api_of "$REPO/include/glyd_tensor.h" "" "Packed models (libglyd-llm)"; } |
    LC_ALL=C sort -u)
llm_api=$( { api_of "$REPO/include/glyd_tensor.h" "Packed models (libglyd-llm)"; api_of "$REPO/include/glyd_llm.h"; } |
    LC_ALL=C sort -u)

begin "libglyd.so exports exactly glyd.h's and the tensor codec's API"
have=$(exports_of "$BUILD/libglyd.so")
[ "$(echo "$codec_api" | wc -l)" -gt 40 ] || WHY="only $(echo "$codec_api" | wc -l) names read from the headers"
missing=$(comm -23 <(echo "$codec_api") <(echo "$have") | tr '\n' ' ')
extra=$(comm -13 <(echo "$codec_api") <(echo "$have") | tr '\n' ' ')
[ -z "$missing" ] || WHY=${WHY:-"declared, not exported: $missing"}
[ -z "$extra" ] || WHY=${WHY:-"exported, not declared there: $extra"}
finish

begin "libglyd.so exports nothing of the LLM layer"
leaked=$(comm -12 <(echo "$llm_api") <(exports_of "$BUILD/libglyd.so") | tr '\n' ' ')
[ -z "$leaked" ] || WHY="exports $leaked"
[ "$(echo "$llm_api" | wc -l)" -gt 20 ] || WHY=${WHY:-"only $(echo "$llm_api" | wc -l) LLM names read"}
finish

begin "libglyd.a refers to no JSON, regex, Unicode or engine symbol"
refs=$(nm -u "$BUILD/libglyd.a" 2>/dev/null | awk '{ print $2 }' |
    grep -E '^(json_|pcre2_|utf8proc_|glyd_llm|glyd_model|glyd_tokenizer|glyd_sampler|glyd_gpu)' | sort -u | tr '\n' ' ')
[ -z "$refs" ] || WHY="undefined references: $refs"
finish

begin "libglyd-llm.so exports exactly packed models' and glyd_llm.h's API"
have=$(exports_of "$BUILD/libglyd-llm.so")
missing=$(comm -23 <(echo "$llm_api") <(echo "$have") | tr '\n' ' ')
extra=$(comm -13 <(echo "$llm_api") <(echo "$have") | tr '\n' ' ')
[ -z "$missing" ] || WHY="declared, not exported: $missing"
[ -z "$extra" ] || WHY=${WHY:-"exported, not declared there: $extra"}
finish

# 2. The layers include one way: lib/ (the codec) nothing above it, and
# within lib/ dict never reaches frame (frame uses dict).
begin "lib/ includes nothing from llm/, gpu/ or cli/, and dict/ not frame/"
bad_inc=$(cd "$REPO" && grep -lE '#include +"[./]*(llm|gpu|cli)/|#include +"glyd_llm\.h"' lib/*/*.[ch])
bad_inc+=$(cd "$REPO" && grep -lE '#include +"\.\./frame/' lib/dict/*.[ch])
[ -z "$bad_inc" ] || WHY="in: $(echo "$bad_inc" | tr '\n' ' ')"
finish

# 3. make install, and programs built from pkg-config alone
DEST=$CAP/dest
begin "make install puts both libraries, three headers and two .pc files in place"
run make -C "$REPO" --no-print-directory BUILD="$BUILD" DESTDIR="$DEST" PREFIX=/usr install
want_rc 0
for f in bin/glyd include/glyd.h include/glyd_tensor.h include/glyd_llm.h lib/libglyd.a lib/libglyd.so \
         lib/libglyd.so.0 lib/libglyd-llm.a lib/libglyd-llm.so lib/libglyd-llm.so.0 lib/pkgconfig/glyd.pc \
         lib/pkgconfig/glyd-llm.pc share/man/man1/glyd.1; do
    [ -e "$DEST/usr/$f" ] || WHY=${WHY:-"missing: usr/$f"}
done
finish

export PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_LIBDIR=$DEST/usr/lib/pkgconfig
cat >"$CAP/dropin.c" <<'EOF'
/* Compresses a file one-shot and streamed with nothing but glyd.h, and
 * checks both come back byte for byte. */
#include <glyd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv)
{
    FILE* const f = fopen(argc > 1 ? argv[1] : "", "rb");
    static char src[1 << 20], back[1 << 20], frame[(1 << 20) + (1 << 14)];
    size_t n, c, d, pos = 0;
    glyd_CCtx* cctx;
    glyd_DCtx* dctx;
    glyd_outBuffer out = { frame, sizeof frame, 0 };
    glyd_outBuffer dout = { back, sizeof back, 0 };
    glyd_inBuffer in;
    if (!f) return 2;
    n = fread(src, 1, sizeof src, f);
    fclose(f);
    c = glyd_compress(frame, sizeof frame, src, n, 3);
    if (glyd_isError(c)) { fprintf(stderr, "%s\n", glyd_getErrorName(c)); return 1; }
    d = glyd_decompress(back, sizeof back, frame, c);
    if (glyd_isError(d) || d != n || memcmp(back, src, n)) return 1;
    cctx = glyd_createCCtx();
    while (pos < n) {
        size_t const step = n - pos < 4000 ? n - pos : 4000;
        glyd_inBuffer piece = { src + pos, step, 0 };
        if (glyd_isError(glyd_compressStream(cctx, &out, &piece, glyd_e_continue))) return 1;
        pos += piece.pos;
    }
    in.src = NULL, in.size = 0, in.pos = 0;
    if (glyd_compressStream(cctx, &out, &in, glyd_e_end) != 0) return 1;
    glyd_freeCCtx(cctx);
    dctx = glyd_createDCtx();
    in.src = frame, in.size = out.pos, in.pos = 0;
    if (glyd_isError(glyd_decompressStream(dctx, &dout, &in)) || dout.pos != n || memcmp(back, src, n)) return 1;
    glyd_freeDCtx(dctx);
    printf("%zu -> %zu -> %zu\n", n, c, d);
    return 0;
}
EOF

begin "a program with only glyd.h, built from pkg-config glyd, round-trips a file"
flags=$(pkg-config --cflags --libs glyd 2>"$CAP/err")
[ -n "$flags" ] || WHY="pkg-config glyd: $(errtxt)"
# pkg-config's words are one flag each
# shellcheck disable=SC2086
run cc -std=c11 -Wall -Werror "$CAP/dropin.c" -o "$CAP/dropin" $flags
want_rc 0
run env LD_LIBRARY_PATH="$DEST/usr/lib" "$CAP/dropin" "$REPO/samples/alice29.txt"
want_rc 0
finish

begin "that program loads libglyd.so.0 and nothing of the LLM layer"
LD_LIBRARY_PATH="$DEST/usr/lib" ldd "$CAP/dropin" >"$CAP/ldd" 2>&1
grep -q "libglyd.so.0 => $DEST/usr/lib/libglyd.so.0" "$CAP/ldd" || WHY="ldd: $(tr '\n' '|' <"$CAP/ldd")"
grep -qE 'jansson|pcre2|utf8proc|glyd-llm' "$CAP/ldd" && WHY=${WHY:-"ldd: $(tr '\n' '|' <"$CAP/ldd")"}
finish

begin "the same program links statically from pkg-config --static glyd"
flags=$(pkg-config --cflags --static --libs glyd)
# shellcheck disable=SC2086
run cc -std=c11 "$CAP/dropin.c" -o "$CAP/dropin-static" -Wl,-Bstatic -lglyd -Wl,-Bdynamic $flags
want_rc 0
run "$CAP/dropin-static" "$REPO/samples/alice29.txt"
want_rc 0
ldd "$CAP/dropin-static" 2>&1 | grep -q 'libglyd' && WHY=${WHY:-"linked libglyd.so, not the archive"}
finish

cat >"$CAP/llm.c" <<'EOF'
/* Packs a model folder, opens the pack and takes one greedy step, with
 * glyd_llm.h and libglyd-llm alone. */
#include <glyd_llm.h>
#include <stdio.h>

int main(int argc, char** argv)
{
    size_t err;
    int const prompt[3] = { 1, 461, 401 };
    int next = -1;
    glyd_llm* m;
    if (argc < 3) return 2;
    err = glyd_packModel(argv[1], argv[2], NULL);
    if (glyd_isError(err)) { fprintf(stderr, "pack: %s\n", glyd_getErrorName(err)); return 1; }
    m = glyd_llmOpen(argv[2], NULL, &err);
    if (!m) { fprintf(stderr, "open: %s\n", glyd_getErrorName(err)); return 1; }
    err = glyd_llmGreedy(m, prompt, 3, 0, &next);
    glyd_llmClose(m);
    if (glyd_isError(err) || next < 0) return 1;
    printf("%d\n", next);
    return 0;
}
EOF

begin "a program built from pkg-config glyd-llm packs a model and runs a step"
if [ ! -d "$FIXTURE" ]; then
    WHY="no fixture at $FIXTURE"
else
    flags=$(pkg-config --cflags --libs glyd-llm)
    # shellcheck disable=SC2086
    run cc -std=c11 -Wall -Werror "$CAP/llm.c" -o "$CAP/llm" $flags
    want_rc 0
    run env LD_LIBRARY_PATH="$DEST/usr/lib" "$CAP/llm" "$FIXTURE" "$CAP/m.glyd"
    want_rc 0
    # the CLI's answer to the same prompt
    want "the library's token is not glyd run's" test "$(cat "$CAP/out")" = \
        "$("$GLYD" run "$CAP/m.glyd" --tokens "1 461 401" -n 1 2>/dev/null | awk '{ print $NF }')"
fi
finish

# 4. Plain make builds only: a missing library is named, nothing installed.
# A compiler that cannot link jansson stands for a machine without it, and
# stubs of apt-get and sudo record any attempt to install.
mkdir -p "$CAP/bin"
cat >"$CAP/bin/cc-nojansson" <<'EOF'
#!/usr/bin/env bash
for a in "$@"; do [ "$a" = -ljansson ] && { echo "ld: cannot find -ljansson" >&2; exit 1; }; done
exec cc "$@"
EOF
for tool in apt-get sudo; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$tool" "$CAP/installs" >"$CAP/bin/$tool"
done
chmod +x "$CAP/bin"/*

begin "plain make, a library missing, names it and its package and installs nothing"
run env PATH="$CAP/bin:$PATH" make -C "$REPO" --no-print-directory BUILD="$CAP/b" CC=cc-nojansson
want_rc 2
grep -q 'missing jansson (jansson.h, -ljansson)' "$CAP/err" || WHY=${WHY:-"stderr: $(errtxt)"}
grep -q 'apt-get install libjansson-dev$' "$CAP/err" || WHY=${WHY:-"no install line: $(errtxt)"}
grep -qE 'xxhash|pcre2|utf8proc' "$CAP/err" && WHY=${WHY:-"names libraries that are there: $(errtxt)"}
[ -e "$CAP/installs" ] && WHY=${WHY:-"tried to install: $(cat "$CAP/installs")"}
[ -e "$CAP/b/obj" ] && WHY=${WHY:-"compiled before the check"}
finish

begin "plain make, every library present, installs nothing either"
run env PATH="$CAP/bin:$PATH" make -C "$REPO" --no-print-directory BUILD="$CAP/b2" "$CAP/b2/.deps-checked"
want_rc 0
[ -e "$CAP/installs" ] && WHY=${WHY:-"tried to install: $(cat "$CAP/installs")"}
finish

# 5. The licence (what git tracks: a tree unpacked from an archive has no
# list of its sources to hold to it)
if [ -z "$(cd "$REPO" && git ls-files 2>/dev/null | head -n 1)" ]; then
    skip "every source file opens with its SPDX licence line" "not a git checkout"
else
    begin "every source file opens with its SPDX licence line"
    unlicensed=$(cd "$REPO" && git ls-files |
        grep -E '\.(c|h|cu|cuh|cc|cpp|go|sh|py|sed|pc\.in|1)$|(^|/)(Makefile|run|commit-msg)$' |
        grep -vE '^(tests/data|samples|tests/fuzz/seeds-)' |
        while read -r f; do head -n 2 "$f" | grep -q 'SPDX-License-Identifier: BSD-3-Clause' || echo "$f"; done)
    [ -z "$unlicensed" ] || WHY="without it: $(echo "$unlicensed" | head -n 10 | tr '\n' ' ')"
    grep -q 'BSD 3-Clause License' "$REPO/LICENSE" || WHY=${WHY:-"LICENSE is not the BSD-3-Clause text"}
    finish
fi

summary_and_exit
