/* cmd_bench.c - akkctl bench: the schedules' throughput, side by side.
 *
 * Runs the actor system for each requested mode on the same network and
 * data and reports, per mode: samples/s, seconds per epoch (median and
 * range over the epochs), achieved GFLOP/s (akk_model's train_flops per
 * training sample, the forward FLOPs per validation sample), CPU utilisation (user +
 * system time over wall time), peak RSS (the high-water mark reset before
 * each mode), and per gate the busy share and mean mailbox depth. Without a
 * config it uses the Akkordeon MNIST net; without data on disk it uses
 * synthetic data of the same shape, and says so. --hops measures the
 * latency of one message between two actor threads (ping-pong). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "data/batch.h"
#include "cli.h"
#include "data/idx.h"
#include "data/open.h"
#include "model/balance.h"
#include "model/model.h"
#include "model/overlap.h"
#include "model/profile.h"
#include "runtime/run.h"
#include "runtime/schedule.h"
#include "config/spec.h"
#include "data/synthetic.h"
#include "runtime/world.h"
#include "base/load.h"
#include "bench_gemm.h"
#include "tensor/gemm_xsmm.h"

static const char builtin_config[] =
	"# akkctl bench's built-in network: the Akkordeon MNIST experiment.\n"
	"name: akkordeon-bench\n"
	"seed: 42\n"
	"data:\n"
	"  train: {images: datasets/mnist/train-images-idx3-ubyte, labels: datasets/mnist/train-labels-idx1-ubyte}\n"
	"  validation: {images: datasets/mnist/t10k-images-idx3-ubyte, labels: datasets/mnist/t10k-labels-idx1-ubyte}\n"
	"network:\n"
	"  input: [784]\n"
	"  gates:\n"
	"    - layers: [{dense: 50}, relu]\n"
	"    - layers: [{dense: 20}, relu]\n"
	"    - layers: [{dense: 10}]\n"
	"optimizer: {type: sgd, lr: 0.1}\n"
	"schedule: {epochs: 3, batch_size: 64, concurrency: {train: 4, validation: 1}}\n";

#define MAX_EPOCHS 1000

struct bench_run {
	enum akk_mode mode;
	double secs[MAX_EPOCHS];
	int nsecs;
	long steps_limit;	/* --steps: interrupt after this many batches */
	long steps_done;
	struct akk_run *run;
	double t_start;
	/* totals over its runs (several when the modes take turns) */
	double wall, cpu_s, busy_s[AKK_MAX_GATES], depth_sum[AKK_MAX_GATES];
	int nruns;
	/* results */
	double cpu, median, min, max, samples_per_s, gflops;
	long samples, val_samples;
	long peak_rss_kb;
	double busy[AKK_MAX_GATES], depth[AKK_MAX_GATES];
};

static int on_epoch(void *ctx, struct akk_run *r, const struct akk_epoch_report *rep,
		    struct akk_err *e)
{
	struct bench_run *b = ctx;

	(void)r;
	(void)e;
	if (!strcmp(rep->phase, "final"))
		return 0;
	if (b->nsecs < MAX_EPOCHS)
		b->secs[b->nsecs++] = rep->seconds;
	b->samples += rep->samples;
	b->val_samples += rep->val_samples;
	return 0;
}

static void on_progress(void *ctx, const struct akk_progress *p)
{
	struct bench_run *b = ctx;

	(void)p;
	if (b->steps_limit && ++b->steps_done == b->steps_limit)
		akk_run_interrupt(b->run);
}

/* What weak kernels or a busy machine (load, the load average, above
 * cores) do to the figures below: a warning line each. */
