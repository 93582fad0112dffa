/* test_alloc.c - the training loop allocates nothing in steady state.
 *
 * The program replaces malloc and its relatives with forwarders to glibc's
 * __libc_* entry points that count calls made by any thread while counting
 * is on. The sentinel's epoch_end observer turns counting on at the end of
 * epoch 1, when warm-up is over (every buffer, mailbox, thread and stdio
 * buffer exists), and off at the end of epoch N-1, so the counted window is
 * whole epochs of training and validation; the count must be zero. The
 * first few counted calls keep a backtrace, printed when the test fails
 * (resolve the +0x offsets with addr2line -e build/tests/test_alloc).
 *
 * The runs use the schedules' automatic compute threads (flip-flop: every
 * core, through akkctl's own GEMM pool; wheels: one per gate), so the
 * defaults users get are what is asserted; AKK_ALLOC_BLAS_THREADS=N forces
 * N. (OpenBLAS's own threaded driver mallocs a job array on every product,
 * which is why akkctl keeps OpenBLAS on one thread: the wide net's layers
 * are large enough to be split, so the pool is exercised.)
 *
 * OpenBLAS's own kernels are checked too, whatever the CPU picks: a grid
 * of products through akk_sgemm covering every layer kind's shapes, run in
 * this process and again in a child per kernel choice (OPENBLAS_CORETYPE
 * Haswell, SkylakeX, Cooperlake) that the CPU can execute.
 *
 * ASan and TSan replace malloc themselves, so under them the interposer is
 * left out and the counting tests are skipped: plain `make test` asserts. */
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "model/model.h"
#include "tensor/gemm_xsmm.h"
#include "tensor/pool.h"
#include "runtime/run_internal.h"
#include "config/spec.h"
#include "tensor/tensor.h"

#include <cblas.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

#define SIDE 8
#define CLASSES 4
#define EPOCHS 5		/* counted: epochs 2 .. EPOCHS-1 */
#define MAX_SITES 4
#define MAX_FRAMES 32

/* A counted call: which function, the size asked for, and where from. */
struct site {
	const char *fn;
	size_t size;
	int nframes;
	void *frames[MAX_FRAMES];
};

static atomic_int counting;
static atomic_long nallocs;
static atomic_int nsites;	/* sites claimed; may exceed MAX_SITES */
static struct site sites[MAX_SITES];

#ifndef SANITIZED

/* glibc's own allocator, exported under these names since glibc 2.0: no
 * dlsym, so the forwarders work before main and never allocate. */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);
extern void __libc_free(void *p);

static _Thread_local int in_note;	/* backtrace() must not count itself */

static void note(const char *fn, size_t size)
{
	int i;

	if (!atomic_load_explicit(&counting, memory_order_relaxed) || in_note)
		return;
	atomic_fetch_add(&nallocs, 1);
	i = atomic_fetch_add(&nsites, 1);
	if (i < MAX_SITES) {
		in_note = 1;
		sites[i].fn = fn;
		sites[i].size = size;
		sites[i].nframes = backtrace(sites[i].frames, MAX_FRAMES);
		in_note = 0;
	}
}

void *malloc(size_t n)
{
	note("malloc", n);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	note("calloc", n * size);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	note("realloc", n);
	return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size) {
		errno = ENOMEM;
		return NULL;
	}
	note("reallocarray", n * size);
	return __libc_realloc(p, n * size);
}

