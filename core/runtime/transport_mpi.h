/* transport_mpi.h - the link between ranks (MPI builds; without MPI the
 * link functions fail or do nothing): starting and stopping this rank's
 * communication thread, the reductions of data parallelism and the link's
 * errors and statistics. Starting a link registers its akk_link_ops with
 * the transport, which never includes this header. */
#ifndef AKK_TRANSPORT_MPI_H
#define AKK_TRANSPORT_MPI_H

#include "base/err.h"
#include "runtime/transport.h"

/* What a link must know to receive a message's data into buffers of its
 * own: per destination actor, floats per sample arriving forward (a gate's
 * input, the sentinel's logits) and backward (a gate's output gradient),
 * and the length of a gate's STATE; K training and V validation batches
 * of up to max_batch samples in flight. */
struct akk_link_plan {
	int K, V, max_batch;
	const long *fwd_width, *bwd_width, *state_len;	/* nactors each;
							 * NULL: no remote actors */
	/* Gates that fork and join: an actor receives from fan[a] peers
	 * (a join's sources, a fork's readers), each into slots of its own;
	 * peer[to * nactors + from] is the sender's number among them.
	 * NULL: one peer each (a chain). */
	const int *fan, *peer;
	int channels;		/* reduction channels (data parallelism) */
};

/* Start this rank's communication thread (MPI builds). */
int akk_mpi_link_start(struct akk_transport *t, const struct akk_link_plan *p,
		       struct akk_err *e);
/* Hand a message for an actor on another rank to the link. */
int akk_mpi_post(struct akk_mpi_link *l, int to, const struct akk_msg *m);
/* Send what is queued, stop the thread and free the link's communicators
 * (collective: every rank's main thread); afterwards akk_mpi_post and
 * the reductions fail at once (a late post, such as a signal thread's
 * INTERRUPT, is safe: the link's memory stays until akk_transport_release
 * frees it). Returns 0, or -1 with e filled when MPI could not free a
 * communicator. Does nothing the second time. */
int akk_mpi_link_stop(struct akk_transport *t, struct akk_err *e);
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
void akk_mpi_link_stats(const struct akk_transport *t,
			struct akk_link_stats *st);

#endif
