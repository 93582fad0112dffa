/* test_mpi.c - gates on several MPI ranks (Open MPI on localhost).
 *
 * Runs `mpirun -np N akkctl train` on synthetic IDX data and compares the
 * checkpoints rank 0 writes with a single-process run's: flip-flop across
 * ranks must give the same parameters bit for bit. Skipped when this build
 * has no MPI or mpirun is missing (CI installs Open MPI and runs them).
 * Nothing waits on timing to pass, but no job may hang either: every
 * mpirun runs under a deadline (AKK_MPI_DEADLINE seconds, default 30,
 * where a job takes a few), after which the test names the ranks still
 * running, kills the job and fails. Under `make check` the ranks run with
 * ASan and UBSan but without the leak check (see main). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "io/checkpoint.h"
#include "runtime/world.h"

static char g_dir[512];

static const char *mpirun_args[] = { "mpirun", "--oversubscribe",
				     "--allow-run-as-root", "-np" };

/* --- jobs under a deadline ------------------------------------------------ */

struct job {
	pid_t pid;		/* mpirun */
	int fd;			/* its stdout and stderr, or -1 (/dev/null) */
	char *out;		/* what it wrote, NUL-terminated, truncated */
	size_t size, len;
	double deadline;	/* CLOCK_MONOTONIC seconds */
	int seconds;		/* allowed */
	char what[256];		/* "mpirun ... -np 3 akkctl train np3.yaml" */
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int deadline_seconds(void)
{
	const char *d = getenv("AKK_MPI_DEADLINE");

	return d && atoi(d) > 0 ? atoi(d) : 30;
}

/* Start argv with stdin from /dev/null and stdout and stderr into out
 * (NULL: to /dev/null); it must end within `seconds`. */
static void job_start(struct job *j, const char *const *argv, char *out,
		      size_t size, int seconds)
{
	int p[2] = { -1, -1 };
	size_t n = 0;

	memset(j, 0, sizeof(*j));
	j->fd = -1;
	j->out = out;
	j->size = size;
	if (out && size)
		out[0] = '\0';
	for (int i = 0; argv[i] && n + 1 < sizeof(j->what); i++) {
		const char *base = strrchr(argv[i], '/');	/* paths by name */
		n += snprintf(j->what + n, sizeof(j->what) - n, "%s%s", i ? " " : "",
			      base ? base + 1 : argv[i]);
	}
	assert_true(!out || pipe(p) == 0);
	j->seconds = seconds;
	j->deadline = mono() + seconds;
	j->pid = fork();
	assert_true(j->pid >= 0);
	if (j->pid == 0) {
		int dn = open("/dev/null", O_RDWR);
		dup2(dn, 0);
		dup2(out ? p[1] : dn, 1);
		dup2(out ? p[1] : dn, 2);
		if (out)
			close(p[0]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (out) {
		close(p[1]);
		j->fd = p[0];
	}
}

/* The parent of pid, from /proc/PID/stat (0 when it is gone). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *r;
	FILE *f;
	size_t len;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* "pid (comm) state ppid ...": comm may hold anything but ")" ends it */
	if ((r = strrchr(buf, ')')) && sscanf(r + 1, " %*c %d", &ppid) == 1)
		return (pid_t)ppid;
	return 0;
}

/* The MPI rank of process pid ($OMPI_COMM_WORLD_RANK), -1 when none. */
static int rank_of(pid_t pid)
{
	char path[64], buf[65536];
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, "OMPI_COMM_WORLD_RANK=", 21))
			return atoi(buf + i + 21);
	return -1;
}

/* The processes that descend from root (mpirun's ranks and helpers). */
static int descendants(pid_t root, pid_t *out, int max)
{
	int n = 0, grew = 1;
	pid_t all[4096], par[4096];
	int nall = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d)) && nall < 4096) {
		pid_t p = (pid_t)atoi(de->d_name);
		if (p > 0) {
			all[nall] = p;
			par[nall++] = parent_of(p);
		}
	}
	if (d)
		closedir(d);
	while (grew) {		/* children of root, then theirs */
		grew = 0;
		for (int i = 0; i < nall; i++) {
			int known = 0, under = par[i] == root;
			for (int k = 0; k < n; k++) {
				known |= out[k] == all[i];
				under |= out[k] == par[i];
			}
			if (under && !known && n < max) {
				out[n++] = all[i];
				grew = 1;
			}
		}
	}
	return n;
}

/* The pid of rank `rank` of job j, 0 while there is none. */
static pid_t job_rank_pid(const struct job *j, int rank)
{
	pid_t kids[64];
	int n = descendants(j->pid, kids, 64);

	for (int i = 0; i < n; i++)
		if (rank_of(kids[i]) == rank)
			return kids[i];
	return 0;
}

/* At the deadline: say which ranks still run, then kill them and mpirun. */
static void job_kill(struct job *j, char *msg, size_t size)
{
	pid_t kids[64];
	int n = descendants(j->pid, kids, 64), len = 0, ranks = 0;

	msg[0] = '\0';
	for (int i = 0; i < n; i++) {
		int r = rank_of(kids[i]);
		if (r >= 0 && len < (int)size)
			len += snprintf(msg + len, size - len, "%srank %d (pid %d)",
					ranks++ ? ", " : "", r, (int)kids[i]);
	}
	if (!ranks)
		snprintf(msg, size, "no rank (mpirun itself)");
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	kill(j->pid, SIGKILL);
	waitpid(j->pid, NULL, 0);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
}

/* Wait for job j: its exit status (128+signal when killed), or -2 at the
 * deadline, when it has been killed and msg says which ranks were still
 * running. */
