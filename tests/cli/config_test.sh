#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/cli/config_test.sh: what `glyd run` refuses before a model runs: the
# numbers of its options, at argument parsing, and config.json values the
# engine cannot use, on a copy of the stories260K fixture. Each refusal is
# one exact line on stderr, nothing on stdout, exit status 1.
#
#   bash tests/cli/config_test.sh [path/to/glyd]     (default: build/glyd)
#
# Prints "ok - ..." or "FAIL - ... (details)" per test, then "N passed, N failed".

set -u
exec </dev/null

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GLYD=${1:-$REPO/build/glyd}
FIX=$REPO/../shared/fixtures/stories260K
source "$REPO/tests/cli/testlib.sh"
[ -x "$GLYD" ] || { bad "setup" "no glyd binary at $GLYD (run make first)"; summary_and_exit; }
[ -r "$FIX/config.json" ] || { bad "setup" "fixture missing: $FIX"; summary_and_exit; }
GLYD=$(cd "$(dirname "$GLYD")" && pwd)/$(basename "$GLYD")

W=$(mktemp -d "${TMPDIR:-/tmp}/glyd-config-test.XXXXXX") || { bad "setup" "mktemp failed"; summary_and_exit; }
trap 'cd / && rm -rf "$W"' EXIT
cd "$W" || exit 1

# refused DESC LINE CMD...: CMD exits 1 with exactly LINE on stderr and
# nothing on stdout; a hang past 60 s counts as a failure.
refused() {
    local desc=$1 line=$2 rc err
    shift 2
    timeout 60 "$@" >out 2>err
    rc=$?
    err=$(cat err)
    if [ "$rc" -ne 1 ]; then bad "$desc" "exit $rc, expected 1; stderr: $err"
    elif [ "$err" != "$line" ]; then bad "$desc" "stderr [$err], expected [$line]"
    elif [ -s out ]; then bad "$desc" "stdout: $(head -c 200 out)"
    else ok "$desc"; fi
}

# accepted DESC CMD...: CMD exits 0.
accepted() {
    local desc=$1 rc
    shift
    timeout 60 "$@" >out 2>err
    rc=$?
    if [ "$rc" -eq 0 ]; then ok "$desc"; else bad "$desc" "exit $rc; stderr: $(head -c 300 err)"; fi
}

# --- the options of glyd run: refused at parsing, before any model is read --
# ("nowhere" does not exist: a refusal about it would mean the option passed)

count() { # count OPTION RANGE VALUE...: each VALUE refused as a whole number
    local opt=$1 range=$2 v
    shift 2
    for v in "$@"; do
        refused "run $opt '$v' is refused" "glyd: $opt: expected a whole number in $range, got \"$v\"" \
            "$GLYD" run nowhere --tokens 1 "$opt" "$v"
    done
}
number() { # number OPTION RANGE VALUE...: each VALUE refused as a number
    local opt=$1 range=$2 v
    shift 2
    for v in "$@"; do
        refused "run $opt '$v' is refused" "glyd: $opt: expected a number in $range, got \"$v\"" \
            "$GLYD" run nowhere --tokens 1 "$opt" "$v"
    done
}

count --ctx 1..16777216 -5 0 12abc "" " 5" +5 0x10 16777217 99999999999999999999 18446744073709551611
count -n 0..1000000 -1 12abc 1000001 1e3 " 3"
count --top-k 0..1000000 -1 1.5 1000001 k
count --seed 0..18446744073709551615 -1 12abc 18446744073709551616 " 7"
number --temp 0..100 -1 nan inf 1x 101 "" " 1"
number --top-p 0..1 1.5 -0.1 nan
number --min-p 0..1 2 -1
number --repeat-penalty 0.01..100 0 x 1e9
for v in -1 257 x; do
    refused "run -T'$v' is refused" "glyd: -T: expected a whole number in 0..256, got \"$v\"" \
        "$GLYD" run nowhere --tokens 1 "-T$v"
