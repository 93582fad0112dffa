/* ckpt_files.c - which checkpoint files a run writes and keeps, which run a
 * directory holds, and which checkpoint a resume takes. */
#include "ckpt_files.h"
#include "data_search.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/spec.h"
#include "io/metrics.h"

char *ckpt_join(const char *dir, const char *name, struct akk_err *e)
{
	size_t ld = strlen(dir), ln = strlen(name);
	char *p = malloc(ld + ln + 2);

	if (!p) {
		akk_err_set(e, "out of memory");
		return NULL;
	}
	memcpy(p, dir, ld);
	p[ld] = '/';
	memcpy(p + ld + 1, name, ln + 1);
	return p;
}

int ckpt_save(struct ckpt_policy *p, struct akk_run *r, const char *name,
	      struct akk_err *e)
{
	char *path;
	int rc;

	if (!(path = ckpt_join(p->dir, name, e)))
		return -1;
	rc = akk_run_write_checkpoint(r, path, p->spec, p->base_dir, &p->metrics, e);
	free(path);
	return rc;
}

/* "epoch-NNNN.bin" (four digits or more): the epoch, else -1. */
static long epoch_of(const char *name)
{
	const char *p = name + 6;
	long v = 0;

	if (strncmp(name, "epoch-", 6) || strlen(name) < 14)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return p - name >= 10 && !strcmp(p, ".bin") ? v : -1;
}

static int is_epoch_file(const char *name)
{
	return epoch_of(name) >= 0;
}

/* A checkpoint a run writes. */
static int is_ckpt_file(const char *name)
{
	return !strcmp(name, "last.bin") || !strcmp(name, "best.bin") ||
	       is_epoch_file(name);
}