void free(void *p)
{
	__libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (!align || align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	note("posix_memalign", n);
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	note("aligned_alloc", n);
	return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
	note("memalign", n);
	return __libc_memalign(align, n);
}

void *valloc(size_t n)
{
	note("valloc", n);
	return __libc_valloc(n);
}

void *pvalloc(size_t n)
{
	note("pvalloc", n);
	return __libc_pvalloc(n);
}

#define SKIP_IF_SANITIZED() ((void)0)
#else
#define SKIP_IF_SANITIZED() skip()
#endif

static void counting_reset(void)
{
	atomic_store(&counting, 0);
	atomic_store(&nallocs, 0);
	atomic_store(&nsites, 0);
	memset(sites, 0, sizeof(sites));
}

static void counting_on(void)
{
	atomic_store(&counting, 1);
}

static void counting_off(void)
{
	atomic_store(&counting, 0);
}

/* Print the recorded sites to stderr; no allocation (backtrace_symbols_fd). */
static void print_sites(const char *what)
{
	int n = atomic_load(&nsites);

	fprintf(stderr, "%s: %ld allocation(s) counted\n", what,
		atomic_load(&nallocs));
	for (int i = 0; i < n && i < MAX_SITES; i++) {
		fprintf(stderr, "-- %s(%zu), backtrace:\n", sites[i].fn, sites[i].size);
		fflush(stderr);
		backtrace_symbols_fd(sites[i].frames, sites[i].nframes, 2);
	}
}

/* Each call through a volatile pointer, so the compiler cannot drop an
 * unused allocation. */
static void *(*volatile v_malloc)(size_t) = malloc;
static void *(*volatile v_calloc)(size_t, size_t) = calloc;
static void *(*volatile v_realloc)(void *, size_t) = realloc;
static int (*volatile v_posix_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile v_aligned_alloc)(size_t, size_t) = aligned_alloc;
static void *(*volatile v_memalign)(size_t, size_t) = memalign;
static char *(*volatile v_strdup)(const char *) = strdup;

static void *alloc_in_thread(void *arg)
{
	pthread_barrier_t *go = arg;

	pthread_barrier_wait(go);
	free(v_malloc(40));
	return NULL;
}

/* The counter sees direct calls, calls from inside libc and calls from
 * other threads, so the steady-state tests cannot pass vacuously. */
static void interposer_counts(void **unused)
{
	pthread_barrier_t go;
	pthread_t t;
	void *p = NULL;
	FILE *f;

	(void)unused;
	SKIP_IF_SANITIZED();
	counting_reset();
	assert_int_equal(pthread_barrier_init(&go, NULL, 2), 0);
	assert_int_equal(pthread_create(&t, NULL, alloc_in_thread, &go), 0);
	counting_on();
	free(v_malloc(24));
	free(v_calloc(3, 8));
	free(v_realloc(NULL, 16));
	assert_int_equal(v_posix_memalign(&p, 64, 100), 0);
	free(p);
	free(v_aligned_alloc(64, 128));
	free(v_memalign(64, 32));
	assert_int_equal(atomic_load(&nallocs), 6);
	free(v_strdup("libc calls malloc through the PLT"));
	assert_int_equal(atomic_load(&nallocs), 7);
	pthread_barrier_wait(&go);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&nallocs), 8);
	f = fopen("/dev/null", "w");	/* the FILE itself is malloc'ed */
	assert_non_null(f);
	fclose(f);
	counting_off();
	assert_true(atomic_load(&nallocs) >= 9);
	assert_string_equal(sites[0].fn, "malloc");
	assert_int_equal(sites[0].size, 24);
	assert_true(sites[0].nframes > 1);
	free(v_malloc(24));	/* off: not counted */
	assert_true(atomic_load(&nallocs) >= 9);
	pthread_barrier_destroy(&go);
	counting_reset();
}

/* Every layer kind the dense path has: dense, relu, dropout, batchnorm. */
static const char *dense_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - layers: [{dense: 24}, relu, {dropout: 0.1}]\n"
	"    - layers: [{dense: 16}, batchnorm, tanh]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01, schedule: cosine}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Large enough (16 x 64 x 512) for OpenBLAS to split its sgemm calls
 * across threads when it has more than one. */
static const char *wide_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [64]\n"
	"  gates:\n"
	"    - layers: [{dense: 512}, relu]\n"
	"    - layers: [{dense: 64}, relu, {dense: 4}]\n"
	"optimizer: {type: sgd, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

static const char *conv_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, relu, {maxpool2d: 2}]\n"
	"    - layers: [{conv2d: {filters: 6, kernel: 3}}, relu, flatten]\n"
	"    - layers: [{dense: 4}]\n"
	"optimizer: {type: momentum, lr: 0.02, momentum: 0.9}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Every BLAS-using layer kind with its products in the shapes OpenBLAS's
 * AVX-512 small-matrix kernel used to malloc for (a row-major NN product
 * with N mod 16 in 1..8 and K >= 32): conv forward 33 x 36 x 36 (3x3,
 * padding 1), pointwise conv forward 4 x 36 x 33, dense dx B x 40 x 36. */