static void bench_caveats(double load, int cores)
{
	char line[768];

	if (akk_kernels_caveat(&cli_kernels, line, sizeof(line)))
		printf("%s\n", line);
	if (akk_load_caveat(load, cores, line, sizeof(line)))
		printf("%s\n", line);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Close an output file (NULL: nothing), failing, once, on any write
 * error since it opened: fprintf's as well as fclose's. */
static void close_output(FILE *f, const char *path, struct akk_err *e)
{
	int bad, err;

	if (!f)
		return;
	errno = 0;
	bad = ferror(f);
	err = errno;
	if (fclose(f)) {
		bad = 1;
		err = errno;
	}
	if (bad && !e->msg[0])
		akk_err_set(e, "cannot write '%s': %s", path,
			    err ? strerror(err) : "write error");
}

/* Reset the process's peak RSS (Linux: clear_refs 5), or read it in KB. */
static void peak_rss_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static long peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Under mpirun: this rank, the gates' ranks (pipeline) or the number of
 * ranks sharing every batch (data parallel). */
struct bench_mpi {
	int rank, size;
	const int *gate_rank;
	int shards;
};

/* One run of b's mode for `epochs` epochs, its measurements added to
 * b's totals (finish_mode makes the figures). */
static int run_mode(struct bench_run *b, const struct akk_model *m,
		    const struct akk_dataset *train, const struct akk_dataset *val,
		    int epochs, int threads, long trace_events,
		    const struct bench_mpi *mpi, struct akk_run **rp,
		    struct akk_err *e)
{
	struct akk_run *r;
	double c0, t0, wall;
	long rss;
	struct akk_run_config cfg = {
		.mode = b->mode, .epochs = epochs, .blas_threads = threads,
		.trace_events = trace_events,
		.obs = { b, b->steps_limit ? on_progress : NULL, on_epoch },
		.rank = mpi->rank, .gate_rank = mpi->gate_rank, .shards = mpi->shards,
	};

	peak_rss_reset();
	if (!(r = *rp = akk_run_create(m, train, val, &cfg, e)))
		return -1;
	b->run = r;
	c0 = cpu_seconds();
	t0 = akk_now();
	b->t_start = t0;
	if (akk_run_train(r, e))
		return -1;
	wall = akk_now() - t0;
	b->wall += wall;
	b->cpu_s += cpu_seconds() - c0;
	rss = peak_rss_kb();
	b->peak_rss_kb = rss > b->peak_rss_kb ? rss : b->peak_rss_kb;
	struct akk_run_stats st = akk_run_stats(r);
	if (b->steps_limit) {
		/* one repeat: the steps over the time they took */
		b->samples = b->steps_done * m->spec->sched.batch_size;
		b->nsecs = 1;
		b->secs[0] = wall * st.per_epoch / (double)b->steps_done;
	}
	if (mpi->size > 1) {
		/* every rank: what its link moved, per training step */
		long steps = b->steps_limit ? b->steps_done : (long)epochs * st.per_epoch;
		const struct akk_link_stats *ln = &st.link;
		fprintf(stderr, "rank %d %s: %.0f bytes and %.1f messages sent per step, link busy %.1f us per step",
			mpi->rank, akk_mode_name(b->mode),
			steps ? (double)ln->bytes / steps : 0, steps ? (double)ln->messages / steps : 0,
			steps ? 1e6 * ln->busy / steps : 0);
		if (ln->reductions)
			fprintf(stderr, ", reduced %.0f bytes per step, reductions %.1f us each (%ld)",
				steps ? (double)ln->reduce_bytes / steps : 0,
				1e6 * ln->reduce_wait / ln->reductions, ln->reductions);
		fprintf(stderr, "\n");
	}
	for (int g = 0; g < m->ngates && g < AKK_MAX_GATES; g++) {
		b->busy_s[g] += st.busy[g];
		b->depth_sum[g] += st.depth[g];
	}
	b->nruns++;
	return 0;
}

/* b's figures from its totals: the median epoch and its range, the
 * throughput, the CPU and each gate's busy share of the wall time. */
static void finish_mode(struct bench_run *b, const struct akk_model *m,
			const struct akk_dataset *train)
{
	qsort(b->secs, b->nsecs, sizeof(double), cmp_double);
	b->median = b->nsecs ? (b->nsecs % 2 ? b->secs[b->nsecs / 2] :
			(b->secs[b->nsecs / 2 - 1] + b->secs[b->nsecs / 2]) / 2) : 0;
	b->min = b->nsecs ? b->secs[0] : 0;
	b->max = b->nsecs ? b->secs[b->nsecs - 1] : 0;
	b->samples_per_s = b->median > 0 ? train->n / b->median : 0;
	b->gflops = b->wall > 0 ? (b->samples * m->train_flops + b->val_samples * m->flops) /
				  b->wall / 1e9 : 0;
	b->cpu = b->wall > 0 ? b->cpu_s / b->wall : 0;
	for (int g = 0; g < m->ngates && g < AKK_MAX_GATES; g++) {
		b->busy[g] = b->wall > 0 ? b->busy_s[g] / b->wall : 0;
		b->depth[g] = b->nruns ? b->depth_sum[g] / b->nruns : 0;
	}
}

static const char *const trace_names[] = { "forward", "backward", "optimizer",
					   "validate", "loss" };

static void trace_actor(FILE *f, int pid, int tid, const struct akk_trace *t,
			double t0, int *first)
{
	double last = -1;

	for (long i = 0; i < t->n; i++) {
		const struct akk_trace_event *ev = &t->ev[i];
		double s = (ev->t0 - t0) * 1e6, d = (ev->t1 - ev->t0) * 1e6;
		if (last >= 0 && s > last)
			fprintf(f, "%s\n{\"name\":\"waiting\",\"cat\":\"wait\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d}",
				*first ? "" : ",", last, s - last, pid, tid), *first = 0;
		fprintf(f, "%s\n{\"name\":\"%s\",\"cat\":\"work\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"batch\":%ld,\"version\":%ld}}",
			*first ? "" : ",", trace_names[ev->kind], s, d, pid, tid, ev->id,
			ev->version);
		*first = 0;
		last = s + d;
	}
}

static void trace_write(FILE *f, const struct bench_run *b, const struct akk_run *r,
			int pid, int *first)
{
	int G = akk_run_stats(r).ngates;

	fprintf(f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\"}}",
		*first ? "" : ",", pid, akk_mode_name(b->mode));
	*first = 0;
	fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"sentinel\"}}", pid);
	for (int g = 0; g < G; g++)
		fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"gate %d\"}}",
			pid, g + 1, g + 1);
	for (int a = 0; a <= G; a++)	/* the sentinel, then the gates */
		trace_actor(f, pid, a, akk_run_trace(r, a), b->t_start, first);
}

static int cmp_abs(const void *a, const void *b)
{
	double x = fabs(*(const double *)a), y = fabs(*(const double *)b);

	return x < y ? -1 : x > y;
}

/* Gates that fork and join, traced: the share of the time some gate
 * computed a forward during which two or more did (branches at once;
 * one batch's forwards never overlap in a chain under flip-flop). The
 * ends of every forward, starts positive and ends negative, swept in
 * time order. */
