/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * match_opt.c: the finder and parser of the high levels (btopt, btultra,
 * btultra2).
 *
 * Finding: the chain table holds a binary tree per hash bucket of earlier
 * positions ordered by their suffixes (newest at the root). Inserting a
 * position walks down the tree as a search, which meets the candidates that
 * share the longest prefixes with it; every match longer than the ones met
 * before is kept. A block's matches are found once, position by position,
 * and cached, so that the parser can run several passes over them.
 *
 * Parsing: a forward dynamic program over the block's positions. Each
 * position keeps the cheapest way found to reach it (in 1/256 bits: literal
 * bytes, then literal-length, match-length and offset codes with their extra
 * bits, priced from statistics of the coded symbols) and the repeat offsets
 * along that way, so that repeat matches are tried and priced exactly as the
 * format names them. The cheapest way to the block's end is then emitted.
 * Prices come from the statistics of the previous parse: the previous block's
 * on later blocks, a first pass over the block's own matches on the first
 * block of a history. Each further pass is priced from the one before; the
 * stronger strategies run more passes, and several chains of passes from
 * different starting prices (see find_opt), keeping the cheapest parse.
 */
#include <math.h>

#include "lz.h"

#define PRICE_ONE  256                 /* one bit */
#define PRICE_INF  INT64_MAX
/* Most tree matches kept per position (of increasing length; when there
 * are more, the longest are kept). */
#define OPT_MAX_MATCHES 48
/* Cached tree matches per position, on average, that the cache allows
 * before it keeps only the longest match of each position. */
#define OPT_MATCHES_PER_POS 4
/* A match this long ends a tree walk. Stopping early drops the nodes below
 * (see bt_insert_find), so it is left to pathological inputs: the parser
 * stops looking at shorter lengths (targetLength) anyway. */
#define OPT_STOP_LEN 4096
/* Inside a repetition whose match at a position runs this far, not every
 * position is inserted (else a long run costs time quadratic in its length). */
#define OPT_REPEAT_LEN 384
/* Lengths priced from tables; longer ones are priced from their codes. */
#define LL_TAB 64
#define ML_TAB 512

typedef struct { uint32_t off, len; } opt_match;

/* The cheapest way found to a position. */
typedef struct {
    int64_t price;           /* everything before, plus the pending literal run's length code
                              * (64 bits: a 1 MiB block of literals passes 2^31) */
    uint32_t mlen;           /* 0: reached by a literal; else the match ending here */
    uint32_t offBase;        /* that match's offBase, as coded */
    uint32_t litlen;         /* literals since the last match */
    uint32_t rep[GLYD_REP_NUM]; /* repeat offsets after this position's path */
} opt_node;

typedef struct { uint32_t start, len, offBase; } opt_seq;

/* How hard a strategy works on a block. */
typedef struct {
    unsigned chains;      /* parses started from different prices; the cheapest wins */
    unsigned firstPasses; /* passes of a chain with no earlier block to learn from */
    unsigned passes;      /* passes of a chain started from the previous block's statistics */
} opt_effort;

static const opt_effort kBtOpt = { 1, 2, 1 };
static const opt_effort kBtUltra = { 2, 3, 2 };
static const opt_effort kBtUltra2 = { 3, 5, 4 };

/* Symbol statistics of a parse. */
typedef struct {
    uint32_t lit[256];
    uint32_t ll[GLYD_LL_MAX_CODE + 1];
    uint32_t ml[GLYD_ML_MAX_CODE + 1];
    uint32_t of[GLYD_OF_MAX_CODE + 1];
    uint64_t extraBits;      /* the codes' extra bits, in total */
} opt_stats;

