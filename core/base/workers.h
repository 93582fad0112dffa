/* workers.h - actors run on a fixed set of worker threads, not one thread each.
 *
 * A task is an intrusive, schedulable actor: a function that handles one
 * message, a queue link and a state (idle, queued, running, running with
 * more mail). Everything is in the caller's storage, so waking a task
 * allocates nothing. A task runs on one worker at a time, one message per
 * run; a run that reports more mail puts it back at the end of the shared
 * queue (fairness).
 *
 * Worker 0 is the thread that calls akk_workers_start (the sentinel's);
 * workers 1..n-1 are threads started there. Waking an idle task from a
 * worker puts it in that worker's "next" slot: the worker runs it itself
 * when its current handler returns or when it waits, so a chain of
 * messages (flip-flop) never wakes anybody. A second runnable task, or a
 * wake from a thread that is not a worker (the MPI link, the signal
 * thread), goes to the shared queue and wakes the sleepers; an idle
 * worker takes it (steals). A blocking wait on a worker helps: it runs
 * runnable tasks until what it waits for is there, and sleeps on the
 * condition variable only when nothing is runnable. */
#ifndef AKK_WORKERS_H
#define AKK_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/err.h"

struct akk_workers;

struct akk_actor {
	/* Handle one message; nonzero when more wait (run it again). */
	int (*run)(struct akk_actor *t);
	struct akk_workers *w;	/* where it runs; set by akk_actor_init */
	struct akk_actor *link;	/* shared queue, under the workers' mutex */
	atomic_int state;	/* enum in workers.c */
	int background;		/* woken through the shared queue always, for
				 * an idle worker (a data provider's prefetch);
				 * set before its first wake */
};

/* What one worker did, for tests and akkctl bench. */
struct akk_worker_stats {
	long runs;		/* task runs (messages handled) */
	long handoffs;		/* runs taken from its own next slot */
	long steals;		/* runs taken from the shared queue */
	long sleeps;		/* times it slept on the condition variable */
	long wakes;		/* times it woke up from there */
};

struct akk_worker {
	struct akk_workers *w;
	int index;
	pthread_t tid;		/* written by workers_start, read by stop */
	struct akk_actor *next;	/* the LIFO slot: touched by its worker only */
	struct akk_worker_stats st;	/* written by its worker only */
};

struct akk_workers {
	int n;			/* workers, the caller included */
	struct akk_worker *ctx;	/* n */
	pthread_mutex_t mu;
	/* Idle workers sleep on idle (a runnable actor wakes one); threads
	 * waiting for something else (akk_workers_help) on wait (a poke or a
	 * runnable actor wakes them all). Two, so that a message to the
	 * sentinel does not wake an idle worker for nothing. */
	pthread_cond_t idle, wait;
	struct akk_actor *head, *tail;	/* the shared queue, under mu */
	atomic_long epoch;	/* bumped under mu by every wake-up event */
	int idlers, waiters;	/* sleeping on each, under mu */
	int stop;		/* under mu */
	int started;		/* threads 1..n-1 running */
	void (*on_start)(void);	/* each worker thread calls it first, or NULL */
};

/* n workers (n >= 1), threads not yet started. */
int akk_workers_init(struct akk_workers *w, int n, struct akk_err *e);
void akk_workers_release(struct akk_workers *w);
/* The calling thread becomes worker 0; workers 1..n-1 start. */
int akk_workers_start(struct akk_workers *w, struct akk_err *e);
/* Only start workers 1..n-1: the caller stays no worker (a pool of its
 * own for products, tensor/pool.h). */
int akk_workers_start_threads(struct akk_workers *w, struct akk_err *e);
/* Stop and join workers 1..n-1 (each ends its current task first);
 * tasks still queued are dropped. Worker 0 calls it. */
void akk_workers_stop(struct akk_workers *w);

void akk_actor_init(struct akk_actor *t, struct akk_workers *w,
		   int (*run)(struct akk_actor *t));
/* Make t runnable (or tell it that more mail came while it runs). Any
 * thread; allocates nothing. */
void akk_actor_wake(struct akk_actor *t);
/* The same, but always to the shared queue, waking an idle worker: work
 * meant for another worker (a product's row parts). */
void akk_actor_post(struct akk_actor *t);

/* The calling thread's worker number, -1 when it is none. */
int akk_workers_self(struct akk_workers *w);
/* Help until done(arg) is true: run runnable tasks, sleep when there are
 * none. done is checked after every task and every wake-up; whoever makes
 * it true calls akk_workers_poke. A thread that is not a worker only
 * sleeps. */
void akk_workers_help(struct akk_workers *w, int (*done)(void *), void *arg);
/* Wait until done(arg) without running tasks (a short wait inside a
 * handler: the product parts other workers are computing). */
void akk_workers_wait(struct akk_workers *w, int (*done)(void *), void *arg);
/* Wake every thread waiting in akk_workers_help/wait to check again. */
void akk_workers_poke(struct akk_workers *w);
/* Before a handler blocks (an MPI reduction): hand this worker's next
 * slot to the shared queue, so that another worker runs it. */
void akk_workers_flush(struct akk_workers *w);

/* A statistics copy: worker i's, or their sum for i = -1 (after stop, or
 * from worker i itself). */
struct akk_worker_stats akk_workers_stats(const struct akk_workers *w, int i);

#endif