static const char *remainder_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 4, kernel: 3}}, relu]\n"
	"    - layers: [{conv2d: {filters: 33, kernel: 3, padding: 1}}, relu,\n"
	"               {conv2d: {filters: 4, kernel: 1}}, relu, flatten]\n"
	"    - layers: [{dense: 40}, relu, {dense: 36}, relu, {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Residual blocks (identity with batchnorm inside, a strided projection)
 * and global_avgpool: the inner layers allocate nothing either. */
static const char *resnet_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, relu,\n"
	"               residual: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, batchnorm, relu]]\n"
	"    - layers: [{residual: {layers: [{conv2d: {filters: 8, kernel: 3, stride: 2, padding: 1}}],\n"
	"                           shortcut: [{conv2d: {filters: 8, kernel: 1, stride: 2}}]}},\n"
	"               relu, global_avgpool, {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Graph layers: branches read the input and join by concat and add, a
 * slice, a residual block as a node, a join on features; the forked
 * gradients accumulate in the layer's aux. */
static const char *graph_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [graph: [{name: a, conv2d: {filters: 4, kernel: 1}},\n"
	"                       {name: b, conv2d: {filters: 4, kernel: 3, padding: 1}, from: input},\n"
	"                       {name: c, maxpool2d: {kernel: 3, stride: 1, padding: 1}, from: input},\n"
	"                       {name: cat, concat: [a, b, c]}, {name: lo, slice: {start: 0, end: 4}},\n"
	"                       {name: r, residual: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, batchnorm]},\n"
	"                       {add: [r, a]}], relu]\n"
	"    - layers: [flatten, graph: [{name: d, dense: 8}, {name: t, tanh}, {concat: [t, d]}], {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Gates that fork and join: a stem read by two branch gates, joined by
 * concat on the channels, then a fork joined by add (the joins' inputs
 * and the forks' summed gradients in buffers planned at init). */
static const char *gates_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - {name: stem, layers: [{conv2d: {filters: 4, kernel: 3, padding: 1}}, relu]}\n"
	"    - {name: a, from: stem, layers: [{conv2d: {filters: 2, kernel: 1}}, batchnorm, relu]}\n"
	"    - {name: b, from: stem, layers: [{maxpool2d: {kernel: 3, stride: 1, padding: 1}}]}\n"
	"    - {name: cat, from: [a, b], join: concat, layers: [flatten, {dense: 8}]}\n"
	"    - {name: c, from: cat, layers: [tanh]}\n"
	"    - {from: [cat, c], join: add, layers: [{dense: 4}]}\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* The generators: a transposed convolution with output padding (its
 * products through akk_sgemm on the flip-flop pool), both up-sampling
 * modes, and one without bias in the last gate. */
static const char *generators_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [1, 8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv2d: {filters: 4, kernel: 3, stride: 2, padding: 1}}, relu,\n"
	"               {conv_transpose2d: {filters: 6, kernel: 3, stride: 2, padding: 1, output_padding: 1}}]\n"
	"    - layers: [relu, {upsample2d: {scale: 2, mode: bilinear}}, {maxpool2d: 4},\n"
	"               {upsample2d: 2}, {conv_transpose2d: {filters: 2, kernel: 2, stride: 2, bias: false}},\n"
	"               flatten, {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Sequences [T, F]: conv1d (padded: its windows copied into per-sample
 * scratch), the pools over time, a bidirectional lstm, a gru and an rnn
 * (their per-step products and scratch), dense step by step. */
static const char *sequences_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [8, 8]\n"
	"  gates:\n"
	"    - layers: [{conv1d: {filters: 6, kernel: 3, padding: 1}}, relu, {maxpool1d: 2},\n"
	"               {lstm: {units: 8, return_sequences: true, direction: bidirectional}}]\n"
	"    - layers: [{gru: {units: 6, return_sequences: true}}, {dense: 5}, tanh, {avgpool1d: 2},\n"
	"               {rnn: {units: 5, return_sequences: true}}, global_maxpool1d, {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* The recurrent kinds on the 8x8 images read as 8 steps of 8 pixels:
 * a bidirectional lstm returning every step (scratch per sample), a
 * reverse gru, a relu rnn's last state. */
static const char *recurrent_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  input: [8, 8]\n"
	"  gates:\n"
	"    - layers: [{lstm: {units: 6, return_sequences: true, direction: bidirectional}}]\n"
	"    - layers: [{gru: {units: 5, return_sequences: true, direction: reverse}},\n"
	"               {rnn: {units: 4, activation: relu}}, {dense: 4}]\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* Two named inputs, slices of the 64 pixels: each gate reading one
 * gathers its slice into its own buffer every batch. */
static const char *inputs_yaml =
	"data: {train: {images: x, labels: y}}\n"
	"network:\n"
	"  inputs: [{name: top, shape: [24]}, {name: rest, shape: [5, 8]}]\n"
	"  gates:\n"
	"    - {name: a, from: top, layers: [{dense: 8}, relu]}\n"
	"    - {name: b, from: rest, layers: [flatten, {dense: 8}, tanh]}\n"
	"    - {from: [a, b], join: concat, layers: [{dense: 4}]}\n"
	"optimizer: {type: adam, lr: 0.01}\n"
	"schedule: {mode: %s, epochs: %d, batch_size: 16, "
	"concurrency: {train: 4, validation: 2}, weight_stashing: true}\n";

/* The name of a net above, for the report line. */
static const char *net_name(const char *yaml)
{
	static const struct { const char *const *yaml, *name; } nets[] = {
		{ &conv_yaml, "conv" }, { &wide_yaml, "wide" }, { &remainder_yaml, "remainder" },
		{ &resnet_yaml, "resnet" }, { &graph_yaml, "graph" }, { &gates_yaml, "gates" },
		{ &generators_yaml, "generators" }, { &inputs_yaml, "inputs" },
		{ &sequences_yaml, "sequences" }, { &recurrent_yaml, "recurrent" },
	};

	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if (yaml == *nets[i].yaml)
			return nets[i].name;
	return "dense";
}

/* What the observer saw. Written on the sentinel thread only; read after
 * akk_run_train has joined it. */
struct window {
	int from, to;		/* count after epoch `from` until after epoch `to` */
	long step0, step1;	/* gate 1's weight version at the edges */
	long val0, val1;	/* validations by the last gate at the edges */
	long batches;		/* training batches done inside the window */
	int opened, closed;
};

static void window_progress(void *ctx, const struct akk_progress *p)
{
	struct window *w = ctx;

	(void)p;
	if (w->opened && !w->closed)
		w->batches++;
}

/* Allocation-free: it runs inside the window at epochs from+1 .. to. */
static int window_edge(void *ctx, struct akk_run *r,
		       const struct akk_epoch_report *rep, struct akk_err *e)
{
	struct window *w = ctx;
	const struct akk_gate_actor *last = &r->gates[r->model->ngates - 1];

	(void)e;
	if (strcmp(rep->phase, "epoch"))
		return 0;
	if (rep->epoch == w->from) {
		w->step0 = r->gates[0].gate.step;
		w->val0 = last->validations;
		w->opened = 1;
		counting_on();
	} else if (rep->epoch == w->to) {
		counting_off();
		w->step1 = r->gates[0].gate.step;
		w->val1 = last->validations;
		w->closed = 1;
	}
	return 0;
}

/* Compute threads for the runs: automatic unless AKK_ALLOC_BLAS_THREADS says. */
static int blas_threads(void)
{
	const char *v = getenv("AKK_ALLOC_BLAS_THREADS");

	return v && *v ? atoi(v) : 0;
}

/* Train EPOCHS epochs of `yaml` in `mode` and require zero allocations in
 * epochs 2 .. EPOCHS-1. */
static void steady_state(const char *yaml, const char *mode,
			 const char *metrics_path)
{
	char text[2048];
	struct akk_spec spec;
	struct akk_model model;
	struct akk_dataset train, val;
	struct akk_run r;
	struct akk_err e = { 0 };
	struct window w = { .from = 1, .to = EPOCHS - 1 };
	struct akk_run_config cfg = {
		.epochs = EPOCHS, .blas_threads = blas_threads(),
		.metrics_path = metrics_path,
		.obs = { &w, window_progress, window_edge },
	};
	long count, per_epoch;

	snprintf(text, sizeof(text), yaml, mode, EPOCHS);
	memset(&spec, 0, sizeof(spec));
	if (akk_spec_parse(&spec, text, strlen(text), "test.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&model, &spec, &e))
		fail_msg("plan: %s", e.msg);
	tu_dataset(&train, 1000, SIDE, CLASSES, 7);	/* 63 batches, the last of 8 */
	tu_dataset(&val, 200, SIDE, CLASSES, 9);	/* 13 batches */
	cfg.mode = spec.sched.mode;
	counting_reset();
	if (akk_run_init(&r, &model, &train, &val, &cfg, &e))
		fail_msg("init: %s", e.msg);
	if (akk_run_train(&r, &e))
		fail_msg("train: %s", e.msg);
	counting_off();
	count = atomic_load(&nallocs);
	per_epoch = r.per_epoch;
	fprintf(stderr, "# %s %s, %d BLAS thread(s)%s: %ld steps, %ld batches, "
		"%ld validations in the window, %ld allocation(s)\n", mode,
		net_name(yaml), r.sched.compute_threads,
		metrics_path ? ", metrics CSV" : "", w.step1 - w.step0, w.batches,
		w.val1 - w.val0, count);
	if (count)
		print_sites(mode);
	akk_run_release(&r);
	akk_model_release(&model);
	akk_spec_release(&spec);
	akk_dataset_release(&train);
	akk_dataset_release(&val);

	assert_true(w.opened && w.closed);
	/* whole epochs of training and validation were in the window */
	assert_int_equal(w.step1 - w.step0, (EPOCHS - 2) * per_epoch);
	assert_int_equal(w.batches, (EPOCHS - 2) * per_epoch);
	assert_true(w.batches >= 100);
	assert_int_equal(w.val1 - w.val0, (EPOCHS - 2) * 13);
	assert_int_equal(count, 0);
}

static void flipflop_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(dense_yaml, "flip-flop", NULL);
}

static void wheels_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(dense_yaml, "wheels", NULL);
}

static void wheels_conv_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(conv_yaml, "wheels", NULL);
}