static int job_wait_msg(struct job *j, char *msg, size_t size)
{
	int status;

	for (;;) {
		double left = j->deadline - mono();
		pid_t w;
		if (left <= 0) {
			job_kill(j, msg, size);
			return -2;
		}
		if (j->fd >= 0) {
			struct pollfd pf = { j->fd, POLLIN, 0 };
			char tmp[4096];
			ssize_t r;
			if (poll(&pf, 1, left > 0.1 ? 100 : 1) < 0 && errno != EINTR)
				fail_msg("%s: poll: %s", j->what, strerror(errno));
			if (!pf.revents)
				continue;
			r = read(j->fd, tmp, sizeof(tmp));
			if (r > 0) {
				size_t k = (size_t)r;
				if (j->out && j->len + 1 < j->size) {
					if (k > j->size - 1 - j->len)
						k = j->size - 1 - j->len;
					memcpy(j->out + j->len, tmp, k);
					j->len += k;
					j->out[j->len] = '\0';
				}
				continue;
			}
			close(j->fd);	/* every rank has closed it */
			j->fd = -1;
		}
		w = waitpid(j->pid, &status, WNOHANG);
		if (w == j->pid)
			break;
		nap_ms(10);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* The same, failing the test at the deadline. */
static int job_wait(struct job *j)
{
	char msg[1024];
	int rc = job_wait_msg(j, msg, sizeof(msg));

	if (rc == -2) {
		if (j->len)	/* what the job said before it hung, the end of it */
			print_message("output of the killed job:\n%s\n",
				      j->out + (j->len > 2000 ? j->len - 2000 : 0));
		fail_msg("%s did not finish within %d s; still running: %s; killed the job",
			 j->what, j->seconds, msg);
	}
	return rc;
}

static int have_mpi(void)
{
	const char *argv[] = { "mpirun", "--version", NULL };

	return akk_world_available() && tu_run(argv, NULL, 0, NULL, 0) == 0;
}

static int group_setup(void **state)
{
	const char *d = tu_tmpdir();

	(void)state;
	if (!d)
		return -1;
	snprintf(g_dir, sizeof(g_dir), "%s", d);
	tu_write_set(g_dir, "train", 640, 8, 4, 3);
	tu_write_set(g_dir, "val", 160, 8, 4, 5);
	return 0;
}

/* A config NAME.yaml in g_dir: three gates with dropout and batchnorm, so
 * RNG and running state must travel too; `gates` may add rank: keys. */
static void write_cfg(char *path, size_t size, const char *name,
		      const char *mode, const char *placement, const char *r1,
		      const char *r2, const char *r3)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"  validation: {images: val-images, labels: val-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  placement: %s\n"
		"  gates:\n"
		"    - layers: [{dense: 24}, relu, {dropout: 0.1}]\n%s"
		"    - layers: [{dense: 16}, batchnorm, tanh]\n%s"
		"    - layers: [{dense: 4}]\n%s"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: %s, epochs: 3, batch_size: 32, threads: 1,\n"
		"           concurrency: {train: 4, validation: 2}}\n"
		"output: {dir: out-%s}\n",
		name, placement, r1, r2, r3, mode, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* akkctl train CFG EXTRA... under mpirun -np np, within the deadline
 * (np 0: no mpirun). Returns the exit status, stdout and stderr in err. */
static int train(int np, const char *cfg, const char *const *extra, char *err,
		 size_t errsz)
{
	const char *argv[32];
	char nps[8];
	int n = 0;
	struct job j;

	if (np) {
		for (size_t i = 0; i < sizeof(mpirun_args) / sizeof(*mpirun_args); i++)
			argv[n++] = mpirun_args[i];
		snprintf(nps, sizeof(nps), "%d", np);
		argv[n++] = nps;
	}
	argv[n++] = tu_akkctl();
	argv[n++] = "train";
	argv[n++] = cfg;
	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (!np)
		return tu_run(argv, NULL, 0, err, errsz);
	job_start(&j, argv, err, errsz, deadline_seconds());
	return job_wait(&j);
}

/* Every tensor, step and RNG of two checkpoints, bit for bit. */
static void assert_same_ckpt(const char *a, const char *b)
{
	struct akk_checkpoint x, y;
	struct akk_err e;

	if (akk_checkpoint_read(&x, a, &e))
		fail_msg("%s: %s", a, e.msg);
	if (akk_checkpoint_read(&y, b, &e))
		fail_msg("%s: %s", b, e.msg);
	assert_int_equal(x.ngates, y.ngates);
	assert_int_equal(x.pos.id, y.pos.id);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].step, y.gates[g].step);
		assert_memory_equal(x.gates[g].rng.s, y.gates[g].rng.s, sizeof(x.gates[g].rng.s));
		assert_int_equal(x.gates[g].ntensors, y.gates[g].ntensors);
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			assert_string_equal(x.gates[g].tensors[t].name, y.gates[g].tensors[t].name);
			assert_int_equal(x.gates[g].tensors[t].count, y.gates[g].tensors[t].count);
			assert_memory_equal(x.gates[g].tensors[t].data, y.gates[g].tensors[t].data,
					    x.gates[g].tensors[t].count * sizeof(float));
		}
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
}

static void ckpt_path(char *out, size_t size, const char *name, const char *file)
{
	snprintf(out, size, "%s/out-%s/%s", g_dir, name, file);
}

/* The reference: the same network in one process. */
static void single(const char *name)
{
	char cfg[700], err[4096];

	write_cfg(cfg, sizeof(cfg), name, "flip-flop", "explicit", "", "", "");
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
}

static void pipeline_contiguous_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	single("one-a");
	write_cfg(cfg, sizeof(cfg), "np2", "flip-flop", "contiguous", "", "", "");
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "placement: gate 1 on rank 0, gate 2 on rank 0, gate 3 on rank 1"));
	ckpt_path(a, sizeof(a), "one-a", "last.bin");
	ckpt_path(b, sizeof(b), "np2", "last.bin");
	assert_same_ckpt(a, b);
	/* every epoch's checkpoint too: the gather happens at each drain */
	ckpt_path(a, sizeof(a), "one-a", "epoch-0002.bin");
	ckpt_path(b, sizeof(b), "np2", "epoch-0002.bin");
	assert_same_ckpt(a, b);
}

