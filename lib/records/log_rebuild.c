/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log_rebuild.c: log lines back from their templates and columns
 * (records.h). Every count is checked against the bytes that must hold it
 * before anything is allocated, every stream must be used up exactly, and
 * every write is bounded by the size the header promises.
 */
#include <stdlib.h>

#include "records.h"

typedef struct {
    const uint8_t* p;
    size_t size, pos;
} reader;

static inline int read_varint(reader* r, uint64_t* v)
{
    size_t n;
    if (r->pos < r->size && r->p[r->pos] < 0x80) {
        *v = r->p[r->pos++]; /* most values: one byte */
        return 1;
    }
    n = glyd_readVarint(r->p + r->pos, r->size - r->pos, v);
    r->pos += n;
    return n != 0;
}

/* Where a string value lies in the column set, which is under 4 GiB:
 * eight bytes a value, where a pointer and a size took sixteen. */
typedef struct {
    uint32_t at, len;
} string_ref;

/* A variable's slot, once its values are read: line k's value, zeros,
 * string at [k]; a number's scale. */
typedef struct {
    const int64_t* values;
    const uint16_t* zeros;
    const string_ref* strings;
    uint64_t scale;
} slot_columns;

/* A piece of a template as the rebuild walks it: a run of literal bytes
 * (escapes undone), then a variable (GLYD_LOGCOL_INT, _DIGITS, _STRING,
 * _DECIMAL), or none (PIECE_TEXT: the text after the last variable).
 * One piece a variable, not one for its text and one for itself: the
 * rebuild's loop turns half as often. */
enum { PIECE_TEXT = 0 };
typedef struct {
    uint32_t kind;
    uint32_t textLen;
    const uint8_t* text;
    const slot_columns* slot;   /* the variable's, once bound */
} piece;

/* A template as the lines use it. */
typedef struct {
    piece* pieces;
    size_t nbPieces;
    uint64_t nbInts, nbDigits, nbStrings; /* its slots: numbers (runs of digits and decimals too), runs, strings */
    uint64_t nbDecimals;
    uint64_t lines;             /* lines that use it */
    uint64_t firstInt, firstZeros, firstString; /* its values' first index in each part */
    uint64_t firstScale;        /* its decimal slots' first in the scales */
    uint64_t seen;              /* lines rebuilt so far */
} template_use;

/* Checks a template's bytes, counts its slots and cuts it into pieces at
 * *pieces, its literal bytes at *literal (both advanced). `last` is the
 * last placeholder of the columns' version. */
static int read_template(template_use* t, const uint8_t* bytes, size_t size, uint8_t last, piece** pieces,
                         uint8_t** literal)
{
    piece* p = *pieces;
    uint8_t* lit = *literal;
    const uint8_t* text = lit; /* the literal bytes since the last variable */
    size_t i;
    t->pieces = p;
    for (i = 0; i < size; i++) {
        uint8_t c = bytes[i];
        if (c > GLYD_LOGCOL_ESCAPE && c <= last) {
            t->nbInts += c != GLYD_LOGCOL_STRING;
            t->nbDigits += c == GLYD_LOGCOL_DIGITS;
            t->nbStrings += c == GLYD_LOGCOL_STRING;
            t->nbDecimals += c == GLYD_LOGCOL_DECIMAL;
            p->kind = c;
            p->textLen = (uint32_t)(lit - text);
            p->text = text;
            p->slot = NULL;
            p++;
            text = lit;
            continue;
        }
        if (c == GLYD_LOGCOL_ESCAPE) {
            if (++i == size || bytes[i] < GLYD_LOGCOL_ESCAPE || bytes[i] > last) return 0;
            c = bytes[i];
        }
        *lit++ = c;
    }
    if (lit > text) {
        p->kind = PIECE_TEXT;
        p->textLen = (uint32_t)(lit - text);
        p->text = text;
        p->slot = NULL;
        p++;
    }
    t->nbPieces = (size_t)(p - t->pieces);
    *pieces = p;
    *literal = lit;
    return 1;
}