done
refused "run -T'' is an unknown option" "glyd: run: unknown option -T (see glyd run --help)" \
    "$GLYD" run nowhere --tokens 1 -T
for v in -1 257 ""; do
    refused "run --threads='$v' is refused" "glyd: --threads: expected a whole number in 0..256, got \"$v\"" \
        "$GLYD" run nowhere --tokens 1 "--threads=$v"
done
for opt in --ctx -n --temp --top-k --top-p --min-p --repeat-penalty --seed --tokens --kv-dtype; do
    refused "run $opt without its value is refused" "glyd: $opt: expects a value (see glyd run --help)" \
        "$GLYD" run nowhere --tokens 1 "$opt"
done

# the edges of each range still run
accepted "run --ctx 4 -n 2 -T0 --seed 18446744073709551615 --temp 0 --top-k 0 --top-p 1 --min-p 0 run" \
    "$GLYD" run "$FIX" --tokens "1 2" --ctx 4 -n 2 -T0 --seed 18446744073709551615 --temp 0 --top-k 0 \
    --top-p 1 --min-p 0 --repeat-penalty 0.01
refused "run: tokens past --ctx are refused" "glyd: run: 5 tokens do not fit the context of 4 positions (--ctx)" \
    "$GLYD" run "$FIX" --tokens "1 2" --ctx 4 -n 3

# --- config.json values the engine cannot use, in a folder and packed ----------

# folder NAME SED: a copy of the fixture with config.json edited by SED
folder() {
    mkdir -p "$1" && cp "$FIX/model.safetensors" "$1/" && sed "$2" "$FIX/config.json" >"$1/config.json"
}
folder eps 's/"rms_norm_eps": 1e-05/"rms_norm_eps": -1/'
refused "run: rms_norm_eps -1 is refused (not NaN logits)" \
    "glyd: eps: config.json: rms_norm_eps is -1: it must be a positive number within float range" \
    "$GLYD" run eps --tokens "1 2 3" -n 5
folder theta 's/"rope_theta": 10000.0/"rope_theta": "big"/'
refused "run: rope_theta \"big\" is refused, not ignored" \
    "glyd: theta: config.json: rope_theta is \"big\": it must be a number above 1 within float range" \
    "$GLYD" run theta --tokens 1
folder kv 's/"num_key_value_heads": 4/"num_key_value_heads": 3/'
refused "run: kv heads that do not divide the heads are refused" \
    "glyd: kv: config.json: num_key_value_heads is 3: it must divide num_attention_heads (8)" \
    "$GLYD" run kv --tokens 1
folder eos 's/"eos_token_id": 2/"eos_token_id": [2, 512]/'
refused "run: an eos_token_id outside the vocabulary is refused" \
    "glyd: eos: config.json: eos_token_id is [2,512]: it must be a token id below vocab_size (512), or a list of them" \
    "$GLYD" run eos --tokens 1
folder big 's/"hidden_size": 64/"hidden_size": 9223372036854775808/'
refused "run: a config.json that does not parse says where" \
    "glyd: big: config.json: line 6 column 36: too big integer near '9223372036854775808'" \
    "$GLYD" run big --tokens 1
if "$GLYD" pack -q eps -o eps.glyd 2>err; then
    refused "run: a packed model's bad config.json is refused as well" \
        "glyd: eps.glyd: config.json: rms_norm_eps is -1: it must be a positive number within float range" \
        "$GLYD" run eps.glyd --tokens 1
else
    bad "run: a packed model's bad config.json is refused as well" "pack failed: $(cat err)"
fi

# --- mixtures of experts: run from a folder and packed, or refused in one line -
MOE=$REPO/tests/data/tiny-qwen3-moe
accepted "run: a Qwen3-MoE model runs from its folder" "$GLYD" run "$MOE" --tokens "1 2 3" -n 3
if "$GLYD" pack -q --fast-layout "$MOE" -o moe.glyd 2>err; then
    accepted "run: a Qwen3-MoE model runs packed" "$GLYD" run moe.glyd --tokens "1 2 3" -n 3