int ckpt_is_temp(const char *name, const char *metrics)
{
	const char *t = NULL, *p;
	char *base;
	int ok;

	for (p = name; (p = strstr(p, ".tmp.")); p++)
		t = p;
	if (!t || !t[5])
		return 0;
	for (p = t + 5; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	if (!(base = strndup(name, (size_t)(t - name))))
		return 0;
	ok = is_ckpt_file(base) || (metrics && !strcmp(base, metrics));
	free(base);
	return ok;
}

static int cmp_epoch(const void *a, const void *b)
{
	long x = epoch_of(*(char *const *)a), y = epoch_of(*(char *const *)b);
	return (x > y) - (x < y);
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in dir that pick() accepts, allocated (*n of them); NULL with
 * *n = 0 when there are none (errno 0) or dir cannot be read whole (errno
 * says why: a part of the list is never returned, since pruning from one
 * could remove a checkpoint it should keep). */
static char **list_dir(const char *dir, int (*pick)(const char *, const char *),
		       const char *arg, int *n)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	int cap = 0, err = 0;

	*n = 0;
	errno = 0;
	if (!(d = opendir(dir)))
		return NULL;
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			err = errno;	/* 0 at the end of the directory */
			break;
		}
		if (!pick(de->d_name, arg))
			continue;
		if (*n == cap) {
			char **nn = realloc(names, (size_t)(cap ? 2 * cap : 16) * sizeof(*nn));
			if (!nn) {
				err = ENOMEM;
				break;
			}
			names = nn;
			cap = cap ? 2 * cap : 16;
		}
		if (!(names[*n] = strdup(de->d_name))) {
			err = ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (err) {
		free_names(names, *n);
		names = NULL;
		*n = 0;
	}
	errno = err;
	return names;
}

static int pick_epoch(const char *name, const char *arg)
{
	(void)arg;
	return is_epoch_file(name);
}

/* Whether dir/name is a whole checkpoint: the size of the one just
 * written (a run's checkpoints are all of one size), else read through. */
static int is_whole(const char *dir, const char *name, off_t size)
{
	char *path = ckpt_join(dir, name, NULL);
	struct akk_checkpoint c;
	struct akk_err ignored;
	struct stat st;
	int whole = 0;

	if (path && !stat(path, &st))
		whole = st.st_size == size || !akk_checkpoint_read(&c, path, &ignored);
	if (whole && st.st_size != size)
		akk_checkpoint_release(&c);
	free(path);
	return whole;
}

/* Remove all but the newest `keep` epoch-NNNN.bin (names sort by epoch)
 * of the epochs up to `epoch`, whose checkpoint (newest) was just written.
 * Only whole checkpoints count toward `keep`: a damaged or cut one, or
 * one of a later epoch than this run has reached, is never counted (and
 * left alone). An old checkpoint that cannot be removed, or a directory
 * that cannot be listed, is said on stderr with the path and the reason;
 * training goes on (the new checkpoint is written: only disk space is at
 * stake). */
static void prune(const char *dir, int keep, int epoch)
{
	int n, kept = 0;
	char **names = list_dir(dir, pick_epoch, NULL, &n);
	char newest[32];
	struct stat st;
	char *path;

	if (!names) {
		if (errno)
			fprintf(stderr, "akkctl: warning: cannot list '%s' to remove old checkpoints: %s\n",
				dir, strerror(errno));
		return;
	}
	snprintf(newest, sizeof(newest), "epoch-%04d.bin", epoch);
	path = ckpt_join(dir, newest, NULL);
	if (!path || stat(path, &st))
		st.st_size = -1;
	free(path);
	qsort(names, n, sizeof(*names), cmp_epoch);
	for (int i = n - 1; i >= 0; i--) {
		if (epoch_of(names[i]) > epoch)
			continue;
		if (kept < keep) {
			kept += is_whole(dir, names[i], st.st_size);
			continue;
		}
		path = ckpt_join(dir, names[i], NULL);
		if (!path || (unlink(path) && errno != ENOENT))
			fprintf(stderr, "akkctl: warning: cannot remove old checkpoint '%s': %s\n",
				path ? path : names[i], strerror(path ? errno : ENOMEM));
		free(path);
	}
	free_names(names, n);
}

/* A checkpoint of epoch could not be written (a full disk): the epoch's
 * metrics rows go too, so that rows and checkpoints tell one story. */
static int epoch_failed(const struct ckpt_policy *p, int epoch)
{
	char *path = ckpt_join(p->dir, p->spec->out.metrics, NULL);
	struct akk_err ignored;

	if (path && akk_metrics_cut(path, epoch - 1, &ignored))
		fprintf(stderr, "akkctl: warning: %s\n", ignored.msg);
	free(path);
	return -1;
}

int ckpt_epoch(struct ckpt_policy *p, struct akk_run *r,
	       const struct akk_epoch_report *rep, struct akk_err *e)
{
	int final = !strcmp(rep->phase, "final");
	int improved = rep->val_samples && rep->val_acc > p->metrics.best_val_acc;
	/* output.best_by loss (the default for regression) */
	int by_loss = p->spec->out.best_by == AKK_BEST_LOSS;
	int lower = rep->val_samples && (p->metrics.best_val_loss < 0 ||
					 rep->val_loss < p->metrics.best_val_loss);
	int best;

	if (!final) {
		p->metrics.epoch = rep->epoch;
		p->metrics.train_loss = rep->train_loss;
		p->metrics.train_acc = rep->train_acc;
	}
	if (rep->val_samples) {
		p->metrics.val_loss = rep->val_loss;
		p->metrics.val_acc = rep->val_acc;
	}
	if (improved)
		p->metrics.best_val_acc = rep->val_acc;
	if (lower)
		p->metrics.best_val_loss = rep->val_loss;
	if (by_loss)
		improved = lower;
	/* with early stopping, best.bin follows its monitor: it is the result */
	best = p->spec->sched.early.on ?
	       !final && akk_run_watch(r)->stop.best_epoch == rep->epoch : improved;
	if (!final && p->every > 0 && rep->epoch % p->every == 0) {
		char name[32];
		snprintf(name, sizeof(name), "epoch-%04d.bin", rep->epoch);
		if (ckpt_save(p, r, name, e))
			return epoch_failed(p, rep->epoch);
		prune(p->dir, p->keep, rep->epoch);
	}
	if (best && ckpt_save(p, r, "best.bin", e))
		return final ? -1 : epoch_failed(p, rep->epoch);
	return 0;
}

static int pick_run_file(const char *name, const char *metrics)
{
	return is_ckpt_file(name) || !strcmp(name, metrics);
}

/* An empty metrics file (its first row could not be written) holds no
 * run. */
static int is_empty(const char *dir, const char *name)
{
	char *path = ckpt_join(dir, name, NULL);
	struct stat st;
	int empty = path && !lstat(path, &st) && S_ISREG(st.st_mode) && !st.st_size;

	free(path);
	return empty;
}

static int pick_run_or_temp(const char *name, const char *metrics)
{
	return pick_run_file(name, metrics) || ckpt_is_temp(name, metrics);
}

static int pick_temp(const char *name, const char *metrics)
{
	return ckpt_is_temp(name, metrics);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int run_dir_files(const char *dir, const char *metrics, char **list,
		  struct akk_err *e)
{
	int n;
	char **names;
	size_t len = 1;

	*list = NULL;
	errno = 0;
	names = list_dir(dir, pick_run_file, metrics, &n);
	if (!names) {
		if (errno == ENOENT || errno == ENOTDIR || !errno)
			return 0;
		return akk_err_set(e, "cannot open '%s': %s", dir, strerror(errno));
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], metrics) && is_empty(dir, names[i])) {
			free(names[i]);
			names[i--] = names[--n];
		}
	qsort(names, n, sizeof(*names), cmp_name);
	for (int i = 0; i < n; i++)
		len += strlen(names[i]) + 4;
	if (n && !(*list = malloc(len))) {
		free_names(names, n);
		return akk_err_set(e, "out of memory");
	}
	for (int i = 0, off = 0; i < n; i++)
		off += sprintf(*list + off, "%s'%s'", i ? ", " : "", names[i]);
	free_names(names, n);
	return 0;
}

