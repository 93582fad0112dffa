/* testutil.c - process running, temp dirs and numeric comparisons for tests. */
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/spec.h"
#include "model/model.h"
#include <zlib.h>

const char *tu_akkctl(void)
{
	const char *p = getenv("AKKCTL");
	return p && *p ? p : "./akkctl";
}

static void drain(int fd, char *buf, size_t size, size_t *len)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n <= 0)
		return;
	if (buf && *len + 1 < size) {
		size_t room = size - 1 - *len;
		size_t k = (size_t)n < room ? (size_t)n : room;
		memcpy(buf + *len, tmp, k);
		*len += k;
		buf[*len] = '\0';
	}
}

int tu_run(const char *const *argv, char *out, size_t outsz, char *err,
	   size_t errsz)
{
	int po[2], pe[2], status;
	size_t lo = 0, le = 0;
	pid_t pid;

	if (out && outsz)
		out[0] = '\0';
	if (err && errsz)
		err[0] = '\0';
	if (pipe(po) || pipe(pe))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int dn = open("/dev/null", O_RDONLY);
		dup2(dn, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	struct pollfd fds[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
	int open_fds = 2;
	while (open_fds > 0) {
		if (poll(fds, 2, -1) < 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			char probe;
			if (fds[i].revents & POLLIN) {
				if (i == 0)
					drain(fds[i].fd, out, outsz, &lo);
				else
					drain(fds[i].fd, err, errsz, &le);
			}
			if ((fds[i].revents & (POLLHUP | POLLERR)) &&
			    !(fds[i].revents & POLLIN)) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
			(void)probe;
		}
	}
	waitpid(pid, &status, 0);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

const char *tu_tmpdir(void)
{
	static char path[512];
	const char *base = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/akktest.XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(path);
}

int tu_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	if (len && fwrite(data, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

double tu_max_rel_err(const float *a, const float *b, size_t n, double floor)
{
	double worst = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);
		double m = fmax(fmax(fabs(a[i]), fabs(b[i])), floor);
		if (d / m > worst || isnan(d))
			worst = isnan(d) ? INFINITY : d / m;
	}
	return worst;
}

void tu_fill(float *x, size_t n, float lo, float hi, uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 12345u;

	for (size_t i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		x[i] = lo + (hi - lo) * ((s >> 8) * (1.0f / 16777216.0f));
	}
}

void tu_dataset(struct akk_dataset *d, size_t n, int side, int classes,
		uint32_t seed)
{
	size_t item = (size_t)side * side;
	uint32_t s = seed;

	memset(d, 0, sizeof(*d));
	d->x8 = malloc(n * item);
	d->labels = malloc(n * sizeof(*d->labels));
	assert_non_null(d->x8);
	assert_non_null(d->labels);
	d->n = n;
	d->in = item;
	d->c = 1;
	d->h = d->w = side;
	d->xtype = AKK_X_U8;
	d->classes = classes;
	for (size_t i = 0; i < n; i++) {
		int c = (int)(i % classes);
		d->labels[i] = c;
		for (size_t j = 0; j < item; j++) {
			s = s * 1664525u + 1013904223u;
			d->x8[i * item + j] =
				(uint8_t)(20 + (s >> 26) + ((int)(j % classes) == c ? 120 : 0));
		}
		d->x8[i * item] = i & 255;
		d->x8[i * item + 1] = (i >> 8) & 255;
	}
}

/* The images (rank 3: n x h x w, one channel) or the labels (rank 1, each
 * below 256) of d as an IDX file. */
void tu_write_idx(const char *path, const struct akk_dataset *d, int images)
{
	uint32_t dims[3] = { (uint32_t)d->n, (uint32_t)d->h, (uint32_t)d->w };
	int rank = images ? 3 : 1;
	size_t hdr = 4 + 4 * (size_t)rank, len = images ? d->n * d->in : d->n;
	unsigned char *buf = malloc(hdr + len);

	assert_non_null(buf);
	assert_true(!images || (d->xtype == AKK_X_U8 && d->c == 1));
	buf[0] = buf[1] = 0;
	buf[2] = 0x08;
	buf[3] = (unsigned char)rank;
	for (int i = 0; i < rank; i++) {
		uint32_t v = dims[i];
		buf[4 + 4 * i] = v >> 24;
		buf[5 + 4 * i] = v >> 16;
		buf[6 + 4 * i] = v >> 8;
		buf[7 + 4 * i] = v;
	}
	if (images)
		memcpy(buf + hdr, d->x8, len);
	else
		for (size_t i = 0; i < d->n; i++) {
			assert_in_range(d->labels[i], 0, 255);
			buf[hdr + i] = (unsigned char)d->labels[i];
		}
	assert_int_equal(tu_write_file(path, buf, hdr + len), 0);
	free(buf);
}

char *tu_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		if (len)
			*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tu_rm_tree(const char *dir)
{
	if (dir && dir[0] && !getenv("AKK_KEEP_TMP"))
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tu_path(const char *dir, const char *name)
{
	static char bufs[32][8192];
	static int next;
	char *b = bufs[next++ % 32];
	size_t ld = strlen(dir), ln = strlen(name);

	assert_true(ld + 1 + ln < sizeof(bufs[0]));
	memmove(b, dir, ld);	/* dir may be an older buffer, never b itself */
	b[ld] = '/';
	memcpy(b + ld + 1, name, ln + 1);
	return b;
}

int tu_ak(char *out, size_t outsz, char *err, size_t errsz, const char *arg, ...)
{
	const char *argv[64];
	int n = 0;
	va_list ap;

	argv[n++] = tu_akkctl();
	va_start(ap, arg);
	for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return tu_run(argv, out, outsz, err, errsz);
}

int tu_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, line, n) && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

int tu_check_line(const char *text, const char *line)
{
	if (has_line(text, line))
		return 1;
	print_error("expected the line:\n%s\n--- in:\n%s\n--- end\n", line, text);
	return 0;
}

int tu_check_no_line(const char *text, const char *line)
{
	if (!has_line(text, line))
		return 1;
	print_error("did not expect the line:\n%s\n--- in:\n%s\n--- end\n", line, text);
	return 0;
}

int tu_check_prefix(const char *text, const char *prefix)
{
	if (!strncmp(text, prefix, strlen(prefix)))
		return 1;
	print_error("expected text starting with:\n%s\n--- got:\n%s\n--- end\n", prefix, text);
	return 0;
}

int tu_check_contains(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		return 1;
	print_error("expected \"%s\" in:\n%s\n--- end\n", needle, hay);
	return 0;
}

int tu_check_not_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		return 1;
	print_error("did not expect \"%s\" in:\n%s\n--- end\n", needle, hay);
	return 0;
}

unsigned char *tu_idx_bytes(int type, int rank, const uint32_t *dims,
			    const void *payload, size_t len, size_t *size)
{
	size_t hdr = 4 + 4 * (size_t)rank;
	unsigned char *b = malloc(hdr + len);
	const unsigned char *src = payload;

	assert_non_null(b);
	b[0] = b[1] = 0;
	b[2] = (unsigned char)type;
	b[3] = (unsigned char)rank;
	for (int i = 0; i < rank; i++) {
		b[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
		b[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
		b[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
		b[7 + 4 * i] = (unsigned char)dims[i];
	}
	for (size_t i = 0; i < len; i++)
		b[hdr + i] = src ? src[i] : (unsigned char)(i % 251);
	*size = hdr + len;
	return b;
}

void tu_expect_word(FILE *f, const char *key)
{
	char word[64];

	assert_int_equal(fscanf(f, "%63s", word), 1);
	assert_string_equal(word, key);
}

static int stderr_saved = -1;
static char stderr_path[600];

void tu_stderr_begin(void)
{
	int fd;

	assert_int_equal(stderr_saved, -1);
	snprintf(stderr_path, sizeof(stderr_path), "%s/stderr.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	fd = mkstemp(stderr_path);
	assert_true(fd >= 0);
	fflush(stderr);
	stderr_saved = dup(2);
	assert_true(stderr_saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
}

char *tu_stderr_end(void)
{
	char *s;

	assert_true(stderr_saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(stderr_saved, 2), 2);
	close(stderr_saved);
	stderr_saved = -1;
	s = tu_slurp(stderr_path, NULL);
	unlink(stderr_path);
	assert_non_null(s);
	return s;
}

/* The first n records of an IDX file (header of hdr bytes, rec bytes per
 * record) with the count field set to n. */
static int tu_idx_head(const char *from, const char *to, int hdr, size_t rec, int n)
{
	size_t len;
	unsigned char *p = (unsigned char *)tu_slurp(from, &len);
	int rc = -1;

	if (p && len >= hdr + rec * n) {
		p[4] = (unsigned char)(n >> 24);
		p[5] = (unsigned char)(n >> 16);
		p[6] = (unsigned char)(n >> 8);
		p[7] = (unsigned char)n;
		rc = tu_write_file(to, p, hdr + rec * n);
	}
	free(p);
	return rc;
}

int tu_lenet_run(const char *dir, int ntrain)
{
	char out[4096], err[4096], im[1024], lb[1024], run[1024], si[1100], sl[1100];
	int rc;

	if (!tu_exists("datasets/mnist/train-images-idx3-ubyte") ||
	    !tu_exists("datasets/mnist/t10k-images-idx3-ubyte"))
		return 1;
	snprintf(im, sizeof(im), "%s/train-images", dir);
	snprintf(lb, sizeof(lb), "%s/train-labels", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(si, sizeof(si), "data.train.images=%s", im);
	snprintf(sl, sizeof(sl), "data.train.labels=%s", lb);
	if (tu_idx_head("datasets/mnist/train-images-idx3-ubyte", im, 16, 784, ntrain) ||
	    tu_idx_head("datasets/mnist/train-labels-idx1-ubyte", lb, 8, 1, ntrain)) {
		fprintf(stderr, "cannot copy %d MNIST training samples to %s\n", ntrain, dir);
		return -1;
	}
	rc = tu_ak(out, sizeof(out), err, sizeof(err), "train", "configs/lenet.yaml", "--epochs", "1",
		   "--out", run, "--set", si, "--set", sl, "--quiet", NULL);
	if (rc) {
		fprintf(stderr, "training lenet failed (exit %d):\n%s", rc, err);
		return -1;
	}
	return 0;
}

void tu_write_set(const char *dir, const char *name, size_t n, int side,
		  int classes, uint32_t seed)
{
	struct akk_dataset d;
	char file[256];

	tu_dataset(&d, n, side, classes, seed);
	snprintf(file, sizeof(file), "%s-images", name);
	tu_write_idx(tu_path(dir, file), &d, 1);
	snprintf(file, sizeof(file), "%s-labels", name);
	tu_write_idx(tu_path(dir, file), &d, 0);
	akk_dataset_release(&d);
}

void tu_workers_start(struct akk_workers *w, int n)
{
	struct akk_err e = { 0 };

	if (akk_workers_init(w, n, &e) || akk_workers_start(w, &e))
		fail_msg("workers: %s", e.msg);
}

struct akk_pool *tu_pool_new(struct tu_pool *tp, int n)
{
	struct akk_err e = { 0 };

	memset(tp, 0, sizeof(*tp));
	if (akk_workers_init(&tp->w, n, &e))
		fail_msg("workers: %s", e.msg);
	if (!(tp->p = akk_pool_on(&tp->w, n, &e)) || akk_workers_start_threads(&tp->w, &e))
		fail_msg("pool: %s", e.msg);
	return tp->p;
}

void tu_pool_free(struct tu_pool *tp)
{
	if (!tp->p)
		return;
	akk_workers_release(&tp->w);	/* stops its threads first */
	akk_pool_destroy(tp->p);
	tp->p = NULL;
}

/* ---- pictures: a tiny PNG reader (8-bit RGB or RGBA, not interlaced) and
 * SVG rendered with headless Chromium ---------------------------------- */

static unsigned be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

void tu_png_read(const char *path, struct tu_png *img)
{
	size_t len, zn = 0, pos = 8;
	unsigned char *f = (unsigned char *)tu_slurp(path, &len), *z = NULL, *raw;
	uLongf rawlen;
	unsigned stride;

	assert_non_null(f);
	assert_true(len > 8 && !memcmp(f, "\x89PNG\r\n\x1a\n", 8));
	*img = (struct tu_png){ 0 };
	while (pos + 12 <= len) {
		unsigned n = be32(f + pos);
		const unsigned char *type = f + pos + 4, *data = f + pos + 8;
		assert_true(pos + 12 + n <= len);
		if (!memcmp(type, "IHDR", 4)) {
			img->w = be32(data);
			img->h = be32(data + 4);
			assert_int_equal(data[8], 8);		/* bit depth */
			assert_true(data[9] == 2 || data[9] == 6);	/* RGB, RGBA */
			assert_int_equal(data[12], 0);		/* not interlaced */
			img->ch = data[9] == 6 ? 4 : 3;
		} else if (!memcmp(type, "IDAT", 4)) {
			z = realloc(z, zn + n);
			assert_non_null(z);
			memcpy(z + zn, data, n);
			zn += n;
		} else if (!memcmp(type, "IEND", 4)) {
			break;
		}
		pos += 12 + n;
	}
	assert_true(img->w > 0 && img->h > 0 && zn > 0);
	stride = img->w * img->ch;
	rawlen = (uLongf)(stride + 1) * img->h;
	raw = malloc(rawlen);
	img->px = malloc((size_t)stride * img->h);
	assert_true(raw && img->px);
	assert_int_equal(uncompress(raw, &rawlen, z, zn), Z_OK);
	assert_int_equal(rawlen, (uLongf)(stride + 1) * img->h);
	for (unsigned y = 0; y < img->h; y++) {
		const unsigned char *in = raw + (size_t)y * (stride + 1) + 1;
		unsigned char *o = img->px + (size_t)y * stride;
		const unsigned char *up = y ? o - stride : NULL;
		int filter = in[-1];
		for (unsigned i = 0; i < stride; i++) {
			int a = i >= img->ch ? o[i - img->ch] : 0, b = up ? up[i] : 0,
			    c = up && i >= img->ch ? up[i - img->ch] : 0, v = in[i];
			switch (filter) {
			case 0: break;
			case 1: v += a; break;
			case 2: v += b; break;
			case 3: v += (a + b) / 2; break;
			case 4: v += paeth(a, b, c); break;
			default: fail_msg("PNG filter %d", filter);
			}
			o[i] = (unsigned char)v;
		}
	}
	free(raw);
	free(z);
	free(f);
}

int tu_render(const char *svg, int w, int h, struct tu_png *img)
{
	char png[700], ws[16], hs[16];
	const char *argv[] = { "sh", "tests/render_svg.sh", svg, png, ws, hs, NULL };
	static char err[1 << 14];
	int rc;

	snprintf(png, sizeof(png), "%s.png", svg);
	snprintf(ws, sizeof(ws), "%d", w);
	snprintf(hs, sizeof(hs), "%d", h);
	rc = tu_run(argv, NULL, 0, err, sizeof(err));
	if (rc == 77) {
		static int warned;
		if (!warned++)
			fprintf(stderr, "SKIP rendering checks: %s", err);
		return 1;
	}
	if (rc) {
		print_error("render_svg.sh exit %d:\n%s\n", rc, err);
		fail();
	}
	tu_png_read(png, img);
	assert_int_equal(img->w, w);
	assert_int_equal(img->h, h);
	return 0;
}

/* Render svg (w x h) with Chromium and check the picture: its size, that
 * at least min_ink of its pixels are not white, that it has at least
 * min_colours distinct colours, and that each colour of want (0xRRGGBB,
 * 0-terminated) appears on 20 pixels or more (within 24 per channel:
 * anti-aliasing); 0x222222 is the text's colour, so text was drawn. */
void tu_assert_renders(const char *svg, int w, int h, double min_ink, int min_colours,
		       const unsigned *want)
{
	struct tu_png img;
	long ink = 0, found[8] = { 0 };
	int colours = 0;
	static unsigned char seen[1 << 21];	/* a bit per 24-bit colour */

	if (tu_render(svg, w, h, &img))
		return;
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < (size_t)img.w * img.h; i++) {
		const unsigned char *p = img.px + i * img.ch;
		unsigned rgb = (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
		ink += rgb != 0xffffff;
		if (!(seen[rgb >> 3] & 1 << (rgb & 7))) {
			seen[rgb >> 3] |= (unsigned char)(1 << (rgb & 7));
			colours++;
		}
		for (int k = 0; want && want[k]; k++) {
			int dr = abs(p[0] - (int)(want[k] >> 16)), dg = abs(p[1] - (int)(want[k] >> 8 & 255)),
			    db = abs(p[2] - (int)(want[k] & 255));
			found[k] += dr <= 24 && dg <= 24 && db <= 24;
		}
	}
	if (ink < min_ink * img.w * img.h || colours < min_colours) {
		print_error("%s.png: %ld of %u pixels not white, %d colours\n", svg, ink,
			    img.w * img.h, colours);
		fail();
	}
	for (int k = 0; want && want[k]; k++)
		if (found[k] < 20) {
			print_error("%s.png: colour #%06x on %ld pixels\n", svg, want[k], found[k]);
			fail();
		}
	free(img.px);
}

int tu_parse(struct akk_spec *s, const char *t, struct akk_err *e)
{
	memset(e, 0, sizeof(*e));
	return akk_spec_parse(s, t, strlen(t), "t.yaml", NULL, NULL, 0, e);
}

int tu_plan_error(const char *t, char *buf, size_t n)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_err e;

	if (!tu_parse(&s, t, &e)) {
		int planned = !akk_model_plan(&m, &s, &e);

		if (planned)
			akk_model_release(&m);
		akk_spec_release(&s);
		if (planned)
			return -1;
	}
	akk_err_format(&e, buf, n);
	return 0;
}

void tu_net_setup(struct tu_net *f, const char *t)
{
	struct akk_err e = { 0 };

	memset(f, 0, sizeof(*f));
	if (akk_spec_parse(&f->spec, t, strlen(t), "test.yaml", ".", NULL, 0, &e))
		fail_msg("spec: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	if (akk_model_plan(&f->model, &f->spec, &e))
		fail_msg("plan: %s:%d:%d: %s", e.file, e.line, e.col, e.msg);
	tu_dataset(&f->train, 400, 8, 4, 7);
	tu_dataset(&f->val, 100, 8, 4, 9);
}

void tu_net_release(struct tu_net *f)
{
	akk_model_release(&f->model);
	akk_spec_release(&f->spec);
	akk_dataset_release(&f->train);
	akk_dataset_release(&f->val);
}

int tu_thp_offered(void)
{
	char t[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f && !fgets(t, sizeof(t), f))
		t[0] = '\0';
	if (f)
		fclose(f);
	return strstr(t, "[always]") || strstr(t, "[madvise]");
}
