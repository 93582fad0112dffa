/* transport_mpi.c - messages between actors on different MPI ranks.
 *
 * One communication thread per rank makes every MPI call (the library
 * needs only MPI_THREAD_SERIALIZED). Actors hand it messages for remote
 * actors through its outbox; it sends each as a header (the message and
 * its destination, tag HDR) followed, when it carries data, by the n floats
 * straight from the sender's lent buffer (tag DATA). MPI keeps messages
 * between two ranks with the same tag in order, so every edge stays FIFO.
 * Incoming headers are matched with their data into receive buffers
 * planned at start, chosen the way the local transport lends: a training
 * batch's data goes to ring slot id % K, a validation batch's to its slot,
 * a gate's STATE to that gate's buffer. The credit protocol guarantees a
 * slot is free again before it is reused, so the receiver lends it to the
 * local actor exactly as a local sender would. */
#include "runtime/transport_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef AKK_MPI
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

#include "base/clock.h"
#include "tensor/tensor.h"

enum { TAG_HDR = 71, TAG_DATA = 72, NREQ = 512 };

struct out {
	int to;
	struct akk_msg m;
};

/* Receive slots of one kind for one actor: n slots of len floats. */
struct slots {
	float *buf;
	long len;
	int n;
};

/* One reduction: a thread waits for it on the condition variable (it
 * lives on that thread's stack), or, posted, its note goes to a local
 * actor when it is done (it lives in the link, one per channel). */
struct reduce {
	void *buf;
	int n, dbl, chan;
	MPI_Request req;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, failed;
	int notify;		/* -1: wake the waiter; else the actor to tell */
	struct akk_msg note;
	double t0;		/* when the link started it */
};

struct akk_mpi_link {
	struct akk_transport *t;
	struct akk_mailbox outbox;	/* struct out, from local actors */
	struct akk_mailbox reduces;	/* struct reduce *, from local threads */
	MPI_Comm *comms;		/* one per reduction channel */
	int ncomms;			/* of them duplicated and not yet freed */
	struct reduce **active;		/* in flight, one per channel at most */
	struct reduce *posted;		/* one per channel, for posted ones */
	int channels;
	int K, V, nactors;
	struct slots *fwd, *bwd, *val, *state;	/* per actor */
	int *peer;			/* nactors * nactors, or NULL */
	struct out hdr[NREQ];		/* headers in flight */
	MPI_Request req[NREQ];		/* a header or a data send, or NULL */
	int nfree, freelist[NREQ];
	pthread_t thread;
	atomic_int stop;
	int started;			/* the thread runs (main thread) */
	int stopped;			/* stop_link has run (main thread) */
	/* An MPI call of the thread failed: err says which (written before
	 * failed is set). The thread then fails every local actor and
	 * answers what is still posted with failures until it is stopped. */
	atomic_int failed;
	struct akk_err err;
	atomic_long sent_msgs, sent_bytes;	/* written by the thread */
	atomic_long busy_ns, reduce_ns, nreduce, reduce_bytes;
};

static int slots_alloc(struct slots *s, int n, long len)
{
	s->n = n;
	s->len = len;
	s->buf = n && len ? akk_alloc((size_t)n * len) : NULL;
	return n && len && !s->buf ? -1 : 0;
}

static float *slot(const struct slots *s, long i, long need)
{
	if (!s->buf || need > s->len || i < 0)
		return NULL;
	return s->buf + (i % s->n) * s->len;
}

/* The link fails: keep the first reason, and fail every local actor
 * (their sends and receives return -1) so that this rank's run ends and
 * reports it. Returns -1. */
