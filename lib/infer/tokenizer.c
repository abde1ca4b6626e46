/*
 * tokenizer.c: byte-level BPE as Hugging Face's tokenizer.json describes it
 * (the GPT-2 family: Qwen, Llama 3): added tokens matched in the raw text
 * first, NFC normalization (utf8proc), the pre-tokenizer's regex split
 * (PCRE2), each piece's bytes mapped to printable characters and merged by
 * rank, and the way back from ids to bytes.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <utf8proc.h>

#include "infer.h"

/* Ids beyond this are refused: the largest vocabularies hold about 260K
 * tokens, and tables are sized by the largest id. */
#define GLYD_TOKEN_ID_MAX (1 << 21)

/* ------------------------------------------------------------------------ */
/* A string -> id map (open addressing)                                     */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t* slots;            /* id + 1, 0 = empty */
    size_t mask;
} str_map;

static uint64_t hash_bytes(const void* p, size_t n) { return XXH3_64bits(p, n); }

struct glyd_tokenizer_s {
    /* every token's text as the vocabulary spells it (byte-level characters)
     * and as the bytes it stands for */
    char** text;
    uint8_t** bytes;
    uint32_t* nbBytes;
    size_t nbIds;               /* the largest id + 1 */
    str_map vocab;
    /* merges: (left id, right id) -> rank, merged id */
    uint64_t* mergeKeys;        /* left << 32 | right, +1; 0 = empty */
    uint32_t* mergeRank;
    uint32_t* mergeId;
    size_t mergeMask;
    int ignoreMerges;
    /* added tokens, matched in the raw text, longest first */
    uint32_t* added;
    size_t nbAdded;
    pcre2_code* split;
    pcre2_match_data* match;
    uint32_t byteChar[256];     /* the byte-level character of each byte */
    uint32_t charToken[256];    /* the id of each byte's one-character token */
};

static size_t map_find(const glyd_tokenizer* t, const char* s, size_t n)
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
    while (t->mergeKeys[i] && t->mergeKeys[i] != key) i = (i + 1) & t->mergeMask;
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

/* Added tokens longest first, so that the first one found at a position
 * is the longest there (insertion sort: a few dozen of them). */
static void sort_added(glyd_tokenizer* t)
{
    size_t i, j;
    for (i = 1; i < t->nbAdded; i++) {
        uint32_t const v = t->added[i];
        size_t const l = strlen(t->text[v]);
        for (j = i; j > 0 && strlen(t->text[t->added[j - 1]]) < l; j--) t->added[j] = t->added[j - 1];
        t->added[j] = v;
    }
}

static size_t set_token(glyd_tokenizer* t, size_t id, const char* s, int byteLevel)
{
    uint8_t buf[1024];
    uint32_t n = 0;
    RETURN_ERROR_IF(id >= t->nbIds, GENERIC, "id");
    free(t->text[id]);
    free(t->bytes[id]);
    t->text[id] = strdup(s);
    RETURN_ERROR_IF(!t->text[id], memory_allocation, "token");
    if (byteLevel && strlen(s) < sizeof(buf) && unmap_bytes(t, s, buf, &n)) {
        t->bytes[id] = (uint8_t*)malloc(n ? n : 1);
        RETURN_ERROR_IF(!t->bytes[id], memory_allocation, "token");
        memcpy(t->bytes[id], buf, n);
    } else {
        n = (uint32_t)strlen(s);
        t->bytes[id] = (uint8_t*)malloc(n ? n : 1);
        RETURN_ERROR_IF(!t->bytes[id], memory_allocation, "token");
        memcpy(t->bytes[id], s, n);
    }
    t->nbBytes[id] = n;
    return 0;
}

