/* ckpt_files.h - a run directory's checkpoint files: names, cadence, pruning. */
#ifndef AKK_CKPT_FILES_H
#define AKK_CKPT_FILES_H

#include "checkpoint.h"
#include "run.h"

struct ckpt_policy {
	const struct akk_spec *spec;
	const char *dir;	/* the run directory */
	char base_dir[1024];	/* absolute directory of the config */
	int every, keep;
	struct akk_ckpt_metrics metrics;	/* last epoch's, and the best accuracy */
};

/* Write the run's gates (idle) to DIR/NAME with the run's position. */
int ckpt_save(struct ckpt_policy *p, struct akk_run *r, const char *name,
	      struct akk_err *e);
/* After an epoch: epoch-NNNN.bin at the cadence (pruned to the newest
 * `keep`), best.bin when validation accuracy improved. */
int ckpt_epoch(struct ckpt_policy *p, struct akk_run *r,
	       const struct akk_epoch_report *rep, struct akk_err *e);
/* A checkpoint to resume from: a file, or in a run directory the newest
 * of last.bin and epoch-*.bin. Fills path. */
int ckpt_resolve(const char *arg, char *path, int size, struct akk_err *e);
/* The checkpoint eval (prefer_best) or inspect reads for arg: arg itself
 * unless it is a directory; in a run directory, for eval best.bin, else
 * last.bin, else the epoch-NNNN.bin of the highest epoch; for inspect
 * last.bin, else the newest epoch-NNNN.bin, else best.bin. Temp files are
 * never taken. *path is allocated (free it). Returns 0 for arg itself,
 * 1 for a file chosen in the directory, -1 when there is none. */
int ckpt_pick(const char *arg, int prefer_best, char **path, struct akk_err *e);

#endif
