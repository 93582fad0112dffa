/* provider.h - the data provider actor: batches prefetched ahead of use.
 *
 * A provider owns a pool of batches. Free batches sit in its `free` mailbox;
 * its actor, on the run's workers, takes one, fills it with the next batch
 * of the stream (training: epoch after epoch, each in a fresh seeded order;
 * validation: pass after pass in file order) and puts it in `ready`. The
 * sentinel takes ready batches and gives each back when its last reader is
 * done, so the pool size bounds both the prefetch depth and the memory. */
#ifndef AKK_PROVIDER_H
#define AKK_PROVIDER_H

#include "data/augment.h"
#include "data/batch.h"
#include "data/noise.h"
#include "runtime/mailbox.h"

struct akk_provider {
	const struct akk_dataset *data;	/* not owned */
	int shuffle;
	enum akk_order order;		/* of a training stream */
	uint64_t seed;
	int bs;
	long per_epoch;
	const struct akk_preprocess *pre;	/* lent until release */
	struct akk_augment aug;		/* training only (data.augment) */
	struct akk_noise noise;		/* training; validation with noise_eval */
	uint32_t *perm;			/* (n) the training order */
	struct akk_batch *pool;		/* npool batches */
	int npool;
	struct akk_mailbox free, ready;	/* of struct akk_batch * */
	int shards, shard;		/* data parallelism: this rank's slice of
					 * every batch of shards * bs samples */
	int epoch;			/* position of the next batch to fill */
	long index;
	int started;		/* its actor is on the workers */
	struct akk_actor task;	/* its actor (akk_provider_start) */
};

/* Stream starting at batch `index` of `epoch` (the next epoch's first
 * when index is the epoch's batch count). With shards > 1, batch i
 * of an epoch is this shard's even slice of samples [i*shards*bs,
 * (i+1)*shards*bs) of the epoch's order, the same on every rank. pre: the
 * input map (lent until release); ds: the data spec whose augment keys a
 * shuffled (training) stream applies, or NULL for none. */
struct akk_provider_config {
	const struct akk_data_spec *ds;	/* augment keys, or NULL */
	int shuffle;		/* 1: training, each epoch in the order: */
	enum akk_order order;	/* a fresh seeded shuffle, or streams
				 * (akk_train_order) */
	uint64_t seed;
	int bs;			/* samples per batch (per shard) */
	size_t in;		/* inputs per sample */
	int classes;		/* outputs (regression targets) per sample */
	int steps;		/* labels per sample (0 taken as 1) */
	int npool;		/* batches in the pool */
	int epoch;		/* the first batch: epoch, and index in it */
	long index;
	int shards, shard;	/* data parallelism; shards <= 1: none */
	const struct akk_target_map *tmap;	/* the batches' (data/batch.h) */
};
int akk_provider_init(struct akk_provider *p, const struct akk_dataset *d,
		      const struct akk_preprocess *pre,
		      const struct akk_provider_config *c, struct akk_err *e);
/* Fill batches as an actor on the workers w (a run's): each recycled
 * batch is a message, filled on whichever worker runs it (which it puts in
 * flush-to-zero mode, tensor.h's akk_float_mode), so providers add no
 * thread. Stopping it closes its boxes; the workers must stop first. */
void akk_provider_start(struct akk_provider *p, struct akk_workers *w);
/* The next batch, in stream order; NULL once stopped. */
struct akk_batch *akk_provider_next(struct akk_provider *p);
/* Give b back to the pool: 0, or -1 once stopped (b is not queued). */
int akk_provider_recycle(struct akk_provider *p, struct akk_batch *b);
/* Close its boxes (after its workers have stopped). */
void akk_provider_stop(struct akk_provider *p);
void akk_provider_release(struct akk_provider *p);

#endif
