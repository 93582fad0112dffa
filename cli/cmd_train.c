/* cmd_train.c - akkctl train: parse, check, load data, run the actors.
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

#include "ckpt_files.h"
#include "cli.h"
#include "idx.h"
#include "model.h"
#include "run.h"
#include "spec.h"
#include "world.h"

struct train_ui {
	struct ckpt_policy ckpt;
	int quiet, tty;
	double last_draw;
	int drawn;		/* a progress line is on screen */
};

static void progress(void *ctx, const struct akk_progress *p)
{
	struct train_ui *ui = ctx;
	double now = akk_now(), eta;

	if (ui->quiet || !ui->tty || (now - ui->last_draw < 0.1 && p->batch < p->batches))
		return;
	ui->last_draw = now;
	eta = p->batch ? p->elapsed * (p->batches - p->batch) / p->batch : 0;
	fprintf(stderr, "\r\033[Kepoch %d/%d [%-24.*s] %ld/%ld  loss %.4f  %.0f samples/s  ETA %.0fs",
		p->epoch, p->epochs, (int)(24 * p->batch / p->batches),
		"########################", p->batch, p->batches, p->loss,
		p->samples_per_s, eta);
	ui->drawn = 1;
}

static int epoch_end(void *ctx, struct akk_run *r,
		     const struct akk_epoch_report *rep, struct akk_err *e)
{
	struct train_ui *ui = ctx;

	if (ckpt_epoch(&ui->ckpt, r, rep, e))
		return -1;
	if (ui->quiet)
		return 0;
	if (ui->drawn)
		fputs("\r\033[K", stderr);
	ui->drawn = 0;
	if (!strcmp(rep->phase, "final")) {
		fprintf(stderr, "final: validation loss %.4f acc %.2f%% (weights after %ld steps)\n",
			rep->val_loss, 100 * rep->val_acc, rep->vmax);
		return 0;
	}
	fprintf(stderr, "epoch %d/%d: train loss %.4f acc %.2f%%", rep->epoch,
		rep->epochs, rep->train_loss, 100 * rep->train_acc);
	if (rep->val_samples)
		fprintf(stderr, "  validation loss %.4f acc %.2f%%", rep->val_loss,
			100 * rep->val_acc);
	fprintf(stderr, "  %.2f s  %.0f samples/s  lr %.3g\n", rep->seconds,
		rep->samples_per_s, rep->lr);
	return 0;
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
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; ; p++) {
		if (*p == '/' || !*p) {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0777) && errno != EEXIST)
				return akk_err_set(e, "cannot create directory '%s': %s",
						   buf, strerror(errno));
			*p = c;
			if (!c)
				return 0;
		}
	}
}