static int link_fail(struct akk_mpi_link *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int link_fail(struct akk_mpi_link *l, const char *fmt, ...)
{
	va_list ap;

	if (!atomic_load(&l->failed)) {
		va_start(ap, fmt);
		vsnprintf(l->err.msg, sizeof(l->err.msg), fmt, ap);
		va_end(ap);
		atomic_store(&l->failed, 1);
	}
	akk_transport_close(l->t);
	return -1;
}

/* MPI's words for the error code rc, in why (MPI_MAX_ERROR_STRING). */
static void mpi_why(int rc, char *why)
{
	int len = 0;

	if (MPI_Error_string(rc, why, &len) != MPI_SUCCESS)
		snprintf(why, MPI_MAX_ERROR_STRING, "error %d", rc);
}

/* An MPI call of the thread returned rc: 0, or the link fails. */
static int mpi_check(struct akk_mpi_link *l, int rc, const char *call)
{
	char why[MPI_MAX_ERROR_STRING];

	if (rc == MPI_SUCCESS)
		return 0;
	mpi_why(rc, why);
	return link_fail(l, "MPI: %s failed: %s", call, why);
}

/* A free request slot, waiting for a send to finish if none is; -1 when
 * MPI fails. */
static int take_req(struct akk_mpi_link *l)
{
	while (!l->nfree) {	/* everything in flight: wait for one */
		int i;
		if (mpi_check(l, MPI_Waitany(NREQ, l->req, &i, MPI_STATUS_IGNORE),
			      "MPI_Waitany"))
			return -1;
		if (i != MPI_UNDEFINED)
			l->freelist[l->nfree++] = i;
	}
	return l->freelist[--l->nfree];
}

/* Return finished sends to the free list; 1 when none is left in flight,
 * -1 when MPI fails. */
static int reap(struct akk_mpi_link *l)
{
	int idx[NREQ], n;

	if (mpi_check(l, MPI_Testsome(NREQ, l->req, &n, idx, MPI_STATUSES_IGNORE),
		      "MPI_Testsome"))
		return -1;
	if (n != MPI_UNDEFINED)
		for (int k = 0; k < n; k++)
			l->freelist[l->nfree++] = idx[k];
	return l->nfree == NREQ;
}

static int send_out(struct akk_mpi_link *l, const struct out *o)
{
	int dest = l->t->actor_rank[o->to];
	int h = take_req(l), d;

	if (h < 0)
		return -1;
	l->hdr[h] = *o;
	if (mpi_check(l, MPI_Isend(&l->hdr[h], sizeof(struct out), MPI_BYTE, dest,
				   TAG_HDR, MPI_COMM_WORLD, &l->req[h]), "MPI_Isend"))
		return -1;
	atomic_fetch_add(&l->sent_msgs, 1);
	atomic_fetch_add(&l->sent_bytes, (long)sizeof(struct out) +
			 (o->m.n > 0 ? o->m.n * (long)sizeof(float) : 0));
	if (o->m.n <= 0)
		return 0;
	if ((d = take_req(l)) < 0)
		return -1;
	return mpi_check(l, MPI_Isend((void *)o->m.data, (int)o->m.n, MPI_FLOAT, dest,
				      TAG_DATA, MPI_COMM_WORLD, &l->req[d]), "MPI_Isend");
}

static float *recv_buffer(struct akk_mpi_link *l, const struct out *o)
{
	const struct akk_msg *m = &o->m;
	/* a join's sources and a fork's readers each have slots of their own */
	int k = l->peer && m->from >= 0 && m->from < l->nactors ?
		l->peer[o->to * l->nactors + m->from] : 0;

	switch (m->kind) {
	case AKK_MSG_FORWARD:
		return slot(&l->fwd[o->to], m->id % l->K + (long)l->K * k, m->n);
	case AKK_MSG_BACKWARD:
		return slot(&l->bwd[o->to], m->id % l->K + (long)l->K * k, m->n);
	case AKK_MSG_VALIDATE:
		return slot(&l->val[o->to], m->eval_slot % l->V + (long)l->V * k, m->n);
	case AKK_MSG_STATE:
		return m->gate > 0 && m->gate < l->nactors ?
			slot(&l->state[m->gate], 0, m->n) : NULL;
	default:
		return NULL;
	}
}

/* Take one message whose header is waiting from src; deliver it. A
 * message this rank cannot take means the ranks disagree about the run:
 * the link fails. (A closed mailbox is not a failure of the link: this
 * rank's run has failed already and says why.) */
static int receive(struct akk_mpi_link *l, int src)
{
	struct out o;
	float *buf = NULL;

	if (mpi_check(l, MPI_Recv(&o, sizeof(o), MPI_BYTE, src, TAG_HDR, MPI_COMM_WORLD,
				  MPI_STATUS_IGNORE), "MPI_Recv"))
		return -1;
	if (o.to < 0 || o.to >= l->nactors || l->t->actor_rank[o.to] != l->t->rank ||
	    (o.m.n > 0 && !(buf = recv_buffer(l, &o))))
		return link_fail(l, "rank %d sent a message this rank cannot take (actor %d, kind %d, %ld floats)",
				 src, o.to, o.m.kind, o.m.n);
	if (o.m.n > 0 &&
	    mpi_check(l, MPI_Recv(buf, (int)o.m.n, MPI_FLOAT, src, TAG_DATA, MPI_COMM_WORLD,
				  MPI_STATUS_IGNORE), "MPI_Recv"))
		return -1;
	o.m.data = buf;
	akk_mailbox_send(&l->t->boxes[o.to], &o.m);
	return 0;
}

/* A reduction is over (failed: it never will be): wake its waiter, or
 * tell its actor. */
static void finish(struct akk_mpi_link *l, struct reduce *q, int failed)
{
	if (q->notify >= 0) {
		/* a failed link has closed the actor's mailbox: that tells it */
		akk_mailbox_send(&l->t->boxes[q->notify], &q->note);
		return;
	}
	pthread_mutex_lock(&q->mu);
	q->done = 1;
	q->failed = failed;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

/* Start waiting reductions; finish those MPI has completed. Returns the
 * number still in flight. */
static int reductions(struct akk_mpi_link *l, int *idle)
{
	struct reduce *q;
	int busy = 0;

	while (akk_mailbox_tryrecv(&l->reduces, &q) == 0) {
		q->t0 = akk_now();
		l->active[q->chan] = q;
		*idle = 0;
		if (mpi_check(l, MPI_Iallreduce(MPI_IN_PLACE, q->buf, q->n,
						q->dbl ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM,
						l->comms[q->chan], &q->req), "MPI_Iallreduce"))
			return -1;
	}
	for (int c = 0; c < l->channels; c++) {
		int flag = 0;
		if (!(q = l->active[c]))
			continue;
		if (mpi_check(l, MPI_Test(&q->req, &flag, MPI_STATUS_IGNORE), "MPI_Test"))
			return -1;
		if (!flag) {
			busy++;
			continue;
		}
		l->active[c] = NULL;
		*idle = 0;
		atomic_fetch_add(&l->reduce_ns, (long)((akk_now() - q->t0) * 1e9));
		atomic_fetch_add(&l->nreduce, 1);
		atomic_fetch_add(&l->reduce_bytes, (long)q->n * (q->dbl ? 8 : 4));
		finish(l, q, 0);
	}
	return busy;
}

/* After a failure: no more MPI. Drop what actors post and fail the
 * reductions they wait for, until the link is stopped. */
static void failed_round(struct akk_mpi_link *l)
{
	struct out o;
	struct reduce *q;

	while (akk_mailbox_tryrecv(&l->outbox, &o) == 0)
		continue;
	while (akk_mailbox_tryrecv(&l->reduces, &q) == 0)
		finish(l, q, 1);
	for (int c = 0; c < l->channels; c++)
		if ((q = l->active[c])) {
			l->active[c] = NULL;
			finish(l, q, 1);
		}
}

static void *link_main(void *arg)
{
	struct akk_mpi_link *l = arg;
	struct timespec nap = { 0, 10000 };	/* 10 us when idle */

	for (;;) {
		struct out o;
		MPI_Status st;
		int idle = 1, flag = 0, rc, busy, sent;
		/* Read before the outbox is emptied, never after: everything
		 * posted before akk_mpi_link_stop set it is then taken below,
		 * so the thread leaves only once all of it is sent. */
		int stopping = atomic_load(&l->stop);
		double t0 = akk_now();

		if (atomic_load(&l->failed)) {
			failed_round(l);
			if (stopping)
				break;
			nanosleep(&nap, NULL);
			continue;
		}
		while ((rc = akk_mailbox_tryrecv(&l->outbox, &o)) == 0) {
			idle = 0;
			if (send_out(l, &o))
				break;
		}
		busy = reductions(l, &idle);
		if (atomic_load(&l->failed) ||
		    mpi_check(l, MPI_Iprobe(MPI_ANY_SOURCE, TAG_HDR, MPI_COMM_WORLD, &flag, &st),
			      "MPI_Iprobe"))
			continue;
		if (flag) {
			idle = 0;
			if (receive(l, st.MPI_SOURCE))
				continue;
		}
		if (!idle)
			atomic_fetch_add(&l->busy_ns, (long)((akk_now() - t0) * 1e9));
		if ((sent = reap(l)) < 0)
			continue;
		if (sent && !busy && (rc < 0 || stopping) && !flag)
			break;
		if (idle)
			nanosleep(&nap, NULL);
	}
	return NULL;
}

static int post_hook(struct akk_transport *t, int to, const struct akk_msg *m)
{
	return akk_mpi_post(t->link, to, m);
}

/* What the transport calls to reach other ranks (transport.h). */
static const struct akk_link_ops link_ops = { post_hook, akk_mpi_link_free };

/* Free the communicators the link still holds: collective, so on the
 * main thread with no link thread running, as they were duplicated. Every
 * one is freed even after a failure; the first failure is the error. */
static int free_comms(struct akk_mpi_link *l, struct akk_err *e)
{
	char why[MPI_MAX_ERROR_STRING];
	int rc = 0;

	for (int c = 0; c < l->ncomms; c++) {
		int r = MPI_Comm_free(&l->comms[c]);
		if (r != MPI_SUCCESS && !rc) {
			mpi_why(r, why);
			rc = akk_err_set(e, "MPI: MPI_Comm_free failed: %s", why);
		}
	}
	l->ncomms = 0;
	return rc;
}

/* The one teardown, whether akk_mpi_link_start got half way or the link
 * ran: stop the thread if it started (it sends what is queued first) and
 * close the mailboxes, so that from then on posts and reductions fail at
 * once; free the communicators. The memory stays (free_link). Does
 * nothing the second time. */
static int stop_link(struct akk_mpi_link *l, struct akk_err *e)
{
	int rc;

	if (l->stopped)
		return 0;
	if (l->started) {
		atomic_store(&l->stop, 1);
		pthread_join(l->thread, NULL);
		akk_mailbox_close(&l->outbox);
		akk_mailbox_close(&l->reduces);
	}
	rc = free_comms(l, e);
	l->stopped = 1;
	return rc;
}

/* The link's memory, after stop_link. */
static void free_link(struct akk_mpi_link *l)
{
	for (int a = 0; a < l->nactors; a++) {
		if (l->fwd) akk_free(l->fwd[a].buf);
		if (l->bwd) akk_free(l->bwd[a].buf);
		if (l->val) akk_free(l->val[a].buf);
		if (l->state) akk_free(l->state[a].buf);
	}
	free(l->fwd), free(l->bwd), free(l->val), free(l->state);
	free(l->peer);
	free(l->comms), free(l->active), free(l->posted);
	akk_mailbox_release(&l->outbox);
	akk_mailbox_release(&l->reduces);
	free(l);
}

int akk_mpi_link_start(struct akk_transport *t, const struct akk_link_plan *p,
		       struct akk_err *e)
{
	struct akk_mpi_link *l = calloc(1, sizeof(*l));
	char why[MPI_MAX_ERROR_STRING];
	int n = t->nactors, rc, nomem;

	if (!l)
		return akk_err_set(e, "out of memory");
	l->t = t;
	l->K = p->K;
	l->V = p->V;
	l->nactors = n;
	int fan = 1;
	for (int a = 0; p->fan && a < n; a++)
		if (p->fan[a] > fan)
			fan = p->fan[a];
	if (p->peer && (l->peer = malloc((size_t)n * n * sizeof(int))))
		memcpy(l->peer, p->peer, (size_t)n * n * sizeof(int));
	l->fwd = calloc(n, sizeof(*l->fwd));
	l->bwd = calloc(n, sizeof(*l->bwd));
	l->val = calloc(n, sizeof(*l->val));
	l->state = calloc(n, sizeof(*l->state));
	l->channels = p->channels;
	l->comms = calloc(p->channels + 1, sizeof(*l->comms));
	l->active = calloc(p->channels + 1, sizeof(*l->active));
	l->posted = calloc(p->channels + 1, sizeof(*l->posted));
	nomem = !l->fwd || !l->bwd || !l->val || !l->state || !l->comms || !l->active ||
		!l->posted || (p->peer && !l->peer) ||
		akk_mailbox_init(&l->outbox, sizeof(struct out), 4 * fan * (2 * p->K + p->V + 4 + n)) ||
		akk_mailbox_init(&l->reduces, sizeof(struct reduce *), p->channels + 1);
	if (nomem) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	/* collective, so here on the main thread before the link thread runs */
	for (; l->ncomms < p->channels; l->ncomms++)
		if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &l->comms[l->ncomms])) != MPI_SUCCESS) {
			mpi_why(rc, why);
			akk_err_set(e, "MPI: MPI_Comm_dup failed: %s", why);
			goto fail;
		}
	for (int a = 0; !nomem && p->fwd_width && a < n; a++) {
		if (t->actor_rank[a] != t->rank)
			continue;	/* nothing arrives here for it */
		int f = p->fan ? p->fan[a] : 1;
		nomem = slots_alloc(&l->fwd[a], p->K * f, p->fwd_width[a] * p->max_batch) ||
			slots_alloc(&l->bwd[a], p->K * f, p->bwd_width[a] * p->max_batch) ||
			slots_alloc(&l->val[a], p->V * f, p->fwd_width[a] * p->max_batch);
	}
	/* rank 0's sentinel gathers every remote gate's state */
	for (int a = 1; !nomem && p->fwd_width && a < n; a++)
		if (t->rank == 0 && t->actor_rank[a] != 0)
			nomem = slots_alloc(&l->state[a], 1, p->state_len[a]);
	if (nomem) {
		akk_err_set(e, "out of memory");
		goto fail;
	}
	for (int i = 0; i < NREQ; i++) {
		l->req[i] = MPI_REQUEST_NULL;
		l->freelist[i] = i;
	}
	l->nfree = NREQ;
	t->link = l;
	if (pthread_create(&l->thread, NULL, link_main, l)) {
		t->link = NULL;
		akk_err_set(e, "cannot start the MPI communication thread");
		goto fail;
	}
	l->started = 1;
	t->ops = &link_ops;
	return 0;
