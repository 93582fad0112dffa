/* cmd_train.c - akkctl train: parse, check, load data, run the actors.
 *
 * A run directory holds one run: a new run refuses a directory that holds
 * one (exit 2) unless --force clears it; --resume continues in the
 * checkpoint's own directory, and first cuts metrics.csv back to the
 * epochs the checkpoint covers, so that the rows and the checkpoints
 * always tell the same story after a crash.
 *
 * SIGINT and SIGTERM go to one thread of ours (see signals_start): the first asks the sentinel to stop cleanly (drain, final
 * checkpoint, flushed metrics, exit 130); the second ends the process at once,
 * which can never leave a partial checkpoint since checkpoints are renamed
 * into place whole. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libgen.h>

#include "base/file.h"
#include "ckpt_files.h"
#include "cli.h"
#include "data_search.h"
#include "config/explicit.h"
#include "data/open.h"
#include "data/series.h"
#include "data/text.h"
#include "data/split.h"
#include "io/metrics.h"
#include "io/steps.h"
#include "model/model.h"
#include "progress.h"
#include "run_lock.h"
#include "runtime/run.h"
#include "runtime/schedule.h"
#include "config/spec.h"
#include "data/batch.h"
#include "runtime/world.h"
#include "tensor/gemm_xsmm.h"
#include "train_folds.h"
#include "weights_note.h"

struct train_ui {
	struct ckpt_policy ckpt;
	int quiet, tty;
	double start;		/* akk_now() when training started */
	double last_draw;
	int drawn;		/* a progress line is on screen */
	/* For the run's ETA: epochs ended in this process, their wall time. */
	int epochs_seen;
	double epochs_time, epoch_mark;
	/* For the summary. */
	struct akk_metrics_best best;	/* over the whole run, resumed too */
	struct weights_seen best_seen, final_seen;	/* what they measured */
	int last_epoch;		/* the last epoch completed; 0: none */
	int have_val;
	double final_acc, final_train_acc;
	int best_missing;	/* early stopping: no best.bin to restore here */
	double final_loss;	/* for regression's summary */
	double final_heads[2 * AKK_MAX_HEADS];	/* network.outputs: the last
				 * validation's values per head */
};

/* network.outputs: each head's loss and accuracy or RMSE, as v holds them
 * (akk_heads_values), after the epoch line's what ("train", ...). */
static void print_heads(FILE *f, const struct akk_spec *s, const char *what,
			const double *v)
{
	fprintf(f, "  %s", what);
	for (int i = 0; i < s->nheads; i++) {
		if (s->heads[i].target == AKK_TARGET_LABELS)
			fprintf(f, "  %s loss %.4f acc %.2f%%", s->heads[i].name, v[2 * i],
				100 * v[2 * i + 1]);
		else
			fprintf(f, "  %s loss %.4g rmse %.4g", s->heads[i].name, v[2 * i],
				v[2 * i + 1]);
	}
	fputc('\n', f);
}

static void progress(void *ctx, const struct akk_progress *p)
{
	struct train_ui *ui = ctx;
	double now = akk_now(), eta, per_epoch, run_eta = -1;
	char line[1024];
	int width;

	if (ui->quiet || !ui->tty || (now - ui->last_draw < 0.1 && p->batch < p->batches))
		return;
	ui->last_draw = now;
	/* the epoch's rest, then the epochs after it at the pace of those
	 * done (their validation included), else of this one's training */
	eta = p->batch ? p->elapsed * (p->batches - p->batch) / p->batch : -1;
	per_epoch = ui->epochs_seen ? ui->epochs_time / ui->epochs_seen :
		    p->batch ? p->elapsed * p->batches / p->batch : -1;
	if (eta >= 0 && per_epoch >= 0)
		run_eta = eta + (p->epochs - p->epoch) * per_epoch;
	width = progress_width(2);
	if (width > (int)sizeof(line) - 1)
		width = (int)sizeof(line) - 1;
	progress_format(line, sizeof(line), width, p, now - ui->start, run_eta);
	fprintf(stderr, "\r%s\033[K", line);
	ui->drawn = 1;
}

static int epoch_end(void *ctx, struct akk_run *r,
		     const struct akk_epoch_report *rep, struct akk_err *e)
{
	struct train_ui *ui = ctx;
	int final = !strcmp(rep->phase, "final");
	double now = akk_now();

	if (ckpt_epoch(&ui->ckpt, r, rep, e))
		return -1;
	if (!final) {
		ui->epochs_seen++;
		ui->epochs_time += now - ui->epoch_mark;
		ui->last_epoch = rep->epoch;
		ui->final_train_acc = rep->train_acc;
	}
	ui->epoch_mark = now;
	if (rep->val_samples) {
		ui->have_val = 1;
		ui->final_acc = rep->val_acc;
		ui->final_loss = rep->val_loss;
		ui->final_seen = weights_seen_of(rep);
		memcpy(ui->final_heads, rep->val_heads, sizeof(ui->final_heads));
		if (weights_best_takes(ui->ckpt.spec, r, rep, &ui->best)) {
			ui->best = (struct akk_metrics_best){ rep->epoch, final, rep->val_acc,
							      rep->val_loss };
			ui->best_seen = ui->final_seen;
		}
	}
	if (ui->quiet)
		return 0;
	if (ui->drawn)
		fputs("\r\033[K", stderr);
	ui->drawn = 0;
	if (rep->regression) {	/* RMSE and R^2 */
		if (final) {
			fprintf(stderr, "final: validation loss %.4f rmse %.4g r2 %.4f", rep->val_loss,
				rep->val_rmse, rep->val_acc);
			if (rep->psnr_on)
				fprintf(stderr, " psnr %.2f dB", rep->val_psnr);
			fprintf(stderr, " (weights after %ld steps)\n", rep->vmax);
			goto heads;
		}
		fprintf(stderr, "epoch %d/%d: train loss %.4f rmse %.4g r2 %.4f", rep->epoch,
			rep->epochs, rep->train_loss, rep->train_rmse, rep->train_acc);
		if (rep->psnr_on)
			fprintf(stderr, " psnr %.2f dB", rep->train_psnr);
		if (rep->val_samples)
			fprintf(stderr, "  validation loss %.4f rmse %.4g r2 %.4f", rep->val_loss,
				rep->val_rmse, rep->val_acc);
		if (rep->val_samples && rep->psnr_on)
			fprintf(stderr, " psnr %.2f dB", rep->val_psnr);
		weights_note_epoch(stderr, rep);
		fprintf(stderr, "  %.2f s  %.0f samples/s  lr %.3g\n", rep->seconds,
			rep->samples_per_s, rep->lr);
		goto heads;
	}
	if (final) {
		fprintf(stderr, "final: validation loss %.4f acc %.2f%% (weights after %ld steps)\n",
			rep->val_loss, 100 * rep->val_acc, rep->vmax);
		goto heads;
	}
	fprintf(stderr, "epoch %d/%d: train loss %.4f acc %.2f%%", rep->epoch,
		rep->epochs, rep->train_loss, 100 * rep->train_acc);
	if (rep->val_samples)
		fprintf(stderr, "  validation loss %.4f acc %.2f%%", rep->val_loss,
			100 * rep->val_acc);
	weights_note_epoch(stderr, rep);
	fprintf(stderr, "  %.2f s  %.0f samples/s  lr %.3g\n", rep->seconds,
		rep->samples_per_s, rep->lr);
heads:
	if (rep->nheads && rep->samples && !final)
		print_heads(stderr, ui->ckpt.spec, "train", rep->train_heads);
	if (rep->nheads && rep->val_samples)
		print_heads(stderr, ui->ckpt.spec, "validation", rep->val_heads);
	return 0;
}

