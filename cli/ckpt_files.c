/* ckpt_files.c - which checkpoint files a run writes and keeps. */
#include "ckpt_files.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ckpt_save(struct ckpt_policy *p, struct akk_run *r, const char *name,
	      struct akk_err *e)
{
	const struct akk_gate *gates[256];
	char path[1200];
	int G = r->model->ngates;

	if (G > 256)
		return akk_err_set(e, "too many gates to checkpoint (%d)", G);
	for (int i = 0; i < G; i++)
		gates[i] = &r->gates[i].gate;
	snprintf(path, sizeof(path), "%s/%s", p->dir, name);
	struct akk_ckpt_source src = {
		.spec = p->spec, .base_dir = p->base_dir, .mode = r->cfg.mode,
		.gates = gates, .ngates = G, .pos = r->pos, .metrics = p->metrics,
	};
	return akk_checkpoint_write(path, &src, e);
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

static int cmp_epoch(const void *a, const void *b)
{
	long x = epoch_of(*(char *const *)a), y = epoch_of(*(char *const *)b);
	return (x > y) - (x < y);
}

/* Remove all but the newest `keep` epoch-NNNN.bin (names sort by epoch). */
static void prune(const char *dir, int keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *names[4096];
	int n = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && n < 4096)
		if (is_epoch_file(de->d_name))
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_epoch);
	for (int i = 0; i < n; i++) {
		if (i < n - keep && names[i]) {
			char path[1200];
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			unlink(path);
		}
		free(names[i]);
	}
}

int ckpt_epoch(struct ckpt_policy *p, struct akk_run *r,
	       const struct akk_epoch_report *rep, struct akk_err *e)
{
	int final = !strcmp(rep->phase, "final");
	int improved = rep->val_samples && rep->val_acc > p->metrics.best_val_acc;

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
	if (!final && p->every > 0 && rep->epoch % p->every == 0) {
		char name[32];
		snprintf(name, sizeof(name), "epoch-%04d.bin", rep->epoch);
		if (ckpt_save(p, r, name, e))
			return -1;
		prune(p->dir, p->keep);
	}
	if (improved && ckpt_save(p, r, "best.bin", e))
		return -1;
	return 0;
}

int ckpt_resolve(const char *arg, char *path, int size, struct akk_err *e)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	long best = -1;

	if (stat(arg, &st))
		return akk_err_set(e, "--resume: cannot open '%s': %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		snprintf(path, size, "%s", arg);
		return 0;
	}
	if (!(d = opendir(arg)))
		return akk_err_set(e, "--resume: cannot open '%s': %s", arg, strerror(errno));
	/* The newest by training position among last.bin and epoch files;
	 * an unreadable file (say, from a crash) is passed over. */
	while ((de = readdir(d))) {
		struct akk_checkpoint c;
		struct akk_err ignored;
		char cand[1200];

		if (strcmp(de->d_name, "last.bin") && !is_epoch_file(de->d_name))
			continue;
		snprintf(cand, sizeof(cand), "%s/%s", arg, de->d_name);
		if (akk_checkpoint_read(&c, cand, &ignored))
			continue;
		if (c.pos.id > best) {
			best = c.pos.id;
			snprintf(path, size, "%s", cand);
		}
		akk_checkpoint_release(&c);
	}
	closedir(d);
	if (best < 0)
		return akk_err_set(e, "--resume: no readable checkpoint in '%s'", arg);
	return 0;
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