glyd_tokenizer* glyd_tokenizerLoad(const char* json, size_t size, char* why, size_t whyCap, size_t* error)
{
    glyd_tokenizer* const t = (glyd_tokenizer*)calloc(1, sizeof(glyd_tokenizer));
    json_error_t jerr;
    json_t* root = NULL;
    const json_t *model, *vocab, *merges, *added, *pre;
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
        r = fail(why, whyCap, "tokenizer.json: only BPE models are supported", GLYD_ERROR(model_unsupported));
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
    for (cap = 16; cap < 2 * t->nbIds; cap <<= 1) {}
    t->vocab.slots = (uint32_t*)calloc(cap, sizeof(uint32_t));
    t->vocab.mask = cap - 1;
    if (!t->text || !t->bytes || !t->nbBytes || !t->vocab.slots) { r = GLYD_ERROR(memory_allocation); goto done; }
    json_object_foreach((json_t*)vocab, key, value) {
        size_t const id = (size_t)json_integer_value(value);
        if (t->text[id]) {
            r = fail(why, whyCap, "tokenizer.json: two vocabulary entries share an id", GLYD_ERROR(model_invalid));
            goto done;
        }
        r = set_token(t, id, key, 1);
        if (glyd_isError(r)) goto done;
        map_put(t, (uint32_t)id);
    }
    for (i = 0; i < 256; i++) {
        char c[8];
        size_t id;
        c[utf8proc_encode_char((utf8proc_int32_t)t->byteChar[i], (utf8proc_uint8_t*)c)] = 0;
        id = map_find(t, c, strlen(c));
        if (id == SIZE_MAX) {
            r = fail(why, whyCap, "tokenizer.json: the vocabulary lacks a byte's token (not byte-level BPE)",
                     GLYD_ERROR(model_unsupported));
            goto done;
        }
        t->charToken[i] = (uint32_t)id;
    }

    /* merges, as "a b" strings or as [a, b] pairs */
    for (cap = 16; cap < 2 * json_array_size(merges) + 2; cap <<= 1) {}
    t->mergeKeys = (uint64_t*)calloc(cap, sizeof(uint64_t));
    t->mergeRank = (uint32_t*)calloc(cap, sizeof(uint32_t));
    t->mergeId = (uint32_t*)calloc(cap, sizeof(uint32_t));
    t->mergeMask = cap - 1;
    if (!t->mergeKeys || !t->mergeRank || !t->mergeId) { r = GLYD_ERROR(memory_allocation); goto done; }
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
        a = map_find(t, left, strlen(left));
        b = map_find(t, right, strlen(right));
        c = map_find(t, joined, strlen(joined));
        if (a == SIZE_MAX || b == SIZE_MAX || c == SIZE_MAX) goto bad_merge;
        slot = merge_slot(t, (uint32_t)a, (uint32_t)b);
        if (t->mergeKeys[slot]) continue; /* the first rank wins */
        t->mergeKeys[slot] = ((uint64_t)a << 32 | b) + 1;
        t->mergeRank[slot] = (uint32_t)i;
        t->mergeId[slot] = (uint32_t)c;
        continue;
    bad_merge:
        r = fail(why, whyCap, "tokenizer.json: a merge is malformed or names tokens not in the vocabulary",
                 GLYD_ERROR(model_invalid));
        goto done;
    }

    /* added tokens: matched in the text as they are written */
    t->added = (uint32_t*)calloc(json_array_size(added) + 1, sizeof(uint32_t));
    if (!t->added) { r = GLYD_ERROR(memory_allocation); goto done; }
    for (i = 0; i < json_array_size(added); i++) {
        const json_t* const a = json_array_get(added, i);
        const json_t* const id = json_object_get(a, "id");
        const json_t* const content = json_object_get(a, "content");
        if (!json_is_integer(id) || !json_is_string(content) || json_integer_value(id) < 0 ||
            json_integer_value(id) >= GLYD_TOKEN_ID_MAX || !*json_string_value(content)) {
            r = fail(why, whyCap, "tokenizer.json: an added token lacks its id or content", GLYD_ERROR(model_invalid));
            goto done;
        }
        r = set_token(t, (size_t)json_integer_value(id), json_string_value(content), 0);
        if (glyd_isError(r)) goto done;
        t->added[t->nbAdded++] = (uint32_t)json_integer_value(id);
    }
    sort_added(t);

    /* the pre-tokenizer's split pattern; GPT-2's when there is none */
    pre = json_object_get(root, "pre_tokenizer");
    {
        const char* pattern = NULL;
        const json_t* list = json_object_get(pre, "pretokenizers");
        size_t k;
        if (json_is_object(pre) && !list) list = NULL;
        for (k = 0; list && k < json_array_size(list); k++) {
            const json_t* const p = json_array_get(list, k);
            const char* const type = json_string_value(json_object_get(p, "type"));
            if (type && !strcmp(type, "Split"))
                pattern = json_string_value(json_object_get(json_object_get(p, "pattern"), "Regex"));
        }
        if (!pattern) pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
        {
            int code;
            PCRE2_SIZE off;
            t->split = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &off, NULL);
            if (!t->split) {
                r = fail(why, whyCap, "tokenizer.json: the pre-tokenizer's regex does not compile", GLYD_ERROR(model_unsupported));
                goto done;
            }
            pcre2_jit_compile(t->split, PCRE2_JIT_COMPLETE); /* when JIT is there; the interpreter otherwise */
            t->match = pcre2_match_data_create_from_pattern(t->split, NULL);
            if (!t->match) { r = GLYD_ERROR(memory_allocation); goto done; }
        }
    }
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
    free(t->mergeKeys);
    free(t->mergeRank);
    free(t->mergeId);
    free(t->added);
    pcre2_match_data_free(t->match);
    pcre2_code_free(t->split);
    free(t);
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct { int* ids; size_t n, cap; } id_list;