typedef struct {
    int32_t lit[256];
    int32_t llCode[GLYD_LL_MAX_CODE + 1];
    int32_t mlCode[GLYD_ML_MAX_CODE + 1];
    int32_t ofCode[GLYD_OF_MAX_CODE + 1];  /* extra bits included */
    int32_t llLen[LL_TAB];                 /* literal length < LL_TAB, extra bits included */
    int32_t mlLen[ML_TAB];                 /* match length < ML_TAB, extra bits included */
} opt_prices;

struct glyd_optState_s {
    glyd_customMem mem;
    size_t blockMax;
    uint32_t* matchAt;       /* (blockMax + 1): first cached match of each position */
    opt_match* matches;      /* (matchCap) */
    size_t matchCap;
    opt_node* node;          /* (blockMax + 1) */
    opt_seq* path[2];        /* (blockMax / GLYD_MINMATCH + 1): the best parse, and a candidate */
    opt_stats seed;          /* statistics of the last parse: the next one's prices */
    int seedValid;
    uint32_t seedLowLimit;   /* history (its lowLimit) the seed belongs to */
    opt_prices pr;
};

glyd_optState* glyd_lzCreateOptState(size_t blockMax, glyd_customMem mem)
{
    glyd_optState* const o = (glyd_optState*)glyd_calloc(sizeof(*o), mem);
    if (!o) return NULL;
    o->mem = mem;
    o->blockMax = blockMax;
    o->matchCap = blockMax * OPT_MATCHES_PER_POS + OPT_MAX_MATCHES;
    o->matchAt = (uint32_t*)glyd_malloc((blockMax + 1) * sizeof(uint32_t), mem);
    o->matches = (opt_match*)glyd_malloc(o->matchCap * sizeof(opt_match), mem);
    o->node = (opt_node*)glyd_malloc((blockMax + 1) * sizeof(opt_node), mem);
    o->path[0] = (opt_seq*)glyd_malloc((blockMax / GLYD_MINMATCH + 1) * sizeof(opt_seq), mem);
    o->path[1] = (opt_seq*)glyd_malloc((blockMax / GLYD_MINMATCH + 1) * sizeof(opt_seq), mem);
    if (!o->matchAt || !o->matches || !o->node || !o->path[0] || !o->path[1]) {
        glyd_lzFreeOptState(o);
        return NULL;
    }
    return o;
}

void glyd_lzFreeOptState(glyd_optState* o)
{
    if (!o) return;
    glyd_free(o->matchAt, o->mem);
    glyd_free(o->matches, o->mem);
    glyd_free(o->node, o->mem);
    glyd_free(o->path[0], o->mem);
    glyd_free(o->path[1], o->mem);
    glyd_free(o, o->mem);
}

/* ------------------------------------------------------------------------ */
/* Prices                                                                   */
/* ------------------------------------------------------------------------ */

/* Prices of symbols 0..n-1 from their counts: -log2 of their frequency,
 * capped at maxBits (what an absent or rare symbol costs in a table of
 * that precision). A small pseudo-count keeps absent symbols finite. */
static void prices_from_counts(int32_t* price, const uint32_t* count, unsigned n, double maxBits)
{
    double const pseudo = 0.3;
    double total = 0;
    unsigned s;
    for (s = 0; s < n; s++) total += count[s] + pseudo;
    for (s = 0; s < n; s++) {
        double bits = log2(total / (count[s] + pseudo));
        if (bits > maxBits) bits = maxBits;
        price[s] = (int32_t)(bits * PRICE_ONE + 0.5);
    }
}

/* Literal prices as a Huffman code of these counts would code them; an
 * absent literal costs a bit more than the longest code. False if there is
 * no such code (fewer than two literals seen). */