static void flipflop_wide_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(wide_yaml, "flip-flop", NULL);
}

static void wheels_resnet_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(resnet_yaml, "wheels", NULL);
}

static void flipflop_graph_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(graph_yaml, "flip-flop", NULL);
}

static void wheels_graph_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(graph_yaml, "wheels", NULL);
}

static void flipflop_gates_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(gates_yaml, "flip-flop", NULL);
}

static void wheels_gates_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(gates_yaml, "wheels", NULL);
}

static void pipeline_gates_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(gates_yaml, "pipeline", NULL);
}

static void flipflop_inputs_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(inputs_yaml, "flip-flop", NULL);
}

static void wheels_inputs_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(inputs_yaml, "wheels", NULL);
}

static void flipflop_generators_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(generators_yaml, "flip-flop", NULL);
}

static void wheels_generators_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(generators_yaml, "wheels", NULL);
}

static void flipflop_recurrent_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(recurrent_yaml, "flip-flop", NULL);
}

static void wheels_recurrent_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(recurrent_yaml, "wheels", NULL);
}

static void flipflop_remainder_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(remainder_yaml, "flip-flop", NULL);
}

static void wheels_remainder_allocates_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(remainder_yaml, "wheels", NULL);
}

static void flipflop_sequences_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(sequences_yaml, "flip-flop", NULL);
}