static void print_overlap(const struct akk_run *r, enum akk_mode mode)
{
	int G = akk_run_stats(r).ngates, depth = 0;
	long n = 0;
	double *ends, one = 0, two = 0, last = 0;

	for (int a = 1; a <= G; a++)
		n += akk_run_trace(r, a)->n;
	if (!n || !(ends = malloc(2 * (size_t)n * sizeof(*ends))))
		return;
	n = 0;
	for (int a = 1; a <= G; a++) {
		const struct akk_trace *t = akk_run_trace(r, a);
		for (long i = 0; i < t->n; i++)
			if (t->ev[i].kind == AKK_TRACE_FORWARD && t->ev[i].t1 > t->ev[i].t0) {
				/* monotonic times: positive, so the sign is free */
				ends[n++] = t->ev[i].t0;
				ends[n++] = -t->ev[i].t1;
			}
	}
	qsort(ends, (size_t)n, sizeof(*ends), cmp_abs);
	for (long i = 0; i < n; i++) {
		double t = fabs(ends[i]);
		if (depth >= 1)
			one += t - last;
		if (depth >= 2)
			two += t - last;
		depth += ends[i] > 0 ? 1 : -1;
		last = t;
	}
	free(ends);
	printf("%-10s two or more gates computing forwards at once %.1f%% of the %.2f s some gate did\n",
	       akk_mode_name(mode), one > 0 ? 100 * two / one : 0, one);
}

/* --hops: one message between two actors on the workers, measured as
 * half the round trip of a ping-pong through the transport. Same worker:
 * worker 0 sends, then waits helping, so it runs the receiver itself.
 * Cross-worker: the sender is no worker, so the message wakes a sleeping
 * worker, and the reply wakes the sender (a condition variable each). */
struct hop_actor {
	struct akk_actor task;	/* first: the task is the actor */
	struct akk_transport *t;
};

static int hop_pong(struct akk_actor *task)
{
	struct hop_actor *h = (struct hop_actor *)task;
	struct akk_msg m;

	if (akk_mailbox_tryrecv(&h->t->boxes[1], &m) == 0)
		akk_send(h->t, 0, &m);
	return 0;
}

struct hop_host {
	struct akk_workers *w;
	pthread_mutex_t mu;
	int go, quit;
	pthread_cond_t cv;
};

static int hop_quit(void *arg)
{
	struct hop_host *h = arg;
	int q;

	pthread_mutex_lock(&h->mu);
	q = h->quit;
	pthread_mutex_unlock(&h->mu);
	return q;
}

/* Cross-worker: a thread that is worker 0 and only helps. */
static void *hop_host_main(void *arg)
{
	struct hop_host *h = arg;
	struct akk_err e = { 0 };
	int ok = !akk_workers_start(h->w, &e);

	pthread_mutex_lock(&h->mu);
	h->go = ok ? 1 : -1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (ok) {
		akk_workers_help(h->w, hop_quit, h);
		akk_workers_stop(h->w);
	}
	return NULL;
}

/* n round trips; the sorted half round trips in lat. -1 on failure. */
static int hop_run(long n, int cross, double *lat)
{
	struct akk_workers w;
	struct akk_transport t;
	struct hop_actor pong;
	struct hop_host host = { &w, PTHREAD_MUTEX_INITIALIZER, 0, 0,
				 PTHREAD_COND_INITIALIZER };
	struct akk_msg m = { .kind = AKK_MSG_FORWARD };
	struct akk_err e = { 0 };
	pthread_t th;
	int rc = -1;

	if (akk_workers_init(&w, cross ? 2 : 1, &e))
		return -1;
	if (akk_transport_init(&t, 2, 4)) {
		akk_workers_release(&w);
		return -1;
	}
	pong.t = &t;
	akk_actor_init(&pong.task, &w, hop_pong);
	akk_mailbox_attach(&t.boxes[1], &pong.task);
	akk_mailbox_help(&t.boxes[0], &w);
	if (cross) {
		if (pthread_create(&th, NULL, hop_host_main, &host))
			goto out;
		pthread_mutex_lock(&host.mu);
		while (!host.go)
			pthread_cond_wait(&host.cv, &host.mu);
		pthread_mutex_unlock(&host.mu);
		if (host.go < 0) {
			pthread_join(th, NULL);
			goto out;
		}
	} else if (akk_workers_start(&w, &e)) {
		goto out;
	}
	rc = 0;
	for (long i = 0; i < n && !rc; i++) {
		double t0 = akk_now();
		m.id = i;
		rc = akk_send(&t, 1, &m) || akk_recv(&t, 0, &m) ? -1 : 0;
		lat[i] = (akk_now() - t0) / 2;
	}
	if (cross) {
		pthread_mutex_lock(&host.mu);
		host.quit = 1;
		pthread_mutex_unlock(&host.mu);
		akk_workers_poke(&w);
		pthread_join(th, NULL);
	} else {
		akk_workers_stop(&w);
	}
	qsort(lat, n, sizeof(double), cmp_double);
out:
	akk_transport_release(&t);
	akk_workers_release(&w);
	return rc;
}

