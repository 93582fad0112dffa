/* test_mailbox.c - the bounded FIFO between threads. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "runtime/mailbox.h"

static void fifo_order(void **unused)
{
	struct akk_mailbox mb;
	int v;

	(void)unused;
	assert_int_equal(akk_mailbox_init(&mb, sizeof(int), 4), 0);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++)
			assert_int_equal(akk_mailbox_send(&mb, &(int){ round * 10 + i }), 0);
		for (int i = 0; i < 4; i++) {
			assert_int_equal(akk_mailbox_recv(&mb, &v), 0);
			assert_int_equal(v, round * 10 + i);
		}
	}
	akk_mailbox_release(&mb);
}

#define PER 20000

struct prod {
	struct akk_mailbox *mb;
	int base;
};

static void *producer(void *arg)
{
	struct prod *p = arg;

	for (int i = 0; i < PER; i++) {
		int v = p->base + i;
		if (akk_mailbox_send(p->mb, &v))
			break;
	}
	return NULL;
}

/* Two producers, one consumer, a tiny box: every item arrives once, each
 * producer's items in order. */
static void producers_consumer(void **unused)
{
	struct akk_mailbox mb;
	pthread_t t[2];
	struct prod p[2];
	int next[2] = { 0, 0 }, v;

	(void)unused;
	assert_int_equal(akk_mailbox_init(&mb, sizeof(int), 3), 0);
	for (int i = 0; i < 2; i++) {
		p[i] = (struct prod){ &mb, i * 1000000 };
		pthread_create(&t[i], NULL, producer, &p[i]);
	}
	for (int n = 0; n < 2 * PER; n++) {
		assert_int_equal(akk_mailbox_recv(&mb, &v), 0);
		int who = v >= 1000000;
		assert_int_equal(v - who * 1000000, next[who]);
		next[who]++;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(next[0], PER);
	assert_int_equal(next[1], PER);
	assert_true(akk_mailbox_mean_depth(&mb) >= 1.0);
	akk_mailbox_release(&mb);
}

struct receiver {
	struct akk_mailbox *mb;
	_Atomic pid_t tid;	/* set just before it receives */
};

static void *blocked_receiver(void *arg)
{
	struct receiver *r = arg;
	int v;

	atomic_store(&r->tid, (pid_t)syscall(SYS_gettid));
	return (void *)(long)akk_mailbox_recv(r->mb, &v);
}

/* The scheduler state of thread tid ('R', 'S', ...), 0 when it is gone. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold spaces and parentheses */
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Closing wakes a blocked receiver and fails later sends. The receiver is
 * shown blocked first: it has started its receive on an empty box, and the
 * kernel has it sleeping (the only sleep in a receive from an empty box no
 * one else locks is the wait for an item), for up to 10 s of polling. */
static void close_wakes(void **unused)
{
	struct akk_mailbox mb;
	struct receiver r = { &mb, 0 };
	pthread_t t;
	void *rc;
	char state = 0;
	pid_t tid;

	(void)unused;
	assert_int_equal(akk_mailbox_init(&mb, sizeof(int), 2), 0);
	assert_int_equal(pthread_create(&t, NULL, blocked_receiver, &r), 0);
	for (int i = 0; i < 10000 && state != 'S'; i++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
		if ((tid = atomic_load(&r.tid)))
			state = thread_state(tid);
	}
	if (state != 'S') {
		print_error("receiver thread state '%c' (0: not started or gone), "
			    "expected 'S' (blocked in the receive)\n", state ? state : '0');
		fail();
	}
	assert_int_equal(pthread_tryjoin_np(t, &rc), EBUSY);
	akk_mailbox_close(&mb);
	pthread_join(t, &rc);
	assert_int_equal((long)rc, -1);
	assert_int_equal(akk_mailbox_send(&mb, &(int){ 1 }), -1);
	akk_mailbox_release(&mb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fifo_order),
		cmocka_unit_test(producers_consumer),
		cmocka_unit_test(close_wakes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