/* *total += a * b, refusing anything beyond limit. */
static int add_product(uint64_t* total, uint64_t a, uint64_t b, uint64_t limit)
{
    if (a && b > (limit - *total) / a) return 0;
    *total += a * b;
    return 1;
}

static const char kDigitPairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                  "8081828384858687888990919293949596979899";

/* The decimal digits of u, as few as it takes, ending at `at`; returns
 * where they start. */
static uint8_t* put_digits(uint8_t* at, uint64_t u)
{
    for (; u >= 100; u /= 100) memcpy(at -= 2, kDigitPairs + 2 * (u % 100), 2);
    if (u >= 10) memcpy(at -= 2, kDigitPairs + 2 * u, 2);
    else *--at = (uint8_t)('0' + u);
    return at;
}

/* How many decimal digits u takes (1 for 0). */
static inline size_t digit_count(uint64_t u)
{
    static const uint64_t kPow10[20] = { 1ull,
                                         10ull,
                                         100ull,
                                         1000ull,
                                         10000ull,
                                         100000ull,
                                         1000000ull,
                                         10000000ull,
                                         100000000ull,
                                         1000000000ull,
                                         10000000000ull,
                                         100000000000ull,
                                         1000000000000ull,
                                         10000000000000ull,
                                         100000000000000ull,
                                         1000000000000000ull,
                                         10000000000000000ull,
                                         100000000000000000ull,
                                         1000000000000000000ull,
                                         10000000000000000000ull };
    /* log10(2) ~ 1233 / 4096: t is the count or one more */
    size_t const t = ((glyd_highbit64(u | 1) + 1) * 1233) >> 12;
    return t + 1 - ((u | 1) < kPow10[t]);
}

/* Number variable `kind` of the k-th line of its slot, as text at out
 * (room bytes there): an integer, a run of digits after its leading zeros,
 * or a decimal (its scale's digits after the point, less the dropped
 * zeros; all of them: no point). Returns its size, or (size_t)-1 for a
 * value the encoder cannot have written (a negative run, one over
 * GLYD_LOGCOL_DIGITS_MAX digits, a decimal's integer part over
 * GLYD_LOGCOL_DECIMAL_DIGITS, dropped digits that are not zeros) or text
 * that does not fit. The size comes first and the digits go straight to
 * out, last first, not built elsewhere and copied (read back before their
 * stores are done); divisions are by constants only. */
static size_t put_number(uint8_t* out, size_t room, uint32_t kind, const slot_columns* s, uint64_t k)
{
    int64_t const v = s->values[k];
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    uint64_t zeros = 0, shown = 0;
    size_t len;
    uint8_t* at;
    if (kind == GLYD_LOGCOL_DECIMAL) {
        uint64_t drop = s->zeros[k] & 0xFF; /* at most the scale (read_decimal_zeros) */
        size_t whole;
        zeros = s->zeros[k] >> 8;
        shown = s->scale - drop;
        for (; drop; drop--, u /= 10)
            if (u % 10) return (size_t)-1;
        whole = digit_count(u);
        whole = whole > shown ? whole - shown : 1;
        if (whole > GLYD_LOGCOL_DECIMAL_DIGITS) return (size_t)-1;
        len = (v < 0) + zeros + whole + (shown ? shown + 1 : 0);
    } else if (kind == GLYD_LOGCOL_DIGITS) {
        zeros = s->zeros[k];
        len = digit_count(u);
        if (v < 0 || len > GLYD_LOGCOL_DIGITS_MAX || zeros > GLYD_LOGCOL_DIGITS_MAX - len) return (size_t)-1;
        len += zeros;
    } else {
        len = (v < 0) + digit_count(u);
    }
    if (len > room) return (size_t)-1;
    at = out + len;
    if (shown) {
        for (; shown >= 2; shown -= 2, u /= 100) memcpy(at -= 2, kDigitPairs + 2 * (u % 100), 2);
        if (shown) {
            *--at = (uint8_t)('0' + u % 10);
            u /= 10;
        }
        *--at = '.';
    }
    at = put_digits(at, u);
    for (; zeros; zeros--) *--at = '0';
    if (v < 0) *--at = '-';
    assert(at == out);
    return len;
}

