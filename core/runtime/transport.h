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

#include "base/err.h"
#include "runtime/mailbox.h"

enum akk_msg_kind {
	AKK_MSG_FORWARD,	/* training activations, downstream */
	AKK_MSG_BACKWARD,	/* gradient of those activations, upstream */
	AKK_MSG_VALIDATE,	/* evaluation activations, downstream */
	AKK_MSG_SYNC,		/* barrier: downstream behind all earlier work */
	AKK_MSG_INTERRUPT,	/* to the sentinel: stop cleanly */
	AKK_MSG_STOP,		/* the actor leaves its loop */
	AKK_MSG_SNAPSHOT,	/* to a gate on another rank: send your state */
	AKK_MSG_STATE,		/* its reply to the sentinel (gate = the gate) */
	AKK_MSG_REDUCED,	/* a posted reduction finished (data parallelism) */
	AKK_MSG_LOSS,		/* to the sentinel: the last gate computed the
				 * loss of training chunk id (loss_here.h) */
	AKK_MSG_NKINDS		/* how many kinds there are; keep it last */
};

/* The kind's name for error messages ("forward"), "unknown" out of range. */
const char *akk_msg_name(int kind);

struct akk_msg {
	int kind;
	int B;			/* samples */
	union {			/* one int, named by the kind */
		int eval_slot;	/* VALIDATE: evaluation slot (sentinel's
				 * and gates') */
		int more;	/* BACKWARD: 1 when more chunks of its step
				 * group follow (no optimizer step yet) */
		int gate;	/* STATE: the gate (1..G) whose state it is */
		int reductions;	/* SYNC: the lr plateau's reductions so far */
		int restart;	/* FORWARD: 1 for an epoch's first batch: the
				 * gates zero their carried state first
				 * (akk_gate_restart) */
	};
	long id;		/* FORWARD/BACKWARD: training chunk sequence number */
	/* FORWARD/VALIDATE: the sender's output (B x n/B floats), lent until the
	 * batch's backward reaches the sentinel (training) or the batch comes
	 * back to the sentinel (validation). BACKWARD: the gradient, lent until
	 * the same batch's credit returns to the sentinel. */
	const float *data;
	long n;			/* floats at data */
	long vmin, vmax;	/* VALIDATE: weight versions seen across the gates */
	int from;		/* the sending actor (0: the sentinel): a join
				 * tells its sources apart by it, a fork its
				 * readers */
};

struct akk_mpi_link;
struct akk_transport;

/* The link hook: how the in-process transport reaches actors on other
 * ranks, without depending on MPI. transport_mpi.c registers its table
 * when it starts a link (transport_mpi.h); NULL: every actor is local. */
struct akk_link_ops {
	/* hand m for remote actor `to` to the link; -1 when it has stopped */
	int (*post)(struct akk_transport *t, int to, const struct akk_msg *m);
	/* stop the link if it runs and free it */
	void (*release)(struct akk_transport *t);
};

struct akk_transport {
	struct akk_mailbox *boxes;	/* one per actor (only local ones used) */
	int nactors;
	/* Under MPI: the rank of every actor, this process's rank, and the
	 * link that reaches the others. actor_rank NULL: all local. */
	const int *actor_rank;
	int rank;
	struct akk_mpi_link *link;
	const struct akk_link_ops *ops;	/* NULL: no link */
	/* The workers the actors run on, or NULL: a blocking reduction
	 * hands the caller's queued actor to another worker first. */
	struct akk_workers *workers;
};

/* What this rank's link has done so far. Zero without a link. */
struct akk_link_stats {
	long messages, bytes;	/* sent: headers and data */
	double busy;		/* seconds its thread spent sending and receiving */
	long reductions;	/* completed */
	long reduce_bytes;	/* this rank's contribution to them */
	double reduce_wait;	/* seconds from posting them to their completion */
};

/* Mailboxes for nactors actors, each holding up to cap messages. */
int akk_transport_init(struct akk_transport *t, int nactors, int cap);
void akk_transport_release(struct akk_transport *t);
int akk_send(struct akk_transport *t, int to, const struct akk_msg *m);
int akk_recv(struct akk_transport *t, int self, struct akk_msg *m);
/* Wake and fail every pending and future send and receive. */
void akk_transport_close(struct akk_transport *t);

#endif
