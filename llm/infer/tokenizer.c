/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tokenizer.c: BPE as Hugging Face's tokenizer.json describes it: the
 * vocabulary and merges, byte-level BPE (the GPT-2 family: Qwen, Llama 3:
 * each piece's bytes mapped to printable characters and merged by rank),
 * the pre-tokenizer's regex split (PCRE2), the encoding's order of steps,
 * and the way back from ids to bytes. The normalizer, Metaspace, the model
 * over characters (sentencepiece.c), added tokens (added_tokens.c) and
 * decoders (decoder.c) are in files of their own. Every step takes time
 * linear in the text, but the merges of one piece: O(m log m) for m
 * symbols. docs/TOKENIZER.md tells more.
 */
#include <stdlib.h>
#include <utf8proc.h>

#include "tokenizer_forms.h"

/* Ids beyond this are refused: the largest vocabularies hold about 260K
 * tokens, and tables are sized by the largest id. */
#define GLYD_TOKEN_ID_MAX (1 << 21)

static uint64_t hash_bytes(const void* p, size_t n) { return XXH3_64bits(p, n); }

size_t glyd_tokFind(const glyd_tokenizer* t, const char* s, size_t n)
{
    size_t i = hash_bytes(s, n) & t->vocab.mask;
    for (;; i = (i + 1) & t->vocab.mask) {
        uint32_t const v = t->vocab.slots[i];
        if (!v) return SIZE_MAX;
        if (strlen(t->text[v - 1]) == n && memcmp(t->text[v - 1], s, n) == 0) return v - 1;
    }
}

static void map_put(glyd_tokenizer* t, uint32_t id)
{
    const char* const s = t->text[id];
    size_t i = hash_bytes(s, strlen(s)) & t->vocab.mask;
    while (t->vocab.slots[i]) i = (i + 1) & t->vocab.mask;
    t->vocab.slots[i] = id + 1;
}

static uint64_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDULL;
    k ^= k >> 33;
    return k;
}

static size_t merge_slot(const glyd_tokenizer* t, uint32_t a, uint32_t b)
{
    uint64_t const key = ((uint64_t)a << 32 | b) + 1;
    size_t i = mix64(key) & t->mergeMask;
    while (t->merges[i].key && t->merges[i].key != key) i = (i + 1) & t->mergeMask;
    return i;
}

/* ------------------------------------------------------------------------ */
/* Byte-level characters                                                    */
/* ------------------------------------------------------------------------ */

/* GPT-2's map: printable Latin-1 bytes stand for themselves, the others
 * for 256, 257, ... in order. */
static void byte_level_map(uint32_t byteChar[256])
{
    unsigned b, next = 256;
    for (b = 0; b < 256; b++) {
        int const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        byteChar[b] = printable ? b : next++;
    }
}

/* The bytes a byte-level string stands for; 0 when a character is not one
 * of the 256. */
