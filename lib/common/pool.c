/* SPDX-License-Identifier: BSD-3-Clause */
/* pool.c: a fixed set of worker threads fed from a bounded job queue. */
#include <pthread.h>
#include <unistd.h>

#include "common.h"

#define POOL_QUEUE_SIZE 64

/* A thread about to sleep (a worker with no job, poolWait with jobs
 * running) first watches for a while: waking a sleeping thread costs tens
 * of microseconds, as much as a job of the engine's token step, which
 * hands out a job a few hundred times a token. About 40 us. */
#define POOL_SPIN 2000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Whether *v became non-zero (nonzero) or zero (else), or shutdown was
 * set, within the spin: read without the lock, as the fields written
 * under it are stored atomically. */
static int spin_until(const unsigned* v, int nonzero, const int* shutdown)
{
    unsigned i;
    for (i = 0; i < POOL_SPIN; i++) {
        unsigned const x = __atomic_load_n(v, __ATOMIC_ACQUIRE);
        if ((nonzero ? x != 0 : x == 0) || (shutdown && __atomic_load_n(shutdown, __ATOMIC_ACQUIRE))) return 1;
        cpu_relax();
    }
    return 0;
}

typedef struct { glyd_poolJob fn; void* arg; } pool_item;

struct glyd_pool_s {
    glyd_customMem mem;
    pthread_t* threads;
    unsigned nbThreads;
    pthread_mutex_t lock;
    pthread_cond_t notEmpty;  /* a job was queued, or shutdown */
    pthread_cond_t notFull;   /* a slot was freed */
    pthread_cond_t idle;      /* pending reached 0 */
    pool_item queue[POOL_QUEUE_SIZE];
    unsigned head, count;     /* ring buffer of queued jobs */
    unsigned pending;         /* queued plus running */
    int shutdown;
};

static void* pool_worker(void* opaque)
{
    glyd_pool* const pool = (glyd_pool*)opaque;
    for (;;) {
        pool_item item;
        spin_until(&pool->count, 1, &pool->shutdown);
        pthread_mutex_lock(&pool->lock);
        while (pool->count == 0 && !pool->shutdown)
            pthread_cond_wait(&pool->notEmpty, &pool->lock);
        if (pool->count == 0) {  /* shutdown with an empty queue */
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        item = pool->queue[pool->head];
        pool->head = (pool->head + 1) % POOL_QUEUE_SIZE;
        __atomic_store_n(&pool->count, pool->count - 1, __ATOMIC_RELEASE);
        pthread_cond_signal(&pool->notFull);
        pthread_mutex_unlock(&pool->lock);

        item.fn(item.arg);

        pthread_mutex_lock(&pool->lock);
        __atomic_store_n(&pool->pending, pool->pending - 1, __ATOMIC_RELEASE);
        if (pool->pending == 0) pthread_cond_broadcast(&pool->idle);
        pthread_mutex_unlock(&pool->lock);
    }
}

glyd_pool* glyd_poolCreate(unsigned nbThreads, glyd_customMem mem)
{
    glyd_pool* pool;
    unsigned i;
    if (nbThreads == 0) return NULL;
    pool = (glyd_pool*)glyd_calloc(sizeof(*pool), mem);
    if (!pool) return NULL;
    pool->mem = mem;
    pool->threads = (pthread_t*)glyd_calloc(nbThreads * sizeof(pthread_t), mem);
    if (!pool->threads) { glyd_free(pool, mem); return NULL; }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->notEmpty, NULL);
    pthread_cond_init(&pool->notFull, NULL);
    pthread_cond_init(&pool->idle, NULL);
    for (i = 0; i < nbThreads; i++) {
        if (pthread_create(&pool->threads[i], NULL, pool_worker, pool) != 0) break;
        pool->nbThreads++;
    }
    if (pool->nbThreads != nbThreads) { glyd_poolFree(pool); return NULL; }
    return pool;
}

void glyd_poolFree(glyd_pool* pool)
{
    unsigned i;
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    __atomic_store_n(&pool->shutdown, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool->notEmpty);
    pthread_mutex_unlock(&pool->lock);
    for (i = 0; i < pool->nbThreads; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->notEmpty);
    pthread_cond_destroy(&pool->notFull);
    pthread_cond_destroy(&pool->idle);
    glyd_free(pool->threads, pool->mem);
    glyd_free(pool, pool->mem);
}

void glyd_poolAdd(glyd_pool* pool, glyd_poolJob job, void* arg)
{
    pthread_mutex_lock(&pool->lock);
    while (pool->count == POOL_QUEUE_SIZE) pthread_cond_wait(&pool->notFull, &pool->lock);
    pool->queue[(pool->head + pool->count) % POOL_QUEUE_SIZE] = (pool_item){ job, arg };
    __atomic_store_n(&pool->count, pool->count + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&pool->pending, pool->pending + 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&pool->notEmpty);
    pthread_mutex_unlock(&pool->lock);
}

void glyd_poolWait(glyd_pool* pool)
{
    spin_until(&pool->pending, 0, NULL);
    pthread_mutex_lock(&pool->lock);
    while (pool->pending) pthread_cond_wait(&pool->idle, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

unsigned glyd_poolSize(const glyd_pool* pool) { return pool ? pool->nbThreads : 0; }

unsigned glyd_nbCores(void)
{
    long const n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}