static void pipeline_explicit_np3(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	single("one-b");
	/* backwards on purpose: gate 1 on rank 2, gate 3 on rank 0 */
	write_cfg(cfg, sizeof(cfg), "np3", "flip-flop", "explicit",
		  "      rank: 2\n", "      rank: 1\n", "      rank: 0\n");
	if (train(3, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 3 failed: %s", err);
	assert_non_null(strstr(err, "placement: gate 1 on rank 2, gate 2 on rank 1, gate 3 on rank 0"));
	ckpt_path(a, sizeof(a), "one-b", "last.bin");
	ckpt_path(b, sizeof(b), "np3", "last.bin");
	assert_same_ckpt(a, b);
}

/* Wheels across three ranks: not comparable bit for bit (updates and
 * forwards interleave by timing), but every epoch is one whole pass and
 * it learns. */
static void wheels_np3_learns(void **unused)
{
	char cfg[700], err[4096], csv[900], line[512];
	int train_rows = 0;
	double last_acc = 0;
	FILE *f;

	(void)unused;
	if (!have_mpi())
		skip();
	write_cfg(cfg, sizeof(cfg), "wheels3", "wheels", "contiguous", "", "", "");
	if (train(3, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 3 failed: %s", err);
	ckpt_path(csv, sizeof(csv), "wheels3", "metrics.csv");
	assert_non_null(f = fopen(csv, "r"));
	while (fgets(line, sizeof(line), f)) {
		int epoch;
		long samples;
		char phase[32];
		double loss, acc;
		if (sscanf(line, "%d,%31[^,],%ld,%lf,%lf", &epoch, phase, &samples, &loss, &acc) != 5)
			continue;
		if (!strcmp(phase, "train")) {
			assert_int_equal(samples, 640);
			train_rows++;
		} else {
			assert_int_equal(samples, 160);
			last_acc = acc;
		}
	}
	fclose(f);
	assert_int_equal(train_rows, 3);
	assert_true(last_acc > 0.9);
}

/* Resume under MPI: two epochs, then a third from the checkpoint, equal
 * to three epochs in one process. */
static void resume_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];
	const char *two[] = { "--epochs", "2", NULL };
	char dir[900];
	const char *more[] = { "--resume", dir, NULL };

	(void)unused;
	if (!have_mpi())
		skip();
	single("one-c");
	write_cfg(cfg, sizeof(cfg), "resume2", "flip-flop", "contiguous", "", "", "");
	if (train(2, cfg, two, err, sizeof(err)))
		fail_msg("first part failed: %s", err);
	snprintf(dir, sizeof(dir), "%s/out-resume2", g_dir);
	if (train(2, cfg, more, err, sizeof(err)))
		fail_msg("resumed part failed: %s", err);
	ckpt_path(a, sizeof(a), "one-c", "last.bin");
	ckpt_path(b, sizeof(b), "resume2", "last.bin");
	assert_same_ckpt(a, b);
}

/* A dense net for data parallelism (batchnorm's batch statistics and
 * dropout's masks would differ per slice, by design), and a recurrent
 * one on the same 64 values read as 8 steps of 8. */
#define DP_DENSE "  input: [64]\n  gates:\n" \
	"    - layers: [{dense: 24}, relu]\n" \
	"    - layers: [{dense: 16}, tanh, {dense: 4}]\n"
#define DP_GATES "  input: [64]\n  gates:\n" \
	"    - {name: stem, layers: [{dense: 24}, relu]}\n" \
	"    - {name: a, from: stem, layers: [{dense: 16}, tanh]}\n" \
	"    - {name: b, from: stem, layers: [{dense: 16}, relu]}\n" \
	"    - {from: [a, b], join: add, layers: [{dense: 4}]}\n"
#define DP_RECURRENT "  input: [8, 8]\n  gates:\n" \
	"    - layers: [{lstm: {units: 12, return_sequences: true}}, {gru: 8}]\n" \
	"    - layers: [{dense: 4}]\n"

static void write_net_cfg(char *path, size_t size, const char *name, int batch,
			  const char *parallel, const char *set, const char *net)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: %s-images, labels: %s-labels}\n"
		"network:\n%s"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: %d, threads: 1,\n"
		"           parallel: %s}\n"
		"output: {dir: out-%s}\n",
		name, set, set, net, batch, parallel, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

static void write_dp_cfg(char *path, size_t size, const char *name, int batch,
			 const char *parallel, const char *set)
{
	write_net_cfg(path, size, name, batch, parallel, set, DP_DENSE);
}

/* Every tensor of two checkpoints within rel (float sums in another order). */
static void assert_close_ckpt(const char *a, const char *b, double rel)
{
	struct akk_checkpoint x, y;
	struct akk_err e;

	if (akk_checkpoint_read(&x, a, &e))
		fail_msg("%s: %s", a, e.msg);
	if (akk_checkpoint_read(&y, b, &e))
		fail_msg("%s: %s", b, e.msg);
	assert_int_equal(x.ngates, y.ngates);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].step, y.gates[g].step);
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *u = &x.gates[g].tensors[t], *v = &y.gates[g].tensors[t];
			double err;
			assert_int_equal(u->count, v->count);
			err = tu_max_rel_err(u->data, v->data, u->count, 1e-2);
			if (err > rel)
				fail_msg("%s: relative difference %g", u->name, err);
		}
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
}

/* Gates that fork and join: a stem, two branches (dropout and batchnorm
 * in them), a head concatenating them; each gate's `rank:` from ranks
 * (-1: none), under placement `placement`. */
/* The stem and branches of write_gates_cfg, or with towers set two
 * towers reading the network input (the second joined with it too). */
static int towers;

static void write_gates_cfg(char *path, size_t size, const char *name, const char *mode,
			    const char *placement, const int *ranks)
{
	char text[2048], r[4][16];
	int n;
	const char *net = towers == 2 ?
		"    - {name: a, from: top, layers: [{dense: 16}, relu]%s}\n"
		"    - {name: b, from: rest, layers: [{dense: 16}, batchnorm, tanh]%s}\n"
		"    - {name: c, from: [rest, a, top], join: concat, layers: [{dense: 8}, relu]%s}\n"
		"    - {from: [b, c], join: concat, layers: [{dense: 4}]%s}\n" : towers ?
		"    - {name: stem, layers: [{dense: 24}, relu]%s}\n"
		"    - {name: left, from: input, layers: [{dense: 16}, batchnorm, tanh]%s}\n"
		"    - {name: right, from: [input, stem], join: concat, layers: [{dense: 8}, relu, {dropout: 0.1}]%s}\n"
		"    - {from: [left, right], join: concat, layers: [{dense: 4}]%s}\n" :
		"    - {name: stem, layers: [{dense: 24}, relu]%s}\n"
		"    - {name: left, from: stem, layers: [{dense: 16}, batchnorm, tanh]%s}\n"
		"    - {name: right, from: stem, layers: [{dense: 8}, relu, {dropout: 0.1}]%s}\n"
		"    - {from: [left, right], join: concat, layers: [{dense: 4}]%s}\n";
	char gates[1024];

	for (int i = 0; i < 4; i++)
		snprintf(r[i], sizeof(r[i]), ranks[i] >= 0 ? ", rank: %d" : "", ranks[i]);
	snprintf(gates, sizeof(gates), net, r[0], r[1], r[2], r[3]);
	n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"  validation: {images: val-images, labels: val-labels}\n"
		"network:\n"
		"  %s\n"
		"  placement: %s\n"
		"  gates:\n%s"
		"optimizer: {type: adam, lr: 0.01}\n"
		"schedule: {mode: %s, epochs: 3, batch_size: 32, threads: 1,\n"
		"           concurrency: {train: 4, validation: 2}}\n"
		"output: {dir: out-%s}\n",
		name, towers == 2 ? "inputs: [{name: top, shape: [24]}, {name: rest, shape: [40]}]" :
		"input: [64]", placement, gates, mode, name);
	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* Both branches of a fork on rank 1, the stem and the join on rank 0: the
 * join takes both its sources' outputs of a batch across the link, the
 * stem both gradients (each sender into slots of its own), and the
 * concatenating join sends each branch its whole input gradient (wider
 * than the branch's output). Flip-flop trains bit for bit as in one
 * process. */
static void gates_branch_on_rank1_np2(void **unused)
{
	static const int none[4] = { -1, -1, -1, -1 }, placed[4] = { 0, 1, 1, 0 };
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_gates_cfg(cfg, sizeof(cfg), "gates-one", "flip-flop", "explicit", none);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_gates_cfg(cfg, sizeof(cfg), "gates-np2", "flip-flop", "explicit", placed);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "placement: gate 1 on rank 0, gate 2 on rank 1, gate 3 on rank 1, gate 4 on rank 0"));
	ckpt_path(a, sizeof(a), "gates-one", "last.bin");
	ckpt_path(b, sizeof(b), "gates-np2", "last.bin");
	assert_same_ckpt(a, b);
}

