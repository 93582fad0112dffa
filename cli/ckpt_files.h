/* ckpt_files.h - a run directory's files: checkpoint names, cadence and
 * pruning, which run a directory holds, stray temporary files, and the
 * checkpoint a resume takes. */
#ifndef AKK_CKPT_FILES_H
#define AKK_CKPT_FILES_H

#include "io/checkpoint.h"
#include "runtime/run.h"

struct ckpt_policy {
	const struct akk_spec *spec;
	const char *dir;	/* the run directory */
	const char *base_dir;	/* absolute directory of the config */
	int every, keep;
	struct akk_ckpt_metrics metrics;	/* last epoch's, and the best accuracy */
};

/* "DIR/NAME", allocated; NULL (e filled) when out of memory. */
char *ckpt_join(const char *dir, const char *name, struct akk_err *e);

/* Write the run's gates (idle) to DIR/NAME with the run's position. */
int ckpt_save(struct ckpt_policy *p, struct akk_run *r, const char *name,
	      struct akk_err *e);
/* After an epoch: epoch-NNNN.bin at the cadence (pruned to the newest
 * `keep`), best.bin when validation accuracy improved. */
int ckpt_epoch(struct ckpt_policy *p, struct akk_run *r,
	       const struct akk_epoch_report *rep, struct akk_err *e);

/* Whether NAME is a temporary file that the checkpoint writer or the
 * metrics truncation leaves behind when killed: "<file>.tmp.<digits>",
 * <file> a checkpoint's name or metrics. */
int ckpt_is_temp(const char *name, const char *metrics);
/* The files of a run that DIR holds (the metrics file named metrics,
 * last.bin, best.bin, epoch-NNNN.bin), as "'a', 'b'" in *list (allocated;
 * NULL when there are none or DIR does not exist). An empty metrics file
 * (a run whose first row could not be written) is not one. */
int run_dir_files(const char *dir, const char *metrics, char **list,
		  struct akk_err *e);
/* Refuse (-1 with e) when one of those files is a symbolic link or not a
 * regular file: a run never writes through a link. */
int run_dir_check_links(const char *dir, const char *metrics, struct akk_err *e);
/* Remove those files and every stray temporary file: --force. */
int run_dir_clear(const char *dir, const char *metrics, struct akk_err *e);
/* Remove the stray temporary files only (start of every run). */
int run_dir_remove_temps(const char *dir, const char *metrics, struct akk_err *e);
/* Before a resume from position pos: remove DIR/best.bin when it holds
 * network m further into training than pos (saved in epochs the resume
 * redoes, whose metrics rows are cut). *removed says whether it did. */
int run_dir_drop_later_best(const char *dir, const struct akk_model *m,
			    const struct akk_position *pos, int *removed,
			    struct akk_err *e);

/* The checkpoint to resume from, of the network m: ARG itself when it is a
 * file (read, and matched against m); in a directory the newest by
 * training position among last.bin and epoch-NNNN.bin that are readable
 * and of the same network (best.bin and temporary files never). Fills *ck
 * and *path (allocated); *passed (allocated, or NULL) gets one line per
 * checkpoint passed over and why. Returns 0, 1 when the directory holds
 * no checkpoint at all (nothing filled), -1 with e filled. */
int ckpt_resolve(const char *arg, const struct akk_model *m,
		 struct akk_checkpoint *ck, char **path, char **passed,
		 struct akk_err *e);
/* A resume goes on in the schedule its checkpoint ck (read from path)
 * was trained in: -1 with e when mode (enum akk_mode) is another. */
int ckpt_check_mode(const struct akk_checkpoint *ck, const char *path, int mode,
		    struct akk_err *e);
/* The checkpoint eval (prefer_best) or inspect reads for arg: arg itself
 * unless it is a directory; in a run directory, for eval best.bin, else
 * last.bin, else the epoch-NNNN.bin of the highest epoch; for inspect
 * last.bin, else the newest epoch-NNNN.bin, else best.bin. Temp files are
 * never taken. *path is allocated (free it). Returns 0 for arg itself,
 * 1 for a file chosen in the directory, -1 when there is none. */
int ckpt_pick(const char *arg, int prefer_best, char **path, struct akk_err *e);
/* The checkpoint CHECKPOINT|DIR names, as eval, export and predict take
 * it: picked (prefer_best as ckpt_pick; "using 'PATH'" on stderr when a
 * directory gave it), read whole and validated into ck, and its stored
 * config parsed into s. *path is set whenever a file was picked (free it);
 * ck and s are released by the caller either way. 0, or -1 with e. */
int ckpt_load(const char *arg, int prefer_best, char **path,
	      struct akk_checkpoint *ck, struct akk_spec *s, struct akk_err *e);

#endif