static int bench_hops(long n)
{
	double *lat = malloc(n * sizeof(double));
	static const char *const what[] = {
		"same worker (the sender runs the receiver: no wake-up)",
		"cross-worker (the receiver is woken on another thread)",
	};

	if (!lat)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	printf("actor hop latency (ping-pong through the local transport):\n");
	for (int cross = 0; cross < 2; cross++) {
		long k = cross ? n / 10 : n;	/* wake-ups are slow: fewer */
		if (hop_run(k, cross, lat)) {
			free(lat);
			return cli_errorf(EXIT_RUNTIME, "the hop benchmark failed");
		}
		printf("  %s, %ld round trips\n    median %.2f us   p99 %.2f us   min %.2f us   max %.2f us\n",
		       what[cross], k, lat[k / 2] * 1e6, lat[(long)(k * 0.99)] * 1e6,
		       lat[0] * 1e6, lat[k - 1] * 1e6);
	}
	free(lat);
	return EXIT_OK;
}

/* --layers: each layer's time per training batch on its real shapes, as
 * `caffe time` prints it; GEMM time is attributed from FLOPs (profile.h). */
static int bench_layers(const struct akk_model *m, int B, struct akk_err *e)
{
	int n = akk_model_nlayers(m), k = 0;
	struct akk_layer_cost *c = calloc((size_t)n, sizeof(*c));
	double step = 0, gemm = 0;
	char shape[64];

	if (!c)
		return akk_err_set(e, "out of memory");
	if (akk_profile_model(m, B, 10, c, e)) {
		free(c);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		step += c[i].fwd + c[i].bwd + c[i].opt;
		gemm += c[i].gemm;
	}
	printf("per layer, one training batch of %d (best of 10, the calling thread alone):\n", B);
	printf("%-5s %-6s %-10s %-14s %9s %9s %9s %9s %7s\n", "gate", "layer",
	       "kind", "output", "fwd ms", "bwd ms", "optim ms", "GFLOP/s", "share");
	for (int g = 0; g < m->ngates; g++)
		for (int i = 0; i < m->gates[g].nlayers; i++, k++) {
			const struct akk_layer *l = &m->gates[g].layers[i];
			double t = c[k].fwd + c[k].bwd + c[k].opt;
			akk_shape_format(l->out, shape, sizeof(shape));
			printf("%-5d %-6d %-10s %-14s %9.3f %9.3f %9.3f %9.2f %6.1f%%\n",
			       g + 1, i + 1, l->ops->name, shape, 1e3 * c[k].fwd,
			       1e3 * c[k].bwd, 1e3 * c[k].opt,
			       c[k].fwd + c[k].bwd > 0 ?
			       c[k].flops / (c[k].fwd + c[k].bwd) / 1e9 : 0.0,
			       step > 0 ? 100 * t / step : 0.0);
		}
	printf("step %.3f ms; GEMM %.1f%%, not GEMM %.1f%% of it (GEMM time attributed: each dense, conv2d,\n"
	       "conv1d or conv_transpose2d layer's FLOPs at the rate akk_sgemm reaches on its forward product shape,\n"
	       "an lstm's, gru's or rnn's at the rate of one step's recurrent product)\n",
	       1e3 * step, step > 0 ? 100 * gemm / step : 0.0,
	       step > 0 ? 100 * (1 - gemm / step) : 0.0);
	free(c);
	return 0;
}

static void print_mode(const struct bench_run *b, const struct akk_model *m,
		       const double *pred)
{
	printf("%-10s %10.0f %9.3f (%.3f-%.3f) %8.2f %6.0f%% %7.1f MB\n",
	       akk_mode_name(b->mode), b->samples_per_s, b->median, b->min, b->max,
	       b->gflops, 100 * b->cpu, b->peak_rss_kb / 1024.0);
	printf("%-10s", "");
	for (int g = 0; g < m->ngates && g < AKK_MAX_GATES; g++)
		printf("  gate %d: busy %2.0f%%, mailbox %.2f", g + 1,
		       100 * b->busy[g], b->depth[g]);
	printf("\n");
	if (pred) {
		/* busy shares: each gate's part of the gates' busy time */
		double all = 0;
		for (int g = 0; g < m->ngates; g++)
			all += b->busy[g];
		printf("%-10s", "");
		for (int g = 0; g < m->ngates; g++)
			printf("  gate %d: %4.1f%% of busy time (predicted %4.1f%%)", g + 1,
			       all > 0 ? 100 * b->busy[g] / all : 0.0, 100 * pred[g]);
		printf("\n");
	}
}

static void csv_mode(FILE *f, const struct bench_run *b, const struct akk_model *m)
{
	fprintf(f, "%s,all,%.1f,%.4f,%.4f,%.4f,%.3f,%.3f,%.1f,,\n",
		akk_mode_name(b->mode), b->samples_per_s, b->median, b->min,
		b->max, b->gflops, b->cpu, b->peak_rss_kb / 1024.0);
	for (int g = 0; g < m->ngates && g < AKK_MAX_GATES; g++)
		fprintf(f, "%s,gate %d,,,,,,,,%.4f,%.3f\n", akk_mode_name(b->mode),
			g + 1, b->busy[g], b->depth[g]);
}

/* The config's data through its data.format, when its IDX
 * images exist or it is of another format; else synthetic. */
static int load_or_synthesize(struct akk_dataset *d, const struct akk_spec *s,
			      enum akk_data_part part, size_t n,
			      const struct akk_model *m, int *synthetic,
			      struct akk_err *e)
{
	const char *images = part == AKK_DATA_TRAIN ? s->data.train.images
						    : s->data.val.images;

