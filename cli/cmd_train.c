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
#include "data/open.h"
#include "data/csv.h"
#include "data/split.h"
#include "io/metrics.h"
#include "model/model.h"
#include "progress.h"
#include "runtime/run.h"
#include "runtime/schedule.h"
#include "config/spec.h"
#include "runtime/world.h"
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
	double final_loss;	/* issue 13: for regression's summary */
};

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
	if (rep->regression) {	/* issue 13: RMSE and R^2 */
		if (final) {
			fprintf(stderr, "final: validation loss %.4f rmse %.4g r2 %.4f (weights after %ld steps)\n",
				rep->val_loss, rep->val_rmse, rep->val_acc, rep->vmax);
			return 0;
		}
		fprintf(stderr, "epoch %d/%d: train loss %.4f rmse %.4g r2 %.4f", rep->epoch,
			rep->epochs, rep->train_loss, rep->train_rmse, rep->train_acc);
		if (rep->val_samples)
			fprintf(stderr, "  validation loss %.4f rmse %.4g r2 %.4f", rep->val_loss,
				rep->val_rmse, rep->val_acc);
		weights_note_epoch(stderr, rep);
		fprintf(stderr, "  %.2f s  %.0f samples/s  lr %.3g\n", rep->seconds,
			rep->samples_per_s, rep->lr);
		return 0;
	}
	if (final) {
		fprintf(stderr, "final: validation loss %.4f acc %.2f%% (weights after %ld steps)\n",
			rep->val_loss, 100 * rep->val_acc, rep->vmax);
		return 0;
	}
	fprintf(stderr, "epoch %d/%d: train loss %.4f acc %.2f%%", rep->epoch,
		rep->epochs, rep->train_loss, 100 * rep->train_acc);
	if (rep->val_samples)
		fprintf(stderr, "  validation loss %.4f acc %.2f%%", rep->val_loss,
			100 * rep->val_acc);
	weights_note_epoch(stderr, rep);
	fprintf(stderr, "  %.2f s  %.0f samples/s  lr %.3g\n", rep->seconds,
		rep->samples_per_s, rep->lr);
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

/* The command that resumes an interrupted run, as one line: 0, or -1 when
 * it could not be written (then the user cannot know it: an error). */
