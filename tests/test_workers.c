/* test_workers.c - the actor scheduler: tasks on worker threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "base/workers.h"
#include "runtime/mailbox.h"
#include "tensor/pool.h"
#include "tensor/tensor.h"

/* An actor of the tests: a mailbox of ints and what it saw. */
struct tactor {
	struct akk_actor task;
	struct akk_mailbox box;
	struct tactor *peer;	/* ping-pong: where the reply goes */
	struct akk_mailbox *done;	/* the last reply goes here */
	int seen[4096];
	atomic_int n;
	atomic_int inside;	/* handlers running now */
	atomic_int overlap;	/* ever two at once */
	int worker;		/* who ran the last message */
	atomic_int *started, *partner;	/* stealing test */
};

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int more(struct akk_mailbox *mb)
{
	int r;

	pthread_mutex_lock(&mb->mu);
	r = mb->count > 0;
	pthread_mutex_unlock(&mb->mu);
	return r;
}

static int record_run(struct akk_actor *t)
{
	struct tactor *a = (struct tactor *)((char *)t - offsetof(struct tactor, task));
	int v;

	if (atomic_fetch_add(&a->inside, 1))
		atomic_store(&a->overlap, 1);
	if (akk_mailbox_tryrecv(&a->box, &v) == 0) {
		int i = atomic_load(&a->n);
		if (i < 4096)
			a->seen[i] = v;
		atomic_store(&a->n, i + 1);
		a->worker = akk_workers_self(t->w);
		if (a->started) {	/* wait up to 2 s for the other to run too */
			atomic_store(a->started, 1);
			for (int k = 0; k < 2000 && !atomic_load(a->partner); k++)
				sleep_ms(1);
		}
		if (a->done && v < 0)
			akk_mailbox_send(a->done, &v);
	}
	atomic_fetch_sub(&a->inside, 1);
	akk_workers_poke(t->w);	/* for tests waiting on its count */
	return more(&a->box);
}

/* ping-pong: reply v - 1 to the peer; at 0 tell `done` */
static int pingpong_run(struct akk_actor *t)
{
	struct tactor *a = (struct tactor *)((char *)t - offsetof(struct tactor, task));
	int v;

	if (akk_mailbox_tryrecv(&a->box, &v) == 0) {
		if (v == 0)
			akk_mailbox_send(a->done, &v);
		else
			akk_mailbox_send(&a->peer->box, &(int){ v - 1 });
	}
	return more(&a->box);
}

static void tactor_init(struct tactor *a, struct akk_workers *w, int cap,
			int (*run)(struct akk_actor *))
{
	memset(a, 0, sizeof(*a));
	assert_int_equal(akk_mailbox_init(&a->box, sizeof(int), cap), 0);
	akk_actor_init(&a->task, w, run);
	akk_mailbox_attach(&a->box, &a->task);
}

struct sender {
	struct tactor *a;
	int base, count;
};

static void *send_many(void *arg)
{
	struct sender *s = arg;

	for (int i = 0; i < s->count; i++)
		while (akk_mailbox_send(&s->a->box, &(int){ s->base + i }) == -2)
			sleep_ms(1);	/* full: the test's senders retry */
	return NULL;
}

static int not_full(void *arg)
{
	struct tactor *a = arg;
	int r;

	pthread_mutex_lock(&a->box.mu);
	r = a->box.count < a->box.cap;
	pthread_mutex_unlock(&a->box.mu);
	return r;
}

static int count_at_least(void *arg)
{
	struct tactor *a = arg;

	return atomic_load(&a->n) >= 3000;
}

/* One actor, messages from worker 0 and from two foreign threads: each
 * sender's messages are handled in the order sent, and never two at once. */
static void fifo_and_one_at_a_time(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct tactor *a = calloc(1, sizeof(*a));
	pthread_t t[2];
	struct sender s[2] = { { a, 1000, 1000 }, { a, 2000, 1000 } };
	int next[3] = { 0, 1000, 2000 };

	(void)unused;
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	tactor_init(a, &w, 64, record_run);
	assert_int_equal(akk_workers_start(&w, &e), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, send_many, &s[i]), 0);
	for (int i = 0; i < 1000; i++) {
		while (akk_mailbox_send(&a->box, &i) == -2)
			akk_workers_help(&w, not_full, a);
	}
	/* worker 0 never blocks outside a helping wait: its next slot may
	 * hold the actor */
	akk_workers_help(&w, count_at_least, a);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	akk_workers_stop(&w);
	assert_int_equal(atomic_load(&a->n), 3000);
	for (int i = 0; i < 3000; i++) {
		int v = a->seen[i], who = v / 1000;
		assert_int_equal(v, next[who]);
		next[who]++;
	}
	assert_int_equal(atomic_load(&a->overlap), 0);
	akk_mailbox_release(&a->box);
	akk_workers_release(&w);
	free(a);
}

