/* checkpoint.h - self-describing training checkpoints (akkctl-checkpoint(5)).
 *
 * A checkpoint holds everything needed to rebuild the network and continue
 * training exactly: the config text and its --set overrides, the directory
 * its relative paths resolve against, every gate's parameters, running
 * state, optimizer moments, step and dropout RNG, the data position, and
 * the last metrics. All integers are little-endian fixed width, floats are
 * IEEE-754 binary32 little-endian, and a CRC-32 over everything before it
 * ends the file. Writing goes to a temporary file in the same directory,
 * fsync, rename, fsync of the directory: a reader sees the old file or the
 * new one, never a mix. Reading checks magic, version, length, CRC and every
 * field's bounds before it trusts a byte. */
#ifndef AKK_CHECKPOINT_H
#define AKK_CHECKPOINT_H

#include <stdint.h>

#include "base/err.h"
#include "data/preprocess.h"
#include "nn/loss.h"
#include "model/gate.h"
#include "base/rng.h"
#include "nn/monitor.h"

#define AKK_CKPT_MAGIC "AKKCKPT1"
#define AKK_CKPT_VERSION 2
/* Version 1 files (no data section) are still read: their input map is
 * rebuilt from their stored config, which could not standardize. */
#define AKK_CKPT_VERSION_MIN 1
/* The most training batches (and optimizer steps) a checkpoint may
 * record: 2^40, far beyond any run, and small enough that no position
 * arithmetic overflows. */
#define AKK_CKPT_MAX_STEPS (1L << 40)
/* The longest checkpoint read from a pipe or device, which has no size to
 * check the header against: 4 GiB. A regular file is bounded by its size. */
#define AKK_CKPT_MAX_STREAM (4ull << 30)
/* The most class names a checkpoint may hold. */
#define AKK_CKPT_MAX_CLASSES 65536

/* Where training stands: the next batch to train. */
struct akk_position {
	int epoch;		/* 0-based epoch of the next batch */
	long index;		/* its index within the epoch */
	long id;		/* training batches done in the whole run */
	/* The epoch's running sums so far (non-zero only mid-epoch). */
	double loss_sum;
	long correct, samples;
	double seconds;
	struct akk_reg_sums reg;	/* regression: the epoch's RMSE and R^2
					 * sums so far */
};

/* The last completed epoch's metrics, for inspect. */
struct akk_ckpt_metrics {
	int epoch;		/* 1-based; 0 = none yet */
	double train_loss, train_acc, val_loss, val_acc;
	double best_val_acc;
	/* the lowest validation loss so far (-1: none yet), for
	 * output.best_by: loss. With data.task regression the acc fields
	 * hold R^2. */
	double best_val_loss;
};

struct akk_ckpt_tensor {
	char *name;		/* "g1.l1.dense.weight", "g1.optimizer", ... */
	int rank;
	uint32_t dims[4];
	uint64_t count;
	float *data;		/* count floats, owned */
};

struct akk_ckpt_gate {
	long step;
	struct akk_rng rng;
	struct akk_ckpt_tensor *tensors;	/* owned */
	int ntensors;
};

/* A checkpoint read into memory. */
struct akk_checkpoint {
	uint32_t version;
	char *config;		/* the config text, owned */
	char *config_name;	/* the config's path when it was written */
	char *base_dir;		/* where its relative paths resolve; one
				 * stored relative to the checkpoint's
				 * directory is joined to it on read */
	char **sets;		/* --set overrides, owned */
	int nsets;
	int mode;		/* enum akk_mode the run used */
	struct akk_position pos;
	struct akk_ckpt_metrics metrics;
	struct akk_ckpt_gate *gates;	/* owned */
	int ngates;
	/* From the stored config, which the reader parsed. */
	int batch_size, epochs;
	/* Early stopping and the lr plateau (the optional "watch" block
	 * after the gates); all zero when the file has none. */
	int has_watch;
	struct akk_watch watch;
	/* The data section (version 2): empty in a
	 * version 1 file. */
	int task;		/* 0 classification, 1 regression */
	int targets;		/* regression targets per sample; 0 otherwise */
	char **class_names;	/* nclass_names (<= the network's classes), owned */
	int nclass_names;
	struct akk_preprocess pre;	/* the input map; in = 0: none stored */
	uint32_t *heldout;	/* nheldout training indices held out for
				 * validation, increasing, owned */
	size_t nheldout;
};