/* Two gates reading the network input on rank 1 (one of them joining it
 * with the stem's output): the sentinel sends the batch across the link
 * to both and takes a credit from each; bit for bit as one process. */
static void gates_input_readers_on_rank1_np2(void **unused)
{
	static const int none[4] = { -1, -1, -1, -1 }, placed[4] = { 0, 1, 1, 0 };
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	towers = 1;
	write_gates_cfg(cfg, sizeof(cfg), "towers-one", "flip-flop", "explicit", none);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_gates_cfg(cfg, sizeof(cfg), "towers-np2", "flip-flop", "explicit", placed);
	towers = 0;
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(a, sizeof(a), "towers-one", "last.bin");
	ckpt_path(b, sizeof(b), "towers-np2", "last.bin");
	assert_same_ckpt(a, b);
}

/* Two named inputs, their readers on rank 1 (one joining both inputs
 * with the output of a gate that reads one of them): the sentinel sends
 * the whole batch across the link once to each reader, which takes its
 * slices there and gives one credit back; bit for bit as one process. */
static void inputs_readers_on_rank1_np2(void **unused)
{
	static const int none[4] = { -1, -1, -1, -1 }, placed[4] = { 1, 1, 1, 0 };
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	towers = 2;
	write_gates_cfg(cfg, sizeof(cfg), "inputs-one", "flip-flop", "explicit", none);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_gates_cfg(cfg, sizeof(cfg), "inputs-np2", "flip-flop", "explicit", placed);
	towers = 0;
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(a, sizeof(a), "inputs-one", "last.bin");
	ckpt_path(b, sizeof(b), "inputs-np2", "last.bin");
	assert_same_ckpt(a, b);
}

/* Both branches on other ranks than their stem and join, contiguous:
 * gates 1-2 on rank 0, 3-4 on rank 1 (the join reads one branch across
 * the link, the stem gets one gradient across it), in wheels: it learns
 * within the deadline. Then data parallelism on the same graph: two
 * ranks of 16 train as one process of 32. */
static void gates_contiguous_and_data_parallel_np2(void **unused)
{
	static const int none[4] = { -1, -1, -1, -1 };
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_gates_cfg(cfg, sizeof(cfg), "gates-cont", "wheels", "contiguous", none);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "placement: gate 1 on rank 0, gate 2 on rank 0, gate 3 on rank 1, gate 4 on rank 1"));
	write_net_cfg(cfg, sizeof(cfg), "gates-dp-one", 32, "pipeline", "train", DP_GATES);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_net_cfg(cfg, sizeof(cfg), "gates-dp2", 16, "data", "train", DP_GATES);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "data parallel: 2 ranks, each 16 of every 32 samples"));
	ckpt_path(a, sizeof(a), "gates-dp-one", "last.bin");
	ckpt_path(b, sizeof(b), "gates-dp2", "last.bin");
	assert_close_ckpt(a, b, 1e-4);
}

/* K ranks with batch B train as one process with batch K*B. */
static void data_parallel_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_dp_cfg(cfg, sizeof(cfg), "dp-one", 64, "pipeline", "train");
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_dp_cfg(cfg, sizeof(cfg), "dp2", 32, "data", "train");
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "data parallel: 2 ranks, each 32 of every 64 samples"));
	ckpt_path(a, sizeof(a), "dp-one", "last.bin");
	ckpt_path(b, sizeof(b), "dp2", "last.bin");
	assert_close_ckpt(a, b, 1e-4);
}

/* The same with recurrent gates (an lstm's sequence into a gru): two
 * ranks of 32 train as one process of 64. */
static void data_parallel_recurrent_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_net_cfg(cfg, sizeof(cfg), "dpr-one", 64, "pipeline", "train", DP_RECURRENT);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_net_cfg(cfg, sizeof(cfg), "dpr2", 32, "data", "train", DP_RECURRENT);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(a, sizeof(a), "dpr-one", "last.bin");
	ckpt_path(b, sizeof(b), "dpr2", "last.bin");
	assert_close_ckpt(a, b, 1e-4);
}

/* Three ranks, 160 samples in batches of 3 x 16: the last batch of 16
 * splits 5, 5, 6, so each slice must count by its size. */
static void data_parallel_np3_partial(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_dp_cfg(cfg, sizeof(cfg), "dp-one48", 48, "pipeline", "val");
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_dp_cfg(cfg, sizeof(cfg), "dp3", 16, "data", "val");
	if (train(3, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 3 failed: %s", err);
	ckpt_path(a, sizeof(a), "dp-one48", "last.bin");
	ckpt_path(b, sizeof(b), "dp3", "last.bin");
	assert_close_ckpt(a, b, 1e-4);
}

/* The lines of out that start with "akkctl: " (akkctl's own reports, not
 * mpirun's): how many, and the first in line. */
static int akkctl_lines(const char *out, char *line, size_t size)
{
	int n = 0;

	line[0] = '\0';
	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, "akkctl: ", 8) && !n++) {
			size_t len = strcspn(p, "\n");
			snprintf(line, size, "%.*s", (int)(len < size ? len : size - 1), p);
		}
	return n;
}