static int prices_huffman(int32_t* price, const uint32_t* count)
{
    glyd_hufCTable ct;
    unsigned c[256], maxSymbol = 0, present = 0, s;
    size_t maxBits;
    for (s = 0; s < 256; s++) {
        c[s] = count[s];
        if (c[s]) { maxSymbol = s; present++; }
    }
    if (present < 2) return 0;
    maxBits = glyd_hufBuildCTable(&ct, c, maxSymbol, GLYD_HUF_MAX_BITS);
    if (GLYD_IS_ERROR(maxBits)) return 0;
    for (s = 0; s < 256; s++)
        price[s] = (s <= maxSymbol && ct.len[s]) ? ct.len[s] * PRICE_ONE : (int32_t)(maxBits + 1) * PRICE_ONE;
    return 1;
}

static void set_prices(opt_prices* pr, const opt_stats* st)
{
    unsigned c, len;
    /* Literals: the lengths of the Huffman code the block coder would
     * build (integer lengths matter: a literal of probability 0.3 costs 2
     * bits, not 1.7). Codes: tANS codes fractional bits, at most about the
     * table's log (2^9 states at most). */
    if (!prices_huffman(pr->lit, st->lit)) prices_from_counts(pr->lit, st->lit, 256, GLYD_HUF_MAX_BITS);
    prices_from_counts(pr->llCode, st->ll, GLYD_LL_MAX_CODE + 1, GLYD_LL_MAX_LOG);
    prices_from_counts(pr->mlCode, st->ml, GLYD_ML_MAX_CODE + 1, GLYD_ML_MAX_LOG);
    prices_from_counts(pr->ofCode, st->of, GLYD_OF_MAX_CODE + 1, GLYD_OF_MAX_LOG);
    for (c = 0; c <= GLYD_OF_MAX_CODE; c++) pr->ofCode[c] += (int32_t)c * PRICE_ONE;
    for (len = 0; len < LL_TAB; len++) {
        c = glyd_llCode(len);
        pr->llLen[len] = pr->llCode[c] + glyd_llBits[c] * PRICE_ONE;
    }
    for (len = 0; len < ML_TAB; len++) {
        c = glyd_mlCode(len >= GLYD_MINMATCH ? len - GLYD_MINMATCH : 0);
        pr->mlLen[len] = pr->mlCode[c] + glyd_mlBits[c] * PRICE_ONE;
    }
}

GLYD_FORCE_INLINE int32_t ll_price(const opt_prices* pr, uint32_t ll)
{
    unsigned c;
    if (ll < LL_TAB) return pr->llLen[ll];
    c = glyd_llCode(ll);
    return pr->llCode[c] + glyd_llBits[c] * PRICE_ONE;
}

GLYD_FORCE_INLINE int32_t ml_price(const opt_prices* pr, uint32_t ml)
{
    unsigned c;
    if (ml < ML_TAB) return pr->mlLen[ml];
    c = glyd_mlCode(ml - GLYD_MINMATCH);
    return pr->mlCode[c] + glyd_mlBits[c] * PRICE_ONE;
}

GLYD_FORCE_INLINE int32_t of_price(const opt_prices* pr, uint32_t offBase)
{
    return pr->ofCode[glyd_highbit32(offBase)];
}

/* Statistics to start from when no parse came before: the block's bytes
 * stand for its literals, and the predefined distributions (which describe
 * typical sequences) for the codes. */
static void stats_guess(opt_stats* st, const uint8_t* src, size_t n)
{
    unsigned s, maxSymbol;
    glyd_histBytes(st->lit, &maxSymbol, src, n);
    for (s = 0; s <= GLYD_LL_MAX_CODE; s++) st->ll[s] = (uint32_t)GLYD_MAX(glyd_llDefaultNorm[s], 0) * 4 + 1;
    for (s = 0; s <= GLYD_ML_MAX_CODE; s++) st->ml[s] = (uint32_t)GLYD_MAX(glyd_mlDefaultNorm[s], 0) * 4 + 1;
    for (s = 0; s <= GLYD_OF_MAX_CODE; s++) st->of[s] = (uint32_t)GLYD_MAX(glyd_ofDefaultNorm[s], 0) * 4 + 1;
    st->extraBits = 0;
}