static void wheels_sequences_allocate_nothing(void **unused)
{
	(void)unused;
	SKIP_IF_SANITIZED();
	steady_state(sequences_yaml, "wheels", NULL);
}

/* A grid of products through akk_sgemm: every (trans_a, trans_b), beta 0
 * and 1, N over 1..40 (every N mod 16) and beyond, K below, at and above
 * 32, M*N*K on both sides of OpenBLAS's small-matrix limit (1e6), and the
 * layers' own shapes; then products split across a pool of 3 whose row
 * parts are small again. Each is computed once before counting, so that
 * OpenBLAS's one-time buffers are out of the way. The same grid through
 * cblas_sgemm itself is counted too and printed: on an AVX-512 kernel
 * (SkylakeX, Cooperlake) it allocates, which shows the grid reaches the
 * shapes that matter; on Haswell it does not. */
struct product {
	int ta, tb, M, N, K;
	float beta;
};

static const int grid_M[] = { 1, 6, 16, 17, 64 };
static const int grid_K[] = { 1, 31, 32, 36, 84, 150, 400 };
static const struct product layer_products[] = {
	{ 0, 0, 16, 100, 150, 1 }, { 0, 1, 16, 150, 100, 1 }, { 1, 0, 150, 100, 16, 0 },
	{ 0, 1, 64, 120, 400, 1 }, { 1, 0, 120, 400, 64, 1 }, { 0, 0, 64, 400, 120, 0 },
	{ 0, 1, 64, 84, 120, 1 }, { 1, 0, 84, 120, 64, 1 }, { 0, 0, 64, 120, 84, 0 },
	{ 0, 0, 6, 4, 36, 1 }, { 0, 0, 100, 100, 100, 0 }, { 0, 0, 100, 100, 101, 0 },
	{ 0, 0, 64, 24, 512, 0 }, { 0, 0, 1000, 4, 250, 1 },
};
static const struct product pooled_products[] = {
	{ 0, 0, 2048, 20, 256, 0 }, { 0, 0, 2048, 20, 256, 1 }, { 0, 0, 1500, 36, 160, 1 },
	{ 0, 1, 2048, 20, 256, 1 }, { 1, 0, 2048, 20, 256, 0 }, { 0, 0, 256, 512, 64, 1 },
};

