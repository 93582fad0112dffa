/* test_mailbox.c - the bounded FIFO between threads. */
#include <pthread.h>
#include <string.h>

#include "testutil.h"
#include "mailbox.h"

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

static void *blocked_receiver(void *arg)
{
	int v;
	return (void *)(long)akk_mailbox_recv(arg, &v);
}

/* Closing wakes a blocked receiver and fails later sends. */
static void close_wakes(void **unused)
{
	struct akk_mailbox mb;
	pthread_t t;
	void *rc;

	(void)unused;
	assert_int_equal(akk_mailbox_init(&mb, sizeof(int), 2), 0);
	pthread_create(&t, NULL, blocked_receiver, &mb);
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