int run_dir_check_links(const char *dir, const char *metrics, struct akk_err *e)
{
	int n, rc = 0;
	char **names;

	errno = 0;
	names = list_dir(dir, pick_run_file, metrics, &n);
	if (!names && errno && errno != ENOENT)
		return akk_err_set(e, "cannot open '%s': %s", dir, strerror(errno));
	for (int i = 0; i < n && !rc; i++) {
		char *path = ckpt_join(dir, names[i], e);
		struct stat st;

		if (!path)
			rc = -1;
		else if (lstat(path, &st))
			rc = errno == ENOENT ? 0 : akk_err_set(e, "cannot read '%s': %s", path,
								 strerror(errno));
		else if (S_ISLNK(st.st_mode))
			rc = akk_err_set(e, "'%s' is a symbolic link: a run never writes through "
					 "one; remove it, or write elsewhere with --out", path);
		else if (!S_ISREG(st.st_mode))
			rc = akk_err_set(e, "'%s' is not a regular file; remove it, or write "
					 "elsewhere with --out", path);
		free(path);
	}
	free_names(names, n);
	return rc;
}

static int remove_picked(const char *dir, int (*pick)(const char *, const char *),
			 const char *metrics, struct akk_err *e)
{
	int n, rc = 0;
	char **names;

	errno = 0;
	names = list_dir(dir, pick, metrics, &n);
	if (!names && errno && errno != ENOENT)
		return akk_err_set(e, "cannot open '%s': %s", dir, strerror(errno));
	for (int i = 0; i < n && !rc; i++) {
		char *path = ckpt_join(dir, names[i], e);
		if (!path || (unlink(path) && errno != ENOENT))
			rc = path ? akk_err_set(e, "cannot remove '%s': %s", path,
						strerror(errno)) : -1;
		free(path);
	}
	free_names(names, n);
	return rc;
}

int run_dir_clear(const char *dir, const char *metrics, struct akk_err *e)
{
	return remove_picked(dir, pick_run_or_temp, metrics, e);
}

int run_dir_remove_temps(const char *dir, const char *metrics, struct akk_err *e)
{
	return remove_picked(dir, pick_temp, metrics, e);
}

