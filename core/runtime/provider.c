/* provider.c - prefetching batches: an actor on the run's workers. */
#include "runtime/provider.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int akk_provider_init(struct akk_provider *p, const struct akk_dataset *d,
		      const struct akk_preprocess *pre,
		      const struct akk_provider_config *c, struct akk_err *e)
{
	const struct akk_data_spec *ds = c->ds;
	int shuffle = c->shuffle, bs = c->bs, classes = c->classes, npool = c->npool;
	int epoch = c->epoch, shards = c->shards, shard = c->shard;
	uint64_t seed = c->seed;
	size_t in = c->in;
	long index = c->index;

	memset(p, 0, sizeof(*p));
	p->data = d;
	p->shuffle = shuffle;
	p->order = c->order;
	p->seed = seed;
	p->bs = bs;
	p->shards = shards > 1 ? shards : 1;
	p->shard = shards > 1 ? shard : 0;
	p->per_epoch = akk_batches_per_epoch(d->n, bs * p->shards);
	/* a position at the end of an epoch's batches (stopped during its
	 * validation) streams from the next epoch's first */
	if (index >= p->per_epoch) {
		epoch++;
		index = 0;
	}
	p->epoch = epoch;
	p->index = index;
	p->npool = npool;
	p->pre = pre;
	if (shuffle && ds && akk_augment_init(&p->aug, ds, d->c, d->h, d->w, seed, e))
		return -1;
	akk_noise_init(&p->noise, ds, pre, d->xtype, seed);
	if (!shuffle && !p->noise.eval)
		p->noise.std = 0;	/* validation is clean unless told */
	p->pool = calloc(npool, sizeof(*p->pool));
	p->perm = shuffle ? malloc(d->n * sizeof(*p->perm)) : NULL;
	if (!p->pool || (shuffle && !p->perm) ||
	    akk_mailbox_init(&p->free, sizeof(struct akk_batch *), npool) ||
	    akk_mailbox_init(&p->ready, sizeof(struct akk_batch *), npool))
		goto oom;
	for (int i = 0; i < npool; i++) {
		struct akk_batch *b = &p->pool[i];
		if (akk_batch_alloc(b, bs, in, classes, c->steps > 1 ? c->steps : 1))
			goto oom;
		b->tmap = c->tmap;
		/* the box holds npool and is open: this cannot fail, but a
		 * batch lost here would hang the stream, so say it */
		if (akk_mailbox_send(&p->free, &b)) {
			akk_provider_release(p);
			return akk_err_set(e, "cannot queue data batch %d of %d", i + 1, npool);
		}
	}
	if (shuffle)
		akk_train_order(p->perm, d->n, p->order, bs * p->shards, seed, epoch);
	return 0;
oom:
	akk_provider_release(p);
	return akk_err_set(e, "out of memory allocating data batches");
}

/* Fill b with the next batch of the stream and hand it on: 0, or -1
 * once the ready box is closed. */
static int fill_one(struct akk_provider *p, struct akk_batch *b)
{
	size_t span = (size_t)p->bs * p->shards, lo = p->index * span;
	size_t len = lo + span <= p->data->n ? span : p->data->n - lo;
	size_t a = lo + len * p->shard / p->shards;
	size_t z = lo + len * (p->shard + 1) / p->shards;

	akk_batch_fill_range(b, p->data, p->perm, a, (int)(z - a),
			     p->index + 1 == p->per_epoch, p->pre);
	akk_augment_batch(&p->aug, b->x, b->B, p->perm, a, p->epoch);
	akk_noise_batch(&p->noise, b->x, b->B, p->perm, a,
			p->shuffle ? p->epoch : AKK_NOISE_EVAL);
	b->index = p->index;
	b->epoch = p->epoch;
	if (++p->index == p->per_epoch) {
		p->index = 0;
		p->epoch++;
		if (p->shuffle)
			akk_train_order(p->perm, p->data->n, p->order,
					p->bs * p->shards, p->seed, p->epoch);
	}
	return akk_mailbox_send(&p->ready, &b) ? -1 : 0;
}

/* The actor's message is "fill this free batch" (recycle sends it). */
static int provider_run(struct akk_actor *t)
{
	struct akk_provider *p = (struct akk_provider *)
		((char *)t - offsetof(struct akk_provider, task));
	struct akk_batch *b;

	if (akk_mailbox_tryrecv(&p->free, &b))
		return 0;
	/* it computes the pixel map: denormals flushed on whatever worker
	 * runs it (a run's workers are so already) */
	akk_float_mode();
	if (fill_one(p, b))
		return 0;
	return akk_mailbox_pending(&p->free);
}

void akk_provider_start(struct akk_provider *p, struct akk_workers *w)
{
	akk_actor_init(&p->task, w, provider_run);
	p->task.background = 1;	/* prefetch: for an idle worker */
	akk_mailbox_attach(&p->free, &p->task);
	akk_mailbox_help(&p->ready, w);
	p->started = 1;
	akk_actor_post(&p->task);	/* the pool's batches are already free */
}

struct akk_batch *akk_provider_next(struct akk_provider *p)
{
	struct akk_batch *b;

	return akk_mailbox_recv(&p->ready, &b) ? NULL : b;
}

int akk_provider_recycle(struct akk_provider *p, struct akk_batch *b)
{
	return akk_mailbox_send(&p->free, &b);
}

void akk_provider_stop(struct akk_provider *p)
{
	if (!p->started)
		return;
	akk_mailbox_close(&p->free);
	akk_mailbox_close(&p->ready);
	p->started = 0;
}

void akk_provider_release(struct akk_provider *p)
{
	akk_provider_stop(p);
	for (int i = 0; p->pool && i < p->npool; i++)
		akk_batch_release(&p->pool[i]);
	free(p->pool);
	free(p->perm);
	akk_augment_release(&p->aug);
	akk_mailbox_release(&p->free);
	akk_mailbox_release(&p->ready);
	memset(p, 0, sizeof(*p));
}
