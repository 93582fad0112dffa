/* workers.c - the worker threads and the task states (see workers.h). */
#include "base/workers.h"

#include <stdlib.h>
#include <string.h>

enum {
	TASK_IDLE,		/* no mail, in no queue */
	TASK_QUEUED,		/* in a next slot or the shared queue */
	TASK_RUNNING,		/* a worker runs it */
	TASK_AGAIN,		/* running, and woken again meanwhile */
};

int akk_workers_init(struct akk_workers *w, int n, struct akk_err *e)
{
	memset(w, 0, sizeof(*w));
	if (n < 1)
		n = 1;
	if (!(w->ctx = calloc(n, sizeof(*w->ctx))))
		return akk_err_set(e, "out of memory");
	w->n = n;
	for (int i = 0; i < n; i++) {
		w->ctx[i].w = w;
		w->ctx[i].index = i;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->idle, NULL);
	pthread_cond_init(&w->wait, NULL);
	atomic_init(&w->epoch, 0);
	return 0;
}

void akk_workers_release(struct akk_workers *w)
{
	if (!w->ctx)
		return;
	akk_workers_stop(w);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->idle);
	pthread_cond_destroy(&w->wait);
	free(w->ctx);
	memset(w, 0, sizeof(*w));
}

void akk_actor_init(struct akk_actor *t, struct akk_workers *w,
		   int (*run)(struct akk_actor *t))
{
	t->run = run;
	t->w = w;
	t->link = NULL;
	t->background = 0;
	atomic_init(&t->state, TASK_IDLE);
}

/* Which worker the calling thread is: per-thread state, set when a thread
 * becomes a worker and cleared when it stops being one (a lookup through
 * the tids would race with pthread_create writing them). */
static _Thread_local struct akk_workers *self_w;
static _Thread_local int self_i;

int akk_workers_self(struct akk_workers *w)
{
	return self_w == w ? self_i : -1;
}

enum { WAKE_IDLE = 1, WAKE_WAITERS = 2 };

/* Under mu: a wake-up event for one idle worker and/or every waiter. */
static void bump(struct akk_workers *w, int who)
{
	atomic_fetch_add(&w->epoch, 1);
	if ((who & WAKE_IDLE) && w->idlers)
		pthread_cond_signal(&w->idle);
	if ((who & WAKE_WAITERS) && w->waiters)
		pthread_cond_broadcast(&w->wait);
}

/* Append t to the shared queue; wake the sleepers when someone else
 * should take it. */
static void push_shared(struct akk_workers *w, struct akk_actor *t, int wake)
{
	pthread_mutex_lock(&w->mu);
	t->link = NULL;
	if (w->tail)
		w->tail->link = t;
	else
		w->head = t;
	w->tail = t;
	if (wake)
		bump(w, WAKE_IDLE | WAKE_WAITERS);
	pthread_mutex_unlock(&w->mu);
}

/* Take the oldest of the shared queue; when more are left, wake a
 * sleeping worker for them. */
static struct akk_actor *pop_shared(struct akk_workers *w)
{
	struct akk_actor *t;

	pthread_mutex_lock(&w->mu);
	t = w->head;
	if (t) {
		w->head = t->link;
		if (!w->head)
			w->tail = NULL;
		t->link = NULL;
		if (w->head && w->idlers)
			bump(w, WAKE_IDLE);
	}
	pthread_mutex_unlock(&w->mu);
	return t;
}

static void enqueue(struct akk_workers *w, struct akk_actor *t)
{
	int self = akk_workers_self(w);

	if (self < 0) {
		push_shared(w, t, 1);
		return;
	}
	/* the newest in the slot: it runs next, here (a chain of messages
	 * stays on this worker); an older one goes where others steal it */
	struct akk_actor *old = w->ctx[self].next;
	w->ctx[self].next = t;
	if (old)
		push_shared(w, old, 1);
}

static void wake(struct akk_actor *t, int shared)
{
	int s = atomic_load(&t->state);

	for (;;) {
		if (s == TASK_IDLE) {
			if (atomic_compare_exchange_weak(&t->state, &s, TASK_QUEUED)) {
				if (shared)
					push_shared(t->w, t, 1);
				else
					enqueue(t->w, t);
				return;
			}
		} else if (s == TASK_RUNNING) {
			if (atomic_compare_exchange_weak(&t->state, &s, TASK_AGAIN))
				return;
		} else {
			return;	/* queued, or already told */
		}
	}
}

void akk_actor_wake(struct akk_actor *t)
{
	wake(t, t->background);
}

void akk_actor_post(struct akk_actor *t)
{
	wake(t, 1);
}

/* Run one message of t on worker self. */
static void run_task(struct akk_workers *w, int self, struct akk_actor *t)
{
	int s = TASK_RUNNING;

	atomic_store(&t->state, TASK_RUNNING);
	w->ctx[self].st.runs++;
	if (!t->run(t) && atomic_compare_exchange_strong(&t->state, &s, TASK_IDLE))
		return;
	/* more mail: to the back of the queue; this worker takes it next
	 * unless its slot holds one, then somebody else should */
	atomic_store(&t->state, TASK_QUEUED);
	push_shared(w, t, w->ctx[self].next != NULL);
}

