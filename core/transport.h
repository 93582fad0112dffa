/* transport.h - how actors send each other messages.
 *
 * Gate and sentinel code only ever calls akk_send/akk_recv with actor
 * numbers: 0 is the sentinel, 1..G the gates in order. The local transport
 * gives every actor a mailbox in this process; a later transport can carry
 * the same messages between processes (MPI ranks) by copying `n` floats of
 * `data` across, without touching gate logic. */
#ifndef AKK_TRANSPORT_H
#define AKK_TRANSPORT_H

#include "mailbox.h"

enum akk_msg_kind {
	AKK_MSG_FORWARD,	/* training activations, downstream */
	AKK_MSG_BACKWARD,	/* gradient of those activations, upstream */
	AKK_MSG_VALIDATE,	/* evaluation activations, downstream */
	AKK_MSG_SYNC,		/* barrier: downstream behind all earlier work */
	AKK_MSG_INTERRUPT,	/* to the sentinel: stop cleanly */
	AKK_MSG_STOP,		/* the actor leaves its loop */
};

struct akk_msg {
	int kind;
	int B;			/* samples */
	int slot;		/* VALIDATE: evaluation slot (sentinel's and gates') */
	long id;		/* FORWARD/BACKWARD: training batch sequence number */
	/* FORWARD/VALIDATE: the sender's output (B x n/B floats), lent until the
	 * batch's backward reaches the sentinel (training) or the batch comes
	 * back to the sentinel (validation). BACKWARD: the gradient, lent until
	 * the same batch's credit returns to the sentinel. */
	const float *data;
	long n;			/* floats at data */
	long vmin, vmax;	/* VALIDATE: weight versions seen across the gates */
};

struct akk_transport {
	struct akk_mailbox *boxes;	/* one per actor */
	int nactors;
};

/* Mailboxes for nactors actors, each holding up to cap messages. */
int akk_transport_init(struct akk_transport *t, int nactors, int cap);
void akk_transport_release(struct akk_transport *t);
int akk_send(struct akk_transport *t, int to, const struct akk_msg *m);
int akk_recv(struct akk_transport *t, int self, struct akk_msg *m);
/* Wake and fail every pending and future send and receive. */
void akk_transport_close(struct akk_transport *t);

#endif