fail:
	/* e says why the start failed: that is the error, even when freeing
	 * the communicators duplicated so far fails as well */
	stop_link(l, NULL);
	free_link(l);
	return -1;
}

int akk_mpi_post(struct akk_mpi_link *l, int to, const struct akk_msg *m)
{
	struct out o = { to, *m };

	return l ? akk_mailbox_send(&l->outbox, &o) : -1;
}

int akk_mpi_link_stop(struct akk_transport *t, struct akk_err *e)
{
	return t->link ? stop_link(t->link, e) : 0;
}

void akk_mpi_link_free(struct akk_transport *t)
{
	struct akk_mpi_link *l = t->link;

	if (!l)
		return;
	/* stopped already, and its error reported, by the run that used it
	 * (akk_run_train, akk_run_release): a stop here has no one to tell */
	stop_link(l, NULL);
	free_link(l);
	t->link = NULL;
	t->ops = NULL;
}

int akk_mpi_allreduce_post(struct akk_transport *t, int chan, void *buf,
			   int n, int dbl, int notify,
			   const struct akk_msg *note)
{
	struct akk_mpi_link *l = t->link;
	struct reduce *q;

	if (!l || chan < 0 || chan >= l->channels)
		return -1;
	q = &l->posted[chan];
	*q = (struct reduce){ .buf = buf, .n = n, .dbl = dbl, .chan = chan,
			      .req = MPI_REQUEST_NULL, .notify = notify,
			      .note = *note };
	return akk_mailbox_send(&l->reduces, &q);
}

