/* mailbox.h - a bounded FIFO of fixed-size items between threads.
 *
 * Mutex + two condition variables; items are copied in and out, so the
 * storage is allocated once at init and a send or receive never allocates.
 * Closing wakes every waiter: afterwards send and receive fail at once, which
 * is how a failing actor stops the whole system without a hang. */
#ifndef AKK_MAILBOX_H
#define AKK_MAILBOX_H

#include <pthread.h>
#include <stddef.h>

struct akk_mailbox {
	pthread_mutex_t mu;
	pthread_cond_t nonempty, nonfull;
	unsigned char *buf;	/* cap * item bytes */
	size_t item, cap, head, count;
	int closed;
	/* Statistics, under mu: messages received and the sum of the depth
	 * each found (itself included), for the mean mailbox depth. */
	long received;
	long depth_sum;
};

int akk_mailbox_init(struct akk_mailbox *mb, size_t item, size_t cap);
void akk_mailbox_release(struct akk_mailbox *mb);
/* Copy item in; blocks while full. -1 when closed. */
int akk_mailbox_send(struct akk_mailbox *mb, const void *item);
/* Copy the oldest item out; blocks while empty. -1 when closed. */
int akk_mailbox_recv(struct akk_mailbox *mb, void *item);
/* Copy the oldest item out if there is one: 0 done, 1 empty, -1 closed. */
int akk_mailbox_tryrecv(struct akk_mailbox *mb, void *item);
void akk_mailbox_close(struct akk_mailbox *mb);
/* Mean depth seen by receivers so far (0 when none). */
double akk_mailbox_mean_depth(struct akk_mailbox *mb);

#endif