/* The statistics of a parse of src: path[0..nbSeq) then trailing literals. */
static void stats_of_path(opt_stats* st, const uint8_t* src, size_t srcSize, const opt_seq* path, size_t nbSeq)
{
    size_t anchor = 0, i, k;
    memset(st, 0, sizeof(*st));
    for (i = 0; i < nbSeq; i++) {
        const opt_seq* const s = &path[i];
        for (k = anchor; k < s->start; k++) st->lit[src[k]]++;
        unsigned const llc = glyd_llCode(s->start - (uint32_t)anchor);
        unsigned const mlc = glyd_mlCode(s->len - GLYD_MINMATCH);
        unsigned const ofc = glyd_highbit32(s->offBase);
        st->ll[llc]++;
        st->ml[mlc]++;
        st->of[ofc]++;
        st->extraBits += glyd_llBits[llc] + glyd_mlBits[mlc] + ofc;
        anchor = s->start + s->len;
    }
    for (k = anchor; k < srcSize; k++) st->lit[src[k]]++;
}

/* Bits of n symbols coded with their own distribution. */
static double entropy_bits(const uint32_t* count, unsigned n)
{
    double total = 0, bits = 0;
    unsigned s;
    for (s = 0; s < n; s++) total += count[s];
    for (s = 0; s < n; s++)
        if (count[s]) bits += count[s] * log2(total / count[s]);
    return bits;
}

/* What a parse with these statistics costs once coded, about: every field
 * coded with its own distribution (table descriptions left out: they cost
 * about the same whatever the parse). */
static double stats_cost(const opt_stats* st)
{
    double lits = entropy_bits(st->lit, 256);
    double nbLits = 0;
    unsigned s;
    for (s = 0; s < 256; s++) nbLits += st->lit[s];
    if (lits > 8 * nbLits) lits = 8 * nbLits; /* stored raw */
    return lits + entropy_bits(st->ll, GLYD_LL_MAX_CODE + 1) + entropy_bits(st->ml, GLYD_ML_MAX_CODE + 1) +
           entropy_bits(st->of, GLYD_OF_MAX_CODE + 1) + (double)st->extraBits;
}

/* ------------------------------------------------------------------------ */
/* Binary tree                                                              */
/* ------------------------------------------------------------------------ */

/* Inserts ip's position into its bucket's tree and writes to out[] the
 * matches met on the way down, of increasing length (at least mls), and
 * returns their number. Children hold older positions than their parents,
 * so position 0 ("none") and positions below the window end every walk.
 * Whenever the walk stops early, both open links are closed: the nodes cut
 * off leave the tree, which stays ordered, so that the common prefixes that
 * the walk takes for granted are real. */
static unsigned bt_insert_find(glyd_matchState* ms, const uint8_t* ip, const uint8_t* iend,
                               uint32_t lowest, unsigned mls, size_t stopLen, opt_match* out)
{
    uint32_t* const tree = ms->chainTable;
    uint32_t const btMask = (1u << (ms->p.chainLog - 1)) - 1;
    const uint8_t* const base = ms->base;
    uint32_t const cur = (uint32_t)(ip - base);
    uint32_t const windowSize = 1u << ms->p.windowLog;
    size_t const h = glyd_hashPtr(ip, ms->p.hashLog, mls);
    uint32_t matchIdx = ms->hashTable[h];
    uint32_t* smallerPtr = tree + 2 * (cur & btMask);
    uint32_t* largerPtr = smallerPtr + 1;
    size_t commonSmaller = 0, commonLarger = 0; /* prefix shared with the bounds so far */
    size_t best = mls - 1;
    unsigned nbCompares = 1u << ms->p.searchLog;
    unsigned n = 0;
    uint32_t low = lowest;

    /* a node older than btMask positions shares its slots with a newer one */
    if (cur > windowSize && cur - windowSize > low) low = cur - windowSize;
    if (cur > btMask && cur - btMask > low) low = cur - btMask;
    ms->hashTable[h] = cur;

    while (matchIdx >= low && nbCompares-- > 0) {
        uint32_t* const next = tree + 2 * (matchIdx & btMask);
        const uint8_t* const match = base + matchIdx;
        size_t len = GLYD_MIN(commonSmaller, commonLarger);
        len += glyd_count(ip + len, match + len, iend);
        if (len > best) {
            best = len;
            if (n == OPT_MAX_MATCHES) n--; /* full: the longer replaces the last */
            out[n].off = cur - matchIdx;
            out[n].len = (uint32_t)len;
            n++;
            if (len >= stopLen) break;
        }
        if (ip + len == iend) break; /* no byte left to order them by */
        if (match[len] < ip[len]) {
            /* match sorts before ip: it hangs on the smaller side, and the
             * walk goes on among its larger descendants */
            *smallerPtr = matchIdx;
            commonSmaller = len;
            smallerPtr = next + 1;
            matchIdx = next[1];
        } else {
            *largerPtr = matchIdx;
            commonLarger = len;
            largerPtr = next;
            matchIdx = next[0];
        }
    }
    *smallerPtr = 0;
    *largerPtr = 0;
    return n;
}

