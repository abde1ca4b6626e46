/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * team.c: the product threads (team.h). A round is published by bumping
 * `round`, whose low bits carry the round's number of jobs (so that a
 * worker late to see one round reads that round's count, never the next
 * one's); workers watch it, spinning for up to SPIN_NS after their last
 * job, then sleeping on a condition variable, which team_run signals only
 * when some worker sleeps (`sleepers`, read after `round` is bumped, both
 * sequentially consistent: a worker either sees the new round before it
 * sleeps, or is counted and woken).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "team.h"

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define cpu_relax() _mm_pause()
#else
#  define cpu_relax() ((void)0)
#endif

/* How long a worker watches for the next round before it sleeps: longer
 * than the gaps between a forward pass's products, short enough that an
 * idle model leaves the cores. */
#define SPIN_NS 200000

/* round = (sequence << ROUND_SHIFT) | (linger << JOB_BITS) | nbJobs */
#define JOB_BITS 16
#define LINGER_BIT (1ul << JOB_BITS)
#define ROUND_SHIFT (JOB_BITS + 1)

typedef struct {
    team* t;
    unsigned index;
} worker_arg;

struct team_s {
    unsigned nbThreads;
    pthread_t* threads;
    worker_arg* args;
    atomic_ulong round;      /* see JOB_BITS */
    atomic_uint pending;     /* jobs of the round not yet done by workers */
    atomic_uint sleepers;
    atomic_int stop;
    atomic_int rest;         /* team_rest: stop watching, sleep */
    /* the round's work, set before round is bumped */
    team_job job;
    void* jobs;
    pthread_mutex_t lock;
    pthread_cond_t wake;
};

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits until the round differs from `seen` (or the team stops): first
 * spinning, if round `seen` asked workers to linger, then asleep. */
static unsigned long next_round(team* t, unsigned long seen)
{
    long long const until = now_ns() + SPIN_NS;
    unsigned spins = 0;
    unsigned long r = seen;
    if (seen & LINGER_BIT) {
        while ((r = atomic_load(&t->round)) == seen && !atomic_load(&t->stop) && !atomic_load(&t->rest)) {
            cpu_relax();
            if (++spins % 64 == 0 && now_ns() > until) break;
        }
    }
    if (r != seen || atomic_load(&t->stop)) return r;
    pthread_mutex_lock(&t->lock);
    atomic_fetch_add(&t->sleepers, 1);
    while ((r = atomic_load(&t->round)) == seen && !atomic_load(&t->stop)) pthread_cond_wait(&t->wake, &t->lock);
    atomic_fetch_sub(&t->sleepers, 1);
    pthread_mutex_unlock(&t->lock);
    return r;
}

static void* worker(void* opaque)
{
    worker_arg* const a = (worker_arg*)opaque;
    team* const t = a->t;
    unsigned long seen = 0;
    for (;;) {
        seen = next_round(t, seen);
        if (atomic_load(&t->stop)) return NULL;
        if (a->index < (seen & ((1ul << JOB_BITS) - 1))) {
            t->job(t->jobs, a->index);
            atomic_fetch_sub(&t->pending, 1);
        }
    }
}

team* team_create(unsigned nbThreads)
{
    team* t = (team*)calloc(1, sizeof(*t));
    unsigned i;
    if (!t || nbThreads == 0) { free(t); return NULL; }
    t->threads = (pthread_t*)calloc(nbThreads, sizeof(pthread_t));
    t->args = (worker_arg*)calloc(nbThreads, sizeof(worker_arg));
    if (!t->threads || !t->args) { free(t->threads); free(t->args); free(t); return NULL; }
    atomic_init(&t->round, 0);
    atomic_init(&t->pending, 0);
    atomic_init(&t->sleepers, 0);
    atomic_init(&t->stop, 0);
    atomic_init(&t->rest, 0);
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    t->nbThreads = 1;
    for (i = 1; i < nbThreads; i++) {
        t->args[i].t = t;
        t->args[i].index = i;
        if (pthread_create(&t->threads[i], NULL, worker, &t->args[i]) != 0) { team_free(t); return NULL; }
        t->nbThreads++;
    }
    return t;
}

void team_free(team* t)
{
    unsigned i;
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->stop, 1);
    pthread_cond_broadcast(&t->wake);
    pthread_mutex_unlock(&t->lock);
    for (i = 1; i < t->nbThreads; i++) pthread_join(t->threads[i], NULL);
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    free(t->threads);
    free(t->args);
    free(t);
}

unsigned team_size(const team* t) { return t ? t->nbThreads : 1; }

void team_run(team* t, team_job job, void* jobs, unsigned nbJobs, int linger)
{
    unsigned long r;
    if (!t || nbJobs <= 1) {
        if (nbJobs) job(jobs, 0);
        return;
    }
    t->job = job;
    t->jobs = jobs;
    atomic_store(&t->rest, 0);
    atomic_store(&t->pending, nbJobs - 1);
    r = atomic_load(&t->round);
    atomic_store(&t->round, (((r >> ROUND_SHIFT) + 1) << ROUND_SHIFT) | (linger ? LINGER_BIT : 0) | nbJobs);
    if (atomic_load(&t->sleepers)) {
        pthread_mutex_lock(&t->lock);
        pthread_cond_broadcast(&t->wake);
        pthread_mutex_unlock(&t->lock);
    }
    job(jobs, 0);
    while (atomic_load(&t->pending)) cpu_relax();
}

void team_rest(team* t)
{
    if (t) atomic_store(&t->rest, 1);
}
