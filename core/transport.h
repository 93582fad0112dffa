/* transport.h - how actors send each other messages.
 *
 * Gate and sentinel code only ever calls akk_send/akk_recv with actor
 * numbers: 0 is the sentinel, 1..G the gates in order. The local transport
 * gives every actor a mailbox in this process. Under MPI, actors placed on
 * other ranks are reached through this rank's communication thread
 * (transport_mpi.c), which carries each message and its `n` floats of
 * `data` across; gate and sentinel code does not change. */
#ifndef AKK_TRANSPORT_H
#define AKK_TRANSPORT_H

#include "err.h"
#include "mailbox.h"

enum akk_msg_kind {
	AKK_MSG_FORWARD,	/* training activations, downstream */
	AKK_MSG_BACKWARD,	/* gradient of those activations, upstream */
	AKK_MSG_VALIDATE,	/* evaluation activations, downstream */
	AKK_MSG_SYNC,		/* barrier: downstream behind all earlier work */
	AKK_MSG_INTERRUPT,	/* to the sentinel: stop cleanly */
	AKK_MSG_STOP,		/* the actor leaves its loop */
	AKK_MSG_SNAPSHOT,	/* to a gate on another rank: send your state */
	AKK_MSG_STATE,		/* its reply to the sentinel (slot = the gate) */
	AKK_MSG_REDUCED,	/* a posted reduction finished (data parallelism) */
	AKK_MSG_NKINDS		/* how many kinds there are; keep it last */
};

/* The kind's name for error messages ("forward"), "unknown" out of range. */
const char *akk_msg_name(int kind);

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

struct akk_mpi_link;

struct akk_transport {
	struct akk_mailbox *boxes;	/* one per actor (only local ones used) */
	int nactors;
	/* Under MPI: the rank of every actor, this process's rank, and the
	 * link that reaches the others. actor_rank NULL: all local. */
	const int *actor_rank;
	int rank;
	struct akk_mpi_link *link;
};

/* What a link must know to receive a message's data into buffers of its
 * own: per destination actor, floats per sample arriving forward (a gate's
 * input, the sentinel's logits) and backward (a gate's output gradient),
 * and the length of a gate's STATE; K training and V validation batches
 * of up to max_batch samples in flight. */
struct akk_link_plan {
	int K, V, max_batch;
	const long *fwd_width, *bwd_width, *state_len;	/* nactors each;
							 * NULL: no remote actors */
	int channels;		/* reduction channels (data parallelism) */
};

/* Start this rank's communication thread (MPI builds). */
int akk_mpi_link_start(struct akk_transport *t, const struct akk_link_plan *p,
		       struct akk_err *e);
/* Hand a message for an actor on another rank to the link. */
int akk_mpi_post(struct akk_mpi_link *l, int to, const struct akk_msg *m);
/* Send what is queued and stop the thread; afterwards akk_mpi_post and
 * the reductions fail at once (a late post, such as a signal thread's
 * INTERRUPT, is safe: the link's memory stays until akk_transport_release
 * frees it). Does nothing the second time. */
void akk_mpi_link_stop(struct akk_transport *t);
/* Stop the link if it runs and free it (akk_transport_release does). */
void akk_mpi_link_free(struct akk_transport *t);
/* Data parallelism: sum n values (floats, or doubles when dbl) over every
 * rank, in place, on reduction channel `chan` (one per gate and one for
 * the sentinel, so that reductions running at once never cross). Blocks
 * the calling thread while the communication thread makes the MPI call. */
int akk_mpi_allreduce(struct akk_transport *t, int chan, void *buf, int n,
		      int dbl);
/* The same without blocking: when the sum is in buf, `note` arrives in the
 * mailbox of local actor `notify`. buf must stay valid until then; one
 * posted reduction per channel at a time. */
int akk_mpi_allreduce_post(struct akk_transport *t, int chan, void *buf,
			   int n, int dbl, int notify,
			   const struct akk_msg *note);
/* -1 and the reason in e when an MPI call of this rank's link failed (the
 * link has then failed every local actor); 0 otherwise. */
int akk_mpi_link_error(const struct akk_transport *t, struct akk_err *e);
/* What this rank's link has done so far. Zero without a link. */
struct akk_link_stats {
	long messages, bytes;	/* sent: headers and data */
	double busy;		/* seconds its thread spent sending and receiving */
	long reductions;	/* completed */
	long reduce_bytes;	/* this rank's contribution to them */
	double reduce_wait;	/* seconds from posting them to their completion */
};
void akk_mpi_link_stats(const struct akk_transport *t,
			struct akk_link_stats *st);

/* Mailboxes for nactors actors, each holding up to cap messages. */
int akk_transport_init(struct akk_transport *t, int nactors, int cap);
void akk_transport_release(struct akk_transport *t);
int akk_send(struct akk_transport *t, int to, const struct akk_msg *m);
int akk_recv(struct akk_transport *t, int self, struct akk_msg *m);
/* Wake and fail every pending and future send and receive. */
void akk_transport_close(struct akk_transport *t);

#endif