/* Copies len bytes to dst, which has room for `room`, from src, readable
 * for `readable`. A short copy with 16 bytes to spare both ways moves 16
 * at a time, writing past len: bytes the rest of the text overwrites. */
static inline void copy_bytes(uint8_t* dst, size_t room, const uint8_t* src, size_t len, size_t readable)
{
    if (len <= 16 && room >= 16 && readable >= 16) {
        memcpy(dst, src, 16);
    } else if (len <= 64 && len + 16 <= room && len + 16 <= readable) {
        size_t i = 0;
        do {
            memcpy(dst + i, src + i, 16);
            i += 16;
        } while (i < len);
    } else {
        memcpy(dst, src, len);
    }
}

/* Everything the rebuild reads. */
typedef struct {
    uint8_t version;
    uint8_t last;               /* the last placeholder of the columns' version */
    template_use* templates;
    slot_columns* slots;        /* every template's variables', one after the other */
    uint64_t nbSlots;
    piece* pieces;              /* every template's, one after the other */
    uint8_t* literal;           /* their literal bytes, 16 bytes to spare */
    const uint8_t* start;       /* of the column set, where string_refs count from */
    const uint8_t* end;         /* of the column set: strings are readable up to it */
    uint64_t nbTemplates;
    uint32_t* lineTemplate;
    uint8_t* joined;            /* per line, where lines say whether they were cut from the next */
    uint64_t nbLines;
    int64_t* ints;
    uint16_t* zeros;            /* a decimal's: its leading zeros << 8 | the digits it drops */
    uint64_t* scales;           /* per decimal slot, its fraction's digits */
    string_ref* strings;
    glyd_logScratch* scratch;   /* where the arrays above live */
    glyd_customMem mem;
} columns;

/* An array of scratch's, of `size` bytes (zeros where `zeroed`), its
 * earlier contents not kept. */
static void* take_array(columns* c, unsigned array, size_t size, int zeroed)
{
    glyd_buffer* const b = &c->scratch->array[array];
    if (GLYD_IS_ERROR(glyd_bufferReserve(b, size, c->mem))) return NULL;
    if (zeroed) memset(b->buf, 0, size);
    return b->buf;
}

void glyd_logScratchFree(glyd_logScratch* s, glyd_customMem mem)
{
    unsigned k;
    for (k = 0; k < GLYD_LOGSCRATCH_ARRAYS; k++) glyd_bufferFree(&s->array[k], mem);
}

static size_t read_templates(columns* c, reader r)
{
    uint64_t k;
    piece* pieces;
    uint8_t* literal;
    RETURN_ERROR_IF(c->nbTemplates > r.size || c->nbTemplates > UINT32_MAX, corruption_detected,
                    "more templates than bytes");
    /* a template's pieces and literal bytes are no more than its bytes */
    c->templates = (template_use*)take_array(c, GLYD_LOGSCRATCH_TEMPLATES,
                                             ((size_t)c->nbTemplates + 1) * sizeof(template_use), 1);
    c->pieces = pieces = (piece*)take_array(c, GLYD_LOGSCRATCH_PIECES, (r.size + 1) * sizeof(piece), 0);
    c->literal = literal = (uint8_t*)take_array(c, GLYD_LOGSCRATCH_LITERAL, r.size + 16, 0);
    RETURN_ERROR_IF(!c->templates || !pieces || !literal, memory_allocation, "log templates");
    for (k = 0; k < c->nbTemplates; k++) {
        template_use* const t = &c->templates[k];
        uint64_t len;
        RETURN_ERROR_IF(!read_varint(&r, &len) || len > r.size - r.pos, corruption_detected, "template length");
        RETURN_ERROR_IF(!read_template(t, r.p + r.pos, (size_t)len, c->last, &pieces, &literal),
                        corruption_detected, "template bytes");
        c->nbSlots += t->nbInts + t->nbStrings;
        r.pos += (size_t)len;
    }
    RETURN_ERROR_IF(r.pos != r.size, corruption_detected, "template bytes left over");
    return 0;
}