/* 640 samples in batches of 3 x 71 leave one for the last batch: a rank
 * without samples is a config error at schedule.batch_size (exit 2,
 * before anything starts), said once, by rank 0. */
static void data_parallel_batch_too_big(void **unused)
{
	char cfg[700], err[8192], want[1200], line[1200];
	const char *set[] = { "--set", "schedule.batch_size=71", NULL };
	static const char msg[] = "data parallel over 3 ranks: the last batch of each epoch would leave a rank without samples; change schedule.batch_size";

	(void)unused;
	if (!have_mpi())
		skip();
	write_dp_cfg(cfg, sizeof(cfg), "dp-split", 71, "data", "train");
	assert_int_equal(train(3, cfg, NULL, err, sizeof(err)), 2);
	snprintf(want, sizeof(want), "akkctl: %s:10:40: %s", cfg, msg);
	assert_int_equal(akkctl_lines(err, line, sizeof(line)), 1);
	assert_string_equal(line, want);
	/* given by --set, it is reported there */
	write_dp_cfg(cfg, sizeof(cfg), "dp-split2", 32, "data", "train");
	assert_int_equal(train(3, cfg, set, err, sizeof(err)), 2);
	snprintf(want, sizeof(want), "akkctl: --set schedule.batch_size=71: %s", msg);
	assert_int_equal(akkctl_lines(err, line, sizeof(line)), 1);
	assert_string_equal(line, want);
}

/* Without mpirun, a gate on another rank is a config error naming it. */
static void placement_needs_mpirun(void **unused)
{
	char cfg[700], err[4096];

	(void)unused;
	write_cfg(cfg, sizeof(cfg), "lonely", "flip-flop", "explicit", "", "      rank: 1\n", "");
	assert_int_equal(train(0, cfg, NULL, err, sizeof(err)), 2);
	assert_non_null(strstr(err, ":10:7: gate 2 is placed on rank 1, but there is 1 rank (mpirun -np 1)"));
}

/* Wait until metrics file csv has `rows` lines: the run is in training.
 * Fails when the job ends first or at its deadline. */
static void wait_rows(struct job *j, const char *csv, int rows)
{
	char msg[1024];

	for (;;) {
		FILE *f = fopen(csv, "r");
		char line[256];
		int n = 0;
		while (f && fgets(line, sizeof(line), f))
			n++;
		if (f)
			fclose(f);
		if (n >= rows)
			return;
		if (waitpid(j->pid, NULL, WNOHANG) == j->pid)
			fail_msg("%s ended before its first epoch", j->what);
		if (mono() > j->deadline) {
			job_kill(j, msg, sizeof(msg));
			fail_msg("%s wrote no epoch within %d s; still running: %s; killed the job",
				 j->what, j->seconds, msg);
		}
		nap_ms(10);
	}
}

/* Start an endless run of `name` under mpirun -np 2 and wait until it
 * is training (epoch 1's metrics rows exist). */
static void interrupt_start(struct job *j, const char *name, const char *const *sets,
			    char *cfg, size_t cfgsz)
{
	const char *argv[40];
	char csv[900];
	int n = 0;

	if (!strcmp(name, "int-dp"))
		write_dp_cfg(cfg, cfgsz, name, 32, "data", "train");
	else
		write_cfg(cfg, cfgsz, name, "wheels", "contiguous", "", "", "");
	for (const char *const *a = (const char *const[]){ "mpirun", "--oversubscribe",
			"--allow-run-as-root", "-np", "2", NULL }; *a; a++)
		argv[n++] = *a;
	argv[n++] = tu_akkctl();
	argv[n++] = "train";
	argv[n++] = cfg;
	argv[n++] = "--epochs";
	argv[n++] = "100000";	/* it cannot finish on its own */
	for (int i = 0; sets && sets[i]; i++)
		argv[n++] = sets[i];
	argv[n] = NULL;
	ckpt_path(csv, sizeof(csv), name, "metrics.csv");
	job_start(j, argv, NULL, 0, deadline_seconds());
	wait_rows(j, csv, 2);
}

/* SIGINT to rank 1 alone (`pkill -INT -x akkctl` reaches every rank the
 * same way): the stop reaches every rank, which stop at the same point
 * (the data-parallel vote; the pipeline's sentinel on rank 0), rank 0
 * writes a final checkpoint that loads, and the job ends (not killed
 * for hanging) with the ranks' status 130. */
static void interrupt_job(const char *name, const char *const *sets)
{
	char cfg[700], last[900], msg[1024];
	struct job j;
	struct akk_checkpoint c;
	struct akk_err e;
	pid_t rank1;

	interrupt_start(&j, name, sets, cfg, sizeof(cfg));
	if (!(rank1 = job_rank_pid(&j, 1))) {
		job_kill(&j, msg, sizeof(msg));
		fail_msg("no rank 1 under %s (running: %s)", j.what, msg);
	}
	kill(rank1, SIGINT);
	assert_int_equal(job_wait(&j), 130);
	ckpt_path(last, sizeof(last), name, "last.bin");
	if (akk_checkpoint_read(&c, last, &e))
		fail_msg("no loadable final checkpoint: %s", e.msg);
	assert_true(c.pos.id > 0);
	akk_checkpoint_release(&c);
}

static void interrupt_pipeline(void **unused)
{
	(void)unused;
	if (!have_mpi())
		skip();
	interrupt_job("int-pipe", NULL);
}

static void interrupt_data_parallel(void **unused)
{
	(void)unused;
	if (!have_mpi())
		skip();
	interrupt_job("int-dp", (const char *const[]){ "--mode", "wheels", NULL });
}

/* Ctrl-C to mpirun: Open MPI passes it on to the ranks as SIGTERM after
 * odls_base_sigkill_timeout seconds (default 1) and SIGKILLs them as many
 * seconds later, whether or not their clean stop is done (8 runs beside
 * a writer of 800 MB files and two busy loops: 6 SIGKILLed before
 * last.bin). The job ends, and the run directory holds a checkpoint
 * that `akkctl inspect` loads: last.bin, or the newest epoch's when the
 * SIGKILL came first, never a partial file. */
static void ctrl_c_to_mpirun(void **unused)
{
	char cfg[700], dir[900], out[4096], err[4096];
	struct job j;

	(void)unused;
	if (!have_mpi())
		skip();
	interrupt_start(&j, "int-mpirun", NULL, cfg, sizeof(cfg));
	kill(j.pid, SIGINT);
	assert_int_not_equal(job_wait(&j), 0);
	snprintf(dir, sizeof(dir), "%s/out-int-mpirun", g_dir);
	if (tu_ak(out, sizeof(out), err, sizeof(err), "inspect", dir, NULL))
		fail_msg("akkctl inspect %s: %s", dir, err);
}