int akk_mpi_allreduce(struct akk_transport *t, int chan, void *buf, int n,
		      int dbl)
{
	struct akk_mpi_link *l = t->link;
	struct reduce q = { buf, n, dbl, chan, MPI_REQUEST_NULL,
			    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0,
			    -1, { 0 }, 0 };
	struct reduce *qp = &q;

	if (!l || chan < 0 || chan >= l->channels || akk_mailbox_send(&l->reduces, &qp))
		return -1;
	if (t->workers)	/* this worker blocks: its next actor runs elsewhere */
		akk_workers_flush(t->workers);
	pthread_mutex_lock(&q.mu);
	while (!q.done)
		pthread_cond_wait(&q.cv, &q.mu);
	pthread_mutex_unlock(&q.mu);
	return q.failed ? -1 : 0;
}

int akk_mpi_link_error(const struct akk_transport *t, struct akk_err *e)
{
	struct akk_mpi_link *l = t->link;

	if (!l || !atomic_load(&l->failed))
		return 0;
	*e = l->err;
	return -1;
}

void akk_mpi_link_stats(const struct akk_transport *t,
			struct akk_link_stats *st)
{
	struct akk_mpi_link *l = t->link;

	memset(st, 0, sizeof(*st));
	if (!l)
		return;
	st->messages = atomic_load(&l->sent_msgs);
	st->bytes = atomic_load(&l->sent_bytes);
	st->busy = atomic_load(&l->busy_ns) * 1e-9;
	st->reductions = atomic_load(&l->nreduce);
	st->reduce_bytes = atomic_load(&l->reduce_bytes);
	st->reduce_wait = atomic_load(&l->reduce_ns) * 1e-9;
}