/* Everything a writer needs. */
struct akk_ckpt_source {
	const struct akk_spec *spec;
	const char *base_dir;	/* absolute, or relative to the directory
				 * the checkpoint is written to */
	int mode;
	const struct akk_gate *const *gates;	/* ngates, idle (drained) */
	int ngates;
	struct akk_position pos;
	struct akk_ckpt_metrics metrics;
	const struct akk_watch *watch;	/* NULL: no watch block */
	/* The data section, all lent: the input map
	 * (NULL: none), the class names and the held-out indices. */
	const struct akk_preprocess *pre;
	char *const *class_names;
	int nclass_names;
	const uint32_t *heldout;
	size_t nheldout;
};

/* Write atomically to path. */
int akk_checkpoint_write(const char *path, const struct akk_ckpt_source *src,
			 struct akk_err *e);
/* Read and verify path as a whole: the header, the CRC, every field's
 * range and their consistency (position, steps, running sums and metrics
 * finite and in range, every gate's step equal to the position's id), the
 * stored config, which must parse and plan, and every tensor's name and
 * shape against that plan, every value finite. Nothing is allocated
 * beyond what the file's bytes can hold. On error c is left empty and e
 * names the file and the field. */
int akk_checkpoint_read(struct akk_checkpoint *c, const char *path,
			struct akk_err *e);
void akk_checkpoint_release(struct akk_checkpoint *c);
/* The input map the checkpoint's network was trained with, into pre: the
 * stored one (version 2), or for a version 1 file the one its config s
 * gives (scale and normalize: version 1 could not standardize). */
int akk_checkpoint_input_map(const struct akk_checkpoint *c,
			     const struct akk_spec *s,
			     struct akk_preprocess *pre, struct akk_err *e);
/* Parse the stored config (as akk_spec_parse, with the stored overrides
 * and base directory), appending extra overrides. */
int akk_checkpoint_spec(const struct akk_checkpoint *c, struct akk_spec *s,
			const char *const *extra, int nextra, struct akk_err *e);
/* Whether the checkpoint holds exactly the tensors (names and shapes) of
 * the planned network m, before anything is allocated for it. */
struct akk_model;
int akk_checkpoint_match(const struct akk_checkpoint *c, const struct akk_model *m,
			 const char *path, struct akk_err *e);
/* Whether the checkpoint's own network (its stored config, planned) is
 * wired as m where it decides which weights go where
 * (akk_model_same_wiring): a graph whose nodes were reordered keeps every
 * tensor's name and size, and would load each node's weights into
 * another. */
int akk_checkpoint_match_wiring(const struct akk_checkpoint *c, const struct akk_model *m,
				const char *path, struct akk_err *e);
/* Resuming with batch_size on shards ranks over n training samples:
 * check c's position against that run and express it in its batches. A
 * position at the end of an epoch's training (its validation interrupted)
 * is kept as the end; mid-epoch at another batch size, the position is
 * converted when the samples done fill whole batches of the new size,
 * else refused. Fails, with e naming path, when the position does not
 * fit the data. */
int akk_checkpoint_position(struct akk_checkpoint *c, int batch_size, int shards,
			    size_t n, const char *path, struct akk_err *e);
/* Copy a checkpoint's gates into gates of the same network: every tensor's
 * name and shape must match. A NULL entry in gates is skipped (a gate this
 * process does not hold). path is for error messages. */
int akk_checkpoint_restore(const struct akk_checkpoint *c,
			   struct akk_gate *const *gates, int ngates,
			   const char *path, struct akk_err *e);

#endif