/* A rank killed mid-run ends the whole job, with an error, not a hang:
 * mpirun must return non-zero before the deadline. */
static void killed_rank_ends_job(void **unused)
{
	char cfg[700], csv[900];
	const char *argv[] = { "mpirun", "--oversubscribe", "--allow-run-as-root",
			       "-np", "2", tu_akkctl(), "train", cfg, "--quiet",
			       "--epochs", "100000", NULL };	/* cannot finish */
	struct job j;
	pid_t victim;

	(void)unused;
	if (!have_mpi())
		skip();
	write_cfg(cfg, sizeof(cfg), "killed", "flip-flop", "contiguous", "", "", "");
	ckpt_path(csv, sizeof(csv), "killed", "metrics.csv");
	job_start(&j, argv, NULL, 0, deadline_seconds());
	wait_rows(&j, csv, 2);	/* let it get into training first */
	if (!(victim = job_rank_pid(&j, 1))) {
		char msg[1024];
		job_kill(&j, msg, sizeof(msg));
		fail_msg("no rank 1 under %s (running: %s)", j.what, msg);
	}
	kill(victim, SIGKILL);
	assert_int_not_equal(job_wait(&j), 0);
}

/* The deadline itself: a job whose ranks never end is killed at it, and
 * the report names every rank still running. */
static void deadline_names_hung_ranks(void **unused)
{
	const char *argv[] = { "mpirun", "--oversubscribe", "--allow-run-as-root",
			       "-np", "2", "sleep", "600", NULL };
	char msg[1024];
	struct job j;
	double t0 = mono();

	(void)unused;
	if (!have_mpi())
		skip();
	job_start(&j, argv, NULL, 0, 3);
	while (job_rank_pid(&j, 1) == 0 && mono() < t0 + 3)	/* both started */
		nap_ms(10);
	assert_int_equal(job_wait_msg(&j, msg, sizeof(msg)), -2);
	assert_true(mono() - t0 < 10);
	assert_non_null(strstr(msg, "rank 0 (pid "));
	assert_non_null(strstr(msg, "rank 1 (pid "));
	assert_int_equal(kill(j.pid, 0), -1);	/* mpirun is gone, reaped */
}

/* --- batch norm under data parallelism ------------------------ */

/* A net with batchnorm first (its statistics depend on the data alone) and
 * after a dense layer; `sync` is "" or ", sync: true" (SyncBN). */
