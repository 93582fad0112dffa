/* cmd_lrfind.c - akkctl lr-find: the learning-rate range test (Smith 2015,
 * fastai's lr_find).
 *
 * From a fresh model, train N batches with the rate growing exponentially
 * from --min to --max, and record each batch's loss. It is an ordinary
 * flip-flop run of the actor runtime: every gate's schedule is replaced by
 * an exponential one whose factor makes step i (at its midpoint, as
 * akk_lr_at counts) run at min * (max/min)^(i/(N-1)); the training set is
 * cut to N batches when it holds more, so the sweep is one epoch. Each
 * batch's loss comes from the progress observer (the epoch's running mean,
 * differenced). The loss is smoothed as fastai does (beta 0.98, debiased);
 * the run stops when the smoothed loss exceeds 4 times its best, or the
 * loss stops being finite. The suggestion is lr_suggest.h's.
 * Nothing is written but --out FILE.csv. */
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data_search.h"
#include "lr_suggest.h"
#include "data/batch.h"
#include "data/open.h"
#include "model/model.h"
#include "runtime/run.h"
#include "config/spec.h"

#define SMOOTH_BETA 0.98
#define EXPLODE 4.0

struct sweep {
	struct akk_run *run;
	int steps, B;
	long n;			/* training samples per epoch */
	double lo, ratio;	/* lr_i = lo * ratio^(i / (steps - 1)) */
	int epoch;		/* of the running mean below */
	double prev_sum;	/* the epoch's summed loss so far */
	int done;		/* batches recorded */
	double avg, best;	/* the smoothing, the best smoothed loss */
	int exploded;
	double *lr, *loss, *smooth;	/* steps each */
};

static double lr_at(const struct sweep *w, int i)
{
	return w->lo * pow(w->ratio, (double)i / (w->steps - 1));
}

/* On the sentinel thread, after each batch's backward. */
static void on_batch(void *ctx, const struct akk_progress *p)
{
	struct sweep *w = ctx;
	long samples = (long)p->batch * w->B;
	double sum, loss, sm;

	if (w->done >= w->steps || w->exploded)
		return;
	if (p->epoch != w->epoch) {
		w->epoch = p->epoch;
		w->prev_sum = 0;
	}
	if (samples > w->n)
		samples = w->n;
	sum = p->loss * (double)samples;
	loss = (sum - w->prev_sum) / (double)(samples - ((long)(p->batch - 1) * w->B));
	w->prev_sum = sum;
	w->avg = SMOOTH_BETA * w->avg + (1 - SMOOTH_BETA) * loss;
	sm = w->avg / (1 - pow(SMOOTH_BETA, w->done + 1));
	w->lr[w->done] = lr_at(w, w->done);
	w->loss[w->done] = loss;
	w->smooth[w->done] = sm;
	w->done++;
	if (w->done == 1 || sm < w->best)
		w->best = sm;
	if (!isfinite(sm) || sm > EXPLODE * w->best)
		w->exploded = 1;
	if (w->exploded || w->done == w->steps)
		akk_run_interrupt(w->run);
}

static int parse_lr(const char *opt, const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || !(v <= FLT_MAX))
		return cli_errorf(EXIT_USAGE, "option '%s' needs a learning rate greater than 0, got '%s'",
				  opt, arg);
	*out = v;
	return 0;
}

/* Every gate's optimizer on the sweep's exponential schedule. */
static void sweep_schedule(struct akk_optim_spec *o, float lr0, float gamma)
{
	o->lr = lr0;
	o->sched.kind = AKK_LR_EXPONENTIAL;
	o->sched.gamma = gamma;
	o->sched.warmup_epochs = 0;
}

static int write_csv(FILE *f, const struct sweep *w)
{
	fprintf(f, "lr,loss,smoothed_loss\n");
	for (int i = 0; i < w->done; i++)
		fprintf(f, "%.6g,%.6f,%.6f\n", w->lr[i], w->loss[i], w->smooth[i]);
	return ferror(f) ? -1 : 0;
}

/* The sweep's schedule over train (cut to N batches when it holds more):
 * lr_i = lo * (hi / lo)^(i / (N - 1)) at batch i, as an exponential
 * schedule the run follows. Returns -1 to go on, else the exit status. */
static int sweep_plan(struct sweep *w, struct akk_spec *s, struct akk_dataset *train,
		      double lo, double hi)
{
	long per_epoch;
	double gamma, lr0;

	/* One epoch of exactly N batches when the set holds them; else whole
	 * epochs, the run interrupted after batch N. */
	w->B = s->sched.batch_size;
	if ((size_t)w->steps * (size_t)w->B <= train->n)
		train->n = (size_t)w->steps * (size_t)w->B;
	w->n = (long)train->n;
	per_epoch = akk_batches_per_epoch(train->n, w->B);
	w->lo = lo;
	w->ratio = hi / lo;
	/* lr * gamma^((i + 0.5) / P) = lo * ratio^(i / (N - 1)) */
	gamma = pow(w->ratio, (double)per_epoch / (w->steps - 1));
	lr0 = lo * pow(w->ratio, -0.5 / (w->steps - 1));
	if (!(gamma <= FLT_MAX) || !(lr0 >= FLT_MIN))
		return cli_errorf(EXIT_USAGE, "the range --min %g to --max %g over %d steps does not fit a float schedule",
				  lo, hi, w->steps);
	sweep_schedule(&s->optim, (float)lr0, (float)gamma);
	for (int i = 0; i < s->ngates; i++)
		if (s->gates[i].has_optim)
			sweep_schedule(&s->gates[i].optim, (float)lr0, (float)gamma);
	s->sched.epochs = (int)((w->steps + per_epoch - 1) / per_epoch);
	s->sched.max_loss = 0;	/* the sweep stops on its own */
	s->sched.early.on = 0;
	w->lr = calloc(w->steps, sizeof(double));
	w->loss = calloc(w->steps, sizeof(double));
	w->smooth = calloc(w->steps, sizeof(double));
	if (!w->lr || !w->loss || !w->smooth)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	return -1;
}