#else	/* no MPI */

int akk_mpi_link_error(const struct akk_transport *t, struct akk_err *e)
{
	(void)t, (void)e;
	return 0;
}

void akk_mpi_link_stats(const struct akk_transport *t,
			struct akk_link_stats *st)
{
	(void)t;
	memset(st, 0, sizeof(*st));
}

int akk_mpi_allreduce(struct akk_transport *t, int chan, void *buf, int n,
		      int dbl)
{
	(void)t, (void)chan, (void)buf, (void)n, (void)dbl;
	return -1;
}

int akk_mpi_allreduce_post(struct akk_transport *t, int chan, void *buf,
			   int n, int dbl, int notify,
			   const struct akk_msg *note)
{
	(void)t, (void)chan, (void)buf, (void)n, (void)dbl, (void)notify, (void)note;
	return -1;
}

int akk_mpi_link_start(struct akk_transport *t, const struct akk_link_plan *p,
		       struct akk_err *e)
{
	(void)t;
	(void)p;
	return akk_err_set(e, "this akkctl was built without MPI; rebuild with 'make MPI=1'");
}

int akk_mpi_post(struct akk_mpi_link *l, int to, const struct akk_msg *m)
{
	(void)l;
	(void)to;
	(void)m;
	return -1;
}

int akk_mpi_link_stop(struct akk_transport *t, struct akk_err *e)
{
	(void)t, (void)e;
	return 0;
}

void akk_mpi_link_free(struct akk_transport *t)
{
	(void)t;
}

#endif