	if (!*synthetic && akk_data_has(&s->data, part) &&
	    (!images || !access(images, F_OK)))
		return akk_data_open(d, &s->data, part, e);
	/* with heads, labels for the first classifier head */
	int fl = akk_heads_first(m->spec, 1);

	*synthetic = 1;
	return akk_dataset_synthetic(d, n, akk_shape_size(m->spec->input),
				     fl >= 0 ? akk_head_size(m->spec, fl, m->classes) : m->classes,
				     m->spec->seed + n, e);
}

/* One bench: its options, then what it builds and measures. */
struct bench {
	const char *config, *csv, *trace, *mode;
	const char **sets;
	char conc_set[64];
	int epochs, steps, threads, hops, nsets, noval, layers, profile;
	int synthetic, nknown, nmodes;
	double *pred;	/* gates: {auto: N}: each gate's predicted share */
	/* the gates alone (bound_applies), seconds an epoch, per turn */
	double *bound_seq, *bound_conc;
	int nbound;
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val;
	struct bench_run *runs;	/* one per schedule, nknown of them */
	struct akk_run **r;	/* one per run */
	struct akk_err e;
	FILE *cf, *tf;
	struct akk_world world;
	struct bench_mpi mpi;
	int *gate_rank, dp, root;
	int rc;
};

/* The options: -1 to go on, else the exit status (--help, --gemm, bad
 * usage). */
static int bench_parse(struct bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "config", required_argument, NULL, 'c' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "steps", required_argument, NULL, 'n' },
		{ "concurrency", required_argument, NULL, 'k' },
		{ "threads", required_argument, NULL, 't' },
		{ "csv", required_argument, NULL, 'v' },
		{ "trace", required_argument, NULL, 'r' },
		{ "set", required_argument, NULL, 's' },
		{ "hops", no_argument, NULL, 'H' },
		{ "layers", no_argument, NULL, 'L' },
		{ "gemm", no_argument, NULL, 'G' },
		{ "no-profile", no_argument, NULL, 'P' },
		{ "no-validation", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, epochs_given = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":m:c:e:n:k:t:v:r:s:HVLPGh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': b->mode = optarg; break;
		case 'c': b->config = optarg; break;
		case 'e':
			if (cli_parse_int("--epochs", optarg, 1, MAX_EPOCHS, &b->epochs))
				return cli_usage_error("bench");
			epochs_given = 1;
			break;
		case 'n':
			if (cli_parse_int("--steps", optarg, 1, 1 << 30, &b->steps))
				return cli_usage_error("bench");
			break;
		case 'k':
			snprintf(b->conc_set, sizeof(b->conc_set),
				 "schedule.concurrency.train=%s", optarg);
			b->sets[b->nsets++] = b->conc_set;
			break;
		case 't':
			if (cli_parse_int("--threads", optarg, 1, 256, &b->threads))
				return cli_usage_error("bench");
			break;
		case 'v': b->csv = optarg; break;
		case 'r': b->trace = optarg; break;
		case 's': b->sets[b->nsets++] = optarg; break;
		case 'H': b->hops = 1; break;
		case 'L': b->layers = 1; break;
		case 'G': return bench_gemm(7);
		case 'P': b->profile = 0; break;
		case 'V': b->noval = 1; break;
		case 'h': return cli_help("bench");
		default: return cli_bad_option("bench", c, argv);
		}
	}
	if (cli_operands("bench", argc, argv))
		return EXIT_USAGE;
	if (epochs_given && b->steps) {	/* one or the other: --steps ran one epoch */
		cli_errorf(EXIT_USAGE, "--epochs and --steps: give one (--steps N times N "
			   "training batches a mode instead of epochs)");
		return cli_usage_error("bench");
	}
	if (b->hops)
		return bench_hops(200000);
	if (strcmp(b->mode, "both") && akk_mode_parse(b->mode, NULL)) {
		char modes[128];
		cli_errorf(EXIT_USAGE, "--mode must be %s or both (every one), got '%s'",
			   akk_mode_list(modes, sizeof(modes)), b->mode);
		return cli_usage_error("bench");
	}
	return -1;
}

/* The spec (the built-in net without --config), split when it says
 * gates: {auto: N} (with each gate's predicted share), and its model. */
static int bench_plan(struct bench *b)
{
	struct akk_spec *s = &b->s;

	if (b->config ? akk_spec_load(s, b->config, b->sets, b->nsets, &b->e) :
			akk_spec_parse(s, builtin_config, strlen(builtin_config),
				       "(built-in)", ".", b->sets, b->nsets, &b->e))
		return -1;
	if (s->auto_gates) {
		int n = akk_balance_max_layers(s), at = 0;
		double *cost = calloc((size_t)n, sizeof(*cost)), total = 0;
		if (!cost || !(b->pred = calloc((size_t)s->auto_gates, sizeof(*b->pred)))) {
			free(cost);
			return akk_err_set(&b->e, "out of memory");
		}
		int cores = akk_cores();
		/* every rank must split alike, as train's (cli_auto_split) */
		if (getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1)
			b->profile = 0, cores = AKK_MAX_GATES;
		if (akk_balance_cores(s, b->profile, cores, cost, &b->e)) {
			free(cost);
			return -1;
		}
		n = akk_spec_nlayers(s);
		for (int i = 0; i < n; i++)
			total += cost[i];
		for (int g = 0; g < s->ngates; g++)
			for (int i = 0; i < s->gates[g].nlayers; i++)
				b->pred[g] += total > 0 ? cost[at++] / total : 0;
		free(cost);
	}
	return akk_model_plan(&b->m, s, &b->e);
}