int cmd_train(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "out", required_argument, NULL, 'o' },
		{ "resume", required_argument, NULL, 'r' },
		{ "set", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **sets = calloc(argc + 2, sizeof(*sets));
	char mode_set[64], epochs_set[64], metrics[1200];
	const char *out = NULL, *resume = NULL;
	struct train_ui ui = { 0 };
	int user_quiet;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_dataset train = { 0 }, val = { 0 };
	struct akk_run run;
	struct akk_err e = { 0 };
	struct akk_checkpoint ck = { 0 };
	struct akk_world world = { 0 };
	int *gate_rank = NULL, dp = 0;
	long counts[3];
	char ckpath[1200], *cfgdir;
	pthread_t sigthread;
	int nsets = 0, c, rc = EXIT_USAGE, have_val, run_ready = 0;

	if (!sets)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:e:o:r:s:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			snprintf(mode_set, sizeof(mode_set), "schedule.mode=%s", optarg);
			sets[nsets++] = mode_set;
			break;
		case 'e':
			snprintf(epochs_set, sizeof(epochs_set), "schedule.epochs=%s", optarg);
			sets[nsets++] = epochs_set;
			break;
		case 'o':
			out = optarg;
			break;
		case 'r':
			resume = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'q':
			ui.quiet = 1;
			break;
		case 'h':
			free(sets);
			return cli_help("train");
		default:
			free(sets);
			return cli_bad_option("train", c, argv);
		}
	}
	if (optind != argc - 1) {
		free(sets);
		if (optind == argc)
			cli_errorf(EXIT_USAGE, "train needs a CONFIG");
		else
			cli_errorf(EXIT_USAGE, "unexpected argument '%s'", argv[optind + 1]);
		return cli_usage_error("train");
	}
	if (akk_spec_load(&s, argv[optind], sets, nsets, &e)) {
		free(sets);
		return cli_report(&e, EXIT_USAGE);
	}
	free(sets);
	if (out) {
		free(s.out.dir);
		s.out.dir = strdup(out);
	}
	user_quiet = ui.quiet;
	if (akk_model_plan(&m, &s, &e) || cli_start_world(&s, &world, &gate_rank, &e))
		goto report;
	/* Rank 0 reads the data; in a pipeline the others need only the
	 * sample counts, with data parallelism each reads its own. */
	dp = s.sched.data_parallel && world.size > 1;
	have_val = s.data.val_images != NULL;
	if (dp && world.rank != 0 &&
	    akk_dataset_load(&train, s.data.train_images, s.data.train_labels, &e)) {
		rc = EXIT_RUNTIME;	/* rank 0 would wait for this one: abort */
		goto report;
	}
	if (world.rank == 0 &&
	    (akk_dataset_load(&train, s.data.train_images, s.data.train_labels, &e) ||
	     (have_val && akk_dataset_load(&val, s.data.val_images, s.data.val_labels, &e))))
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
	if (world.rank != 0) {
		if (!dp)
			train.n = (size_t)counts[0];
		val.n = (size_t)counts[1];
		have_val = have_val && !dp;	/* rank 0 alone validates */
		ui.quiet = 1;
	}
	if (resume && (ckpt_resolve(resume, ckpath, sizeof(ckpath), &e) ||
		       akk_checkpoint_read(&ck, ckpath, &e)))
		goto report;
	if (resume && ck.pos.epoch >= s.sched.epochs) {
		fprintf(stderr, "akkctl: '%s' has already trained %d of %d epochs; raise --epochs to go on\n",
			ckpath, ck.pos.epoch, s.sched.epochs);
		rc = EXIT_OK;
		goto out;
	}
	if (resume && akk_checkpoint_position(&ck, s.sched.batch_size, dp ? world.size : 1, train.n, ckpath, &e))
		goto report;	/* exit 2: the position does not fit this run */
	rc = EXIT_RUNTIME;
	if (world.rank == 0 && mkdirs(s.out.dir, &e))
		goto report;
	ui.ckpt.spec = &s;
	ui.ckpt.dir = s.out.dir;
	ui.ckpt.every = s.out.checkpoint_every;
	ui.ckpt.keep = s.out.keep;
	if (resume)
		ui.ckpt.metrics = ck.metrics;
	if (!(cfgdir = realpath(argv[optind], NULL))) {
		akk_err_set(&e, "cannot resolve '%s': %s", argv[optind], strerror(errno));
		goto report;
	}
	snprintf(ui.ckpt.base_dir, sizeof(ui.ckpt.base_dir), "%s", dirname(cfgdir));
	free(cfgdir);
	snprintf(metrics, sizeof(metrics), "%s/%s", s.out.dir, s.out.metrics);
	{
		struct akk_run_config cfg = {
			.mode = s.sched.mode, .epochs = s.sched.epochs,
			.blas_threads = s.sched.threads,
			.metrics_path = world.rank == 0 ? metrics : NULL,
			.obs = { &ui, progress, world.rank == 0 ? epoch_end : NULL },
			.start = ck.pos,
			.rank = world.rank, .gate_rank = gate_rank,
			.shards = dp ? world.size : 1,
		};
		/* Ranks on one machine share its cores. */
		if (!cfg.blas_threads && world.local_size > 1)
			cfg.blas_threads = s.sched.mode == AKK_MODE_WHEELS ? 1 :
				akk_cores() / world.local_size > 1 ?
				akk_cores() / world.local_size : 1;
		ui.tty = isatty(2);
		/* the data was checked above: what fails here is the run's
		 * own setup (memory, threads, the metrics file) */
		if (akk_run_init(&run, &m, &train, have_val ? &val : NULL, &cfg, &e))
			goto report;
		run_ready = 1;
	}
	if (resume) {
		struct akk_gate *gates[256];
		for (int i = 0; i < m.ngates && i < 256; i++)
			gates[i] = run.gates[i].ready ? &run.gates[i].gate : NULL;
		if (m.ngates > 256 ||
		    akk_checkpoint_restore(&ck, gates, m.ngates, ckpath, &e)) {
			rc = EXIT_USAGE;
			goto report;
		}
		if (!ui.quiet)
			fprintf(stderr, "resuming from '%s' at epoch %d, batch %ld (step %ld)\n",
				ckpath, ck.pos.epoch + 1, ck.pos.index, ck.pos.id);
	}
	if (!ui.quiet) {
		char shape[64];
		akk_shape_format(s.input, shape, sizeof(shape));
		fprintf(stderr, "%s: %s, %d gates, %zu parameters, %zu training / %zu validation samples, %d compute thread%s per busy gate\n",
			s.name, akk_mode_name(s.sched.mode), m.ngates, m.nparams,
			train.n, have_val ? val.n : 0, run.blas_threads,
			run.blas_threads == 1 ? "" : "s");
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
	if (signals_start(&run, &sigthread)) {
		akk_err_set(&e, "cannot start the signal thread: %s", strerror(errno));
		goto report;
	}
	rc = akk_run_train(&run, &e) ? EXIT_RUNTIME :
	     atomic_load(&run.interrupted) ? EXIT_INTERRUPTED : EXIT_OK;
	signals_stop(sigthread);
	if (world.size > 1 && rc != EXIT_RUNTIME) {
		/* where training stopped, which only rank 0's sentinel knows in
		 * a pipeline (every rank reaches here: failures abort) */
		long stop_at = run.pos.id;
		akk_world_bcast(&world, &stop_at, 1);
		run.pos.id = stop_at;
	}
	if ((gate_rank || dp) && !user_quiet) {
		long steps = run.pos.id - ck.pos.id;
		struct akk_link_stats st = run.link_stats;
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
	if (world.rank == 0 && ckpt_save(&ui.ckpt, &run, "last.bin", &e)) {
		rc = EXIT_RUNTIME;
		goto report;
	}
	if (rc == EXIT_INTERRUPTED && !ui.quiet) {
		if (ui.drawn)
			fputs("\n", stderr);
		fprintf(stderr, "akkctl: interrupted at epoch %d, batch %ld; stopped cleanly, checkpoint in '%s/last.bin'\n",
			run.pos.epoch + 1, run.pos.index, s.out.dir);
	}
	goto out;
report:
	if (ui.drawn)
		fputs("\n", stderr);
	if (world.size > 1) {
		char msg[1200];
		akk_err_format(&e, msg, sizeof(msg));
		if (rc == EXIT_USAGE) {
			/* the same on every rank: rank 0 says it */
			if (world.rank == 0)
				cli_report(&e, rc);
		} else {
			/* the other ranks would wait for this one forever */
			fprintf(stderr, "akkctl: rank %d: %s\n", world.rank, msg);
			fflush(stderr);
			akk_world_abort(&world, rc);
		}
	} else {
		cli_report(&e, rc);
	}
out:
	if (run_ready)
		akk_run_release(&run);
	akk_checkpoint_release(&ck);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	akk_model_release(&m);
	akk_spec_release(&s);
	free(gate_rank);
	akk_world_finalize(&world);
	return rc;
}