/* Finds and caches the tree matches of positions 0..nPos-1 of src. A match
 * of sufficient length is taken by the parser without a look at the
 * positions it covers, so those are neither searched nor inserted. */
static void collect_matches(glyd_matchState* ms, glyd_optState* o, const uint8_t* src, size_t srcSize,
                            size_t nPos, uint32_t lowest, unsigned mls, size_t sufficient)
{
    const uint8_t* const iend = src + srcSize;
    opt_match found[OPT_MAX_MATCHES];
    size_t used = 0, i = 0;
    while (i < nPos) {
        unsigned const n = bt_insert_find(ms, src + i, iend, lowest, mls, OPT_STOP_LEN, found);
        /* keep room for one match per remaining position */
        size_t const room = o->matchCap - used - (nPos - i - 1);
        unsigned const keep = (unsigned)GLYD_MIN((size_t)n, room);
        o->matchAt[i] = (uint32_t)used;
        memcpy(o->matches + used, found + (n - keep), keep * sizeof(opt_match));
        used += keep;
        i++;
        if (n > 0 && found[n - 1].len >= sufficient) {
            /* The positions a long match covers get no matches, but they go
             * into the tree: later data finds its nearest copies there. In
             * a long repetition, most of them are left out, as their
             * neighbours hold the same suffixes. */
            size_t const end = GLYD_MIN(i - 1 + found[n - 1].len, nPos);
            size_t j = i;
            for (; i < end; i++) o->matchAt[i] = (uint32_t)used;
            while (j < end) {
                unsigned const k = bt_insert_find(ms, src + j, iend, lowest, mls, OPT_STOP_LEN, found);
                uint32_t const len = k ? found[k - 1].len : 0;
                j += len > OPT_REPEAT_LEN ? GLYD_MIN(len - OPT_REPEAT_LEN, OPT_REPEAT_LEN / 2) : 1;
            }
        }
    }
    o->matchAt[nPos] = (uint32_t)used;
    ms->nextToUpdate = (uint32_t)(src + nPos - ms->base);
}

/* ------------------------------------------------------------------------ */
/* Parser                                                                   */
/* ------------------------------------------------------------------------ */

/* The offBase that glyd_lzStoreMatch sends for a real offset. */
GLYD_FORCE_INLINE uint32_t offbase_of(const uint32_t rep[GLYD_REP_NUM], uint32_t offset, int ll0)
{
    if (!ll0 && offset == rep[0]) return 1;
    if (offset == rep[1]) return glyd_repToOffBase(1, ll0);
    if (offset == rep[2]) return glyd_repToOffBase(2, ll0);
    if (ll0 && offset == rep[0] - 1) return 3;
    return GLYD_OFFSET_TO_OFFBASE(offset);
}