/* A chain of messages started on a worker runs on that worker without
 * waking anybody: every run is a hand-off through the next slot. */
static void chain_without_wakeups(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct tactor *a = calloc(2, sizeof(*a));
	struct akk_mailbox done;
	int v = -1;

	(void)unused;
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	tactor_init(&a[0], &w, 4, pingpong_run);
	tactor_init(&a[1], &w, 4, pingpong_run);
	a[0].peer = &a[1];
	a[1].peer = &a[0];
	assert_int_equal(akk_mailbox_init(&done, sizeof(int), 2), 0);
	akk_mailbox_help(&done, &w);
	a[0].done = a[1].done = &done;
	assert_int_equal(akk_workers_start(&w, &e), 0);
	/* let worker 1 go to sleep first: it must stay asleep */
	sleep_ms(20);
	assert_int_equal(akk_mailbox_send(&a[0].box, &(int){ 1000 }), 0);
	assert_int_equal(akk_mailbox_recv(&done, &v), 0);
	assert_int_equal(v, 0);
	akk_workers_stop(&w);
	struct akk_worker_stats s0 = akk_workers_stats(&w, 0), s1 = akk_workers_stats(&w, 1);
	assert_int_equal(s0.runs, 1001);
	assert_int_equal(s0.handoffs, 1001);
	assert_int_equal(s0.sleeps, 0);
	assert_int_equal(s0.wakes, 0);
	assert_int_equal(s1.runs, 0);
	assert_true(s1.wakes <= 1);	/* only the stop */
	for (int i = 0; i < 2; i++)
		akk_mailbox_release(&a[i].box);
	akk_mailbox_release(&done);
	akk_workers_release(&w);
	free(a);
}

static int both_ran(void *arg)
{
	struct tactor *a = arg;

	return atomic_load(&a[0].n) == 1 && atomic_load(&a[1].n) == 1 &&
	       !atomic_load(&a[0].inside) && !atomic_load(&a[1].inside);
}

/* Two actors made runnable by one worker: the second wakes the idle
 * worker, which steals one; both handlers run at the same time. */
static void idle_worker_steals(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct tactor *a = calloc(2, sizeof(*a));
	atomic_int started[2];

	(void)unused;
	atomic_init(&started[0], 0);
	atomic_init(&started[1], 0);
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	for (int i = 0; i < 2; i++) {
		tactor_init(&a[i], &w, 4, record_run);
		a[i].started = &started[i];
		a[i].partner = &started[1 - i];
	}
	assert_int_equal(akk_workers_start(&w, &e), 0);
	sleep_ms(20);
	assert_int_equal(akk_mailbox_send(&a[0].box, &(int){ 1 }), 0);
	assert_int_equal(akk_mailbox_send(&a[1].box, &(int){ 2 }), 0);
	akk_workers_help(&w, both_ran, a);
	akk_workers_stop(&w);
	assert_int_equal(atomic_load(&started[0]) + atomic_load(&started[1]), 2);
	assert_int_not_equal(a[0].worker, a[1].worker);
	assert_int_equal(akk_workers_stats(&w, 1).steals, 1);
	for (int i = 0; i < 2; i++)
		akk_mailbox_release(&a[i].box);
	akk_workers_release(&w);
	free(a);
}

struct later {
	struct akk_mailbox *mb;
	int close;
};

static void *send_or_close_later(void *arg)
{
	struct later *l = arg;

	sleep_ms(50);
	if (l->close)
		akk_mailbox_close(l->mb);
	else
		akk_mailbox_send(l->mb, &(int){ 130 });
	return NULL;
}

/* Worker 0 asleep in a helped receive is woken by a message from a
 * thread that is no worker (the signal thread's interrupt), and by a
 * close (a failure): no hang either way. */
static void foreign_send_and_close_wake_worker0(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct akk_mailbox mb;
	pthread_t t;
	int v = 0;

	(void)unused;
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	assert_int_equal(akk_mailbox_init(&mb, sizeof(int), 2), 0);
	akk_mailbox_help(&mb, &w);
	assert_int_equal(akk_workers_start(&w, &e), 0);
	for (int close = 0; close < 2; close++) {
		struct later l = { &mb, close };
		assert_int_equal(pthread_create(&t, NULL, send_or_close_later, &l), 0);
		if (close) {
			assert_int_equal(akk_mailbox_recv(&mb, &v), -1);
		} else {
			assert_int_equal(akk_mailbox_recv(&mb, &v), 0);
			assert_int_equal(v, 130);
		}
		pthread_join(t, NULL);
	}
	akk_workers_stop(&w);
	assert_true(akk_workers_stats(&w, 0).wakes >= 2);
	akk_mailbox_release(&mb);
	akk_workers_release(&w);
}

