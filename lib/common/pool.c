/* SPDX-License-Identifier: BSD-3-Clause */
/* pool.c: a fixed set of worker threads fed from a bounded job queue. */
#include <pthread.h>
#include <unistd.h>

#include "common.h"

#define POOL_QUEUE_SIZE 64

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
        pthread_mutex_lock(&pool->lock);
        while (pool->count == 0 && !pool->shutdown)
            pthread_cond_wait(&pool->notEmpty, &pool->lock);
        if (pool->count == 0) {  /* shutdown with an empty queue */
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        item = pool->queue[pool->head];
        pool->head = (pool->head + 1) % POOL_QUEUE_SIZE;
        pool->count--;
        pthread_cond_signal(&pool->notFull);
        pthread_mutex_unlock(&pool->lock);

        item.fn(item.arg);

        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0) pthread_cond_broadcast(&pool->idle);
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
    pool->shutdown = 1;
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
    pool->count++;
    pool->pending++;
    pthread_cond_signal(&pool->notEmpty);
    pthread_mutex_unlock(&pool->lock);
}

void glyd_poolWait(glyd_pool* pool)
{
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