static void write_bn_cfg(char *path, size_t size, const char *name, int batch,
			 const char *parallel, const char *set, const char *sync,
			 const char *extra)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: %s-images, labels: %s-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{batchnorm: {momentum: 0.2%s}}, {dense: 24}, relu]\n"
		"    - layers: [{dense: 16}, {batchnorm: {momentum: 0.3%s}}, tanh, {dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: %d, threads: 1,\n"
		"           parallel: %s%s}\n"
		"output: {dir: out-%s}\n",
		name, set, set, sync, sync, batch, parallel, extra, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* The tensors of two checkpoints whose name contains `only` (NULL: all),
 * within rel as a tensor's relative error, |a - b| / |b| in the 2-norm
 * (a training run on other ranks sums in another order: element by
 * element, weights near zero drift by a few float roundings over the
 * steps, e.g. 1.05e-5 with a 1e-2 floor on OpenBLAS's Haswell kernels);
 * returns how many were compared. */
static int assert_close_named(const char *a, const char *b, const char *only,
			      double rel)
{
	struct akk_checkpoint x, y;
	struct akk_err e;
	int compared = 0;

	if (akk_checkpoint_read(&x, a, &e))
		fail_msg("%s: %s", a, e.msg);
	if (akk_checkpoint_read(&y, b, &e))
		fail_msg("%s: %s", b, e.msg);
	assert_int_equal(x.ngates, y.ngates);
	for (int g = 0; g < x.ngates; g++) {
		assert_int_equal(x.gates[g].step, y.gates[g].step);
		assert_int_equal(x.gates[g].ntensors, y.gates[g].ntensors);
		for (int t = 0; t < x.gates[g].ntensors; t++) {
			const struct akk_ckpt_tensor *u = &x.gates[g].tensors[t], *v = &y.gates[g].tensors[t];
			double err;
			if (only && !strstr(u->name, only))
				continue;
			assert_int_equal(u->count, v->count);
			double d2 = 0, b2 = 0;
			for (uint64_t k = 0; k < u->count; k++) {
				double d = (double)u->data[k] - v->data[k];
				d2 += d * d;
				b2 += (double)v->data[k] * v->data[k];
			}
			err = b2 > 0 ? sqrt(d2 / b2) : sqrt(d2);
			if (!(err <= rel))
				fail_msg("gate %d %s: relative difference %g", g + 1, u->name, err);
			compared++;
		}
	}
	akk_checkpoint_release(&x);
	akk_checkpoint_release(&y);
	return compared;
}

/* np ranks of `batch` against one process at np * batch on data `set`. */
static void bn_pair(const char *name, int np, int batch, const char *set,
		    const char *sync, const char *extra, char *a, char *b,
		    size_t size)
{
	char cfg[700], err[4096], one[64];

	snprintf(one, sizeof(one), "%s-one", name);
	write_bn_cfg(cfg, sizeof(cfg), one, np * batch, "pipeline", set, sync, extra);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_bn_cfg(cfg, sizeof(cfg), name, batch, "data", set, sync, extra);
	if (train(np, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np %d failed: %s", np, err);
	ckpt_path(a, size, one, "last.bin");
	ckpt_path(b, size, name, "last.bin");
}

/* Gate 1's running_mean and running_var within 1e-5. */
static void assert_first_running(const char *a, const char *b)
{
	struct akk_checkpoint u, v;
	struct akk_err e;
	int seen = 0;

	if (akk_checkpoint_read(&u, a, &e))
		fail_msg("%s: %s", a, e.msg);
	if (akk_checkpoint_read(&v, b, &e))
		fail_msg("%s: %s", b, e.msg);
	for (int t = 0; t < u.gates[0].ntensors; t++) {
		const struct akk_ckpt_tensor *p = &u.gates[0].tensors[t], *q = &v.gates[0].tensors[t];
		double err;
		if (!strstr(p->name, "running_"))
			continue;
		err = tu_max_rel_err(p->data, q->data, p->count, 1e-2);
		if (err > 1e-5)
			fail_msg("gate 1 %s: relative difference %g", p->name, err);
		seen++;
	}
	assert_int_equal(seen, 2);
	akk_checkpoint_release(&u);
	akk_checkpoint_release(&v);
}

/* The running statistics of the first batchnorm (before any weight) equal
 * one process's at the combined batch: every step's sums span the ranks
 * (they came from rank 0's slice alone). The other tensors differ by
 * design: each rank normalises with its own slice's statistics. */
static void bn_running_stats_np2(void **unused)
{
	char a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	bn_pair("bnrun2", 2, 32, "train", "", "", a, b, sizeof(a));
	assert_first_running(a, b);
}

/* Three ranks, slices of 5, 5 and 6 in the last batch. */
static void bn_running_stats_np3(void **unused)
{
	char a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	bn_pair("bnrun3", 3, 16, "val", "", "", a, b, sizeof(a));
	assert_first_running(a, b);
}

/* SyncBN: batch statistics over every rank, so every weight and running
 * statistic equals one process's at the combined batch. */
static void syncbn_np2(void **unused)
{
	char a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	bn_pair("sbn2", 2, 32, "train", ", sync: true", "", a, b, sizeof(a));
	assert_int_equal(assert_close_named(a, b, NULL, 1e-5), 2 * 4 + 2 * 4);
}

static void syncbn_np3_partial(void **unused)
{
	char a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	bn_pair("sbn3", 3, 16, "val", ", sync: true", "", a, b, sizeof(a));
	assert_close_named(a, b, NULL, 1e-5);
}

/* SyncBN and lr_scaling across a resume: two epochs, then the third from
 * the checkpoint, bit for bit the three epochs in one go (the running
 * statistics travel in the checkpoint; the lr is a function of the step). */
static void syncbn_resume_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900], dir[900];
	const char *two[] = { "--epochs", "2", NULL };
	const char *more[] = { "--resume", dir, NULL };
	const char *extra = ", lr_scaling: linear";

	(void)unused;
	if (!have_mpi())
		skip();
	write_bn_cfg(cfg, sizeof(cfg), "sbnfull", 32, "data", "train", ", sync: true", extra);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	write_bn_cfg(cfg, sizeof(cfg), "sbnres", 32, "data", "train", ", sync: true", extra);
	if (train(2, cfg, two, err, sizeof(err)))
		fail_msg("first part failed: %s", err);
	snprintf(dir, sizeof(dir), "%s/out-sbnres", g_dir);
	if (train(2, cfg, more, err, sizeof(err)))
		fail_msg("resumed part failed: %s", err);
	ckpt_path(a, sizeof(a), "sbnfull", "last.bin");
	ckpt_path(b, sizeof(b), "sbnres", "last.bin");
	assert_same_ckpt(a, b);
}

/* --- lr_scaling: linear (Goyal et al.) ----------------------------------- */

static void write_lrs_cfg(char *path, size_t size, const char *name, int batch,
			  const char *parallel, double lr, const char *lrsched,
			  const char *extra)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  gates:\n"
		"    - layers: [{dense: 24}, relu]\n"
		"    - layers: [{dense: 16}, tanh, {dense: 4}]\n"
		"optimizer: {type: momentum, lr: %g, momentum: 0.9%s}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: %d, threads: 1,\n"
		"           parallel: %s%s}\n"
		"output: {dir: out-%s}\n",
		name, lr, lrsched, batch, parallel, extra, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* Two ranks at lr 0.025 scaled linearly train as one process at the
 * combined batch with lr 0.05. */
static void lr_scaling_linear_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_lrs_cfg(cfg, sizeof(cfg), "lrs-one", 64, "pipeline", 0.05, "", "");
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_lrs_cfg(cfg, sizeof(cfg), "lrs2", 32, "data", 0.025, "",
		      ", lr_scaling: linear");
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(a, sizeof(a), "lrs-one", "last.bin");
	ckpt_path(b, sizeof(b), "lrs2", "last.bin");
	assert_close_ckpt(a, b, 1e-4);
}

/* The warm-up goes from the base lr to 2 lr over 2 epochs, in
 * metrics.csv's lr column: each row shows the lr of the epoch's last step
 * (its midpoint, epoch e - 0.05 with 10 steps an epoch). */
static void lr_scaling_warmup_metrics_np2(void **unused)
{
	char cfg[700], err[4096], csv[900], line[512];
	const double want[3] = { 0.05 * (1 + 0.95 / 2), 0.05 * (1 + 1.95 / 2), 0.1 };
	int rows = 0;
	FILE *f;

	(void)unused;
	if (!have_mpi())
		skip();
	write_lrs_cfg(cfg, sizeof(cfg), "lrsw2", 32, "data", 0.05,
		      ", schedule: {warmup_epochs: 2}", ", lr_scaling: linear");
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(csv, sizeof(csv), "lrsw2", "metrics.csv");
	assert_non_null(f = fopen(csv, "r"));
	while (fgets(line, sizeof(line), f)) {
		int epoch;
		long samples;
		char phase[32];
		double loss, acc, lr;
		if (sscanf(line, "%d,%31[^,],%ld,%lf,%lf,%lf", &epoch, phase, &samples,
			   &loss, &acc, &lr) != 6 || strcmp(phase, "train"))
			continue;
		assert_true(epoch >= 1 && epoch <= 3);
		if (fabs(lr - want[epoch - 1]) > 1e-6 * want[epoch - 1])
			fail_msg("epoch %d: lr %g, want %g", epoch, lr, want[epoch - 1]);
		rows++;
	}
	fclose(f);
	assert_int_equal(rows, 3);
}

/* --- a residual block with batchnorm under data parallelism --- */

/* The batchnorms inside a residual block: the block hands the run's sync
 * to its inner layers. */
/* A config NAME.yaml in g_dir: a first gate of the given layers (YAML
 * list items, 8 spaces in), a second of one dense layer; parallel: data
 * or pipeline (with pipeline under mpirun, contiguous placement: the
 * first gate on rank 0, the second on rank 1). */