/* An actor woken from a foreign thread (the MPI link) runs on a worker;
 * a full attached mailbox fails the send at once. */
static void foreign_wake_runs_and_full_box_fails(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct tactor *a = calloc(1, sizeof(*a));
	struct akk_mailbox done;
	struct sender s;
	pthread_t t;
	int v;

	(void)unused;
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	tactor_init(a, &w, 2, record_run);
	assert_int_equal(akk_mailbox_init(&done, sizeof(int), 2), 0);
	akk_mailbox_help(&done, &w);
	a->done = &done;
	/* before the workers run: two fit, the third does not */
	assert_int_equal(akk_mailbox_send(&a->box, &(int){ 1 }), 0);
	assert_int_equal(akk_mailbox_send(&a->box, &(int){ 2 }), 0);
	assert_int_equal(akk_mailbox_send(&a->box, &(int){ 3 }), -2);
	assert_int_equal(akk_workers_start(&w, &e), 0);
	s = (struct sender){ a, -1, 1 };
	assert_int_equal(pthread_create(&t, NULL, send_many, &s), 0);
	assert_int_equal(akk_mailbox_recv(&done, &v), 0);
	assert_int_equal(v, -1);
	pthread_join(t, NULL);
	akk_workers_stop(&w);
	assert_int_equal(atomic_load(&a->n), 3);
	assert_int_equal(a->seen[0], 1);
	assert_int_equal(a->seen[1], 2);
	assert_int_equal(a->seen[2], -1);
	akk_mailbox_release(&a->box);
	akk_mailbox_release(&done);
	akk_workers_release(&w);
	free(a);
}

/* An actor that holds its worker until released (at most 10 s). */
struct blocker {
	struct akk_actor task;
	atomic_int started, release;
};

static int block_run(struct akk_actor *t)
{
	struct blocker *b = (struct blocker *)t;

	atomic_store(&b->started, 1);
	for (int k = 0; k < 10000 && !atomic_load(&b->release); k++)
		sleep_ms(1);
	return 0;
}

/* A product split on the workers: with the other worker busy the caller
 * computes every part itself (it never waits for it: the blocker holds
 * worker 1 until after the product), with it idle the other worker takes
 * a part; the rows are the same either way, bit for bit. */
static void pool_parts_on_the_workers(void **unused)
{
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct blocker b;
	struct akk_pool *p;
	int M = 1024, N = 256, K = 256;
	float *A = akk_alloc((size_t)M * K), *B = akk_alloc((size_t)K * N);
	float *C1 = akk_alloc((size_t)M * N), *C2 = akk_alloc((size_t)M * N);

	(void)unused;
	akk_blas_threads(1);
	tu_fill(A, (size_t)M * K, -1, 1, 1);
	tu_fill(B, (size_t)K * N, -1, 1, 2);
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	assert_non_null(p = akk_pool_on(&w, 2, &e));
	akk_actor_init(&b.task, &w, block_run);
	atomic_init(&b.started, 0);
	atomic_init(&b.release, 0);
	assert_int_equal(akk_workers_start(&w, &e), 0);
	akk_actor_post(&b.task);	/* to worker 1 */
	for (int k = 0; k < 5000 && !atomic_load(&b.started); k++)
		sleep_ms(1);
	assert_true(atomic_load(&b.started));
	akk_sgemm(p, 0, 0, M, N, K, 1, A, K, B, N, 0, C1, N);
	assert_false(atomic_load(&b.release));
	assert_int_equal(akk_pool_products(p), 1);
	atomic_store(&b.release, 1);
	sleep_ms(20);	/* let worker 1 go idle */
	for (int i = 0; i < 20; i++) {
		akk_sgemm(p, 0, 0, M, N, K, 1, A, K, B, N, 0, C2, N);
		assert_memory_equal(C1, C2, (size_t)M * N * sizeof(float));
	}
	akk_workers_stop(&w);
	/* the blocker, the first product's part (claimed back, a no-op run)
	 * and at least one part of the twenty products */
	assert_true(akk_workers_stats(&w, 1).runs >= 3);
	akk_pool_destroy(p);
	akk_workers_release(&w);
	akk_free(A), akk_free(B), akk_free(C1), akk_free(C2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fifo_and_one_at_a_time),
		cmocka_unit_test(chain_without_wakeups),
		cmocka_unit_test(idle_worker_steals),
		cmocka_unit_test(foreign_send_and_close_wake_worker0),
		cmocka_unit_test(foreign_wake_runs_and_full_box_fails),
		cmocka_unit_test(pool_parts_on_the_workers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
