/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * team.h: a team of threads that run one job each, together, many times a
 * second: the products of a model's forward pass, a few hundred per token,
 * each a fraction of a millisecond. A worker keeps watching for the next
 * round for a short while after its job (waking a sleeping thread costs
 * tens of microseconds, as much as a small product), then sleeps.
 */
#ifndef GLYD_PY_TEAM_H
#define GLYD_PY_TEAM_H

typedef struct team_s team;
typedef void (*team_job)(void* jobs, unsigned index);

/* A team of nbThreads threads, the caller's included (nbThreads - 1 are
 * started); NULL when a thread cannot be started. */
team* team_create(unsigned nbThreads);
/* Stops and joins the threads; NULL is fine. */
void team_free(team* t);
unsigned team_size(const team* t);

/* Runs job(jobs, i) for i in [0, nbJobs), nbJobs <= team_size: index 0 on
 * the calling thread, the others on the workers; returns when all are done.
 * linger: the workers watch for the next round a while before they sleep
 * (for work that comes in quick succession; not where other threads will
 * want the cores next). One caller at a time. */
void team_run(team* t, team_job job, void* jobs, unsigned nbJobs, int linger);

/* Sends lingering workers to sleep now: the caller knows no round follows
 * soon (a forward pass has ended). */
void team_rest(team* t);

#endif /* GLYD_PY_TEAM_H */