/* Each line's template, and where the header says so (joinedLines), in
 * the low bit whether it was cut from the next line: no newline between
 * them, and never after the last. */
static size_t read_lines(columns* c, reader r, int joinedLines)
{
    uint64_t i;
    RETURN_ERROR_IF(c->nbLines > r.size, corruption_detected, "more lines than bytes");
    c->lineTemplate = (uint32_t*)take_array(c, GLYD_LOGSCRATCH_LINES, (size_t)c->nbLines * sizeof(uint32_t) + 1, 0);
    RETURN_ERROR_IF(!c->lineTemplate, memory_allocation, "log lines");
    if (joinedLines) {
        c->joined = (uint8_t*)take_array(c, GLYD_LOGSCRATCH_JOINED, (size_t)c->nbLines + 1, 0);
        RETURN_ERROR_IF(!c->joined, memory_allocation, "log lines");
    }
    for (i = 0; i < c->nbLines; i++) {
        uint64_t t;
        RETURN_ERROR_IF(!read_varint(&r, &t), corruption_detected, "line's template");
        if (joinedLines) {
            c->joined[i] = (uint8_t)(t & 1);
            t >>= 1;
            RETURN_ERROR_IF(c->joined[i] && i + 1 == c->nbLines, corruption_detected, "last line cut from none");
        }
        RETURN_ERROR_IF(t >= c->nbTemplates, corruption_detected, "line's template");
        c->lineTemplate[i] = (uint32_t)t;
        c->templates[t].lines++;
    }
    RETURN_ERROR_IF(r.pos != r.size, corruption_detected, "line bytes left over");
    return 0;
}

/* n values from their zigzag deltas: from bases[] where given, else from
 * each previous value (the first from 0). */
static size_t read_deltas(reader* r, int64_t* values, const int64_t* bases, uint64_t n)
{
    const uint8_t* at = r->p + r->pos;
    const uint8_t* const end = r->p + r->size;
    uint64_t previous = 0, i;
    for (i = 0; i < n; i++) {
        uint64_t d;
        if (at < end && *at < 0x80) {
            d = *at++;
        } else {
            size_t const k = glyd_readVarint(at, (size_t)(end - at), &d);
            RETURN_ERROR_IF(k == 0, corruption_detected, "integer column");
            at += k;
        }
        if (bases) previous = (uint64_t)bases[i];
        previous += (d >> 1) ^ (0 - (d & 1));
        values[i] = (int64_t)previous;
    }
    r->pos = (size_t)(at - r->p);
    return 0;
}

/* A decimal slot's zeros: its scale and base (packed in *scale as
 * base << 8 | scale; the base at most `number`, the number slots before
 * it), then each value's form: its leading zeros and (for a scale above 0)
 * the digits it drops from that scale, as one number (unpacked to lz << 8
 * | drop). Version 2 writes forms as varints; version 3 packs them in as
 * many bits as the slot's largest takes, a count the header carries. */