/* Offers the match (from, offBase) of lengths minLen..maxLen to the
 * positions it reaches. */
GLYD_FORCE_INLINE void relax_match(opt_node* node, const opt_prices* pr, size_t from, const opt_node* nd,
                                   uint32_t offBase, uint32_t minLen, uint32_t maxLen, int32_t llPrice0)
{
    int const ll0 = nd->litlen == 0;
    int64_t const basePrice = nd->price + of_price(pr, offBase) + llPrice0;
    uint32_t newRep[GLYD_REP_NUM];
    int repDone = 0;
    uint32_t len;
    for (len = minLen; len <= maxLen; len++) {
        int64_t const price = basePrice + ml_price(pr, len);
        opt_node* const t = &node[from + len];
        if (price < t->price) {
            if (!repDone) {
                memcpy(newRep, nd->rep, sizeof(newRep));
                glyd_resolveOffset(newRep, offBase, ll0);
                repDone = 1;
            }
            t->price = price;
            t->mlen = len;
            t->offBase = offBase;
            t->litlen = 0;
            memcpy(t->rep, newRep, sizeof(newRep));
        }
    }
}

/* One pass of the dynamic program over src with the current prices; writes
 * the cheapest parse to o->path and returns its number of sequences. */
static size_t parse_pass(const glyd_matchState* ms, glyd_optState* o, opt_seq* path, const uint8_t* src,
                         size_t srcSize, size_t nPos, const uint32_t repIn[GLYD_REP_NUM], uint32_t lowest,
                         size_t sufficient)
{
    opt_node* const node = o->node;
    const opt_prices* const pr = &o->pr;
    const uint8_t* const iend = src + srcSize;
    uint32_t const srcIdx = (uint32_t)(src - ms->base);
    uint32_t const windowSize = 1u << ms->p.windowLog;
    int32_t const llPrice0 = ll_price(pr, 0);
    size_t cur, nbSeq = 0, pos;

    for (pos = 1; pos <= srcSize; pos++) node[pos].price = PRICE_INF;
    node[0].price = llPrice0;
    node[0].mlen = 0;
    node[0].offBase = 0;
    node[0].litlen = 0;
    memcpy(node[0].rep, repIn, sizeof(node[0].rep));

    for (cur = 0; cur < srcSize; cur++) {
        const opt_node* const nd = &node[cur];
        const uint8_t* const ip = src + cur;
        assert(nd->price < PRICE_INF);
        {   /* one more literal */
            int64_t const price = nd->price + pr->lit[*ip] + ll_price(pr, nd->litlen + 1) - ll_price(pr, nd->litlen);
            opt_node* const t = &node[cur + 1];
            if (price < t->price) {
                t->price = price;
                t->mlen = 0;
                t->offBase = 0;
                t->litlen = nd->litlen + 1;
                memcpy(t->rep, nd->rep, sizeof(t->rep));
            }
        }
        if (cur >= nPos) continue;
        {
            int const ll0 = nd->litlen == 0;
            uint32_t const curIdx = srcIdx + (uint32_t)cur;
            uint32_t const maxOff = GLYD_MIN(curIdx - lowest, windowSize);
            uint32_t const mEnd = o->matchAt[cur + 1];
            uint32_t longest = 0, prevLen = GLYD_MINMATCH - 1, m;
            unsigned r;
            /* repeat offsets, named as the format names them after this
             * path's literal run */
            for (r = 0; r < GLYD_REP_NUM; r++) {
                uint32_t const repOff = ll0 ? (r == 0 ? nd->rep[1] : r == 1 ? nd->rep[2] : nd->rep[0] - 1)
                                            : nd->rep[r];
                uint32_t len;
                if (repOff - 1 >= maxOff) continue; /* 0, or beyond history or window */
                len = (uint32_t)glyd_count(ip, ip - repOff, iend);
                if (len < GLYD_MINMATCH) continue;
                relax_match(node, pr, cur, nd, r + 1, GLYD_MINMATCH, len, llPrice0);
                if (len > longest) longest = len;
            }
            /* tree matches: lengths past the previous (shorter, usually
             * nearer) match come from this one */
            for (m = o->matchAt[cur]; m < mEnd; m++) {
                opt_match const mt = o->matches[m];
                if (mt.len <= prevLen) continue;
                relax_match(node, pr, cur, nd, offbase_of(nd->rep, mt.off, ll0), prevLen + 1, mt.len, llPrice0);
                prevLen = mt.len;
            }
            if (prevLen > longest) longest = prevLen;
            /* a long match is taken as it is: what it covers is not parsed */
            if (longest >= sufficient) cur += longest - 1;
        }
    }

    /* back from the end along the cheapest way, then put it in order */
    pos = srcSize;
    while (pos > 0) {
        const opt_node* const nd = &node[pos];
        if (nd->mlen == 0) {
            assert(nd->litlen > 0 && nd->litlen <= pos);
            pos -= nd->litlen;
        } else {
            path[nbSeq].start = (uint32_t)(pos - nd->mlen);
            path[nbSeq].len = nd->mlen;
            path[nbSeq].offBase = nd->offBase;
            nbSeq++;
            pos -= nd->mlen;
        }
    }
    for (pos = 0; pos < nbSeq / 2; pos++) {
        opt_seq const t = path[pos];
        path[pos] = path[nbSeq - 1 - pos];
        path[nbSeq - 1 - pos] = t;
    }
    return nbSeq;
}

