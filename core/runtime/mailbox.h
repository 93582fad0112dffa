/* mailbox.h - a bounded FIFO of fixed-size items between threads.
 *
 * Mutex + two condition variables; items are copied in and out, so the
 * storage is allocated once at init and a send or receive never allocates.
 * Closing wakes every waiter: afterwards send and receive fail at once, which
 * is how a failing actor stops the whole system without a hang.
 *
 * On the workers (base/workers.h) a mailbox is either an actor's (its task
 * is woken by every send and by close, and runs with tryrecv) or one that
 * sequential code on a worker waits on (the sentinel's: its receive helps
 * the workers until an item is there). Either way a send never blocks: a
 * full box fails the send with -2, loudly, where a blocked worker would
 * hang the run. */
#ifndef AKK_MAILBOX_H
#define AKK_MAILBOX_H

#include <pthread.h>
#include <stddef.h>

#include "base/workers.h"

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
	struct akk_actor *task;		/* the actor it feeds, or NULL */
	struct akk_workers *helpers;	/* receive helps them, or NULL */
};

int akk_mailbox_init(struct akk_mailbox *mb, size_t item, size_t cap);
void akk_mailbox_release(struct akk_mailbox *mb);
/* Before any send: the actor task this box feeds (wake it on each send
 * and on close), or the workers a receive helps while it waits. */
void akk_mailbox_attach(struct akk_mailbox *mb, struct akk_actor *task);
void akk_mailbox_help(struct akk_mailbox *mb, struct akk_workers *w);
/* Copy item in; blocks while full (-2 at once when attached or helped).
 * -1 when closed. */
int akk_mailbox_send(struct akk_mailbox *mb, const void *item);
/* Copy the oldest item out; blocks while empty. -1 when closed. */
int akk_mailbox_recv(struct akk_mailbox *mb, void *item);
/* Whether an item waits: an actor's run says so to be run again. */
int akk_mailbox_pending(struct akk_mailbox *mb);
/* Copy the oldest item out if there is one: 0 done, 1 empty, -1 closed. */
int akk_mailbox_tryrecv(struct akk_mailbox *mb, void *item);
void akk_mailbox_close(struct akk_mailbox *mb);
/* Mean depth seen by receivers so far (0 when none). */
double akk_mailbox_mean_depth(struct akk_mailbox *mb);

#endif