/* Early stopping's result: last.bin becomes a copy of best.bin (the
 * best epoch's checkpoint, written when its monitor last improved). A
 * run resumed into another directory may not have it there: then last.bin
 * holds the weights training ended with, and the summary says so. */
static int restore_best(struct train_ui *ui, struct akk_run *run, const char *dir,
			struct akk_err *e)
{
	char *from = ckpt_join(dir, "best.bin", e), *to = ckpt_join(dir, "last.bin", e);
	FILE *f = from ? fopen(from, "rb") : NULL;
	unsigned char *buf = NULL;
	long len = -1;
	int rc = -1;

	if (!from || !to)
		goto out;
	if (!f && errno == ENOENT) {
		ui->best_missing = 1;
		rc = ckpt_save(&ui->ckpt, run, "last.bin", e);
		goto out;
	}
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc(len ? (size_t)len : 1)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		akk_err_set(e, "cannot restore the best checkpoint: cannot read '%s': %s", from,
			    errno ? strerror(errno) : "short read");
		goto out;
	}
	rc = akk_file_replace(to, buf, (size_t)len, e);
out:
	if (f)
		fclose(f);
	free(buf);
	free(from);
	free(to);
	return rc;
}

/* arg as one shell word: 0, or -1 on a write error. */
static int put_shell_word(FILE *f, const char *arg)
{
	if (*arg && strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_./=:,+-@%") == strlen(arg))
		return fputs(arg, f) < 0 ? -1 : 0;
	if (fputc('\'', f) == EOF)
		return -1;
	for (; *arg; arg++)
		if ((*arg == '\'' ? fputs("'\\''", f) : fputc(*arg, f)) < 0)
			return -1;
	return fputc('\'', f) == EOF ? -1 : 0;
}

/* The command that resumes an interrupted run, as one line, with the
 * program as the user typed it (./akkctl, a full path): 0, or -1 when
 * it could not be written (then the user cannot know it: an error). */
static int put_resume_command(FILE *f, const char *config, const char *dir,
			      char *const *opts, int nopts)
{
	if (fputs("to resume: ", f) < 0 || put_shell_word(f, cli_program) ||
	    fputs(" train ", f) < 0 || put_shell_word(f, config) ||
	    fputs(" --resume ", f) < 0 || put_shell_word(f, dir))
		return -1;
	for (int i = 0; i < nopts; i++)
		if (fputc(' ', f) == EOF || put_shell_word(f, opts[i]))
			return -1;
	return fputs("\n", f) < 0 || fflush(f) ? -1 : 0;
}

/* The closing lines: epochs, time, best and final accuracy, the files, and
 * after an interrupt the command that resumes. opts: the --mode, --epochs
 * and --set options as given, nopts words. -1 when the command that
 * resumes could not be written. */
static int summary(const struct train_ui *ui, const struct akk_run *run,
		   const char *config, const char *dir, const char *metrics,
		   char *const *opts, int nopts, int interrupted)
{
	struct akk_run_stats st = akk_run_stats(run);
	char t[32];
	char *path;

	progress_duration(t, sizeof(t), akk_now() - ui->start);
	if (!interrupted && akk_run_watch(run)->stopped_epoch) {
		const struct akk_early_stop_spec *es = &ui->ckpt.spec->sched.early;
		const struct akk_monitor *m = &akk_run_watch(run)->stop;
		fprintf(stderr, "summary: stopped early after epoch %d of %d in %s (%s did not improve for %d epochs); best epoch %d (%s %.4f), %s",
			akk_run_watch(run)->stopped_epoch, st.epochs, t,
			akk_monitor_names[es->monitor], es->patience, m->best_epoch,
			akk_monitor_names[es->monitor], m->best, ui->best_missing ?
			"not restored: its best.bin is not in this directory" :
			"restored as last.bin");
	} else if (interrupted)
		fprintf(stderr, "summary: interrupted in epoch %d of %d after %s",
			st.pos.epoch + 1, st.epochs, t);
	else
		fprintf(stderr, "summary: %d of %d epochs done in %s", st.epochs,
			st.epochs, t);
	if (ui->ckpt.spec->data.task == AKK_TASK_REGRESSION) {
		if (ui->best.epoch)
			fprintf(stderr, "; best validation loss %.4f (r2 %.4f) at epoch %d%s",
				ui->best.loss, ui->best.accuracy, ui->best.epoch,
				ui->best.final ? " (final pass)" : "");
		if (ui->best.epoch)
			weights_note_best(stderr, &ui->best_seen);
		if (ui->have_val)
			fprintf(stderr, "; final validation loss %.4f r2 %.4f", ui->final_loss,
				ui->final_acc);
		if (ui->have_val)
			weights_note_final(stderr, &ui->final_seen);
	} else if (ui->best.epoch && ui->ckpt.spec->out.best_by == AKK_BEST_LOSS) {
		fprintf(stderr, "; best validation loss %.4f (accuracy %.2f%%) at epoch %d%s",
			ui->best.loss, 100 * ui->best.accuracy, ui->best.epoch,
			ui->best.final ? " (final pass)" : "");
	} else if (ui->best.epoch) {
		fprintf(stderr, "; best validation accuracy %.2f%% at epoch %d%s",
			100 * ui->best.accuracy, ui->best.epoch,
			ui->best.final ? " (final pass)" : "");
	}
	if (ui->ckpt.spec->data.task != AKK_TASK_REGRESSION && ui->best.epoch)
		weights_note_best(stderr, &ui->best_seen);
	if (ui->ckpt.spec->data.task == AKK_TASK_REGRESSION)
		;
	else if (ui->have_val) {
		fprintf(stderr, "; final validation accuracy %.2f%%", 100 * ui->final_acc);
		weights_note_final(stderr, &ui->final_seen);
	} else if (ui->last_epoch)
		fprintf(stderr, "; final training accuracy %.2f%% (no validation data)",
			100 * ui->final_train_acc);
	fputs("\n", stderr);
	if (ui->have_val && ui->ckpt.spec->nheads)
		print_heads(stderr, ui->ckpt.spec, "final validation:", ui->final_heads);
	if ((path = ckpt_join(dir, metrics, NULL)))
		fprintf(stderr, "  metrics: %s\n", path);
	free(path);
	if ((path = ckpt_join(dir, "best.bin", NULL)))
		fprintf(stderr, "  best:    %s%s\n", path, !access(path, F_OK) ? "" :
			st.has_val ? " (not written yet)" : " (not written: no validation data)");
	free(path);
	if ((path = ckpt_join(dir, "last.bin", NULL)))
		fprintf(stderr, "  last:    %s\n", path);
	free(path);
	if (!interrupted)
		return 0;
	return put_resume_command(stderr, config, dir, opts, nopts);
}

/* Signals. Blocking SIGINT/SIGTERM with pthread_sigmask covers only the
 * threads created afterwards, and OpenBLAS starts its workers before main,
 * so a handler catches them in whatever thread they land and writes the
 * signal number to a pipe; a thread of ours reads it and asks the sentinel
 * to stop. A zero byte tells that thread the run is over. */
static int sig_pipe[2] = { -1, -1 };
static int sig_thread;	/* signal_main runs */

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int saved = errno;

	if (write(sig_pipe[1], &b, 1) < 0) {
		/* the pipe is full: a stop is already on its way */
	}
	errno = saved;
}