static float *grid_a, *grid_b, *grid_c;

static void product(const struct product *p, int raw, struct akk_pool *pool)
{
	int lda = p->ta ? p->M : p->K, ldb = p->tb ? p->K : p->N;

	if (raw)
		cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
			    p->tb ? CblasTrans : CblasNoTrans, p->M, p->N, p->K, 1,
			    grid_a, lda, grid_b, ldb, p->beta, grid_c, p->N);
	else
		akk_sgemm(pool, p->ta, p->tb, p->M, p->N, p->K, 1, grid_a, lda,
			  grid_b, ldb, p->beta, grid_c, p->N);
}

/* Run the grid (and the layers' shapes) once; the number of products. */
static long grid(int raw)
{
	long n = 0;

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int b = 0; b < 2; b++)
				for (size_t m = 0; m < sizeof(grid_M) / sizeof(*grid_M); m++)
					for (int N = 1; N <= 48; N += N < 40 ? 1 : 8)
						for (size_t k = 0; k < sizeof(grid_K) / sizeof(*grid_K); k++, n++) {
							struct product p = { ta, tb, grid_M[m], N, grid_K[k], b };
							product(&p, raw, NULL);
						}
	for (size_t i = 0; i < sizeof(layer_products) / sizeof(*layer_products); i++, n++)
		product(&layer_products[i], raw, NULL);
	return n;
}

static void sgemm_allocates_nothing(void **unused)
{
	struct akk_pool *pool;
	struct tu_pool tp;
	long n, raw;

	(void)unused;
	SKIP_IF_SANITIZED();
	akk_blas_threads(1);	/* as akk_run_init: OpenBLAS's threads malloc */
	grid_a = akk_alloc(1 << 20), grid_b = akk_alloc(1 << 20), grid_c = akk_alloc(1 << 20);
	assert_non_null(grid_a), assert_non_null(grid_b), assert_non_null(grid_c);
	tu_fill(grid_a, 1 << 20, -1, 1, 1);
	tu_fill(grid_b, 1 << 20, -1, 1, 2);

	grid(1);
	counting_reset();
	counting_on();
	grid(1);
	counting_off();
	raw = atomic_load(&nallocs);

	grid(0);
	counting_reset();
	counting_on();
	n = grid(0);
	counting_off();
	fprintf(stderr, "# %ld products on OpenBLAS's %s kernels: cblas_sgemm "
		"allocates %ld time(s), akk_sgemm %ld\n", n,
		openblas_get_corename(), raw, atomic_load(&nallocs));
	if (atomic_load(&nallocs))
		print_sites("akk_sgemm");
	assert_int_equal(atomic_load(&nallocs), 0);

	pool = tu_pool_new(&tp, 3);
	assert_non_null(pool);
	for (int pass = 0; pass < 2; pass++) {
		counting_reset();
		if (pass)
			counting_on();
		for (size_t i = 0; i < sizeof(pooled_products) / sizeof(*pooled_products); i++)
			product(&pooled_products[i], 0, pool);
		counting_off();
	}
	/* each was split, twice: the pool's parts were counted too */
	assert_int_equal(akk_pool_products(pool),
			 2 * sizeof(pooled_products) / sizeof(*pooled_products));
	tu_pool_free(&tp);
	fprintf(stderr, "# pooled products: %ld allocation(s)\n", atomic_load(&nallocs));
	if (atomic_load(&nallocs))
		print_sites("pooled akk_sgemm");
	assert_int_equal(atomic_load(&nallocs), 0);
	akk_free(grid_a), akk_free(grid_b), akk_free(grid_c);
}