static size_t read_decimal_zeros(reader* rz, int packed, uint64_t lines, uint64_t number, uint64_t* scale,
                                 uint16_t* zeros)
{
    uint64_t n, sc, base, width = 0, acc = 0, held = 0;
    RETURN_ERROR_IF(!read_varint(rz, &sc), corruption_detected, "decimal scale");
    if (packed) {
        width = sc % (GLYD_LOGCOL_FORM_BITS + 1);
        sc /= GLYD_LOGCOL_FORM_BITS + 1;
        RETURN_ERROR_IF((lines * width + 7) / 8 > rz->size - rz->pos, corruption_detected, "decimal forms");
    }
    base = sc / (GLYD_LOGCOL_DECIMAL_DIGITS + 1);
    sc %= GLYD_LOGCOL_DECIMAL_DIGITS + 1;
    RETURN_ERROR_IF(base > number, corruption_detected, "decimal base");
    *scale = base << 8 | sc;
    for (n = 0; n < lines; n++) {
        uint64_t v;
        if (!packed) {
            RETURN_ERROR_IF(!read_varint(rz, &v), corruption_detected, "decimal zeros");
        } else {
            if (held < width) {
                acc |= (uint64_t)rz->p[rz->pos++] << held;
                held += 8;
            }
            v = acc & ((1u << width) - 1);
            acc >>= width;
            held -= width;
        }
        RETURN_ERROR_IF(v >= (GLYD_LOGCOL_DIGITS_MAX + 1) * (sc + 1), corruption_detected, "decimal zeros");
        /* most numbers have no leading zeros: no division */
        zeros[n] = (uint16_t)(v <= sc ? v : sc ? (v / (sc + 1)) << 8 | v % (sc + 1) : v << 8);
    }
    /* the last byte's bits past the forms are zeros */
    RETURN_ERROR_IF(acc, corruption_detected, "decimal forms");
    return 0;
}