static void *signal_main(void *arg)
{
	struct akk_run *run = arg;
	unsigned char b;
	int n = 0;

	while (read(sig_pipe[0], &b, 1) == 1 && b) {
		if (n++) {
			static const char msg[] = "\nakkctl: second interrupt, stopping now\n";
			if (write(2, msg, sizeof(msg) - 1) < 0)
				_exit(EXIT_INTERRUPTED);
			_exit(EXIT_INTERRUPTED);
		}
		akk_run_interrupt(run);
	}
	return NULL;
}

/* The handler goes in before the run directory is touched: a signal
 * that comes before the run exists waits in the pipe, and the run stops
 * cleanly as soon as it starts (nothing half made is left behind). */
static int signals_early(void)
{
	struct sigaction sa = { 0 };

	if (pipe(sig_pipe))
		return -1;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return 0;
}

static int signals_start(struct akk_run *run, pthread_t *thread)
{
	if (pthread_create(thread, NULL, signal_main, run))
		return -1;
	sig_thread = 1;
	return 0;
}

/* Back to the default handlers; the thread, when started, ends. Again:
 * nothing. */
static void signals_stop(pthread_t thread)
{
	unsigned char zero = 0;
	struct sigaction sa = { 0 };

	if (sig_pipe[0] < 0)
		return;
	sa.sa_handler = SIG_DFL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (sig_thread && write(sig_pipe[1], &zero, 1) == 1)
		pthread_join(thread, NULL);
	sig_thread = 0;
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	sig_pipe[0] = sig_pipe[1] = -1;
}

static int mkdirs(const char *path, struct akk_err *e)
{
	char *buf = strdup(path);

	if (!buf)
		return akk_err_set(e, "out of memory");
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0777) && errno != EEXIST) {
				akk_err_set(e, "cannot create directory '%s': %s",
					    buf, strerror(errno));
				free(buf);
				return -1;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(buf);
	return 0;
}