int run_dir_drop_later_best(const char *dir, const struct akk_model *m,
			    const struct akk_position *pos, int *removed,
			    struct akk_err *e)
{
	struct akk_checkpoint c;
	struct akk_err ignored;
	char *path = ckpt_join(dir, "best.bin", e);
	int rc = 0;

	*removed = 0;
	if (!path)
		return -1;
	if (!akk_checkpoint_read(&c, path, &ignored)) {
		if (!akk_checkpoint_match(&c, m, path, &ignored) && c.pos.id > pos->id) {
			if (unlink(path))
				rc = akk_err_set(e, "cannot remove '%s': %s", path, strerror(errno));
			else
				*removed = 1;
		}
		akk_checkpoint_release(&c);
	}
	free(path);
	return rc;
}

static int pick_resumable(const char *name, const char *arg)
{
	(void)arg;
	return !strcmp(name, "last.bin") || is_epoch_file(name);
}

/* Append "passed over PATH: WHY\n" to *s. */
static void note_passed(char **s, const struct akk_err *why)
{
	size_t old = *s ? strlen(*s) : 0, size = old + sizeof(why->file) + sizeof(why->msg) + 32;
	char *n = realloc(*s, size);

	if (!n)
		return;
	snprintf(n + old, size - old, "passed over ");
	akk_err_format(why, n + strlen(n), (int)(size - strlen(n) - 1));
	strcat(n, "\n");
	*s = n;
}

int ckpt_check_mode(const struct akk_checkpoint *ck, const char *path, int mode,
		    struct akk_err *e)
{
	if (ck->mode == mode)
		return 0;
	return akk_err_set(e, "'%s' was trained in %s mode, and this run is %s: resume it with "
			   "--mode %s, or start over elsewhere with --out", path,
			   akk_mode_name(ck->mode), akk_mode_name(mode), akk_mode_name(ck->mode));
}

int ckpt_resolve(const char *arg, const struct akk_model *m,
		 struct akk_checkpoint *ck, char **path, char **passed,
		 struct akk_err *e)
{
	struct stat st;
	char **names;
	int n, other = 0, unreadable = 0;
	struct akk_err first = { 0 };	/* the first mismatch */

	*path = NULL;
	*passed = NULL;
	memset(ck, 0, sizeof(*ck));
	if (stat(arg, &st))
		return akk_err_set(e, "--resume: cannot open '%s': %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (!(*path = strdup(arg)))
			return akk_err_set(e, "out of memory");
		/* the network is checked before anything else: a mismatch is
		 * one whatever the epoch */
		if (akk_checkpoint_read(ck, arg, e) || akk_checkpoint_match(ck, m, arg, e) ||
		    akk_checkpoint_match_wiring(ck, m, arg, e)) {
			akk_checkpoint_release(ck);
			free(*path);
			*path = NULL;
			return -1;
		}
		return 0;
	}
	errno = 0;
	names = list_dir(arg, pick_resumable, NULL, &n);
	if (!names && errno)
		return akk_err_set(e, "--resume: cannot open '%s': %s", arg, strerror(errno));
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);	/* the same choice every time */
	for (int i = 0; i < n; i++) {
		struct akk_checkpoint c;
		struct akk_err why = { 0 };
		char *cand = ckpt_join(arg, names[i], e);

		if (!cand)
			break;
		if (akk_checkpoint_read(&c, cand, &why)) {
			unreadable++;
			note_passed(passed, &why);
			free(cand);
			continue;
		}
		if (akk_checkpoint_match(&c, m, cand, &why) ||
		    akk_checkpoint_match_wiring(&c, m, cand, &why)) {
			if (!other++)
				first = why;
			note_passed(passed, &why);
			akk_checkpoint_release(&c);
			free(cand);
			continue;
		}
		if (!*path || c.pos.id >= ck->pos.id) {	/* last.bin wins a tie */
			akk_checkpoint_release(ck);
			free(*path);
			*ck = c;
			*path = cand;
		} else {
			akk_checkpoint_release(&c);
			free(cand);
		}
	}
	free_names(names, n);
	if (*path)
		return 0;
	if (!other && !unreadable)
		return 1;
	free(*passed);
	*passed = NULL;
	if (other) {
		/* say why, as for a checkpoint file: the first mismatch */
		int size = (int)(sizeof(first.file) + sizeof(first.msg));
		char *why = malloc((size_t)size);
		if (why)
			akk_err_format(&first, why, size);
		akk_err_set(e, "--resume: no checkpoint of this network in '%s' (%d of another network%s): %s",
			    arg, other, unreadable ? ", others unreadable" : "",
			    why ? why : first.msg);
		free(why);
		return -1;
	}
	return akk_err_set(e, "--resume: no readable checkpoint in '%s'", arg);
}