/* Under mpirun: place the gates, or share every batch; then the data:
 * rank 0's, or every rank's with data parallelism. */
static int bench_load(struct bench *b)
{
	struct akk_spec *s = &b->s;
	long counts[2];

	if (cli_start_world(s, &b->world, &b->gate_rank, &b->e))
		return -1;
	b->dp = s->sched.data_parallel && b->world.size > 1;
	b->root = b->world.rank == 0;
	b->mpi = (struct bench_mpi){ b->world.rank, b->world.size, b->gate_rank,
				     b->dp ? b->world.size : 1 };
	if ((b->root || b->dp) &&
	    (load_or_synthesize(&b->train, s, AKK_DATA_TRAIN, 60000, &b->m,
				&b->synthetic, &b->e) ||
	     (b->root && !b->noval && (akk_data_has(&s->data, AKK_DATA_VAL) || b->synthetic) &&
	      load_or_synthesize(&b->val, s, AKK_DATA_VAL, 10000, &b->m, &b->synthetic, &b->e))))
		return -1;
	akk_dataset_huge_pages(&b->train);	/* read at random places, as train does */
	counts[0] = (long)b->train.n;
	counts[1] = (long)b->val.n;
	if (akk_world_bcast(&b->world, counts, 2))
		return -1;
	if (b->dp && cli_check_split(s, &b->world, (size_t)counts[0], &b->e))
		return -1;	/* EXIT_USAGE, the same on every rank */
	if (!b->root) {
		b->train.n = (size_t)counts[0];
		if (!b->dp)
			b->val.n = (size_t)counts[1];
	}
	return 0;
}

/* The CSV and trace files (rank 0's), and the lines that say what runs. */
static int bench_open(struct bench *b)
{
	const struct akk_spec *s = &b->s;
	char shape[64], gemm_lib[768];

	if (!b->root)
		b->csv = b->trace = NULL;
	if (!b->root && !freopen("/dev/null", "w", stdout))
		return akk_err_set(&b->e, "cannot silence rank %d", b->world.rank);
	if (b->csv && !(b->cf = fopen(b->csv, "w")))
		return akk_err_set(&b->e, "cannot open '%s': %s", b->csv, strerror(errno));
	if (b->trace && !(b->tf = fopen(b->trace, "w")))
		return akk_err_set(&b->e, "cannot open '%s': %s", b->trace, strerror(errno));
	akk_shape_format(s->input, shape, sizeof(shape));
	printf("akkctl bench: %s%s: input %s, %d gate%s, %zu parameters, %.0f FLOPs/sample forward, batch %d\n",
	       s->name, b->config ? "" : " (built-in Akkordeon net)", shape, b->m.ngates,
	       b->m.ngates == 1 ? "" : "s",
	       b->m.nparams, b->m.flops, s->sched.batch_size);
	if (b->pred) {
		printf("split of gates: {auto: %d} (by %s): network.gates.split=[",
		       s->auto_gates, b->profile ? "measured time" : "FLOPs");
		for (int g = 0; g < s->auto_nsplit; g++)
			printf("%s%d", g ? ", " : "", s->auto_split[g]);
		printf("]");
		for (int g = 0; g < s->auto_nunfold; g++)
			printf("%s%d", g ? ", " : " network.gates.unfold=[", s->auto_unfold[g]);
		printf("%s\n", s->auto_nunfold ? "]" : "");
	}
	if (b->synthetic)
		printf("no data at '%s': synthetic data of the same shape (%zu training, %zu validation samples)\n",
		       s->data.train.images ? s->data.train.images : "(none)", b->train.n,
		       b->val.n);
	else
		printf("data: %zu training, %zu validation samples%s\n", b->train.n, b->val.n,
		       b->train.x_mapped ? " (the training set in huge pages)" : "");
	akk_gemm_library(gemm_lib, sizeof(gemm_lib), &cli_kernels);
	printf("matrix products: %s\n", gemm_lib);
	printf("%s; %d cores; wheels: %d training, %d validation batches in flight%s\n",
	       b->steps ? "steps per mode given by --steps" : "epochs are the repeats",
	       akk_cores(), s->sched.conc_train, s->sched.conc_val,
	       s->sched.stashing ? ", weight stashing" : "");
	bench_caveats(akk_load_now(), akk_cores());
	printf("\n");
	return 0;
}

/* Whether several modes take turns epoch by epoch (one run of one epoch
 * each, in turn, `epochs` times), so that a machine whose speed drifts
 * over seconds (a shared VM) slows them alike: every comparison of modes
 * by epochs, unless a trace, --steps or MPI ranks need whole runs. */
static int take_turns(const struct bench *b)
{
	return b->nmodes > 1 && b->epochs > 1 && !b->steps && !b->trace &&
	       b->mpi.size <= 1;
}

/* After turn t: when it ran (seconds since the first began) and each
 * mode's epoch, with wheels / flip-flop when both ran. */