/* Adds b to a, halved: older statistics count for less. */
static void stats_decay_add(opt_stats* a, const opt_stats* b)
{
    unsigned s;
    for (s = 0; s < 256; s++) a->lit[s] = a->lit[s] / 2 + b->lit[s];
    for (s = 0; s <= GLYD_LL_MAX_CODE; s++) a->ll[s] = a->ll[s] / 2 + b->ll[s];
    for (s = 0; s <= GLYD_ML_MAX_CODE; s++) a->ml[s] = a->ml[s] / 2 + b->ml[s];
    for (s = 0; s <= GLYD_OF_MAX_CODE; s++) a->of[s] = a->of[s] / 2 + b->of[s];
}

/* Runs passes of the parser, each priced from the parse before, starting
 * from the prices in o->pr plus litBias on every literal. The last parse
 * lands in path[cand] and its statistics in *st; returns its number of
 * sequences. */
static size_t parse_chain(const glyd_matchState* ms, glyd_optState* o, int cand, const uint8_t* src,
                          size_t srcSize, size_t nPos, const uint32_t rep[GLYD_REP_NUM], uint32_t lowest,
                          size_t sufficient, unsigned passes, int32_t litBias, opt_stats* st)
{
    size_t nbSeq = 0;
    unsigned pass, s;
    for (s = 0; s < 256; s++) o->pr.lit[s] += litBias;
    for (pass = 0; pass < passes; pass++) {
        if (pass > 0) set_prices(&o->pr, st);
        nbSeq = parse_pass(ms, o, o->path[cand], src, srcSize, nPos, rep, lowest, sufficient);
        stats_of_path(st, src, srcSize, o->path[cand], nbSeq);
    }
    return nbSeq;
}