else
    bad "run: a Qwen3-MoE model runs packed" "pack failed: $(cat err)"
fi
refused "run --gpu=emulated: a mixture of experts is refused on the GPU" \
    "glyd: GPU: mixtures of experts are not supported on the GPU (layer 0 has 8 experts): run on the CPU" \
    "$GLYD" run "$REPO/tests/data/tiny-mixtral" --tokens 1 --gpu=emulated
mkdir -p slide && cp "$MOE/model.safetensors" slide/ &&
    sed 's/"use_sliding_window": false/"use_sliding_window": true/' "$MOE/config.json" >slide/config.json
refused "run: Qwen3-MoE's sliding window is refused, not ignored" \
    "glyd: slide: config.json: use_sliding_window is true: sliding-window attention is not supported" \
    "$GLYD" run slide --tokens 1

# --- Qwen3.5: what the engine lacks, said in one line ---------------------------

Q35=$REPO/tests/data/tiny-qwen3-5
# q35 NAME SED: a copy of tiny-qwen3-5 with config.json edited by SED
q35() {
    mkdir -p "$1" && cp "$Q35/model.safetensors" "$1/" && sed "$2" "$Q35/config.json" >"$1/config.json"
}
q35 q35-sliding '0,/"linear_attention"/s//"sliding_attention"/'
refused "run: a Qwen3.5 layer type the engine lacks is refused" \
    "glyd: q35-sliding: config.json: layer_types[0] is \"sliding_attention\": each must be linear_attention or full_attention (no other kind of layer is supported)" \
    "$GLYD" run q35-sliding --tokens 1
q35 q35-missing 's/"full_attention"/"linear_attention"/'
refused "run: a Qwen3.5 layer whose tensors are not there is refused, naming one" \
    "glyd: q35-missing: tensor model.layers.3.linear_attn.in_proj_qkv.weight is missing" \
    "$GLYD" run q35-missing --tokens 1
refused "run --gpu: Qwen3.5 is refused before its weights load" \
    "glyd: $Q35: GPU: Qwen3.5 (its Gated DeltaNet layers) runs on the CPU only: glyd run without --gpu" \
    "$GLYD" run "$Q35" --gpu --tokens 1

# --- Mistral and Gemma 3: what the engine does not build, and the GPU -----------
TINY=$REPO/tests/data
# tiny NAME MODEL SED: a copy of tests/data/MODEL with config.json edited by SED
tiny() {
    mkdir -p "$1" && cp "$TINY/$2/model.safetensors" "$1/" && sed "$3" "$TINY/$2/config.json" >"$1/config.json"
}
tiny softcap tiny-gemma3 's/"attn_logit_softcapping": null/"attn_logit_softcapping": 50.0/'
refused "run: Gemma 3's attention soft-capping is refused, not ignored" \
    "glyd: softcap: config.json: attn_logit_softcapping is 50.0: it is not supported (transformers' Gemma 3 does not apply it; null is)" \
    "$GLYD" run softcap --tokens 1
tiny gelu tiny-gemma3 's/"gelu_pytorch_tanh"/"gelu"/'
refused "run: Gemma 3 with another activation is refused" \
    "glyd: gelu: config.json: hidden_activation is \"gelu\": it is not supported (gelu_pytorch_tanh is)" \
    "$GLYD" run gelu --tokens 1
refused "run --gpu: Gemma 3 is refused before any weight loads" \
    "glyd: $TINY/tiny-gemma3: GPU: Gemma 3 runs on the CPU only (the GPU backend has no Gemma norms, GELU or sliding windows)" \
    "$GLYD" run "$TINY/tiny-gemma3" --gpu --tokens 1
refused "run --gpu: a sliding window shorter than the context is refused" \
    "glyd: $TINY/tiny-mistral: GPU: sliding_window 48 under a context of 512 positions runs on the CPU only (the GPU backend has no sliding windows)" \
    "$GLYD" run "$TINY/tiny-mistral" --gpu --tokens 1

summary_and_exit