static void print_turn(const struct bench *b, int t, double from, double to)
{
	double ff = 0, wh = 0;

	printf("turn %d (%.3f-%.3f s):", t + 1, from, to);
	for (int i = 0; i < b->nmodes; i++) {
		const struct bench_run *m = &b->runs[i];
		double sec = m->nsecs > t ? m->secs[t] : 0;

		printf("%s %s %.3f s", i ? "," : "", akk_mode_name(m->mode), sec);
		ff = m->mode == AKK_MODE_FLIPFLOP ? sec : ff;
		wh = m->mode == AKK_MODE_WHEELS ? sec : wh;
	}
	if (ff > 0 && wh > 0)
		printf("; wheels / flip-flop %.2fx", ff / wh);
	if (b->nbound > t && b->bound_conc[t] > 0)
		printf("; the gates alone at once %.2fx", b->bound_seq[t] / b->bound_conc[t]);
	printf("\n");
}

/* Whether the turns measure the gates alone (model/overlap.h): wheels
 * against flip-flop, one compute thread per gate, a core per gate, one
 * process. Their ratio is then the most wheels / flip-flop can reach on
 * this machine at that moment, apart from flip-flop's own serial work. */
static int bound_applies(const struct bench *b)
{
	int threads = b->threads ? b->threads : b->s.sched.threads, ff = 0, wh = 0;

	for (int i = 0; i < b->nmodes; i++) {
		ff |= b->runs[i].mode == AKK_MODE_FLIPFLOP;
		wh |= b->runs[i].mode == AKK_MODE_WHEELS;
	}
	return ff && wh && threads == 1 && b->m.ngates >= 2 &&
	       b->m.ngates <= akk_cores() && b->mpi.size <= 1;
}

/* BOUND_BATCHES batches of every gate, in turn and at once, as seconds
 * an epoch (per_epoch batches), for turn t. */