/* The run, then the CSV (on stdout, and in out when given) and the
 * suggested lr on stderr. Returns the exit status. */
static int sweep_run(struct sweep *w, const struct akk_spec *s, const struct akk_model *m,
		     const struct akk_dataset *train, double hi, const char *out)
{
	struct akk_run_config cfg = {
		.mode = s->sched.mode, .epochs = s->sched.epochs,
		.blas_threads = s->sched.threads,
		.obs = { w, on_batch, NULL },
	};
	struct akk_err e = { 0 };
	struct lr_suggestion sg;

	if (!(w->run = akk_run_create(m, train, NULL, &cfg, &e)))
		return cli_report(&e, EXIT_RUNTIME);
	fprintf(stderr, "lr-find: %s, %d steps of batch %d, lr from %g to %g\n",
		s->name, w->steps, w->B, w->lo, hi);
	/* a loss that overflows fails the run: that is an explosion too */
	if (akk_run_train(w->run, &e)) {
		if (!strstr(e.msg, "non-finite") || !w->done)
			return cli_report(&e, EXIT_RUNTIME);
		w->exploded = 1;
		fprintf(stderr, "lr-find: stopped after step %d of %d: %s\n", w->done,
			w->steps, e.msg);
	} else if (w->exploded) {
		fprintf(stderr, "lr-find: stopped after step %d of %d: the smoothed loss %.4g is above %g times its best, %.4g\n",
			w->done, w->steps, w->smooth[w->done - 1], EXPLODE, w->best);
	}
	if (write_csv(stdout, w))
		return cli_errorf(EXIT_RUNTIME, "cannot write the CSV to stdout");
	fflush(stdout);
	if (out) {
		FILE *f = fopen(out, "w");
		if (!f || write_csv(f, w) || fclose(f))
			return cli_errorf(EXIT_RUNTIME, "cannot write '%s': %s", out, strerror(errno));
	}
	if (lr_suggest(w->lr, w->loss, w->smooth, w->done, &sg))
		fprintf(stderr, "suggested lr: %.3g (the smaller of the steepest descent before the smoothed minimum, at lr %.3g, and a tenth of the minimum's lr %.3g)\n",
			sg.lr, sg.steep, sg.minimum);
	else {
		fprintf(stderr, "no suggested lr after %d steps: %s\n", w->done, sg.why);
		if (sg.steep > 0)
			fprintf(stderr, "the steepest descent is at lr %.3g, the smoothed minimum at lr %.3g\n",
				sg.steep, sg.minimum);
	}
	return EXIT_OK;
}

int cmd_lrfind(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "min", required_argument, NULL, 'a' },
		{ "max", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "set", required_argument, NULL, 's' },
		{ "data-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **sets = calloc(argc + 1, sizeof(*sets));
	const char *out = NULL, *data_dir = NULL;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_dataset train = { 0 };
	struct akk_err e = { 0 };
	struct sweep w = { .steps = 100 };
	double lo = 1e-7, hi = 10;
	int nsets = 0, c, rc = EXIT_USAGE;

	if (!sets)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":a:b:n:o:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (parse_lr("--min", optarg, &lo))
				goto usage;
			break;
		case 'b':
			if (parse_lr("--max", optarg, &hi))
				goto usage;
			break;
		case 'n':
			if (cli_parse_int("--steps", optarg, 2, 1000000, &w.steps))
				goto usage;
			break;
		case 'o': out = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'D': data_dir = optarg; break;
		case 'h':
			rc = cli_help("lr-find");
			goto out;
		default:
			rc = cli_bad_option("lr-find", c, argv);
			goto out;
		}
	}
	if ((rc = cli_operands("lr-find", argc, argv)) != EXIT_OK)
		goto out;
	if (!(hi > lo)) {
		cli_errorf(EXIT_USAGE, "--max %g must be greater than --min %g", hi, lo);
		goto usage;
	}
	/* the sweep is a flip-flop run, whatever the config says */
	sets[nsets++] = "schedule.mode=flip-flop";
	if (akk_spec_load(&s, argv[optind], sets, nsets, &e) ||
	    cli_find_data(&s, data_dir, &e) ||
	    akk_model_plan(&m, &s, &e) ||
	    akk_spec_check_data(&s, &e) ||
	    akk_data_open(&train, &s.data, AKK_DATA_TRAIN, &e) ||
	    akk_run_check_data(&m, &train, NULL, &e)) {
		rc = cli_report(&e, EXIT_USAGE);
		goto out;
	}
	if ((rc = sweep_plan(&w, &s, &train, lo, hi)) < 0)
		rc = sweep_run(&w, &s, &m, &train, hi, out);
	goto out;
usage:
	rc = cli_usage_error("lr-find");
out:
	akk_run_free(w.run);
	free(w.lr);
	free(w.loss);
	free(w.smooth);
	akk_dataset_release(&train);
	akk_model_release(&m);
	akk_spec_release(&s);
	free(sets);
	return rc;
}