static void write_block_cfg(char *path, size_t size, const char *name,
			    int batch, const char *parallel, const char *layers)
{
	char text[2048];
	int n = snprintf(text, sizeof(text),
		"name: %s\n"
		"data:\n"
		"  train: {images: train-images, labels: train-labels}\n"
		"network:\n"
		"  input: [64]\n"
		"  placement: contiguous\n"
		"  gates:\n"
		"    - layers:\n%s"
		"    - layers: [{dense: 4}]\n"
		"optimizer: {type: momentum, lr: 0.05, momentum: 0.9}\n"
		"schedule: {mode: flip-flop, epochs: 3, batch_size: %d, threads: 1,\n"
		"           parallel: %s}\n"
		"output: {dir: out-%s}\n",
		name, layers, batch, parallel, name);

	assert_true(n > 0 && n < (int)sizeof(text));
	snprintf(path, size, "%s/%s.yaml", g_dir, name);
	assert_int_equal(tu_write_file(path, text, (size_t)n), 0);
}

/* A residual block with synchronised batchnorms. */
static const char *resbn_layers =
	"        - {dense: 24}\n"
	"        - relu\n"
	"        - residual: [{dense: 24}, {batchnorm: {momentum: 0.2, sync: true}},\n"
	"                     relu, {dense: 24}, {batchnorm: {momentum: 0.3, sync: true}}]\n"
	"        - relu\n";

/* Two ranks of 32 with parallel: data against one process at 64, the
 * first gate of layers (named one and two): every tensor within 1e-5
 * relative in the 2-norm, ntensors of them, and the state view called
 * state (the running statistics) among them; each rank alone would
 * normalise its own half. */
static void data_parallel_equals_one(const char *one, const char *two,
				     const char *layers, const char *state, int ntensors)
{
	char cfg[700], err[4096], a[900], b[900];

	if (!have_mpi())
		skip();
	write_block_cfg(cfg, sizeof(cfg), one, 64, "pipeline", layers);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_block_cfg(cfg, sizeof(cfg), two, 32, "data", layers);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	ckpt_path(a, sizeof(a), one, "last.bin");
	ckpt_path(b, sizeof(b), two, "last.bin");
	assert_int_equal(assert_close_named(a, b, state, 1e-5), 1);
	assert_int_equal(assert_close_named(a, b, NULL, 1e-5), ntensors);
}

/* SyncBN inside the residual block: the block's tensors are two flat
 * views, its inner layers' parameters and its state (both batchnorms'
 * running_mean and running_var); with the optimizer moments, 8 tensors. */
static void residual_syncbn_np2(void **unused)
{
	(void)unused;
	data_parallel_equals_one("rbn-one", "rbn2", resbn_layers, "residual.state", 8);
}

/* A graph whose two branches each end in a synchronised batchnorm,
 * joined by concat. */
static const char *graph_layers =
	"        - graph:\n"
	"            nodes:\n"
	"              - {name: a, dense: 20}\n"
	"              - {batchnorm: {momentum: 0.2, sync: true}}\n"
	"              - {name: ra, relu}\n"
	"              - {name: b, dense: 12, from: input}\n"
	"              - {batchnorm: {momentum: 0.3, sync: true}}\n"
	"              - {name: tb, tanh}\n"
	"              - {name: out, concat: [ra, tb]}\n"
	"        - relu\n";

/* Data parallelism over a graph: both branches' batchnorms sum over the
 * replicas. The graph's parameters and state, the last dense layer's two
 * tensors and the two gates' optimizer moments: 6 tensors. */
static void graph_syncbn_np2(void **unused)
{
	(void)unused;
	data_parallel_equals_one("gbn-one", "gbn2", graph_layers, "graph.state", 6);
}

/* A graph's gate on one rank and the next gate on another: the same
 * checkpoint, bit for bit, as one process (the graph's activations and
 * gradients cross between ranks as a plain gate's do). */
static void graph_placed_np2(void **unused)
{
	char cfg[700], err[4096], a[900], b[900];

	(void)unused;
	if (!have_mpi())
		skip();
	write_block_cfg(cfg, sizeof(cfg), "gpl-one", 32, "pipeline", graph_layers);
	if (train(0, cfg, NULL, err, sizeof(err)))
		fail_msg("single-process run failed: %s", err);
	write_block_cfg(cfg, sizeof(cfg), "gpl2", 32, "pipeline", graph_layers);
	if (train(2, cfg, NULL, err, sizeof(err)))
		fail_msg("mpirun -np 2 failed: %s", err);
	assert_non_null(strstr(err, "placement: gate 1 on rank 0, gate 2 on rank 1"));
	ckpt_path(a, sizeof(a), "gpl-one", "last.bin");
	ckpt_path(b, sizeof(b), "gpl2", "last.bin");
	assert_same_ckpt(a, b);
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__)
	/* Open MPI keeps memory until exit in components it loads and
	 * unloads (frames LeakSanitizer cannot name, so not suppressible):
	 * the ranks still run under ASan and UBSan, without the leak check. */
	setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
	if (getenv("AKK_TEST_FILTER"))	/* e.g. AKK_TEST_FILTER='*np3*' */
		cmocka_set_test_filter(getenv("AKK_TEST_FILTER"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(placement_needs_mpirun),
		cmocka_unit_test(pipeline_contiguous_np2),
		cmocka_unit_test(pipeline_explicit_np3),
		cmocka_unit_test(gates_branch_on_rank1_np2),
		cmocka_unit_test(gates_input_readers_on_rank1_np2),
		cmocka_unit_test(inputs_readers_on_rank1_np2),
		cmocka_unit_test(gates_contiguous_and_data_parallel_np2),
		cmocka_unit_test(wheels_np3_learns),
		cmocka_unit_test(resume_np2),
		cmocka_unit_test(data_parallel_np2),
		cmocka_unit_test(data_parallel_recurrent_np2),
		cmocka_unit_test(data_parallel_np3_partial),
		cmocka_unit_test(data_parallel_batch_too_big),
		cmocka_unit_test(interrupt_pipeline),
		cmocka_unit_test(interrupt_data_parallel),
		cmocka_unit_test(ctrl_c_to_mpirun),
		cmocka_unit_test(killed_rank_ends_job),
		cmocka_unit_test(deadline_names_hung_ranks),
		cmocka_unit_test(bn_running_stats_np2),
		cmocka_unit_test(bn_running_stats_np3),
		cmocka_unit_test(syncbn_np2),
		cmocka_unit_test(syncbn_np3_partial),
		cmocka_unit_test(syncbn_resume_np2),
		cmocka_unit_test(lr_scaling_linear_np2),
		cmocka_unit_test(lr_scaling_warmup_metrics_np2),
		cmocka_unit_test(residual_syncbn_np2),
		cmocka_unit_test(graph_syncbn_np2),
		cmocka_unit_test(graph_placed_np2),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