/* OpenBLAS picks its kernels once per process (OPENBLAS_CORETYPE or the
 * CPU), so the grid runs again in a child for every x86-64 kernel choice
 * this CPU can execute: an AVX-512 machine checks Haswell, SkylakeX and
 * Cooperlake whatever OPENBLAS_CORETYPE `make test` was given. */
static void sgemm_allocates_nothing_on_every_kernel(void **unused)
{
#if defined(__x86_64__)
	int avx512 = __builtin_cpu_supports("avx512f") &&
		     __builtin_cpu_supports("avx512vl") &&
		     __builtin_cpu_supports("avx512bw") &&
		     __builtin_cpu_supports("avx512dq");
	const struct { const char *name; int runs; } kernels[] = {
		{ "Haswell", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") },
		{ "SkylakeX", avx512 },
		{ "Cooperlake", avx512 && __builtin_cpu_supports("avx512bf16") },
	};
	const char *env = getenv("OPENBLAS_CORETYPE");
	char self[4096], err[8192], want[64], saved[64];
	const char *const argv[] = { self, NULL };
	ssize_t n;
	int ran = 0;

	(void)unused;
	SKIP_IF_SANITIZED();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = 0;
	snprintf(saved, sizeof(saved), "%s", env ? env : "");
	setenv("AKK_ALLOC_SGEMM_ONLY", "1", 1);
	for (size_t i = 0; i < sizeof(kernels) / sizeof(*kernels); i++) {
		char *line, *end;
		int rc;

		if (!kernels[i].runs) {
			fprintf(stderr, "# %s: this CPU cannot run it\n", kernels[i].name);
			continue;
		}
		setenv("OPENBLAS_CORETYPE", kernels[i].name, 1);
		rc = tu_run(argv, NULL, 0, err, sizeof(err));
		if (rc)
			fail_msg("OPENBLAS_CORETYPE=%s: exit %d\n%s", kernels[i].name, rc, err);
		/* the child ran the kernels asked for; print its summary */
		snprintf(want, sizeof(want), "OpenBLAS's %s kernels", kernels[i].name);
		assert_non_null(strstr(err, want));
		line = strstr(err, "# ");
		if (line && (end = strchr(line, '\n')))
			fprintf(stderr, "%.*s\n", (int)(end - line), line);
		ran++;
	}
	unsetenv("AKK_ALLOC_SGEMM_ONLY");
	if (saved[0])
		setenv("OPENBLAS_CORETYPE", saved, 1);
	else
		unsetenv("OPENBLAS_CORETYPE");
	assert_true(ran > 0);
#else
	(void)unused;
	skip();
#endif
}

/* The libxsmm path (tensor/gemm_xsmm.h) on its own, whatever the rule:
 * every product of the grid it can do (trans_b 0), the layers' shapes
 * among them, once to JIT-compile each kernel, then again counted. After
 * the first product of a shape, libxsmm finds its kernel in its registry
 * and allocates nothing. (akk_sgemm_here's choice between the libraries is
 * counted by the grid above and by the training runs.) */
static void xsmm_allocates_nothing(void **unused)
{
	float *a, *b, *c;
	long served = 0, n = 0;

	(void)unused;
	SKIP_IF_SANITIZED();
	a = akk_alloc(1 << 20), b = akk_alloc(1 << 20), c = akk_alloc(1 << 20);
	assert_non_null(a), assert_non_null(b), assert_non_null(c);
	tu_fill(a, 1 << 20, -1, 1, 3);
	tu_fill(b, 1 << 20, -1, 1, 4);
	for (int pass = 0; pass < 2; pass++) {
		counting_reset();
		if (pass)
			counting_on();
		served = n = 0;
		for (int ta = 0; ta < 2; ta++)
			for (int beta = 0; beta < 2; beta++)
				for (size_t m = 0; m < sizeof(grid_M) / sizeof(*grid_M); m++)
					for (int N = 1; N <= 48; N += N < 40 ? 1 : 8)
						for (size_t k = 0; k < sizeof(grid_K) / sizeof(*grid_K); k++, n++) {
							int M = grid_M[m], K = grid_K[k];
							served += akk_xsmm_sgemm(0, ta, 0, M, N, K, 1, a,
										 ta ? M : K, b, N, (float)beta, c, N);
						}
		for (size_t i = 0; i < sizeof(layer_products) / sizeof(*layer_products); i++, n++) {
			const struct product *p = &layer_products[i];
			served += akk_xsmm_sgemm(0, p->ta, p->tb, p->M, p->N, p->K, 1, a,
						 p->ta ? p->M : p->K, b, p->tb ? p->K : p->N,
						 p->beta, c, p->N);
		}
		counting_off();
	}
	fprintf(stderr, "# %ld products, %ld through libxsmm: %ld allocation(s)\n",
		n, served, atomic_load(&nallocs));
	if (atomic_load(&nallocs))
		print_sites("akk_xsmm_sgemm");
	assert_int_equal(atomic_load(&nallocs), 0);
#ifdef AKK_XSMM
	assert_true(served > 0);
#else
	assert_int_equal(served, 0);
#endif
	akk_free(a), akk_free(b), akk_free(c);
}

/* The metrics rows (fprintf + fflush on a FILE whose buffer exists since
 * the header was written) are inside the window too. */
static void metrics_allocate_nothing(void **unused)
{
	char path[600], line[256];
	const char *dir;
	FILE *f;
	int rows = 0;

	(void)unused;
	SKIP_IF_SANITIZED();
	dir = tu_tmpdir();
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/metrics.csv", dir);
	steady_state(dense_yaml, "wheels", path);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		rows++;
	fclose(f);
	/* header, train + validation per epoch, final */
	assert_int_equal(rows, 1 + 2 * EPOCHS + 1);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(interposer_counts),
		cmocka_unit_test(flipflop_allocates_nothing),
		cmocka_unit_test(flipflop_inputs_allocate_nothing),
		cmocka_unit_test(wheels_inputs_allocate_nothing),
		cmocka_unit_test(wheels_allocates_nothing),
		cmocka_unit_test(wheels_conv_allocates_nothing),
		cmocka_unit_test(flipflop_wide_allocates_nothing),
		cmocka_unit_test(metrics_allocate_nothing),
		cmocka_unit_test(sgemm_allocates_nothing),
		cmocka_unit_test(sgemm_allocates_nothing_on_every_kernel),
		cmocka_unit_test(flipflop_remainder_allocates_nothing),
		cmocka_unit_test(wheels_remainder_allocates_nothing),
		cmocka_unit_test(wheels_resnet_allocates_nothing),
		cmocka_unit_test(flipflop_graph_allocates_nothing),
		cmocka_unit_test(wheels_graph_allocates_nothing),
		cmocka_unit_test(flipflop_gates_allocate_nothing),
		cmocka_unit_test(wheels_gates_allocate_nothing),
		cmocka_unit_test(pipeline_gates_allocate_nothing),
		cmocka_unit_test(flipflop_generators_allocate_nothing),
		cmocka_unit_test(wheels_generators_allocate_nothing),
		cmocka_unit_test(flipflop_sequences_allocate_nothing),
		cmocka_unit_test(wheels_sequences_allocate_nothing),
		cmocka_unit_test(flipflop_recurrent_allocates_nothing),
		cmocka_unit_test(wheels_recurrent_allocates_nothing),
		cmocka_unit_test(xsmm_allocates_nothing),
	};
	const struct CMUnitTest sgemm_only[] = {
		cmocka_unit_test(sgemm_allocates_nothing),
		cmocka_unit_test(xsmm_allocates_nothing),
	};
	void *warm[4];

	/* glibc's backtrace() loads libgcc_s on first use, which allocates:
	 * do it now, outside any window. */
	backtrace(warm, 4);
	if (getenv("AKK_ALLOC_SGEMM_ONLY"))	/* the child of the test above */
		return cmocka_run_group_tests(sgemm_only, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
