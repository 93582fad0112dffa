/* mailbox.c - bounded FIFO with mutex and condition variables. */
#include "runtime/mailbox.h"

#include <stdlib.h>
#include <string.h>

int akk_mailbox_init(struct akk_mailbox *mb, size_t item, size_t cap)
{
	memset(mb, 0, sizeof(*mb));
	mb->buf = malloc(item * cap);
	if (!mb->buf)
		return -1;
	mb->item = item;
	mb->cap = cap;
	pthread_mutex_init(&mb->mu, NULL);
	pthread_cond_init(&mb->nonempty, NULL);
	pthread_cond_init(&mb->nonfull, NULL);
	return 0;
}

void akk_mailbox_release(struct akk_mailbox *mb)
{
	if (!mb->buf)
		return;
	pthread_mutex_destroy(&mb->mu);
	pthread_cond_destroy(&mb->nonempty);
	pthread_cond_destroy(&mb->nonfull);
	free(mb->buf);
	memset(mb, 0, sizeof(*mb));
}

void akk_mailbox_attach(struct akk_mailbox *mb, struct akk_actor *task)
{
	mb->task = task;
}

void akk_mailbox_help(struct akk_mailbox *mb, struct akk_workers *w)
{
	mb->helpers = w;
}

/* After a send or close: whoever waits for this box learns it. */
static void notify(struct akk_mailbox *mb)
{
	if (mb->task)
		akk_actor_wake(mb->task);
	if (mb->helpers)
		akk_workers_poke(mb->helpers);
}

int akk_mailbox_send(struct akk_mailbox *mb, const void *item)
{
	pthread_mutex_lock(&mb->mu);
	while (mb->count == mb->cap && !mb->closed) {
		if (mb->task || mb->helpers) {
			pthread_mutex_unlock(&mb->mu);
			return -2;
		}
		pthread_cond_wait(&mb->nonfull, &mb->mu);
	}
	if (mb->closed) {
		pthread_mutex_unlock(&mb->mu);
		return -1;
	}
	memcpy(mb->buf + ((mb->head + mb->count) % mb->cap) * mb->item, item,
	       mb->item);
	mb->count++;
	pthread_cond_signal(&mb->nonempty);
	pthread_mutex_unlock(&mb->mu);
	notify(mb);
	return 0;
}

/* Items in the box, and whether it is closed. */
static size_t count(struct akk_mailbox *mb, int *closed)
{
	size_t n;

	pthread_mutex_lock(&mb->mu);
	n = mb->count;
	*closed = mb->closed;
	pthread_mutex_unlock(&mb->mu);
	return n;
}

int akk_mailbox_pending(struct akk_mailbox *mb)
{
	int closed;

	return count(mb, &closed) > 0;
}

/* Something to receive, or closed. */
static int ready(void *arg)
{
	int closed;

	return count(arg, &closed) > 0 || closed;
}

int akk_mailbox_recv(struct akk_mailbox *mb, void *item)
{
	if (mb->helpers)
		akk_workers_help(mb->helpers, ready, mb);
	pthread_mutex_lock(&mb->mu);
	while (mb->count == 0 && !mb->closed)
		pthread_cond_wait(&mb->nonempty, &mb->mu);
	if (mb->closed) {
		pthread_mutex_unlock(&mb->mu);
		return -1;
	}
	mb->received++;
	mb->depth_sum += (long)mb->count;
	memcpy(item, mb->buf + mb->head * mb->item, mb->item);
	mb->head = (mb->head + 1) % mb->cap;
	mb->count--;
	pthread_cond_signal(&mb->nonfull);
	pthread_mutex_unlock(&mb->mu);
	return 0;
}

int akk_mailbox_tryrecv(struct akk_mailbox *mb, void *item)
{
	int rc = 1;

	pthread_mutex_lock(&mb->mu);
	if (mb->closed) {
		rc = -1;
	} else if (mb->count) {
		mb->received++;
		mb->depth_sum += (long)mb->count;
		memcpy(item, mb->buf + mb->head * mb->item, mb->item);
		mb->head = (mb->head + 1) % mb->cap;
		mb->count--;
		pthread_cond_signal(&mb->nonfull);
		rc = 0;
	}
	pthread_mutex_unlock(&mb->mu);
	return rc;
}

void akk_mailbox_close(struct akk_mailbox *mb)
{
	pthread_mutex_lock(&mb->mu);
	mb->closed = 1;
	pthread_cond_broadcast(&mb->nonempty);
	pthread_cond_broadcast(&mb->nonfull);
	pthread_mutex_unlock(&mb->mu);
	notify(mb);
}

double akk_mailbox_mean_depth(struct akk_mailbox *mb)
{
	double d;

	pthread_mutex_lock(&mb->mu);
	d = mb->received ? (double)mb->depth_sum / mb->received : 0;
	pthread_mutex_unlock(&mb->mu);
	return d;
}