static size_t push(id_list* l, int id)
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

/* A merge that may apply between nodes left and right, by rank, then by
 * position (the order transformers applies them in). */
typedef struct { uint32_t rank, left, right, idL, idR; } merge_cand;

static int cand_less(const merge_cand* a, const merge_cand* b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void heap_push(merge_cand* h, size_t* n, merge_cand c)
{
    size_t i = (*n)++;
    while (i > 0 && cand_less(&c, &h[(i - 1) / 2])) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = c;
}

static merge_cand heap_pop(merge_cand* h, size_t* n)
{
    merge_cand const top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && cand_less(&h[c + 1], &h[c])) c++;
        if (!cand_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static void offer(const glyd_tokenizer* t, merge_cand* h, size_t* n, const uint32_t* id, uint32_t l, uint32_t r)
{
    size_t const slot = merge_slot(t, id[l], id[r]);
    if (t->mergeKeys[slot]) {
        merge_cand const c = { t->mergeRank[slot], l, r, id[l], id[r] };
        heap_push(h, n, c);
    }
}

/* BPE of a long piece in O(n log n): symbols in a linked list, candidate
 * merges in a heap, stale ones skipped when they come up. */
static size_t bpe_long(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out)
{
    uint32_t* const id = (uint32_t*)malloc(n * sizeof(uint32_t));
    uint32_t* const next = (uint32_t*)malloc(n * sizeof(uint32_t));
    uint32_t* const prev = (uint32_t*)malloc(n * sizeof(uint32_t));
    merge_cand* const heap = (merge_cand*)malloc(2 * n * sizeof(merge_cand));
    size_t nh = 0, i, r = 0;
    uint32_t const none = UINT32_MAX;
    if (!id || !next || !prev || !heap) {
        free(id); free(next); free(prev); free(heap);
        RETURN_ERROR(memory_allocation, "bpe");
    }
    for (i = 0; i < n; i++) {
        id[i] = t->charToken[s[i]];
        prev[i] = i ? (uint32_t)i - 1 : none;
        next[i] = i + 1 < n ? (uint32_t)i + 1 : none;
    }
    for (i = 0; i + 1 < n; i++) offer(t, heap, &nh, id, (uint32_t)i, (uint32_t)i + 1);
    while (nh) {
        merge_cand const c = heap_pop(heap, &nh);
        size_t slot;
        /* stale: a side was merged away or changed since it was offered */
        if (next[c.left] != c.right || id[c.left] != c.idL || id[c.right] != c.idR || id[c.right] == none) continue;
        slot = merge_slot(t, c.idL, c.idR);
        id[c.left] = t->mergeId[slot];
        id[c.right] = none;
        next[c.left] = next[c.right];
        if (next[c.right] != none) prev[next[c.right]] = c.left;
        /* at most two new candidates per merge: the heap never holds more
         * than 2n entries */
        if (prev[c.left] != none) offer(t, heap, &nh, id, prev[c.left], c.left);
        if (next[c.left] != none) offer(t, heap, &nh, id, c.left, next[c.left]);
    }
    for (i = 0; i != none && !glyd_isError(r); i = next[i]) r = push(out, (int)id[i]);
    free(id); free(next); free(prev); free(heap);
    return r;
}

/* One pre-token's bytes: start from their one-character tokens and apply
 * the best-ranked merge until none applies. */
static size_t bpe(const glyd_tokenizer* t, const uint8_t* s, size_t n, id_list* out)
{
    uint32_t small[256];
    uint32_t* sym = n <= 256 ? small : (uint32_t*)malloc(n * sizeof(uint32_t));
    size_t len = n, i;
    RETURN_ERROR_IF(!sym, memory_allocation, "bpe");
    if (t->ignoreMerges) {
        /* the whole piece, when the vocabulary has it */
        char buf[1024];
        size_t k = 0, id;
        for (i = 0; i < n && k + 4 < sizeof buf; i++)
            k += (size_t)utf8proc_encode_char((utf8proc_int32_t)t->byteChar[s[i]], (utf8proc_uint8_t*)buf + k);
        if (i == n && (id = map_find(t, buf, k)) != SIZE_MAX) {
            if (sym != small) free(sym);
            return push(out, (int)id);
        }
    }
    if (n > 64) {
        /* the quadratic loop below is the faster for words; runs of
         * spaces or letters can be megabytes long */
        if (sym != small) free(sym);
        return bpe_long(t, s, n, out);
    }
    for (i = 0; i < n; i++) sym[i] = t->charToken[s[i]];
    while (len > 1) {
        uint32_t bestRank = UINT32_MAX, bestId = 0;
        size_t best = 0;
        for (i = 0; i + 1 < len; i++) {
            size_t const slot = merge_slot(t, sym[i], sym[i + 1]);
            if (t->mergeKeys[slot] && t->mergeRank[slot] < bestRank) {
                bestRank = t->mergeRank[slot];
                bestId = t->mergeId[slot];
                best = i;
            }
        }
        if (bestRank == UINT32_MAX) break;
        sym[best] = bestId;
        memmove(sym + best + 1, sym + best + 2, (len - best - 2) * sizeof(uint32_t));
        len--;
    }
    for (i = 0; i < len; i++) {
        size_t const r = push(out, (int)sym[i]);
        if (glyd_isError(r)) { if (sym != small) free(sym); return r; }
    }
    if (sym != small) free(sym);
    return 0;
}

/* Text without added tokens: NFC, split, BPE. */
static size_t encode_plain(const glyd_tokenizer* t, const char* text, size_t n, id_list* out)
{
    utf8proc_uint8_t* nfc = NULL;
    utf8proc_ssize_t len;
    PCRE2_SIZE pos = 0;
    size_t r = 0;
    if (n == 0) return 0;
    len = utf8proc_map((const utf8proc_uint8_t*)text, (utf8proc_ssize_t)n, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    RETURN_ERROR_IF(len < 0, GENERIC, "text is not valid UTF-8");
    while (pos < (PCRE2_SIZE)len) {
        int const rc = pcre2_match(t->split, nfc, (PCRE2_SIZE)len, pos, 0, t->match, NULL);
        PCRE2_SIZE* const ov = pcre2_get_ovector_pointer(t->match);
        PCRE2_SIZE start = (PCRE2_SIZE)len, end = (PCRE2_SIZE)len;
        if (rc > 0) { start = ov[0]; end = ov[1]; }
        /* a stretch no alternative matched is a piece of its own */
        if (start > pos) r = bpe(t, nfc + pos, start - pos, out);
        if (!glyd_isError(r) && end > start) r = bpe(t, nfc + start, end - start, out);
        if (glyd_isError(r)) break;
        if (rc <= 0) break;
        pos = end > start ? end : end + 1; /* an empty match moves on */
    }
    free(nfc);
    return r;
}

size_t glyd_tokenizerEncode(const glyd_tokenizer* t, const char* text, size_t n, int** ids, size_t* nbIds)
{
    id_list out = { NULL, 0, 0 };
    size_t plainStart = 0, pos = 0, r = 0;
    *ids = NULL;
    *nbIds = 0;
    while (pos < n) {
        size_t k, hit = SIZE_MAX, hitLen = 0;
        for (k = 0; k < t->nbAdded; k++) {
            const char* const s = t->text[t->added[k]];
            size_t const l = strlen(s);
            if (l <= n - pos && memcmp(text + pos, s, l) == 0) { hit = t->added[k]; hitLen = l; break; }
        }
        if (hit == SIZE_MAX) { pos++; continue; }
        r = encode_plain(t, text + plainStart, pos - plainStart, &out);
        if (!glyd_isError(r)) r = push(&out, (int)hit);
        if (glyd_isError(r)) break;
        pos += hitLen;
        plainStart = pos;
    }
    if (!glyd_isError(r)) r = encode_plain(t, text + plainStart, n - plainStart, &out);
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
    size_t const id = map_find(t, text, strlen(text));
    size_t k;
    if (id != SIZE_MAX) return (int)id;
    for (k = 0; k < t->nbAdded; k++)
        if (!strcmp(t->text[t->added[k]], text)) return (int)t->added[k];
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