/* Whether a and b name the same existing directory. */
static int same_dir(const char *a, const char *b)
{
	struct stat x, y;

	return !stat(a, &x) && !stat(b, &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* "KEY=VALUE" for an option given as its own flag, allocated. */
static char *set_of(const char *key, const char *value)
{
	size_t lk = strlen(key), lv = strlen(value);
	char *s = malloc(lk + lv + 2);

	if (s) {
		memcpy(s, key, lk);
		s[lk] = '=';
		memcpy(s + lk + 1, value, lv + 1);
	}
	return s;
}

/* The metrics' per-gate lr columns: all gates when one has its own
 * optimizer (as core/runtime/sentinel.c writes them). */
static int lr_columns(const struct akk_spec *s)
{
	for (int g = 0; g < s->ngates; g++)
		if (s->gates[g].has_optim)
			return s->ngates;
	return 0;
}

/* The run directory's path must leave room for its longest file name
 * ("epoch-NNNN.bin.tmp.PID", the metrics file's) within PATH_MAX. */
static int check_dir_length(const struct akk_spec *s, const char *out, struct akk_err *e)
{
	size_t room = strlen(s->out.metrics) + 24 > 48 ? strlen(s->out.metrics) + 24 : 48;

	if (strlen(s->out.dir) + 1 + room >= PATH_MAX)
		return akk_err_set(e, "%s: the run directory's path is too long (%zu characters; at most %zu)",
				   out ? "--out" : "output.dir", strlen(s->out.dir),
				   (size_t)PATH_MAX - 2 - room);
	return 0;
}

/* Before a new run (or a resume into another directory): DIR must not
 * hold another run, unless --force; then it is cleared later. A resume in
 * the run's own directory from a checkpoint FILE must not rewind past
 * newer checkpoints of the run (their metrics rows would be cut). */
static int check_run_dir(const struct akk_spec *s, const struct akk_model *m,
			 const char *resume, const char *resume_dir,
			 const struct akk_checkpoint *ck, int force, struct akk_err *e)
{
	char *files = NULL;
	int own = resume_dir && same_dir(s->out.dir, resume_dir);
	struct stat st;

	if (own && force)
		return akk_err_set(e, "--force would remove the run that --resume continues in '%s'",
				   s->out.dir);
	if (own && !stat(resume, &st) && !S_ISDIR(st.st_mode)) {
		struct akk_checkpoint newest;
		struct akk_err ignored;
		char *path = NULL, *passed = NULL;
		int later = 0;

		if (!ckpt_resolve(resume_dir, m, &newest, &path, &passed, &ignored)) {
			later = newest.pos.id > ck->pos.id;
			if (later)
				akk_err_set(e, "'%s' holds a newer checkpoint of this run than '%s' "
					    "('%s', step %ld): --resume %s continues from it, "
					    "--out NEWDIR continues '%s' elsewhere",
					    resume_dir, resume, path, newest.pos.id, resume_dir, resume);
			akk_checkpoint_release(&newest);
		}
		free(path);
		free(passed);
		return later ? -1 : 0;
	}
	if (own || force)
		return 0;
	if (run_dir_files(s->out.dir, s->out.metrics, &files, e))
		return -1;
	if (files) {
		akk_err_set(e, "'%s' already holds a run (%s): --resume %s continues it, --force starts over",
			    s->out.dir, files, s->out.dir);
		free(files);
		return -1;
	}
	return 0;
}

/* A series' or a text's split (data/series.h, data/text.h): its end held
 * out, the training windows before it; the same on every resume, as it
 * needs no seed. */
static int hold_out_series(const struct akk_spec *s, struct akk_dataset *train,
			   struct akk_dataset *val, uint32_t **heldout, size_t *nheldout,
			   struct akk_err *e)
{
	struct akk_dataset rest = { 0 };
	uint32_t *keep = NULL;
	size_t nkeep = 0;
	char msg[sizeof(e->msg)];
	int rc;

	if (akk_text_is(train) ?
	    akk_windows_split(heldout, nheldout, &keep, &nkeep, train->n, train->text_len + 1,
			      train->text_stride, s->data.split, "text", e) :
	    akk_series_split(heldout, nheldout, &keep, &nkeep, train, s->data.split, e)) {
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return akk_err_at(e, s->path, s->data.val_mark.line, s->data.val_mark.col,
				  "%s", msg);
	}
	rc = akk_dataset_subset(val, train, *heldout, *nheldout, 0, e) ||
	     akk_dataset_subset(&rest, train, keep, nkeep, 0, e);
	free(keep);
	if (rc)
		return -1;
	akk_dataset_release(train);
	*train = rest;
	return 0;
}

/* validation: {split: F} holds out part of train,
 * in place (train keeps the rest, val gets the held-out samples). The
 * indices come from the checkpoint when resuming one that has them, so
 * they never change during a run; else they are computed from the seed.
 * With validation: {folds: K}, fold (1..K) is the one held out. */
static int hold_out(const struct akk_spec *s, const struct akk_checkpoint *ck,
		    int fold, struct akk_dataset *train, struct akk_dataset *val,
		    uint32_t **heldout, size_t *nheldout, struct akk_err *e)
{
	struct akk_dataset rest = { 0 };
	char msg[sizeof(e->msg)];

	if (!(s->data.split > 0) && !fold)
		return 0;
	if (akk_series_is(train) || akk_text_is(train))
		return hold_out_series(s, train, val, heldout, nheldout, e);
	if (ck && ck->nheldout) {
		if (!(*heldout = malloc(ck->nheldout * sizeof(**heldout))))
			return akk_err_set(e, "out of memory");
		memcpy(*heldout, ck->heldout, ck->nheldout * sizeof(**heldout));
		*nheldout = ck->nheldout;
	} else if (fold ? akk_split_fold(heldout, nheldout, train, s->data.folds, fold,
					 s->seed, e) :
		   akk_split_heldout(heldout, nheldout, train, s->data.split,
				     s->seed, e)) {
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return akk_err_at(e, s->path, s->data.val_mark.line,
				  s->data.val_mark.col, "%s", msg);
	}
	if (akk_dataset_subset(val, train, *heldout, *nheldout, 0, e) ||
	    akk_dataset_subset(&rest, train, *heldout, *nheldout, 1, e)) {
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return akk_err_at(e, ck ? "--resume" : s->path, 0, 0,
				  "%s", msg);
	}
	akk_dataset_release(train);
	*train = rest;
	return 0;
}

/* The options of akkctl train, as parsed once; every fold's run reads them. */
struct train_opts {
	const char *config;		/* the CONFIG operand */
	const char *out, *resume;	/* --out, --resume, or NULL */
	const char *data_dir;		/* --data-dir, or NULL */
	const char **sets;		/* the overrides, nsets of them */
	char **words;			/* the same options as given, nwords,
					 * for the command that resumes */
	char **owned;			/* what to free, nowned */
	int nsets, nwords, nowned;
	int force, quiet, profile;
};

/* One run's state, from the spec to the summary; train_release frees it. */
struct train_state {
	const struct train_opts *o;
	struct akk_steps steps;		/* output.log_every_steps, rank 0 */
	int fold;			/* 0, or the fold held out */
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val;
	struct akk_checkpoint ck;
	struct akk_world world;
	struct akk_run *run;
	struct train_ui ui;
	struct akk_err e;
	struct run_lock lock;		/* rank 0's, on s.out.dir */
	pthread_t sigthread;		/* signals_start's, once started */
	int *gate_rank;			/* NULL: one process, or data parallel */
	uint32_t *heldout;		/* a validation split's indices */
	size_t nheldout;
	char *metrics, *ckpath, *passed, *resume_dir, *base_dir, *cfgdir;
	int dp, have_val, user_quiet, start_over, dropped_best;
	int rc;				/* the exit status so far */
};

/* What a step tells the run: go on, report st->e with st->rc, or stop
 * with st->rc (nothing to report, or reported already). */
enum train_next { TRAIN_GO_ON = 0, TRAIN_REPORT, TRAIN_STOP };

static void train_opts_release(struct train_opts *o)
{
	for (int i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	free(o->owned);
	free(o->words);
	free(o->sets);
}

/* Parse argv into *o: -1 to go on, else the exit status. */
static int train_parse(int argc, char **argv, struct train_opts *o)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "out", required_argument, NULL, 'o' },
		{ "resume", required_argument, NULL, 'r' },
		{ "set", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-profile", no_argument, NULL, 'P' },
		{ "data-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	*o = (struct train_opts){ .profile = 1 };
	o->sets = calloc(argc + 2, sizeof(*o->sets));
	o->words = calloc(2 * (size_t)argc + 2, sizeof(*o->words));
	o->owned = calloc(argc + 2, sizeof(*o->owned));
	if (!o->sets || !o->words || !o->owned)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:e:o:r:s:fqPh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'e':
			if (!(o->owned[o->nowned] = set_of(c == 'm' ? "schedule.mode" :
							   "schedule.epochs", optarg)))
				return cli_errorf(EXIT_RUNTIME, "out of memory");
			o->sets[o->nsets++] = o->owned[o->nowned++];
			o->words[o->nwords++] = c == 'm' ? "--mode" : "--epochs";
			o->words[o->nwords++] = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'r':
			o->resume = optarg;
			break;
		case 's':
			o->sets[o->nsets++] = optarg;
			o->words[o->nwords++] = "--set";
			o->words[o->nwords++] = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'P':
			o->profile = 0;
			break;
		case 'D':
			o->data_dir = optarg;
			o->words[o->nwords++] = "--data-dir";
			o->words[o->nwords++] = optarg;
			break;
		case 'h':
			return cli_help("train");
		default:
			return cli_bad_option("train", c, argv);
		}
	}
	if ((rc = cli_operands("train", argc, argv)) != EXIT_OK)
		return rc;
	o->config = argv[optind];
	return -1;
}

/* The checkpoint, of this network (checked first: a mismatch is one
 * whatever the epoch); a resume continues in the checkpoint's own
 * directory unless --out says otherwise; a fold runs in its own. */
static enum train_next train_resume(struct train_state *st)
{
	const struct train_opts *o = st->o;
	struct akk_err *e = &st->e;

	if (o->resume) {
		struct stat sb;
		int r = ckpt_resolve(o->resume, &st->m, &st->ck, &st->ckpath, &st->passed, e);
		char *dirbuf;

		if (r < 0 || (r == 0 && ckpt_check_mode(&st->ck, st->ckpath, st->s.sched.mode, e)))
			return TRAIN_REPORT;
		if (!stat(o->resume, &sb) && S_ISDIR(sb.st_mode))
			st->resume_dir = strdup(o->resume);
		else if ((dirbuf = strdup(o->resume))) {
			st->resume_dir = strdup(dirname(dirbuf));
			free(dirbuf);
		}
		if (!st->resume_dir) {
			akk_err_set(e, "out of memory");
			return TRAIN_REPORT;
		}
		if (r == 1) {
			/* a directory without a checkpoint: a run killed before
			 * its first one starts over; an empty one is an error */
			char *files = NULL;
			if (run_dir_files(o->resume, st->s.out.metrics, &files, e))
				return TRAIN_REPORT;
			if (!files) {
				akk_err_set(e, "--resume: no readable checkpoint in '%s'", o->resume);
				return TRAIN_REPORT;
			}
			free(files);
			st->start_over = 1;
		}
	}
	if (o->out || o->resume) {
		free(st->s.out.dir);
		if (!(st->s.out.dir = strdup(o->out ? o->out : st->resume_dir))) {
			akk_err_set(e, "out of memory");
			return TRAIN_REPORT;
		}
	}
	if (st->fold) {	/* each fold's run in its own directory */
		char name[32], *dir;

		snprintf(name, sizeof(name), "fold-%d", st->fold);
		if (!(dir = ckpt_join(st->s.out.dir, name, e)))
			return TRAIN_REPORT;
		free(st->s.out.dir);
		st->s.out.dir = dir;
	}
	if (check_dir_length(&st->s, o->out, e))
		return TRAIN_REPORT;
	if (o->resume && !st->start_over && st->ck.pos.epoch >= st->s.sched.epochs) {
		fprintf(stderr, "akkctl: '%s' has already trained %d of %d epochs; raise --epochs to go on\n",
			st->ckpath, st->ck.pos.epoch, st->s.sched.epochs);
		st->rc = EXIT_OK;
		return TRAIN_STOP;
	}
	return TRAIN_GO_ON;
}

/* Rank 0 reads the data; in a pipeline the others need only the sample
 * counts, with data parallelism each reads its own. */
static enum train_next train_load(struct train_state *st)
{
	const struct train_opts *o = st->o;
	struct akk_spec *s = &st->s;
	struct akk_err *e = &st->e;
	const struct akk_checkpoint *ck = o->resume && !st->start_over ? &st->ck : NULL;
	long counts[3];

	st->dp = s->sched.data_parallel && st->world.size > 1;
	akk_spec_scale_lr(s, st->dp ? st->world.size : 1);	/* lr_scaling */
	st->have_val = akk_data_has(&s->data, AKK_DATA_VAL) || s->data.split > 0 || st->fold;
	if (st->dp && st->world.rank != 0 &&
	    (akk_data_open(&st->train, &s->data, AKK_DATA_TRAIN, e) ||
	     hold_out(s, ck, st->fold, &st->train, &st->val, &st->heldout, &st->nheldout, e))) {
		st->rc = EXIT_RUNTIME;	/* rank 0 would wait for this one: abort */
		return TRAIN_REPORT;
	}
	if (st->world.rank == 0 &&
	    (akk_spec_check_data(s, e) ||
	     run_lock_take(&st->lock, s->out.dir, s->out.metrics, e) ||
	     check_run_dir(s, &st->m, o->resume, o->resume ? st->resume_dir : NULL, &st->ck,
			   o->force, e) ||
	     akk_data_open(&st->train, &s->data, AKK_DATA_TRAIN, e) ||
	     (akk_data_has(&s->data, AKK_DATA_VAL) &&
	      (akk_data_open(&st->val, &s->data, AKK_DATA_VAL, e) ||
	       /* named classes: numbered as in train */
	       akk_data_match_classes(&st->val, &s->data, AKK_DATA_VAL, st->train.class_names,
				      st->train.classes, e))) ||
	     hold_out(s, ck, st->fold, &st->train, &st->val, &st->heldout, &st->nheldout, e)))
		counts[0] = -1;
	else
		counts[0] = (long)st->train.n;
	counts[1] = (long)st->val.n;
	if (counts[0] >= 0 && st->world.rank == 0 &&
	    akk_run_check_data(&st->m, &st->train, st->have_val ? &st->val : NULL, e))
		counts[0] = -1;	/* bad input: every rank exits 2 */
	if (akk_world_bcast(&st->world, counts, 2)) {
		akk_err_set(e, "cannot broadcast the sample counts");
		return TRAIN_REPORT;
	}
	if (counts[0] < 0)
		return st->world.rank == 0 ? TRAIN_REPORT : TRAIN_STOP;	/* rank 0 says it */
	akk_dataset_huge_pages(&st->train);	/* read at random places, every epoch */
	if (st->dp && cli_check_split(s, &st->world, (size_t)counts[0], e))
		return TRAIN_REPORT;	/* EXIT_USAGE, the same on every rank */
	if (st->world.rank != 0) {
		if (!st->dp)
			st->train.n = (size_t)counts[0];
		st->val.n = (size_t)counts[1];
		st->have_val = st->have_val && !st->dp;	/* rank 0 alone validates */
		st->ui.quiet = 1;
	}
	/* streams are cut by the batch size: another one lays the epoch
	 * out anew, and no position in it continues the checkpoint's */
	if (ck && s->sched.order == AKK_ORDER_STREAMS && st->ck.pos.index > 0 &&
	    st->ck.pos.index < akk_batches_per_epoch(st->train.n, st->ck.batch_size) &&
	    st->ck.batch_size != s->sched.batch_size) {
		akk_err_at(e, st->ckpath, 0, 0,
			   "cannot resume mid-epoch with schedule.batch_size %d: order: streams cut the epoch into %d streams; resume with schedule.batch_size %d, or from a checkpoint at an epoch boundary",
			   s->sched.batch_size, st->ck.batch_size, st->ck.batch_size);
		return TRAIN_REPORT;
	}
	if (ck && akk_checkpoint_position(&st->ck, s->sched.batch_size,
					  st->dp ? st->world.size : 1, st->train.n,
					  st->ckpath, e))
		return TRAIN_REPORT;	/* exit 2: the position does not fit this run */
	return TRAIN_GO_ON;
}

/* The config as this run runs it (--set, --mode and --epochs applied) as
 * config.yaml in the run directory, so that the run explains itself. */
static int write_config(const struct akk_spec *s, struct akk_err *e)
{
	char *text = NULL, *path;
	size_t len;
	int rc;

	if (!(path = ckpt_join(s->out.dir, "config.yaml", e)))
		return -1;
	rc = akk_spec_resolved_yaml(s, s->out.dir, &text, &len, e) ||
	     akk_file_replace(path, text, len, e) ? -1 : 0;
	free(text);
	free(path);
	return rc;
}

/* The run directory: cleared for --force, created, rid of temporary files
 * a kill left, and its metrics cut back to the checkpoint; then the
 * checkpoint policy. */
static enum train_next train_prepare(struct train_state *st)
{
	const struct train_opts *o = st->o;
	struct akk_spec *s = &st->s;
	struct akk_err *e = &st->e;

	st->rc = EXIT_RUNTIME;
	if (!(st->metrics = ckpt_join(s->out.dir, s->out.metrics, e)))
		return TRAIN_REPORT;
	if (st->world.rank == 0) {
		if ((o->force && run_dir_clear(s->out.dir, s->out.metrics, e)) ||
		    mkdirs(s->out.dir, e) ||
		    run_dir_remove_temps(s->out.dir, s->out.metrics, e) ||
		    write_config(s, e))
			return TRAIN_REPORT;
		char heads[AKK_MAX_HEADS * 2 * 80];

		akk_heads_columns(s, heads, sizeof(heads));
		if (o->resume && akk_metrics_truncate_for(st->metrics, st->ck.pos.epoch,
							  lr_columns(s),
							  s->data.task != AKK_TASK_REGRESSION ? 0 :
							  s->data.targets != AKK_TARGETS_LABELS ? 2 : 1,
							  heads,
							  s->out.best_by == AKK_BEST_LOSS,
							  &st->ui.best, e)) {
			st->rc = e->file[0] ? EXIT_USAGE : EXIT_RUNTIME;	/* bad file, or I/O */
			return TRAIN_REPORT;
		}
		/* with early stopping the best is its monitor's epoch, not
		 * the best figure in the file; unknown: none claimed */
		if (o->resume && s->sched.early.on && st->ui.best.epoch &&
		    weights_best_of_epoch(st->metrics, st->ck.watch.stop.best_epoch, &st->ui.best))
			st->ui.best.epoch = 0;
		if (o->resume && run_dir_drop_later_best(s->out.dir, &st->m, &st->ck.pos,
							 &st->dropped_best, e))
			return TRAIN_REPORT;
	}
	st->ui.ckpt.spec = s;
	st->ui.ckpt.dir = s->out.dir;
	st->ui.ckpt.every = s->out.checkpoint_every;
	st->ui.ckpt.keep = s->out.keep;
	st->ui.ckpt.metrics.best_val_loss = -1;	/* none yet */
	if (o->resume && !st->start_over)
		st->ui.ckpt.metrics = st->ck.metrics;
	if (!(st->cfgdir = realpath(o->config, NULL))) {
		akk_err_set(e, "cannot resolve '%s': %s", o->config, strerror(errno));
		return TRAIN_REPORT;
	}
	/* the config's folder as the checkpoints store it: from the run
	 * directory, so that the two moved together still find the data
	 * (absolute when the run directory cannot be resolved) */
	{
		char *run = realpath(s->out.dir, NULL), *cfg = dirname(st->cfgdir);

		st->base_dir = run ? cli_path_from(run, cfg) : NULL;
		if (!st->base_dir)
			st->base_dir = strdup(cfg);
		free(run);
	}
	if (!st->base_dir) {
		akk_err_set(e, "out of memory");
		return TRAIN_REPORT;
	}
	st->ui.ckpt.base_dir = st->base_dir;
	return TRAIN_GO_ON;
}

/* The run itself, from the spec, the data and the checkpoint; a resumed
 * run takes the checkpoint's weights. */
static enum train_next train_configure(struct train_state *st)
{
	const struct akk_spec *s = &st->s;
	int resumed = st->o->resume && !st->start_over, rank = st->world.rank;
	struct akk_run_config cfg = {
		.mode = s->sched.mode, .epochs = s->sched.epochs,
		.blas_threads = s->sched.threads,
		.metrics_path = rank == 0 ? st->metrics : NULL,
		.obs = { &st->ui, progress, rank == 0 ? epoch_end : NULL },
		.start = st->ck.pos,
		.rank = rank, .gate_rank = st->gate_rank,
		.shards = st->dp ? st->world.size : 1,
		.pre = resumed && st->ck.pre.in ? &st->ck.pre : NULL,
		.heldout = st->heldout, .nheldout = st->nheldout,
		.class_names = st->train.class_names,
		.nclass_names = st->train.class_names ? st->train.classes : 0,
	};

	/* Ranks on one machine share its cores. */
	if (!cfg.blas_threads && st->world.local_size > 1) {
		struct akk_schedule plan;
		int cores = akk_cores() / st->world.local_size;

		if (akk_schedule_plan(&plan, s->sched.mode, &s->sched, st->m.ngates,
				      0, cores > 1 ? cores : 1, &st->e))
			return TRAIN_REPORT;
		cfg.blas_threads = plan.compute_threads;
	}
	if (rank == 0 && s->out.log_every_steps) {	/* steps.csv */
		char *path = ckpt_join(s->out.dir, "steps.csv", &st->e);

		if (!path || akk_steps_open(&st->steps, path, s->out.log_every_steps,
					    resumed ? st->ck.pos.id : 0, &st->e)) {
			free(path);
			return TRAIN_REPORT;
		}
		free(path);
		cfg.steps = &st->steps;
	}
	st->ui.tty = progress_enabled(2);
	/* the data was checked before: what fails here is the run's own
	 * setup (memory, threads, the metrics file) */
	if (!(st->run = akk_run_create(&st->m, &st->train, st->have_val ? &st->val : NULL,
				       &cfg, &st->e)))
		return TRAIN_REPORT;
	if (!st->ui.quiet) {
		char lib[768];

		akk_gemm_library(lib, sizeof(lib), &cli_kernels);
		fprintf(stderr, "matrix products: %s\n", lib);
	}
	if (resumed && akk_run_restore(st->run, &st->ck, st->ckpath, &st->e)) {
		st->rc = EXIT_USAGE;
		return TRAIN_REPORT;
	}
	return TRAIN_GO_ON;
}

/* What the run is about to do, on stderr (unless --quiet). */
static void train_announce(const struct train_state *st)
{
	const struct akk_spec *s = &st->s;
	int threads = akk_run_stats(st->run).compute_threads;

	if (st->ui.quiet)
		return;
	if (st->o->resume && !st->start_over) {
		fprintf(stderr, "resuming from '%s' at epoch %d, batch %ld (step %ld)\n",
			st->ckpath, st->ck.pos.epoch + 1, st->ck.pos.index, st->ck.pos.id);
		if (st->passed)
			fputs(st->passed, stderr);
	} else if (st->start_over) {
		fprintf(stderr, "no checkpoint in '%s' yet: starting over from epoch 1\n",
			st->o->resume);
	}
	if (st->dropped_best)
		fprintf(stderr, "removed '%s/best.bin': saved after the point this run resumes from\n",
			s->out.dir);
	fprintf(stderr, "%s: %s, %d gate%s, %zu parameters, %zu training / %zu validation samples, %d compute thread%s per busy gate\n",
		s->name, akk_mode_name(s->sched.mode), st->m.ngates, st->m.ngates == 1 ? "" : "s", st->m.nparams,
		st->train.n, st->have_val ? st->val.n : 0, threads, threads == 1 ? "" : "s");
	cli_print_data_defaults(stderr, &s->data, st->train.xtype == AKK_X_F32);
	if (st->dp)
		fprintf(stderr, "data parallel: %d ranks, each %d of every %d samples\n",
			st->world.size, s->sched.batch_size, s->sched.batch_size * st->world.size);
	if (st->gate_rank) {
		fprintf(stderr, "placement: ");
		for (int i = 0; i < st->m.ngates; i++)
			fprintf(stderr, "%sgate %d on rank %d", i ? ", " : "",
				i + 1, st->gate_rank[i]);
		fprintf(stderr, " (%d ranks; rank 0 runs the sentinel)\n", st->world.size);
	}
}

/* Train, with the signal thread standing by; then, every thread stopped,
 * the final state, complete or interrupted (under MPI, rank 0 gathered
 * the other ranks' gates at the drain). */
static enum train_next train_execute(struct train_state *st)
{
	struct akk_run *run = st->run;

	if (signals_start(run, &st->sigthread)) {
		akk_err_set(&st->e, "cannot start the signal thread: %s", strerror(errno));
		return TRAIN_REPORT;
	}
	st->ui.start = st->ui.epoch_mark = akk_now();
	st->rc = akk_run_train(run, &st->e) ? EXIT_RUNTIME :
		 akk_run_stats(run).interrupted ? EXIT_INTERRUPTED : EXIT_OK;
	/* steps.csv: a row that could not be written fails the run (after a
	 * failed run, the run's own error is the one reported) */
	if (st->steps.f) {
		struct akk_err se = { 0 };

		if (akk_steps_close(&st->steps, &se) && st->rc != EXIT_RUNTIME) {
			st->e = se;
			st->rc = EXIT_RUNTIME;
			return TRAIN_REPORT;
		}
	}
	/* where training stopped, which only rank 0's sentinel knows in a
	 * pipeline (every rank reaches here: failures abort) */
	if (st->world.size > 1 && st->rc != EXIT_RUNTIME &&
	    akk_run_agree_position(run, &st->world)) {
		akk_err_set(&st->e, "MPI: cannot share where training stopped");
		st->rc = EXIT_RUNTIME;
		return TRAIN_REPORT;
	}
	if ((st->gate_rank || st->dp) && !st->user_quiet) {
		struct akk_run_stats rs = akk_run_stats(run);
		long steps = rs.pos.id - st->ck.pos.id;
		struct akk_link_stats ls = rs.link;
		fprintf(stderr, "rank %d: sent %ld messages, %ld bytes: %.0f bytes per training step",
			st->world.rank, ls.messages, ls.bytes,
			steps > 0 ? (double)ls.bytes / steps : 0.0);
		if (ls.reductions)
			fprintf(stderr, "; reduced %.0f bytes per training step in %ld reductions, %.1f us each from post to result",
				steps > 0 ? (double)ls.reduce_bytes / steps : 0.0,
				ls.reductions, 1e6 * ls.reduce_wait / ls.reductions);
		fprintf(stderr, "\n");
	}
	if (st->rc == EXIT_RUNTIME)
		return TRAIN_REPORT;
	if (st->world.rank == 0 && (akk_run_watch(run)->stopped_epoch && st->rc == EXIT_OK ?
				    restore_best(&st->ui, run, st->s.out.dir, &st->e) :
				    ckpt_save(&st->ui.ckpt, run, "last.bin", &st->e))) {
		st->rc = EXIT_RUNTIME;
		return TRAIN_REPORT;
	}
	return TRAIN_GO_ON;
}

/* The closing lines, and a fold's result in *res. */
static void train_report(struct train_state *st, struct train_fold_result *res)
{
	struct akk_run *run = st->run;
	struct train_ui *ui = &st->ui;

	if (!ui->quiet) {
		if (ui->drawn)
			fputs("\r\033[K", stderr);
		ui->drawn = 0;
		if (st->rc == EXIT_INTERRUPTED)
			fprintf(stderr, "akkctl: interrupted at epoch %d, batch %ld; stopped cleanly, checkpoint in '%s/last.bin'\n",
				akk_run_stats(run).pos.epoch + 1,
				akk_run_stats(run).pos.index, st->s.out.dir);
		if (summary(ui, run, st->o->config, st->s.out.dir, st->s.out.metrics,
			    st->o->words, st->o->nwords, st->rc == EXIT_INTERRUPTED))
			st->rc = EXIT_RUNTIME;	/* the run cannot be resumed as told */
	}
	if (res) {	/* the weights kept: the best ones after an early stop */
		int early = akk_run_watch(run)->stopped_epoch && !ui->best_missing;

		res->ntrain = st->train.n;
		res->nval = st->val.n;
		res->have_val = ui->have_val;
		res->val_loss = early ? ui->best.loss : ui->final_loss;
		res->val_score = early ? ui->best.accuracy : ui->final_acc;
	}
}

/* st->e with st->rc: under MPI a usage error is rank 0's to say, and any
 * other failure ends every rank (they would wait for this one forever). */
static void train_fail(struct train_state *st)
{
	struct akk_world *w = &st->world;

	if (st->ui.drawn)
		fputs("\n", stderr);
	if (w->size <= 1) {
		cli_report(&st->e, st->rc);
	} else if (st->rc == EXIT_USAGE) {
		if (w->rank == 0)
			cli_report(&st->e, st->rc);
	} else {
		char *msg = malloc(sizeof(st->e.file) + sizeof(st->e.msg) + 32);
		if (msg)
			akk_err_format(&st->e, msg, (int)(sizeof(st->e.file) + sizeof(st->e.msg) + 32));
		fprintf(stderr, "akkctl: rank %d: %s\n", w->rank, msg ? msg : st->e.msg);
		fflush(stderr);
		free(msg);
		cli_world_abort(w, st->rc);
	}
}

static void train_release(struct train_state *st)
{
	signals_stop(st->sigthread);
	akk_run_free(st->run);
	if (st->steps.f) {	/* a run that failed before its end */
		struct akk_err ignored = { 0 };

		akk_steps_close(&st->steps, &ignored);
	}
	run_lock_release(&st->lock);
	akk_checkpoint_release(&st->ck);
	akk_dataset_release(&st->train);
	akk_dataset_release(&st->val);
	free(st->heldout);
	akk_model_release(&st->m);
	akk_spec_release(&st->s);
	free(st->gate_rank);
	free(st->metrics);
	free(st->ckpath);
	free(st->passed);
	free(st->resume_dir);
	free(st->cfgdir);
	free(st->base_dir);
	if (akk_world_finalize(&st->world, &st->e) && st->rc == EXIT_OK)
		st->rc = cli_report(&st->e, EXIT_RUNTIME);
}

static int train_all_folds(const struct train_opts *o, const struct akk_spec *s);

/* One run of o's config; fold: 0, or the fold this run holds out
 * (train_folds.h), whose result goes to *res. Returns the exit status. */
static int train_one(const struct train_opts *o, int fold, struct train_fold_result *res)
{
	struct train_state st = { .o = o, .fold = fold, .rc = EXIT_USAGE,
				  .lock = { .fd = -1 } };
	enum train_next next;

	st.ui.quiet = st.user_quiet = o->quiet;
	if (akk_spec_load(&st.s, o->config, o->sets, o->nsets, &st.e) ||
	    cli_find_data(&st.s, o->data_dir, &st.e) || cli_runs_here(&st.s, o->config, &st.e)) {
		akk_spec_release(&st.s);
		return cli_report(&st.e, EXIT_USAGE);
	}
	if (st.s.data.folds && !fold) {
		st.rc = train_all_folds(o, &st.s);
		train_release(&st);
		return st.rc;
	}
	if (signals_early()) {
		st.rc = cli_errorf(EXIT_RUNTIME, "cannot set up the signal handlers: %s",
				   strerror(errno));
		train_release(&st);
		return st.rc;
	}
	if (cli_auto_split(&st.s, o->resume, o->profile, &st.e) ||
	    akk_model_plan(&st.m, &st.s, &st.e) ||
	    cli_start_world(&st.s, &st.world, &st.gate_rank, &st.e))
		next = TRAIN_REPORT;
	else if (!(next = train_resume(&st)) && !(next = train_load(&st)) &&
		 !(next = train_prepare(&st)) && !(next = train_configure(&st))) {
		train_announce(&st);
		if (!(next = train_execute(&st)))
			train_report(&st, res);
	}
	if (next == TRAIN_REPORT)
		train_fail(&st);
	train_release(&st);
	return st.rc;
}

/* validation: {folds: K}: every fold's run in turn, then the summary (the
 * first fold that fails ends it). */
static int train_all_folds(const struct train_opts *o, const struct akk_spec *s)
{
	int k = s->data.folds, rc;
	const char *dir = o->out ? o->out : s->out.dir;
	struct train_fold_result *r = calloc((size_t)k, sizeof(*r));

	if (!r)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	if ((rc = train_folds_check(s, o->resume)) != EXIT_OK)
		goto out;
	for (int i = 0; i < k; i++) {
		if (!o->quiet)
			fprintf(stderr, "fold %d of %d: %s/fold-%d\n", i + 1, k, dir, i + 1);
		if ((rc = train_one(o, i + 1, &r[i])) != EXIT_OK)
			goto out;
		if (!r[i].have_val) {
			rc = cli_errorf(EXIT_RUNTIME, "fold %d ended without a validation pass", i + 1);
			goto out;
		}
	}
	rc = train_folds_summary(dir, r, k, s->data.task == AKK_TASK_REGRESSION, o->quiet);
out:
	free(r);
	return rc;
}

int cmd_train(int argc, char **argv)
{
	struct train_opts o;
	int rc = train_parse(argc, argv, &o);

	if (rc < 0)
		rc = train_one(&o, 0, NULL);
	train_opts_release(&o);
	return rc;
}