/* The value parts, by template, slot and line, as the encoder wrote them. */
static size_t read_values(columns* c, reader ri, reader rz, reader rr, reader rs)
{
    uint64_t nbInts = 0, nbZeros = 0, nbStrings = 0, nbScales = 0, k, slot, n, z = 0, j = 0, sc = 0;
    for (k = 0; k < c->nbTemplates; k++) {
        template_use* const t = &c->templates[k];
        t->firstInt = nbInts;
        t->firstZeros = nbZeros;
        t->firstString = nbStrings;
        t->firstScale = nbScales;
        /* each value takes a byte at least */
        RETURN_ERROR_IF(!add_product(&nbInts, t->nbInts, t->lines, ri.size), corruption_detected, "integer count");
        /* (each run's or number's zeros beside its value: packed forms may take no byte) */
        RETURN_ERROR_IF(!add_product(&nbZeros, t->nbDigits + t->nbDecimals, t->lines, ri.size), corruption_detected,
                        "zeros count");
        RETURN_ERROR_IF(!add_product(&nbStrings, t->nbStrings, t->lines, rr.size), corruption_detected,
                        "string count");
        RETURN_ERROR_IF(!add_product(&nbScales, t->nbDecimals, 1, rz.size), corruption_detected, "scale count");
    }
    c->ints = (int64_t*)take_array(c, GLYD_LOGSCRATCH_INTS, (size_t)nbInts * sizeof(int64_t) + 1, 0);
    c->zeros = (uint16_t*)take_array(c, GLYD_LOGSCRATCH_ZEROS, (size_t)nbZeros * sizeof(uint16_t) + 1, 0);
    c->scales = (uint64_t*)take_array(c, GLYD_LOGSCRATCH_SCALES, (size_t)nbScales * sizeof(uint64_t) + 1, 0);
    c->strings = (string_ref*)take_array(c, GLYD_LOGSCRATCH_STRINGS, (size_t)nbStrings * sizeof(string_ref) + 1, 0);
    RETURN_ERROR_IF(!c->ints || !c->zeros || !c->scales || !c->strings, memory_allocation,
                    "log columns");
    for (k = 0; k < c->nbTemplates; k++) {
        const template_use* const t = &c->templates[k];
        const piece* p;
        uint64_t number = 0, decimal = 0;
        /* zeros first, slot by slot (runs of digits and decimals in template
         * order): a decimal slot's base says how its integers are coded */
        for (p = t->pieces; p < t->pieces + t->nbPieces; p++) {
            if (p->kind == GLYD_LOGCOL_DIGITS) {
                for (n = 0; n < t->lines; n++, z++)
                {
                    uint64_t v;
                    /* a run's zeros and digits are GLYD_LOGCOL_DIGITS_MAX at most */
                    RETURN_ERROR_IF(!read_varint(&rz, &v) || v > GLYD_LOGCOL_DIGITS_MAX, corruption_detected,
                                    "zeros column");
                    c->zeros[z] = (uint16_t)v;
                }
            } else if (p->kind == GLYD_LOGCOL_DECIMAL) {
                FORWARD_IF_ERROR(
                    read_decimal_zeros(&rz, c->version >= 3, t->lines, number, &c->scales[sc++], &c->zeros[z]));
                z += t->lines;
            }
            number += p->kind != PIECE_TEXT && p->kind != GLYD_LOGCOL_STRING;
        }
        for (p = t->pieces, slot = 0; p < t->pieces + t->nbPieces; p++) {
            uint64_t base = 0;
            int64_t* const values = c->ints + t->firstInt + slot * t->lines;
            if (p->kind == PIECE_TEXT || p->kind == GLYD_LOGCOL_STRING) continue;
            if (p->kind == GLYD_LOGCOL_DECIMAL) base = c->scales[t->firstScale + decimal++] >> 8;
            FORWARD_IF_ERROR(read_deltas(&ri, values, base ? values - base * t->lines : NULL, t->lines));
            slot++;
        }
        for (slot = 0; slot < t->nbStrings; slot++) {
            /* the slot's recent values, by their index j, the most recent first */
            uint64_t recent[GLYD_LOGCOL_RECENT], nbRecent = 0;
            for (n = 0; n < t->lines; n++, j++) {
                uint64_t rank, m;
                RETURN_ERROR_IF(!read_varint(&rr, &rank) || rank > nbRecent, corruption_detected, "string reference");
                if (rank) {
                    c->strings[j] = c->strings[recent[rank - 1]];
                    m = rank - 1;
                } else {
                    uint64_t len;
                    RETURN_ERROR_IF(!read_varint(&rs, &len) || len > rs.size - rs.pos, corruption_detected,
                                    "string column");
                    c->strings[j].at = (uint32_t)(rs.p + rs.pos - c->start);
                    c->strings[j].len = (uint32_t)len;
                    rs.pos += (size_t)len;
                    m = nbRecent < GLYD_LOGCOL_RECENT ? nbRecent++ : GLYD_LOGCOL_RECENT - 1;
                }
                for (; m > 0; m--) recent[m] = recent[m - 1];
                recent[0] = j;
            }
        }
    }
    RETURN_ERROR_IF(ri.pos != ri.size || rz.pos != rz.size || rr.pos != rr.size || rs.pos != rs.size,
                    corruption_detected, "column bytes left over");
    return 0;
}

/* Numbers each variable of each template and points its slot at its
 * values. */
static size_t bind_slots(columns* c)
{
    uint64_t k, at = 0;
    c->slots = (slot_columns*)take_array(c, GLYD_LOGSCRATCH_SLOTS, ((size_t)c->nbSlots + 1) * sizeof(slot_columns), 1);
    RETURN_ERROR_IF(!c->slots, memory_allocation, "log columns");
    for (k = 0; k < c->nbTemplates; k++) {
        const template_use* const t = &c->templates[k];
        uint64_t number = 0, zero = 0, string = 0, decimal = 0;
        piece* p;
        for (p = t->pieces; p < t->pieces + t->nbPieces; p++) {
            slot_columns* const s = &c->slots[at];
            if (p->kind == PIECE_TEXT) continue;
            p->slot = s;
            at++;
            if (p->kind == GLYD_LOGCOL_STRING) {
                s->strings = c->strings + t->firstString + string++ * t->lines;
                continue;
            }
            s->values = c->ints + t->firstInt + number++ * t->lines;
            if (p->kind == GLYD_LOGCOL_INT) continue;
            s->zeros = c->zeros + t->firstZeros + zero++ * t->lines;
            if (p->kind == GLYD_LOGCOL_DECIMAL) s->scale = c->scales[t->firstScale + decimal++] & 0xFF;
        }
    }
    return 0;
}