static size_t find_opt(glyd_matchState* ms, glyd_seqStore* ss, uint32_t rep[GLYD_REP_NUM],
                       const uint8_t* src, size_t srcSize, const opt_effort* effort)
{
    glyd_optState* const o = ms->opt;
    uint32_t const srcIdx = (uint32_t)(src - ms->base);
    uint32_t lowest;
    unsigned mls, c;
    size_t sufficient, nPos, nbSeq = 0, anchor = 0, i;
    int seeded, best = 0;
    opt_stats start, st, bestSt;
    double bestCost = 0;

    if (o == NULL) return glyd_lzFindLazy2(ms, ss, rep, src, srcSize);
    assert(srcSize <= o->blockMax);
    if (srcSize < GLYD_LZ_TAIL + 4) return srcSize;
    lowest = glyd_lzLowestIndex(ms, srcIdx);
    mls = GLYD_MIN(GLYD_MAX(ms->p.minMatch, 3u), 6u);
    sufficient = ms->p.targetLength ? ms->p.targetLength : 64;
    nPos = srcSize - GLYD_LZ_TAIL;

    collect_matches(ms, o, src, srcSize, nPos, lowest, mls, sufficient);

    /* statistics belong to one history, so that a segment's coding does not
     * depend on what its coder did before */
    if (o->seedLowLimit != ms->lowLimit || srcIdx == ms->lowLimit) o->seedValid = 0;
    seeded = o->seedValid;
    if (seeded) start = o->seed;
    else stats_guess(&start, src, srcSize);

    /* Pricing from the last parse is a fixed-point iteration, and the cost
     * of a parse is concave in its symbol counts, so there are several
     * fixed points: chains started from dearer literals settle on parses
     * with more, shorter matches. The cheapest parse, by its own
     * statistics, wins. */
    for (c = 0; c < effort->chains; c++) {
        unsigned const passes = seeded ? effort->passes : effort->firstPasses;
        int const cand = c == 0 ? 0 : 1 - best;
        size_t n;
        double cost;
        set_prices(&o->pr, &start);
        n = parse_chain(ms, o, cand, src, srcSize, nPos, rep, lowest, sufficient, passes,
                        (int32_t)c * PRICE_ONE, &st);
        cost = stats_cost(&st);
        if (c == 0 || cost < bestCost) {
            best = cand;
            bestCost = cost;
            bestSt = st;
            nbSeq = n;
        }
    }
    if (seeded) stats_decay_add(&o->seed, &bestSt);
    else o->seed = bestSt;
    o->seedValid = 1;
    o->seedLowLimit = ms->lowLimit;

    for (i = 0; i < nbSeq; i++) {
        const opt_seq* const s = &o->path[best][i];
        glyd_lzStoreMatch(ss, rep, src + anchor, s->start - anchor, s->offBase, s->len);
        anchor = s->start + s->len;
    }
    return srcSize - anchor;
}

size_t glyd_lzFindBtOpt(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                        const uint8_t* src, size_t srcSize)
{
    return find_opt(ms, ss, rep, src, srcSize, &kBtOpt);
}

size_t glyd_lzFindBtUltra(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                          const uint8_t* src, size_t srcSize)
{
    return find_opt(ms, ss, rep, src, srcSize, &kBtUltra);
}

size_t glyd_lzFindBtUltra2(glyd_matchState* ms, glyd_seqStore* ss, uint32_t* rep,
                           const uint8_t* src, size_t srcSize)
{
    return find_opt(ms, ss, rep, src, srcSize, &kBtUltra2);
}

void glyd_lzIndexBt(glyd_matchState* ms, const uint8_t* src, size_t size)
{
    opt_match found[OPT_MAX_MATCHES];
    uint32_t const lowest = glyd_lzLowestIndex(ms, (uint32_t)(src - ms->base));
    unsigned const mls = GLYD_MIN(GLYD_MAX(ms->p.minMatch, 3u), 6u); /* as find_opt */
    const uint8_t* const iend = src + size;
    size_t i;
    if (size < GLYD_LZ_TAIL) return;
    for (i = 0; i <= size - GLYD_LZ_TAIL; i++) bt_insert_find(ms, src + i, iend, lowest, mls, OPT_STOP_LEN, found);
    ms->nextToUpdate = (uint32_t)(src + size - GLYD_LZ_TAIL + 1 - ms->base);
}