static int put_resume_command(FILE *f, const char *config, const char *dir,
			      char *const *opts, int nopts)
{
	if (fputs("to resume: akkctl train ", f) < 0 || put_shell_word(f, config) ||
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
	if (ui->ckpt.spec->data.task == AKK_TASK_REGRESSION) {	/* issue 13 */
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
	}
	else if (ui->last_epoch)
		fprintf(stderr, "; final training accuracy %.2f%% (no validation data)",
			100 * ui->final_train_acc);
	fputs("\n", stderr);
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

static int signals_start(struct akk_run *run, pthread_t *thread)
{
	struct sigaction sa = { 0 };

	if (pipe(sig_pipe))
		return -1;
	if (pthread_create(thread, NULL, signal_main, run))
		return -1;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return 0;
}

static void signals_stop(pthread_t thread)
{
	unsigned char zero = 0;
	struct sigaction sa = { 0 };

	sa.sa_handler = SIG_DFL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (write(sig_pipe[1], &zero, 1) == 1)
		pthread_join(thread, NULL);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
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

/* issue 13 (h13core): validation: {split: F} holds out part of train,
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

/* akkctl train; fold: 0, or the fold this run holds out (train_folds.h),
 * whose result goes to *res. */
static int train_run(int argc, char **argv, int fold, struct train_fold_result *res)
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* sets: the overrides; words: the same options as given, for the
	 * resume command; owned: what to free */
	const char **sets = calloc(argc + 2, sizeof(*sets));
	char **words = calloc(2 * (size_t)argc + 2, sizeof(*words));
	char **owned = calloc(argc + 2, sizeof(*owned));
	char *metrics = NULL, *ckpath = NULL, *passed = NULL, *resume_dir = NULL;
	char *base_dir = NULL, *cfgdir = NULL;
	const char *out = NULL, *resume = NULL;
	struct train_ui ui = { 0 };
	int user_quiet, force = 0, start_over = 0, dropped_best = 0;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_dataset train = { 0 }, val = { 0 };
	struct akk_run *run = NULL;
	struct akk_err e = { 0 };
	struct akk_checkpoint ck = { 0 };
	struct akk_world world = { 0 };
	int *gate_rank = NULL, dp = 0;
	uint32_t *heldout = NULL;	/* a validation split's indices */
	size_t nheldout = 0;
	long counts[3];
	pthread_t sigthread;
	int nsets = 0, nwords = 0, nowned = 0, c, rc = EXIT_USAGE, have_val;
	int profile = 1;

	if (!sets || !words || !owned) {
		free(sets);
		free(words);
		free(owned);
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:e:o:r:s:fqPh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
		case 'e':
			if (!(owned[nowned] = set_of(c == 'm' ? "schedule.mode" : "schedule.epochs",
						     optarg))) {
				rc = cli_errorf(EXIT_RUNTIME, "out of memory");
				goto free_args;
			}
			sets[nsets++] = owned[nowned++];
			words[nwords++] = c == 'm' ? "--mode" : "--epochs";
			words[nwords++] = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'r':
			resume = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			words[nwords++] = "--set";
			words[nwords++] = optarg;
			break;
		case 'f':
			force = 1;
			break;
		case 'q':
			ui.quiet = 1;
			break;
		case 'P':
			profile = 0;
			break;
		case 'h':
			rc = cli_help("train");
			goto free_args;
		default:
			rc = cli_bad_option("train", c, argv);
			goto free_args;
		}
	}
	if (optind != argc - 1) {
		if (optind == argc)
			cli_errorf(EXIT_USAGE, "train needs a CONFIG");
		else
			cli_errorf(EXIT_USAGE, "unexpected argument '%s'", argv[optind + 1]);
		rc = cli_usage_error("train");
		goto free_args;
	}
	if (akk_spec_load(&s, argv[optind], sets, nsets, &e)) {
		rc = cli_report(&e, EXIT_USAGE);
		goto free_args;
	}
	if (s.data.folds && !fold) {
		rc = train_folds(argc, argv, &s, out ? out : s.out.dir, resume);
		goto out;
	}
	user_quiet = ui.quiet;
	if (cli_auto_split(&s, resume, profile, &e) ||
	    akk_model_plan(&m, &s, &e) || cli_start_world(&s, &world, &gate_rank, &e))
		goto report;
	/* The checkpoint, of this network (checked first: a mismatch is one
	 * whatever the epoch); a resume continues in the checkpoint's own
	 * directory unless --out says otherwise. */
	if (resume) {
		struct stat st;
		int r = ckpt_resolve(resume, &m, &ck, &ckpath, &passed, &e);
		char *dirbuf;

		if (r < 0)
			goto report;
		if (!stat(resume, &st) && S_ISDIR(st.st_mode))
			resume_dir = strdup(resume);
		else if ((dirbuf = strdup(resume))) {
			resume_dir = strdup(dirname(dirbuf));
			free(dirbuf);
		}
		if (!resume_dir) {
			akk_err_set(&e, "out of memory");
			goto report;
		}
		if (r == 1) {
			/* a directory without a checkpoint: a run killed before
			 * its first one starts over; an empty one is an error */
			char *files = NULL;
			if (run_dir_files(resume, s.out.metrics, &files, &e))
				goto report;
			if (!files) {
				akk_err_set(&e, "--resume: no readable checkpoint in '%s'", resume);
				goto report;
			}
			free(files);
			start_over = 1;
		}
	}
	if (out || resume) {
		free(s.out.dir);
		if (!(s.out.dir = strdup(out ? out : resume_dir))) {
			akk_err_set(&e, "out of memory");
			goto report;
		}
	}
	if (fold) {	/* each fold's run in its own directory */
		char name[32], *dir;

		snprintf(name, sizeof(name), "fold-%d", fold);
		if (!(dir = ckpt_join(s.out.dir, name, &e)))
			goto report;
		free(s.out.dir);
		s.out.dir = dir;
	}
	if (check_dir_length(&s, out, &e))
		goto report;
	if (resume && !start_over && ck.pos.epoch >= s.sched.epochs) {
		fprintf(stderr, "akkctl: '%s' has already trained %d of %d epochs; raise --epochs to go on\n",
			ckpath, ck.pos.epoch, s.sched.epochs);
		rc = EXIT_OK;
		goto out;
	}
	/* Rank 0 reads the data; in a pipeline the others need only the
	 * sample counts, with data parallelism each reads its own. */
	dp = s.sched.data_parallel && world.size > 1;
	akk_spec_scale_lr(&s, dp ? world.size : 1);	/* lr_scaling */
	have_val = akk_data_has(&s.data, AKK_DATA_VAL) || s.data.split > 0 || fold;
	if (dp && world.rank != 0 &&
	    (akk_data_open(&train, &s.data, AKK_DATA_TRAIN, &e) ||
	     hold_out(&s, resume && !start_over ? &ck : NULL, fold, &train, &val,
		      &heldout, &nheldout, &e))) {
		rc = EXIT_RUNTIME;	/* rank 0 would wait for this one: abort */
		goto report;
	}
	if (world.rank == 0 &&
	    (check_run_dir(&s, &m, resume, resume ? resume_dir : NULL, &ck, force, &e) ||
	     akk_data_open(&train, &s.data, AKK_DATA_TRAIN, &e) ||
	     (akk_data_has(&s.data, AKK_DATA_VAL) &&
	      (akk_data_open(&val, &s.data, AKK_DATA_VAL, &e) ||
	       /* named CSV classes: numbered as in train (h13csv) */
	       (!strcmp(s.data.format, "csv") &&
		akk_csv_match_classes(&val, train.class_names, train.classes,
				      s.data.val_file, &e)))) ||
	     hold_out(&s, resume && !start_over ? &ck : NULL, fold, &train, &val,
		      &heldout, &nheldout, &e)))
		counts[0] = -1;
	else
		counts[0] = (long)train.n;
	counts[1] = (long)val.n;
	if (counts[0] >= 0 && world.rank == 0 &&
	    akk_run_check_data(&m, &train, have_val ? &val : NULL, &e))
		counts[0] = -1;	/* bad input: every rank exits 2 */
	if (akk_world_bcast(&world, counts, 2)) {
		akk_err_set(&e, "cannot broadcast the sample counts");
		goto report;
	}
	if (counts[0] < 0) {
		if (world.rank == 0)
			goto report;
		goto out;	/* rank 0 reports it */
	}
	if (dp && cli_check_split(&s, &world, (size_t)counts[0], &e))
		goto report;	/* EXIT_USAGE, the same on every rank */
	if (world.rank != 0) {
		if (!dp)
			train.n = (size_t)counts[0];
		val.n = (size_t)counts[1];
		have_val = have_val && !dp;	/* rank 0 alone validates */
		ui.quiet = 1;
	}
	if (resume && !start_over &&
	    akk_checkpoint_position(&ck, s.sched.batch_size, dp ? world.size : 1,
				    train.n, ckpath, &e))
		goto report;	/* exit 2: the position does not fit this run */
	rc = EXIT_RUNTIME;
	if (!(metrics = ckpt_join(s.out.dir, s.out.metrics, &e)))
		goto report;
	/* The run directory: cleared for --force, created, rid of temporary
	 * files a kill left, and its metrics cut back to the checkpoint. */
	if (world.rank == 0) {
		if ((force && run_dir_clear(s.out.dir, s.out.metrics, &e)) ||
		    mkdirs(s.out.dir, &e) ||
		    run_dir_remove_temps(s.out.dir, s.out.metrics, &e))
			goto report;
		if (resume && akk_metrics_truncate_for(metrics, ck.pos.epoch, lr_columns(&s),
						       s.data.task == AKK_TASK_REGRESSION,
						       s.out.best_by == AKK_BEST_LOSS,
						       &ui.best, &e)) {
			rc = EXIT_USAGE;
			goto report;
		}
		/* with early stopping the best is its monitor's epoch, not
		 * the best figure in the file; unknown: none claimed */
		if (resume && s.sched.early.on && ui.best.epoch &&
		    weights_best_of_epoch(metrics, ck.watch.stop.best_epoch, &ui.best))
			ui.best.epoch = 0;
		if (resume && run_dir_drop_later_best(s.out.dir, &m, &ck.pos, &dropped_best, &e))
			goto report;
	}
	ui.ckpt.spec = &s;
	ui.ckpt.dir = s.out.dir;
	ui.ckpt.every = s.out.checkpoint_every;
	ui.ckpt.keep = s.out.keep;
	ui.ckpt.metrics.best_val_loss = -1;	/* none yet */
	if (resume && !start_over)
		ui.ckpt.metrics = ck.metrics;
	if (!(cfgdir = realpath(argv[optind], NULL))) {
		akk_err_set(&e, "cannot resolve '%s': %s", argv[optind], strerror(errno));
		goto report;
	}
	if (!(base_dir = strdup(dirname(cfgdir)))) {
		akk_err_set(&e, "out of memory");
		goto report;
	}
	ui.ckpt.base_dir = base_dir;
	{
		struct akk_run_config cfg = {
			.mode = s.sched.mode, .epochs = s.sched.epochs,
			.blas_threads = s.sched.threads,
			.metrics_path = world.rank == 0 ? metrics : NULL,
			.obs = { &ui, progress, world.rank == 0 ? epoch_end : NULL },
			.start = ck.pos,
			.rank = world.rank, .gate_rank = gate_rank,
			.shards = dp ? world.size : 1,
			/* issue 13 (h13core): the data section */
			.pre = resume && !start_over && ck.pre.in ? &ck.pre : NULL,
			.heldout = heldout, .nheldout = nheldout,
			.class_names = train.class_names,
			.nclass_names = train.class_names ? train.classes : 0,
		};
		/* Ranks on one machine share its cores. */
		if (!cfg.blas_threads && world.local_size > 1) {
			struct akk_schedule plan;
			int cores = akk_cores() / world.local_size;

			if (akk_schedule_plan(&plan, s.sched.mode, &s.sched, m.ngates,
					      0, cores > 1 ? cores : 1, &e))
				goto report;
			cfg.blas_threads = plan.compute_threads;
		}
		ui.tty = progress_enabled(2);
		/* the data was checked above: what fails here is the run's
		 * own setup (memory, threads, the metrics file) */
		if (!(run = akk_run_create(&m, &train, have_val ? &val : NULL, &cfg, &e)))
			goto report;
	}
	if (resume && !start_over) {
		if (akk_run_restore(run, &ck, ckpath, &e)) {
			rc = EXIT_USAGE;
			goto report;
		}
		if (!ui.quiet) {
			fprintf(stderr, "resuming from '%s' at epoch %d, batch %ld (step %ld)\n",
				ckpath, ck.pos.epoch + 1, ck.pos.index, ck.pos.id);
			if (passed)
				fputs(passed, stderr);
		}
	} else if (start_over && !ui.quiet) {
		fprintf(stderr, "no checkpoint in '%s' yet: starting over from epoch 1\n", resume);
	}
	if (dropped_best && !ui.quiet)
		fprintf(stderr, "removed '%s/best.bin': saved after the point this run resumes from\n",
			s.out.dir);
	if (!ui.quiet) {
		fprintf(stderr, "%s: %s, %d gates, %zu parameters, %zu training / %zu validation samples, %d compute thread%s per busy gate\n",
			s.name, akk_mode_name(s.sched.mode), m.ngates, m.nparams,
			train.n, have_val ? val.n : 0, akk_run_stats(run).compute_threads,
			akk_run_stats(run).compute_threads == 1 ? "" : "s");
		if (dp)
			fprintf(stderr, "data parallel: %d ranks, each %d of every %d samples\n",
				world.size, s.sched.batch_size, s.sched.batch_size * world.size);
		if (gate_rank) {
			fprintf(stderr, "placement: ");
			for (int i = 0; i < m.ngates; i++)
				fprintf(stderr, "%sgate %d on rank %d", i ? ", " : "",
					i + 1, gate_rank[i]);
			fprintf(stderr, " (%d ranks; rank 0 runs the sentinel)\n", world.size);
		}
	}
	if (signals_start(run, &sigthread)) {
		akk_err_set(&e, "cannot start the signal thread: %s", strerror(errno));
		goto report;
	}
	ui.start = ui.epoch_mark = akk_now();
	rc = akk_run_train(run, &e) ? EXIT_RUNTIME :
	     akk_run_stats(run).interrupted ? EXIT_INTERRUPTED : EXIT_OK;
	signals_stop(sigthread);
	/* where training stopped, which only rank 0's sentinel knows in a
	 * pipeline (every rank reaches here: failures abort) */
	if (world.size > 1 && rc != EXIT_RUNTIME && akk_run_agree_position(run, &world)) {
		akk_err_set(&e, "MPI: cannot share where training stopped");
		rc = EXIT_RUNTIME;
		goto report;
	}
	if ((gate_rank || dp) && !user_quiet) {
		struct akk_run_stats rs = akk_run_stats(run);
		long steps = rs.pos.id - ck.pos.id;
		struct akk_link_stats st = rs.link;
		fprintf(stderr, "rank %d: sent %ld messages, %ld bytes: %.0f bytes per training step",
			world.rank, st.messages, st.bytes,
			steps > 0 ? (double)st.bytes / steps : 0.0);
		if (st.reductions)
			fprintf(stderr, "; reduced %.0f bytes per training step in %ld reductions, %.1f us each from post to result",
				steps > 0 ? (double)st.reduce_bytes / steps : 0.0,
				st.reductions, 1e6 * st.reduce_wait / st.reductions);
		fprintf(stderr, "\n");
	}
	if (rc == EXIT_RUNTIME)
		goto report;
	/* Every thread has stopped: the final state, complete or interrupted
	 * (under MPI, rank 0 gathered the other ranks' gates at the drain). */
	if (world.rank == 0 && (akk_run_watch(run)->stopped_epoch && rc == EXIT_OK ?
				restore_best(&ui, run, s.out.dir, &e) :
				ckpt_save(&ui.ckpt, run, "last.bin", &e))) {
		rc = EXIT_RUNTIME;
		goto report;
	}
	if (!ui.quiet) {
		if (ui.drawn)
			fputs("\r\033[K", stderr);
		ui.drawn = 0;
		if (rc == EXIT_INTERRUPTED)
			fprintf(stderr, "akkctl: interrupted at epoch %d, batch %ld; stopped cleanly, checkpoint in '%s/last.bin'\n",
				akk_run_stats(run).pos.epoch + 1,
				akk_run_stats(run).pos.index, s.out.dir);
		if (summary(&ui, run, argv[optind], s.out.dir, s.out.metrics, words,
			    nwords, rc == EXIT_INTERRUPTED))
			rc = EXIT_RUNTIME;	/* the run cannot be resumed as told */
	}
	if (res) {	/* the weights kept: the best ones after an early stop */
		int early = akk_run_watch(run)->stopped_epoch && !ui.best_missing;

		res->ntrain = train.n;
		res->nval = val.n;
		res->have_val = ui.have_val;
		res->val_loss = early ? ui.best.loss : ui.final_loss;
		res->val_score = early ? ui.best.accuracy : ui.final_acc;
	}
	goto out;
report:
	if (ui.drawn)
		fputs("\n", stderr);
	if (world.size > 1) {
		if (rc == EXIT_USAGE) {
			/* the same on every rank: rank 0 says it */
			if (world.rank == 0)
				cli_report(&e, rc);
		} else {
			/* the other ranks would wait for this one forever */
			char *msg = malloc(sizeof(e.file) + sizeof(e.msg) + 32);
			if (msg)
				akk_err_format(&e, msg, (int)(sizeof(e.file) + sizeof(e.msg) + 32));
			fprintf(stderr, "akkctl: rank %d: %s\n", world.rank, msg ? msg : e.msg);
			fflush(stderr);
			free(msg);
			cli_world_abort(&world, rc);
		}
	} else {
		cli_report(&e, rc);
	}
out:
	akk_run_free(run);
	akk_checkpoint_release(&ck);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	free(heldout);
	akk_model_release(&m);
	akk_spec_release(&s);
	free(gate_rank);
	free(metrics);
	free(ckpath);
	free(passed);
	free(resume_dir);
	free(cfgdir);
	free(base_dir);
	if (akk_world_finalize(&world, &e) && rc == EXIT_OK)
		rc = cli_report(&e, EXIT_RUNTIME);
free_args:
	for (int i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(words);
	free(sets);
	return rc;
}

int train_fold(int argc, char **argv, int fold, struct train_fold_result *r)
{
	return train_run(argc, argv, fold, r);
}

int cmd_train(int argc, char **argv)
{
	return train_run(argc, argv, 0, NULL);
}