/* Line i into out[0..room); returns its size, or (size_t)-1 if it does not
 * fit or its values are not what its template asks. */
static size_t rebuild_line(columns* c, uint64_t i, uint8_t* out, size_t room)
{
    template_use* const t = &c->templates[c->lineTemplate[i]];
    uint64_t const k = t->seen++;
    const piece* p;
    size_t n = 0;
    for (p = t->pieces; p < t->pieces + t->nbPieces; p++) {
        if (p->textLen > room - n) return (size_t)-1;
        copy_bytes(out + n, room - n, p->text, p->textLen, p->textLen + 16); /* the store has 16 to spare */
        n += p->textLen;
        if (p->kind == GLYD_LOGCOL_STRING) {
            string_ref const r = p->slot->strings[k];
            const uint8_t* const text = c->start + r.at;
            if (r.len > room - n) return (size_t)-1;
            copy_bytes(out + n, room - n, text, r.len, (size_t)(c->end - text));
            n += r.len;
        } else if (p->kind != PIECE_TEXT) {
            size_t const len = put_number(out + n, room - n, p->kind, p->slot, k);
            if (len == (size_t)-1) return (size_t)-1;
            n += len;
        }
    }
    return n;
}

size_t glyd_logRebuiltSize(const void* src, size_t size)
{
    reader r = { (const uint8_t*)src, size, 0 };
    uint64_t n;
    RETURN_ERROR_IF(size < 1 || r.p[0] < 1 || r.p[0] > GLYD_LOGCOL_VERSION, corruption_detected,
                    "log columns version");
    r.pos = 1;
    RETURN_ERROR_IF(!read_varint(&r, &n) || n > (uint64_t)(SIZE_MAX / 2), corruption_detected, "log columns size");
    return (size_t)n;
}

/* The header of a column set: its counts and the sizes of its six parts,
 * which must fill the rest exactly. */
typedef struct {
    uint64_t rebuilt, nbLines, nbTemplates, sizes[6];
    uint8_t noFinalNewline, joinedLines;
    size_t size;
} head;

static size_t read_head(head* h, const void* src, size_t size)
{
    reader r = { (const uint8_t*)src, size, 0 };
    uint64_t left;
    unsigned s;
    h->rebuilt = glyd_logRebuiltSize(src, size);
    FORWARD_IF_ERROR(h->rebuilt);
    r.pos = 1 + glyd_varintSize(h->rebuilt);
    RETURN_ERROR_IF(!read_varint(&r, &h->nbLines) || r.pos >= size, corruption_detected, "log columns header");
    {
        uint8_t const flags = r.p[r.pos++];
        uint8_t const known = GLYD_LOGCOL_FLAG_NO_FINAL_NEWLINE | (r.p[0] >= 4 ? GLYD_LOGCOL_FLAG_JOINED : 0);
        h->noFinalNewline = flags & GLYD_LOGCOL_FLAG_NO_FINAL_NEWLINE;
        h->joinedLines = (flags & GLYD_LOGCOL_FLAG_JOINED) != 0;
        RETURN_ERROR_IF((flags & ~known) || (h->noFinalNewline && !h->nbLines), corruption_detected,
                        "log columns flags");
    }
    RETURN_ERROR_IF(!read_varint(&r, &h->nbTemplates), corruption_detected, "log columns header");
    for (s = 0; s < 6; s++) RETURN_ERROR_IF(!read_varint(&r, &h->sizes[s]), corruption_detected, "log columns header");
    left = size - r.pos;
    for (s = 0; s < 6; s++) {
        RETURN_ERROR_IF(h->sizes[s] > left, corruption_detected, "log column sizes");
        left -= h->sizes[s];
    }
    RETURN_ERROR_IF(left != 0, corruption_detected, "log column sizes");
    h->size = r.pos;
    return 0;
}