/* Take and run one runnable task: 1 done, 0 none. */
static int run_one(struct akk_workers *w, int self)
{
	struct akk_actor *t = w->ctx[self].next;

	if (t) {
		w->ctx[self].next = NULL;
		w->ctx[self].st.handoffs++;
	} else if ((t = pop_shared(w))) {
		w->ctx[self].st.steals++;
	} else {
		return 0;
	}
	run_task(w, self, t);
	return 1;
}

void akk_workers_poke(struct akk_workers *w)
{
	pthread_mutex_lock(&w->mu);
	bump(w, WAKE_WAITERS);
	pthread_mutex_unlock(&w->mu);
}

static void help(struct akk_workers *w, int (*done)(void *), void *arg, int idle)
{
	int self = akk_workers_self(w);

	for (;;) {
		long seen = atomic_load(&w->epoch);

		if (done(arg))
			return;
		if (self >= 0 && run_one(w, self))
			continue;
		pthread_mutex_lock(&w->mu);
		if (atomic_load(&w->epoch) == seen && !(self >= 0 && w->head)) {
			if (self >= 0)
				w->ctx[self].st.sleeps++;
			if (idle) {
				w->idlers++;
				pthread_cond_wait(&w->idle, &w->mu);
				w->idlers--;
			} else {
				w->waiters++;
				pthread_cond_wait(&w->wait, &w->mu);
				w->waiters--;
			}
			if (self >= 0)
				w->ctx[self].st.wakes++;
		}
		pthread_mutex_unlock(&w->mu);
	}
}

void akk_workers_help(struct akk_workers *w, int (*done)(void *), void *arg)
{
	help(w, done, arg, 0);
}

void akk_workers_wait(struct akk_workers *w, int (*done)(void *), void *arg)
{
	for (;;) {
		long seen = atomic_load(&w->epoch);

		if (done(arg))
			return;
		pthread_mutex_lock(&w->mu);
		if (atomic_load(&w->epoch) == seen) {
			w->waiters++;
			pthread_cond_wait(&w->wait, &w->mu);
			w->waiters--;
		}
		pthread_mutex_unlock(&w->mu);
	}
}

void akk_workers_flush(struct akk_workers *w)
{
	int self = akk_workers_self(w);
	struct akk_actor *t;

	if (self < 0 || !(t = w->ctx[self].next))
		return;
	w->ctx[self].next = NULL;
	push_shared(w, t, 1);
}

static int stopping(void *arg)
{
	struct akk_workers *w = arg;
	int s;

	pthread_mutex_lock(&w->mu);
	s = w->stop;
	pthread_mutex_unlock(&w->mu);
	return s;
}

static void *worker_main(void *arg)
{
	struct akk_worker *c = arg;

	self_w = c->w;
	self_i = c->index;
	/* its name in top -H, gdb and /proc/PID/task/TID/comm */
	pthread_setname_np(pthread_self(), "akk-worker");
	if (c->w->on_start)
		c->w->on_start();
	help(c->w, stopping, c->w, 1);
	self_w = NULL;
	return NULL;
}

int akk_workers_start(struct akk_workers *w, struct akk_err *e)
{
	self_w = w;
	self_i = 0;
	return akk_workers_start_threads(w, e);
}

int akk_workers_start_threads(struct akk_workers *w, struct akk_err *e)
{
	pthread_mutex_lock(&w->mu);
	w->stop = 0;
	pthread_mutex_unlock(&w->mu);
	for (int i = 1; i < w->n; i++)
		if (pthread_create(&w->ctx[i].tid, NULL, worker_main, &w->ctx[i])) {
			w->started = i > 1 ? i : 0;
			if (w->started)
				akk_workers_stop(w);
			else if (self_w == w)
				self_w = NULL;
			return akk_err_set(e, "cannot start worker thread %d", i);
		}
	w->started = w->n > 1 ? w->n : 1;
	return 0;
}

void akk_workers_stop(struct akk_workers *w)
{
	struct akk_actor *t;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	atomic_fetch_add(&w->epoch, 1);
	pthread_cond_broadcast(&w->idle);
	pthread_cond_broadcast(&w->wait);
	pthread_mutex_unlock(&w->mu);
	for (int i = 1; i < w->started; i++)
		pthread_join(w->ctx[i].tid, NULL);
	w->started = 0;
	/* dropped: what is still queued goes back to idle */
	while ((t = pop_shared(w)))
		atomic_store(&t->state, TASK_IDLE);
	for (int i = 0; i < w->n; i++) {
		if ((t = w->ctx[i].next))
			atomic_store(&t->state, TASK_IDLE);
		w->ctx[i].next = NULL;
	}
	if (self_w == w)
		self_w = NULL;
}

struct akk_worker_stats akk_workers_stats(const struct akk_workers *w, int i)
{
	struct akk_worker_stats s = { 0 };

	for (int k = 0; k < w->n; k++) {
		if (i >= 0 && k != i)
			continue;
		s.runs += w->ctx[k].st.runs;
		s.handoffs += w->ctx[k].st.handoffs;
		s.steals += w->ctx[k].st.steals;
		s.sleeps += w->ctx[k].st.sleeps;
		s.wakes += w->ctx[k].st.wakes;
	}
	return s;
}