int ckpt_pick(const char *arg, int prefer_best, char **path, struct akk_err *e)
{
	static const char *const eval_order[] = { "best.bin", "last.bin", "epoch" };
	static const char *const inspect_order[] = { "last.bin", "epoch", "best.bin" };
	const char *const *order = prefer_best ? eval_order : inspect_order;
	char *found[2] = { NULL, NULL }, *epoch = NULL;	/* best, last, newest epoch */
	long newest = -1;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = -1;

	*path = NULL;
	/* Not a directory (or nothing there): the file itself, for the
	 * checkpoint reader to open or report. */
	if (stat(arg, &st) || !S_ISDIR(st.st_mode)) {
		if (!(*path = strdup(arg)))
			return akk_err_set(e, "out of memory");
		return 0;
	}
	if (!(d = opendir(arg)))
		return akk_err_at(e, arg, 0, 0, "cannot open the directory: %s", strerror(errno));
	/* Names only: best.bin, last.bin and epoch-NNNN.bin (four digits or
	 * more) that are regular files; temp files ("NAME.tmp.PID") and
	 * anything else are passed over. */
	while ((de = readdir(d))) {
		const char *n = de->d_name, *p = n + 6;
		int slot = !strcmp(n, "best.bin") ? 0 : !strcmp(n, "last.bin") ? 1 : 2;
		long v = 0;
		char *full;

		if (slot == 2) {
			if (strncmp(n, "epoch-", 6))
				continue;
			for (; *p >= '0' && *p <= '9' && v < 100000000; p++)
				v = v * 10 + (*p - '0');
			if (p - n < 10 || strcmp(p, ".bin") || v <= newest)
				continue;
		}
		if (!(full = malloc(strlen(arg) + strlen(n) + 2))) {
			akk_err_set(e, "out of memory");
			goto out;
		}
		sprintf(full, "%s/%s", arg, n);
		if (stat(full, &st) || !S_ISREG(st.st_mode)) {
			free(full);
			continue;
		}
		if (slot == 2) {
			free(epoch);
			epoch = full;
			newest = v;
		} else {
			found[slot] = full;
		}
	}
	for (int i = 0; i < 3 && !*path; i++) {
		char **pick = !strcmp(order[i], "epoch") ? &epoch :
			      &found[!strcmp(order[i], "last.bin")];
		*path = *pick;
		*pick = NULL;
	}
	if (!*path) {
		akk_err_at(e, arg, 0, 0, "no checkpoint in this directory (no best.bin, last.bin or epoch-NNNN.bin)");
		goto out;
	}
	rc = 1;
out:
	closedir(d);
	free(found[0]);
	free(found[1]);
	free(epoch);
	return rc;
}

int ckpt_load(const char *arg, int prefer_best, char **path,
	      struct akk_checkpoint *ck, struct akk_spec *s, struct akk_err *e)
{
	switch (ckpt_pick(arg, prefer_best, path, e)) {
	case -1: return -1;
	case 1: fprintf(stderr, "using '%s'\n", *path); break;
	}
	if (akk_checkpoint_read(ck, *path, e))
		return -1;
	if (akk_checkpoint_spec(ck, s, NULL, 0, e)) {
		char msg[1200];
		akk_err_format(e, msg, sizeof(msg));
		return akk_err_at(e, *path, 0, 0, "the stored config no longer parses: %s", msg);
	}
	return cli_find_data(s, NULL, e);
}