#define BOUND_BATCHES 300
static int measure_bound(struct bench *b, int t, long per_epoch)
{
	struct akk_overlap_bound o;
	int n = per_epoch < BOUND_BATCHES ? (int)per_epoch : BOUND_BATCHES;

	if (akk_overlap_bound(&b->m, b->s.sched.batch_size, n, &o, &b->e))
		return -1;
	b->bound_seq[t] = o.sequential * (double)per_epoch / n;
	b->bound_conc[t] = o.concurrent * (double)per_epoch / n;
	b->nbound = t + 1;
	return 0;
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* flip-flop's median epoch over wheels', after finish_mode; 0 unless
 * both ran. */
static double ff_over_wheels(const struct bench *b)
{
	double ff = 0, wh = 0;

	for (int i = 0; i < b->nmodes; i++) {
		ff = b->runs[i].mode == AKK_MODE_FLIPFLOP ? b->runs[i].median : ff;
		wh = b->runs[i].mode == AKK_MODE_WHEELS ? b->runs[i].median : wh;
	}
	return ff > 0 && wh > 0 ? ff / wh : 0;
}

/* After the table: the bound's medians beside wheels / flip-flop, its CSV
 * rows; or why it was not measured. */
static void report_bound(struct bench *b, double ratio)
{
	/* per kind (0 in turn, 1 at once): median, shortest, longest */
	double fig[2][3], bound;
	int n = b->nbound;

	if (!n) {
		if (ratio > 0 && b->m.ngates >= 2 && b->mpi.size <= 1)
			printf("the gates alone at once: not measured (it needs one compute thread "
			       "per gate, schedule.threads: 1, and a core per gate)\n");
		return;
	}
	for (int k = 0; k < 2; k++) {
		double *v = k ? b->bound_conc : b->bound_seq;
		fig[k][0] = median_of(v, n);	/* sorts v */
		fig[k][1] = v[0];
		fig[k][2] = v[n - 1];
		if (b->cf)
			fprintf(b->cf, "%s,all,,%.4f,%.4f,%.4f,,,,,\n",
				k ? "gates-at-once" : "gates-in-turn", fig[k][0], fig[k][1], fig[k][2]);
	}
	bound = fig[0][0] / fig[1][0];
	printf("the gates alone (%d batches each a turn, no messages, loss or data): in turn %.3f s/epoch "
	       "(%.3f-%.3f), at once %.3f (%.3f-%.3f): overlap can give at most %.2fx now",
	       BOUND_BATCHES, fig[0][0], fig[0][1], fig[0][2], fig[1][0], fig[1][1], fig[1][2],
	       bound);
	if (ratio > 0)
		printf("; wheels / flip-flop reached %.0f%% of it", 100 * ratio / bound);
	printf("\n");
}

/* Every mode asked for: its runs, its row, its CSV rows, its trace. */
static int bench_modes(struct bench *b)
{
	const struct akk_spec *s = &b->s;
	long per_epoch = akk_batches_per_epoch(b->train.n, s->sched.batch_size);
	int turns, epochs;
	double t0 = akk_now(), from;

	for (int i = 0; i < b->nknown; i++)
		if (!strcmp(b->mode, "both") || !strcmp(b->mode, akk_mode_name((enum akk_mode)i)))
			b->runs[b->nmodes++].mode = (enum akk_mode)i;
	turns = take_turns(b) ? b->epochs : 1;
	epochs = b->steps ? MAX_EPOCHS : turns > 1 ? 1 : b->epochs;
	if (turns > 1)
		printf("the modes take turns: one epoch of each, %d times\n", turns);
	if (bound_applies(b)) {
		b->bound_seq = calloc((size_t)turns, sizeof(double));
		b->bound_conc = calloc((size_t)turns, sizeof(double));
		if (!b->bound_seq || !b->bound_conc)
			return akk_err_set(&b->e, "out of memory");
	}
	if (b->cf)
		fprintf(b->cf, "mode,scope,samples_per_second,seconds_per_epoch_median,seconds_min,seconds_max,gflops,cpu_utilisation,peak_rss_mb,busy_share,mean_mailbox_depth\n");
	for (int t = 0; t < turns; t++) {
		from = akk_now() - t0;
		for (int i = 0; i < b->nmodes; i++) {
			long per = per_epoch + (b->val.n ? akk_batches_per_epoch(b->val.n,
										 s->sched.batch_size) : 0);
			/* events per actor: a few per batch, over the epochs run
			 * (with --steps, the epochs those steps span) plus
			 * wheels' final pass */
			long spans = b->steps ? b->steps / per_epoch + 2 : b->epochs + 1;
			long cap = b->trace ? per * spans * 4 + 64 : 0;
			b->runs[i].steps_limit = b->steps;
			akk_run_free(b->r[i]);	/* the turn before's */
			b->r[i] = NULL;
			if (run_mode(&b->runs[i], &b->m, &b->train, b->val.n ? &b->val : NULL,
				     epochs, b->threads ? b->threads : s->sched.threads, cap,
				     &b->mpi, &b->r[i], &b->e))
				return -1;
		}
		if (b->bound_seq && measure_bound(b, t, per_epoch))
			return -1;
		if (turns > 1)
			print_turn(b, t, from, akk_now() - t0);
	}
	printf("%-10s %10s %9s %13s %8s %7s %10s\n", "mode", "samples/s", "s/epoch",
	       "(min-max)", "GFLOP/s", "CPU", "peak RSS");
	for (int i = 0; i < b->nmodes; i++) {
		finish_mode(&b->runs[i], &b->m, &b->train);
		print_mode(&b->runs[i], &b->m, b->pred);
		if (b->cf)
			csv_mode(b->cf, &b->runs[i], &b->m);
	}
	if (b->nmodes == 2 && b->runs[0].median > 0)
		printf("\nwheels / flip-flop throughput: %.2fx\n",
		       b->runs[0].median / b->runs[1].median);
	report_bound(b, ff_over_wheels(b));
	if (b->tf) {
		int first = 1;
		fprintf(b->tf, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
		for (int i = 0; i < b->nmodes; i++)
			trace_write(b->tf, &b->runs[i], b->r[i], i + 1, &first);
		fprintf(b->tf, "\n]}\n");
		if (!akk_model_is_chain(&b->m)) {
			printf("\n");
			for (int i = 0; i < b->nmodes; i++)
				print_overlap(b->r[i], b->runs[i].mode);
		}
	}
	/* both closed whatever the first says; the first failure is reported */
	close_output(b->cf, b->csv, &b->e);
	close_output(b->tf, b->trace, &b->e);
	b->cf = b->tf = NULL;
	return b->e.msg[0] ? -1 : 0;
}

static void bench_release(struct bench *b)
{
	if (b->cf)
		fclose(b->cf);
	if (b->tf)
		fclose(b->tf);
	for (int i = 0; i < b->nmodes; i++)
		akk_run_free(b->r[i]);
	free(b->r);
	free(b->runs);
	free(b->sets);
	akk_dataset_release(&b->train);
	akk_dataset_release(&b->val);
	akk_model_release(&b->m);
	akk_spec_release(&b->s);
	free(b->gate_rank);
	free(b->pred);
	free(b->bound_seq);
	free(b->bound_conc);
	if (akk_world_finalize(&b->world, &b->e) && b->rc == EXIT_OK)
		b->rc = cli_report(&b->e, EXIT_RUNTIME);
}

int cmd_bench(int argc, char **argv)
{
	struct bench b = {
		.mode = "both", .epochs = 3, .profile = 1, .root = 1, .rc = EXIT_USAGE,
		.world = { .size = 1, .local_size = 1 }, .mpi = { 0, 1, NULL, 1 },
	};
	int rc;

	while (akk_mode_name((enum akk_mode)b.nknown))
		b.nknown++;	/* the schedules there are, one run each at most */
	b.sets = calloc(argc + 2, sizeof(*b.sets));
	b.runs = calloc(b.nknown, sizeof(*b.runs));
	b.r = calloc(b.nknown, sizeof(*b.r));
	if (!b.sets || !b.runs || !b.r)
		b.rc = cli_errorf(EXIT_RUNTIME, "out of memory");
	else if ((rc = bench_parse(&b, argc, argv)) >= 0)
		b.rc = rc;
	else if (bench_plan(&b))
		cli_report(&b.e, b.rc);
	else if (b.layers) {
		if ((b.rc = bench_layers(&b.m, b.s.sched.batch_size, &b.e) ? EXIT_RUNTIME : EXIT_OK))
			cli_report(&b.e, b.rc);
	} else if (bench_load(&b) ||
		   ((b.rc = EXIT_RUNTIME), bench_open(&b)) || bench_modes(&b)) {
		cli_report(&b.e, b.rc);
		if (b.world.size > 1 && b.rc == EXIT_RUNTIME)
			cli_world_abort(&b.world, b.rc);	/* the others would wait */
	} else {
		b.rc = EXIT_OK;
	}
	bench_release(&b);
	return b.rc;
}