size_t glyd_logColumnPieces(const void* src, size_t size, size_t pieces[GLYD_LOGCOL_PIECES])
{
    head h;
    unsigned s;
    FORWARD_IF_ERROR(read_head(&h, src, size));
    pieces[0] = h.size;
    for (s = 0; s < 6; s++) pieces[s + 1] = (size_t)h.sizes[s];
    return 0;
}

size_t glyd_logFromColumns(void* dst, size_t dstCapacity, const void* src, size_t size)
{
    glyd_logScratch scratch;
    size_t r;
    memset(&scratch, 0, sizeof scratch);
    r = glyd_logFromColumnsIn(dst, dstCapacity, src, size, &scratch, glyd_defaultCMem);
    glyd_logScratchFree(&scratch, glyd_defaultCMem);
    return r;
}

size_t glyd_logFromColumnsIn(void* dst, size_t dstCapacity, const void* src, size_t size, glyd_logScratch* scratch,
                             glyd_customMem mem)
{
    reader r = { (const uint8_t*)src, size, 0 };
    columns c;
    head h;
    uint64_t rebuilt, i;
    size_t at = 0, result = 0;
    unsigned s;
    memset(&c, 0, sizeof c);
    c.scratch = scratch;
    c.mem = mem;
    FORWARD_IF_ERROR(read_head(&h, src, size));
    RETURN_ERROR_IF(size > UINT32_MAX, corruption_detected, "log columns over 4 GiB");
    c.start = (const uint8_t*)src;
    c.end = (const uint8_t*)src + size;
    c.version = ((const uint8_t*)src)[0];
    c.last = c.version >= 2 ? GLYD_LOGCOL_DECIMAL : GLYD_LOGCOL_STRING;
    rebuilt = h.rebuilt;
    c.nbLines = h.nbLines;
    c.nbTemplates = h.nbTemplates;
    r.pos = h.size;
    RETURN_ERROR_IF(rebuilt > dstCapacity, dstSize_tooSmall, "log text");
    {
        reader part[6];
        for (s = 0; s < 6; s++) {
            part[s].p = r.p + r.pos;
            part[s].size = (size_t)h.sizes[s];
            part[s].pos = 0;
            r.pos += (size_t)h.sizes[s];
        }
        result = read_templates(&c, part[0]);
        if (!GLYD_IS_ERROR(result)) result = read_lines(&c, part[1], h.joinedLines);
        if (!GLYD_IS_ERROR(result)) result = read_values(&c, part[2], part[3], part[4], part[5]);
        if (!GLYD_IS_ERROR(result)) result = bind_slots(&c);
    }
    for (i = 0; i < c.nbLines && !GLYD_IS_ERROR(result); i++) {
        size_t const n = rebuild_line(&c, i, (uint8_t*)dst + at, (size_t)rebuilt - at);
        if (n == (size_t)-1) { result = GLYD_ERROR(corruption_detected); break; }
        at += n;
        if (c.joined && c.joined[i]) continue;
        if (i + 1 < c.nbLines || !h.noFinalNewline) {
            if (at == rebuilt) { result = GLYD_ERROR(corruption_detected); break; }
            ((uint8_t*)dst)[at++] = '\n';
        }
    }
    if (!GLYD_IS_ERROR(result)) result = at == rebuilt ? at : GLYD_ERROR(corruption_detected);
    return result;
}