static int unmap_bytes(const glyd_tokenizer* t, const char* s, uint8_t* out, uint32_t* n)
{
    const utf8proc_uint8_t* p = (const utf8proc_uint8_t*)s;
    utf8proc_ssize_t const len = (utf8proc_ssize_t)strlen(s);
    utf8proc_ssize_t pos = 0;
    *n = 0;
    while (pos < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t const k = utf8proc_iterate(p + pos, len - pos, &c);
        unsigned b;
        if (k <= 0) return 0;
        for (b = 0; b < 256 && t->byteChar[b] != (uint32_t)c; b++) {}
        if (b == 256) return 0;
        out[(*n)++] = (uint8_t)b;
        pos += k;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

static size_t fail(char* why, size_t cap, const char* text, size_t err)
{
    if (why && cap) snprintf(why, cap, "%s", text);
    return err;
}

static size_t set_text(glyd_tokenizer* t, size_t id, const char* s)
{
    RETURN_ERROR_IF(id >= t->nbIds, GENERIC, "id");
    free(t->text[id]);
    t->text[id] = strdup(s);
    RETURN_ERROR_IF(!t->text[id], memory_allocation, "token");
    return 0;
}

/* The bytes of a byte-level token (added ones too, as the ByteLevel decoder
 * sees them): its characters mapped back, its text as it is when one is
 * not of the 256; the other forms' in decoder.c. */
static size_t set_bytes(glyd_tokenizer* t, size_t id)
{
    uint8_t buf[1024];
    uint32_t n = 0;
    const char* const s = t->text[id];
    if (!t->byteLevel) return glyd_tokSetBytes(t, id);
    if (strlen(s) >= sizeof(buf) || !unmap_bytes(t, s, buf, &n)) return glyd_tokSetBytes(t, id);
    free(t->bytes[id]);
    t->bytes[id] = (uint8_t*)malloc(n ? n : 1);
    RETURN_ERROR_IF(!t->bytes[id], memory_allocation, "token");
    memcpy(t->bytes[id], buf, n);
    t->nbBytes[id] = n;
    return 0;
}

glyd_tokenizer* glyd_tokenizerLoad(const char* json, size_t size, char* why, size_t whyCap, size_t* error)
{
    glyd_tokenizer* const t = (glyd_tokenizer*)calloc(1, sizeof(glyd_tokenizer));
    json_error_t jerr;
    json_t* root = NULL;
    const json_t *model, *vocab, *merges, *added;
    const char* key;
    json_t* value;
    size_t maxId = 0, i, cap;
    size_t r = 0;
    *error = 0;
    if (!t) { *error = GLYD_ERROR(memory_allocation); return NULL; }
    byte_level_map(t->byteChar);
    root = json_loadb(json, size, 0, &jerr);
    model = json_object_get(root, "model");
    vocab = json_object_get(model, "vocab");
    merges = json_object_get(model, "merges");
    added = json_object_get(root, "added_tokens");
    if (!root) { r = fail(why, whyCap, "tokenizer.json is not valid JSON", GLYD_ERROR(model_invalid)); goto done; }
    if (!json_is_object(model) || !json_is_string(json_object_get(model, "type")) ||
        strcmp(json_string_value(json_object_get(model, "type")), "BPE") != 0) {
        const char* const type = json_string_value(json_object_get(model, "type"));
        char line[160];
        snprintf(line, sizeof line, "tokenizer.json: the model %.60s is not supported (only BPE)",
                 type ? type : "(without a type)");
        r = fail(why, whyCap, line, GLYD_ERROR(model_unsupported));
        goto done;
    }
    if (!json_is_object(vocab) || !json_is_array(merges)) {
        r = fail(why, whyCap, "tokenizer.json: the BPE model has no vocab or merges", GLYD_ERROR(model_invalid));
        goto done;
    }
    t->ignoreMerges = json_is_true(json_object_get(model, "ignore_merges"));
    json_object_foreach((json_t*)vocab, key, value) {
        if (!json_is_integer(value) || json_integer_value(value) < 0 || json_integer_value(value) >= GLYD_TOKEN_ID_MAX) {
            r = fail(why, whyCap, "tokenizer.json: a vocabulary id is not an integer in range", GLYD_ERROR(model_invalid));
            goto done;
        }
        maxId = GLYD_MAX(maxId, (size_t)json_integer_value(value));
    }
    for (i = 0; i < json_array_size(added); i++) {
        const json_t* const id = json_object_get(json_array_get(added, i), "id");
        if (json_is_integer(id) && json_integer_value(id) >= 0 && json_integer_value(id) < GLYD_TOKEN_ID_MAX)
            maxId = GLYD_MAX(maxId, (size_t)json_integer_value(id));
    }
    t->nbIds = maxId + 1;
    t->text = (char**)calloc(t->nbIds, sizeof(char*));
    t->bytes = (uint8_t**)calloc(t->nbIds, sizeof(uint8_t*));
    t->nbBytes = (uint32_t*)calloc(t->nbIds, sizeof(uint32_t));
    t->isAdded = (uint8_t*)calloc(t->nbIds, 1);
    for (cap = 16; cap < 2 * t->nbIds; cap <<= 1) {}
    t->vocab.slots = (uint32_t*)calloc(cap, sizeof(uint32_t));
    t->vocab.mask = cap - 1;
    if (!t->text || !t->bytes || !t->nbBytes || !t->isAdded || !t->vocab.slots) { r = GLYD_ERROR(memory_allocation); goto done; }
    json_object_foreach((json_t*)vocab, key, value) {
        size_t const id = (size_t)json_integer_value(value);
        if (t->text[id]) {
            r = fail(why, whyCap, "tokenizer.json: two vocabulary entries share an id", GLYD_ERROR(model_invalid));
            goto done;
        }
        r = set_text(t, id, key);
        if (glyd_isError(r)) goto done;
        map_put(t, (uint32_t)id);
    }
    /* the normalizer, pre-tokenizer, decoder and the model's options */
    r = glyd_tokReadForms(t, root, why, whyCap);
    if (glyd_isError(r)) goto done;
    for (i = 0; i < 256 && t->byteLevel; i++) {
        char c[8];
        size_t id;
        c[utf8proc_encode_char((utf8proc_int32_t)t->byteChar[i], (utf8proc_uint8_t*)c)] = 0;
        id = glyd_tokFind(t, c, strlen(c));
        if (id == SIZE_MAX) {
            r = fail(why, whyCap, "tokenizer.json: the vocabulary lacks a byte's token (not byte-level BPE)",
                     GLYD_ERROR(model_unsupported));
            goto done;
        }
        t->charToken[i] = (uint32_t)id;
    }

    /* merges, as "a b" strings or as [a, b] pairs */
    for (cap = 16; cap < 2 * json_array_size(merges) + 2; cap <<= 1) {}
    t->merges = (merge_entry*)calloc(cap, sizeof(merge_entry));
    t->mergeMask = cap - 1;
    if (!t->merges) { r = GLYD_ERROR(memory_allocation); goto done; }
    for (i = 0; i < json_array_size(merges); i++) {
        const json_t* const m = json_array_get(merges, i);
        char left[512], right[512], joined[1024];
        size_t a, b, c, slot;
        if (json_is_string(m)) {
            const char* const s = json_string_value(m);
            const char* const sp = strchr(s, ' ');
            if (!sp || (size_t)(sp - s) >= sizeof left || strlen(sp + 1) >= sizeof right) goto bad_merge;
            memcpy(left, s, (size_t)(sp - s));
            left[sp - s] = 0;
            strcpy(right, sp + 1);
        } else if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
                   json_is_string(json_array_get(m, 1)) &&
                   strlen(json_string_value(json_array_get(m, 0))) < sizeof left &&
                   strlen(json_string_value(json_array_get(m, 1))) < sizeof right) {
            strcpy(left, json_string_value(json_array_get(m, 0)));
            strcpy(right, json_string_value(json_array_get(m, 1)));
        } else {
            goto bad_merge;
        }
        snprintf(joined, sizeof joined, "%s%s", left, right);
        a = glyd_tokFind(t, left, strlen(left));
        b = glyd_tokFind(t, right, strlen(right));
        c = glyd_tokFind(t, joined, strlen(joined));
        if (a == SIZE_MAX || b == SIZE_MAX || c == SIZE_MAX) goto bad_merge;
        slot = merge_slot(t, (uint32_t)a, (uint32_t)b);
        if (t->merges[slot].key) continue; /* the first rank wins */
        t->merges[slot].key = ((uint64_t)a << 32 | b) + 1;
        t->merges[slot].rank = (uint32_t)i;
        t->merges[slot].id = (uint32_t)c;
        continue;
    bad_merge:
        r = fail(why, whyCap, "tokenizer.json: a merge is malformed or names tokens not in the vocabulary",
                 GLYD_ERROR(model_invalid));
        goto done;
    }

    /* added tokens, then every token's bytes */
    r = glyd_tokReadAdded(t, added, why, whyCap);
    if (glyd_isError(r)) goto done;
    for (i = 0; i < t->nbIds && !glyd_isError(r); i++)
        if (t->text[i]) r = set_bytes(t, i);
done:
    json_decref(root);
    if (glyd_isError(r)) {
        glyd_tokenizerFree(t);
        *error = r;
        return NULL;
    }
    return t;
}

void glyd_tokenizerFree(glyd_tokenizer* t)
{
    size_t i;
    if (!t) return;
    for (i = 0; i < t->nbIds; i++) {
        if (t->text) free(t->text[i]);
        if (t->bytes) free(t->bytes[i]);
    }
    free(t->text);
    free(t->bytes);
    free(t->nbBytes);
    free(t->vocab.slots);
    free(t->merges);
    free(t->isAdded);
    glyd_tokFreeAdded(t);
    glyd_tokFreeForms(t);
    pcre2_match_data_free(t->match);
    pcre2_match_context_free(t->limits);
    pcre2_code_free(t->split);
    free(t);
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                 */
/* ------------------------------------------------------------------------ */

size_t glyd_tokPush(id_list* l, int id)
{
    if (l->n == l->cap) {
        size_t const cap = l->cap ? 2 * l->cap : 64;
        int* const d = (int*)realloc(l->ids, cap * sizeof(int));
        RETURN_ERROR_IF(!d, memory_allocation, "ids");
        l->ids = d;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return 0;
}

/* A merge that may apply: its rank in the high half, the position of its
 * left symbol in the low half, so that the smallest key is the merge to
 * apply next (by rank, then leftmost: the order transformers applies them
 * in). A rank names one pair of ids, so a key whose pair is still at its
 * position is still good; others went stale and are skipped. */
static uint64_t merge_key(uint32_t rank, uint32_t left) { return (uint64_t)rank << 32 | left; }

/* The heap is 4-ary: half the levels of a binary one, and a node's
 * children side by side in memory, which counts for pieces of megabytes. */
static void heap_down(uint64_t* h, size_t n, size_t i)
{
    uint64_t const v = h[i];
    for (;;) {
        size_t const first = 4 * i + 1;
        size_t c = first, k;
        if (first >= n) break;
        for (k = first + 1; k < first + 4 && k < n; k++)
            if (h[k] < h[c]) c = k;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}

static void heap_push(uint64_t* h, size_t* n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && v < h[(i - 1) / 4]) { h[i] = h[(i - 1) / 4]; i = (i - 1) / 4; }
    h[i] = v;
}

/* The smallest key out: the hole at the root goes down to a leaf by the
 * smaller children, and the last key comes up into it from there (fewer
 * comparisons than sifting it down, since it belongs near the bottom). */
static uint64_t heap_pop(uint64_t* h, size_t* n)
{
    uint64_t const top = h[0];
    size_t const m = --(*n);
    uint64_t const last = h[m];
    size_t i = 0;
    for (;;) {
        size_t const first = 4 * i + 1;
        size_t c = first, k;
        if (first >= m) break;
        for (k = first + 1; k < first + 4 && k < m; k++)
            if (h[k] < h[c]) c = k;
        h[i] = h[c];
        i = c;
    }
    while (i > 0 && last < h[(i - 1) / 4]) { h[i] = h[(i - 1) / 4]; i = (i - 1) / 4; }
    h[i] = last;
    return top;
}

/* The rank of merging ids a and b; UINT32_MAX when they do not merge. */
static uint32_t merge_rank(const glyd_tokenizer* t, uint32_t a, uint32_t b)
{
    size_t const slot = merge_slot(t, a, b);
    return t->merges[slot].key ? t->merges[slot].rank : UINT32_MAX;
}

#define BPE_NONE UINT32_MAX

/* Pieces up to BPE_SCAN bytes are merged by scans, longer ones by the
 * heap: in arrays on the stack up to BPE_STACK bytes, allocated beyond. */
#define BPE_SCAN 16
#define BPE_STACK 64

/* BPE of one piece in O(n log n): symbols in a linked list (id, next,
 * prev: n each), candidate merges in a heap (at most 2n: n - 1 at first,
 * then each merge takes one and adds two). */
static size_t bpe_merge(const glyd_tokenizer* t, uint32_t* id, size_t n, uint32_t* next, uint32_t* prev,
                        uint64_t* heap, id_list* out)
{
    size_t nh = 0, i;
    for (i = 0; i < n; i++) {
        prev[i] = i ? (uint32_t)i - 1 : BPE_NONE;
        next[i] = i + 1 < n ? (uint32_t)i + 1 : BPE_NONE;
    }
    for (i = 0; i + 1 < n; i++) {
        uint32_t const rank = merge_rank(t, id[i], id[i + 1]);
        if (rank != UINT32_MAX) heap[nh++] = merge_key(rank, (uint32_t)i);
    }
    for (i = nh / 4 + 1; i-- > 0; ) heap_down(heap, nh, i);
    while (nh) {
        uint64_t const key = heap_pop(heap, &nh);
        uint32_t const left = (uint32_t)key, right = next[left];
        size_t slot;
        uint32_t p, r;
        if (id[left] == BPE_NONE || right == BPE_NONE) continue;
        slot = merge_slot(t, id[left], id[right]);
        if (!t->merges[slot].key || t->merges[slot].rank != (uint32_t)(key >> 32)) continue;
        id[left] = t->merges[slot].id;
        id[right] = BPE_NONE;
        next[left] = next[right];
        if (next[right] != BPE_NONE) prev[next[right]] = left;
        p = prev[left];
        if (p != BPE_NONE && (r = merge_rank(t, id[p], id[left])) != UINT32_MAX) heap_push(heap, &nh, merge_key(r, p));
        if (next[left] != BPE_NONE && (r = merge_rank(t, id[left], id[next[left]])) != UINT32_MAX)
            heap_push(heap, &nh, merge_key(r, left));
    }
    for (i = 0; i != BPE_NONE; i = next[i]) FORWARD_IF_ERROR(glyd_tokPush(out, (int)id[i]));
    return 0;
}

/* A short piece (most words): the best-ranked pair found by a scan for
 * each merge. Quadratic, but below BPE_SCAN symbols faster than the heap
 * (a quarter less time on English prose). */
static size_t bpe_scan(const glyd_tokenizer* t, uint32_t* sym, size_t n, id_list* out)
{
    size_t len = n, i;
    while (len > 1) {
        uint32_t bestRank = UINT32_MAX, bestId = 0;
        size_t best = 0;
        for (i = 0; i + 1 < len; i++) {
            const merge_entry* const m = &t->merges[merge_slot(t, sym[i], sym[i + 1])];
            if (m->key && m->rank < bestRank) {
                bestRank = m->rank;
                bestId = m->id;
                best = i;
            }
        }
        if (bestRank == UINT32_MAX) break;
        sym[best] = bestId;
        memmove(sym + best + 1, sym + best + 2, (len - best - 2) * sizeof(uint32_t));
        len--;
    }
    for (i = 0; i < len; i++) FORWARD_IF_ERROR(glyd_tokPush(out, (int)sym[i]));
    return 0;
}

size_t glyd_tokMerge(const glyd_tokenizer* t, uint32_t* ids, size_t n, id_list* out)
{
    if (n <= BPE_SCAN) return bpe_scan(t, ids, n, out);
    if (n <= BPE_STACK) {
        uint32_t next[BPE_STACK], prev[BPE_STACK];
        uint64_t heap[2 * BPE_STACK];
        return bpe_merge(t, ids, n, next, prev, heap, out);
    }
    RETURN_ERROR_IF(n >= BPE_NONE, parameter_outOfBound, "a piece of 4 G symbols or more");
    {
        uint32_t* const link = (uint32_t*)malloc(2 * n * sizeof(uint32_t));
        uint64_t* const heap = (uint64_t*)malloc(2 * n * sizeof(uint64_t));
        size_t r = GLYD_ERROR(memory_allocation);
        if (link && heap) r = bpe_merge(t, ids, n, link, link + n, heap, out);
        free(link);
        free(heap);
        return r;
    }
}

/* One byte-level pre-token: its bytes start as their one-character tokens,
 * merged by rank; with ignore_merges, the whole piece when the vocabulary
 * has it. */
static size_t bpe(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out)
{
    size_t i;
    if (t->ignoreMerges) {
        char buf[1024];
        size_t k = 0, id;
        for (i = 0; i < n && k + 4 < sizeof buf; i++)
            k += (size_t)utf8proc_encode_char((utf8proc_int32_t)t->byteChar[s[i]], (utf8proc_uint8_t*)buf + k);
        if (i == n && (id = glyd_tokFind(t, buf, k)) != SIZE_MAX) return glyd_tokPush(out, (int)id);
    }
    if (n <= BPE_STACK) {
        uint32_t ids[BPE_STACK];
        for (i = 0; i < n; i++) ids[i] = t->charToken[s[i]];
        return glyd_tokMerge(t, ids, n, out);
    }
    {
        uint32_t* const ids = (uint32_t*)malloc(n * sizeof(uint32_t));
        size_t r;
        RETURN_ERROR_IF(!ids, memory_allocation, "piece");
        for (i = 0; i < n; i++) ids[i] = t->charToken[s[i]];
        r = glyd_tokMerge(t, ids, n, out);
        free(ids);
        return r;
    }
}

size_t glyd_tokPiece(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out)
{
    if (n == 0) return 0;
    return t->byteLevel ? bpe(t, s, n, out) : glyd_tokCharPiece(t, s, n, out);
}

/* The length of a character from its first byte, in valid UTF-8. */
static size_t utf8_length(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

/* The split pattern sees this many bytes past where it starts looking,
 * doubled while it needs more, so that a match costs about what it reads
 * and not the length of the text after it. */
#define SPLIT_WINDOW 256

/* PCRE2's match limit (backtracking steps) for a window: its default, and
 * more for a long window, since a run of spaces costs a step a byte
 * (\s*[\r\n]+ gives each back); a pattern that backtracks without end
 * still meets it. */
#define SPLIT_MATCH_LIMIT 10000000
#define SPLIT_STEPS_PER_BYTE 16

static void set_match_limit(const glyd_tokenizer* t, size_t window)
{
    size_t const room = (UINT32_MAX - SPLIT_MATCH_LIMIT) / SPLIT_STEPS_PER_BYTE;
    uint32_t const limit = (uint32_t)(SPLIT_MATCH_LIMIT + GLYD_MIN(window, room) * SPLIT_STEPS_PER_BYTE);
    pcre2_set_match_limit(t->limits, limit);
    pcre2_set_depth_limit(t->limits, limit);
}

/* The next match of the split pattern in s[0, len) that starts at or after
 * `from`, in [*start, *end): 1 when there is one, 0 when none, or an error.
 * The match is the one that the whole text would give: in a window short
 * of the end, a match that reads up to its edge comes back partial, and
 * the window grows. */
static size_t next_match(const glyd_tokenizer* t, const uint8_t* s, size_t len, size_t from, size_t* start,
                         size_t* end)
{
    size_t window = SPLIT_WINDOW;
    for (;;) {
        size_t edge = window < len - from ? from + window : len;
        int rc;
        while (edge < len && (s[edge] & 0xC0) == 0x80) edge++; /* whole characters */
        set_match_limit(t, edge - from);
        rc = pcre2_match(t->split, s, edge, from, PCRE2_NO_UTF_CHECK | (edge < len ? PCRE2_PARTIAL_HARD : 0),
                         t->match, t->limits);
        if (rc >= 0) {
            PCRE2_SIZE const* const ov = pcre2_get_ovector_pointer(t->match);
            *start = ov[0];
            *end = ov[1];
            RETURN_ERROR_IF(*start < from || *end < *start || *end > edge, model_unsupported, "\\K in the pattern");
            return 1;
        }
        if (edge == len && rc == PCRE2_ERROR_NOMATCH) return 0;
        RETURN_ERROR_IF(edge == len || (rc != PCRE2_ERROR_PARTIAL && rc != PCRE2_ERROR_NOMATCH), model_unsupported,
                        "the pre-tokenizer's regex failed on the text");
        window *= 2;
    }
}

/* Normalized text split by the pattern: the text between two matches is
 * a piece of its own; an empty match ends the one before it (as the Split
 * pre-tokenizer's Isolated behaviour has it). The text was checked as
 * UTF-8 when normalized: the pattern matches without checking it again. */
static size_t split_pieces(const glyd_tokenizer* t, const uint8_t* s, size_t len, id_list* out)
{
    size_t gap = 0, from = 0, r = 0;
    while (from < len) {
        size_t start, end;
        r = next_match(t, s, len, from, &start, &end);
        if (r != 1) break;
        if (start > gap) r = glyd_tokPiece(t, s + gap, start - gap, out);
        if (glyd_isError(r) || start == len) break;
        if (end > start) {
            r = glyd_tokPiece(t, s + start, end - start, out);
            gap = from = end;
        } else {
            gap = start;
            from = start + utf8_length(s[start]);
        }
        if (glyd_isError(r)) break;
    }
    if (!glyd_isError(r) && gap < len) r = glyd_tokPiece(t, s + gap, len - gap, out);
    return glyd_isError(r) ? r : 0;
}

/* Normalized text between added tokens: the pre-tokenizer's pieces (the
 * whole text when there is none), each through the model. */
static size_t encode_normalized(const glyd_tokenizer* t, const char* text, size_t n, int atStart, id_list* out)
{
    const uint8_t* const s = (const uint8_t*)text;
    if (n == 0) return 0;
    if (t->metaspace) return glyd_tokMetaspace(t, s, n, atStart, out);
    if (t->split) return split_pieces(t, s, n, out);
    return glyd_tokPiece(t, s, n, out);
}

/* Raw text between added tokens: normalized (the one check of the UTF-8:
 * invalid text is refused), then split around the added tokens that match
 * normalized text. */
static size_t encode_raw(const glyd_tokenizer* t, const char* text, size_t n, int atStart, id_list* out)
{
    uint8_t* norm;
    size_t len, r;
    if (n == 0) return 0;
    FORWARD_IF_ERROR(glyd_tokNormalize(t, text, n, &norm, &len));
    r = glyd_tokSplitAdded(t, &t->normed, (const char*)norm, len, atStart, encode_normalized, out);
    free(norm);
    return r;
}

size_t glyd_tokenizerEncode(const glyd_tokenizer* t, const char* text, size_t n, int** ids, size_t* nbIds)
{
    id_list out = { NULL, 0, 0 };
    size_t const r = glyd_tokSplitAdded(t, &t->raw, text, n, 1, encode_raw, &out);
    *ids = NULL;
    *nbIds = 0;
    if (glyd_isError(r)) { free(out.ids); return r; }
    *ids = out.ids;
    *nbIds = out.n;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                 */
/* ------------------------------------------------------------------------ */

size_t glyd_tokenizerBytes(const glyd_tokenizer* t, int id, const uint8_t** bytes, size_t* n)
{
    RETURN_ERROR_IF(id < 0 || (size_t)id >= t->nbIds || !t->text[id], parameter_outOfBound, "token id");
    *bytes = t->bytes[id];
    *n = t->nbBytes[id];
    return 0;
}

int glyd_tokenizerFind(const glyd_tokenizer* t, const char* text)
{
    size_t const id = glyd_tokFind(t, text, strlen(text));
    size_t k;
    if (id != SIZE_MAX) return (int)id;
    for (k = 0; k < t->nbAdded; k++)
        if (t->added[k].content && !strcmp(t->added[k].content, text)) return (int)t->added[k].id;
    return -1;
}

size_t glyd_tokenizerVocabSize(const glyd_tokenizer* t) { return t->nbIds; }

/* ------------------------------------------------------------------------ */
/* Opening                                                                  */
/* ------------------------------------------------------------------------ */

glyd_tokenizer* glyd_tokenizerOpen(const char* path, char* message, size_t cap, size_t* error)
{
    char* text = NULL;
    size_t textSize = 0;
    glyd_tokenizer* t = NULL;
    char why[256] = "";
    size_t r = 0;
    *error = 0;
    if (glyd_isPackedModel(path)) {
        glyd_packParams pp;
        glyd_model* m;
        memset(&pp, 0, sizeof pp);
        pp.message = why; /* the packed model's own reason, naming the file */
        pp.messageCapacity = sizeof why;
        m = glyd_modelOpen(path, &pp, &r);
        if (m) r = glyd_modelReadFile(m, "tokenizer.json", &text, &textSize);
        if (m && glyd_getErrorCode(r) == GLYD_error_io_failed)
            snprintf(why, sizeof why, "%.200s holds no tokenizer.json", path);
        else if (m && glyd_isError(r))
            snprintf(why, sizeof why, "%.200s: tokenizer.json is damaged: %s", path, glyd_getErrorName(r));
        else if (!m && !why[0])
            snprintf(why, sizeof why, "%.200s: %s", path, glyd_getErrorName(r));
        glyd_modelClose(m);
    } else {
        char full[4096];
        size_t const len = strlen(path);
        int const isJson = len >= 5 && !strcmp(path + len - 5, ".json");
        snprintf(full, sizeof full, isJson ? "%s" : "%s/tokenizer.json", path);
        r = glyd_readFile(full, &text, &textSize);
        if (glyd_isError(r)) snprintf(why, sizeof why, "%.200s: cannot read it", full);
    }
    if (!glyd_isError(r)) {
        t = glyd_tokenizerLoad(text ? text : "", textSize, why, sizeof why, &r);
        if (!t && why[0]) {
            char w2[256];
            snprintf(w2, sizeof w2, "%.100s: %.150s", path, why);
            memcpy(why, w2, sizeof why);
        }
    }
    free(text);
    if (!t) {
        if (!glyd_isError(r)) r = GLYD_ERROR(GENERIC);
        if (message && cap) snprintf(message, cap, "%s", why[0] ? why : glyd_getErrorName(r));
        *error = r;
    }
    return t;
}

/* ------------------------------------------------------------------------ */
/* Chat history                                                             */
/* ------------------------------------------------------------------------ */

size_t glyd_chatAnswerStart(const char* reply, size_t size)
{
    static const char kEnd[] = "</think>";
    size_t const len = sizeof kEnd - 1;
    size_t i, start = 0;
    for (i = 0; i + len <= size; i++)
        if (memcmp(reply + i, kEnd, len) == 0) start = i + len;
    if (start == 0) return 0;
    while (start < size && reply[start] == '\n') start++;
    return start;
}
