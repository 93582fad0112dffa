/* cmd_predict.c - akkctl predict: classes (or values) for unlabelled input.
 *
 * The network comes from the checkpoint through the inference library
 * (api/akk.h), so akkctl predict and a program linked with libakk give the
 * same numbers bit for bit; the input files are read by the data readers
 * (data/open.h: IDX images, PGM/PPM images, ...). Output is CSV: a header
 * line, then one row per sample, indices counted on across the inputs;
 * for a network that outputs a sequence (a class per step), one row per
 * sample and step, the step in a column after the index. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/akk.h"
#include "ckpt_files.h"
#include "cli.h"
#include "data/open.h"
#include "io/checkpoint.h"
#include "config/spec.h"

/* Samples converted and predicted at a time: a multiple of the library's
 * internal batch, so the batches equal those of one call on a whole file. */
#define PREDICT_BLOCK 4096



struct out_ctx {
	FILE *f;
	const akk_model *m;
	int C, top;
	int steps;	/* rows of outputs per sample (akk_steps) */
	int *order;	/* C class indices, sorted per row */
	/* Several outputs: every head in its columns (head -1), or with
	 * --head the one head whose slice [off, off + C) is written as a
	 * network of its own would be; stride: floats per row. */
	int heads, head, off, stride, regression;
};

/* The first columns of the header: the sample, and the step of a
 * sequence output. */
static void put_index_header(const struct out_ctx *o)
{
	fprintf(o->f, o->steps > 1 ? "index,step" : "index");
}

/* The first columns of a row. */
static void put_index(const struct out_ctx *o, long index, int step)
{
	fprintf(o->f, "%ld", index);
	if (o->steps > 1)
		fprintf(o->f, ",%d", step);
}

/* Every head of a network with several: a classifier head as its most
 * probable class and that probability, a head of values as its values. */
static void write_heads_header(const struct out_ctx *o)
{
	put_index_header(o);
	for (int i = 0; i < o->heads; i++) {
		const char *name;
		int size, cls;

		akk_head(o->m, i, &name, NULL, &size, &cls);
		if (cls)
			fprintf(o->f, ",%s,%s_probability", name, name);
		for (int k = 1; !cls && k <= size; k++)
			fprintf(o->f, ",%s_%d", name, k);
	}
	fprintf(o->f, "\n");
}

static void put_class(FILE *f, const akk_model *m, int k);

static void write_heads_row(const struct out_ctx *o, long index, int step, const float *p)
{
	put_index(o, index, step);
	for (int i = 0; i < o->heads; i++) {
		int off, size, cls, best = 0;

		akk_head(o->m, i, NULL, &off, &size, &cls);
		for (int k = 1; cls && k < size; k++)
			if (p[off + k] > p[off + best])
				best = k;
		if (cls) {
			fputc(',', o->f);
			put_class(o->f, o->m, best);
			fprintf(o->f, ",%.9g", p[off + best]);
		}
		for (int k = 0; !cls && k < size; k++)
			fprintf(o->f, ",%.9g", p[off + k]);
	}
	fprintf(o->f, "\n");
}

static void put_class(FILE *f, const akk_model *m, int k)
{
	const char *name = akk_class_name(m, k);

	if (!name) {
		fprintf(f, "%d", k);
		return;
	}
	cli_put_csv(f, name);	/* a name from the checkpoint: escaped */
}

static void write_header(const struct out_ctx *o)
{
	if (o->heads && o->head < 0) {
		write_heads_header(o);
		return;
	}
	put_index_header(o);
	if (o->regression) {
		for (int k = 1; k <= o->C; k++)
			fprintf(o->f, ",value%d", k);
		fprintf(o->f, "\n");
		return;
	}
	fprintf(o->f, ",predicted,probability");
	for (int k = 2; k <= o->top; k++)
		fprintf(o->f, ",top%d,probability%d", k, k);
	fprintf(o->f, "\n");
}

/* Most probable first; equal probabilities by class index. */
static const float *g_row;
static int by_prob(const void *a, const void *b)
{
	int i = *(const int *)a, j = *(const int *)b;

	if (g_row[i] != g_row[j])
		return g_row[i] > g_row[j] ? -1 : 1;
	return i - j;
}

static void write_row(struct out_ctx *o, long index, int step, const float *p)
{
	if (o->heads && o->head < 0) {
		write_heads_row(o, index, step, p);
		return;
	}
	p += o->off;
	put_index(o, index, step);
	if (o->regression) {
		for (int k = 0; k < o->C; k++)
			fprintf(o->f, ",%.9g", p[k]);
		fprintf(o->f, "\n");
		return;
	}
	for (int k = 0; k < o->C; k++)
		o->order[k] = k;
	g_row = p;
	qsort(o->order, o->C, sizeof(int), by_prob);
	for (int k = 0; k < o->top; k++) {
		fputc(',', o->f);
		put_class(o->f, o->m, o->order[k]);
		fprintf(o->f, ",%.9g", p[o->order[k]]);
	}
	fprintf(o->f, "\n");
}

/* Whether the file's samples fit the network's input: the same C x H x W
 * for an image network, the same number of values for a flat one. */
static int check_shape(const struct akk_dataset *d, const akk_model *m,
		       const char *path, struct akk_err *e)
{
	int dims[4], rank = akk_input_shape(m, dims);

	if (rank == 3 ? d->c == dims[0] && d->h == dims[1] && d->w == dims[2]
		      : d->in == akk_input_size(m))
		return 0;
	if (rank == 3)
		return akk_err_at(e, path, 0, 0,
				  "samples are %d x %d x %d (channels x height x width), but the network takes [%d, %d, %d]",
				  d->c, d->h, d->w, dims[0], dims[1], dims[2]);
	return akk_err_at(e, path, 0, 0, "samples have %zu values, but the network takes %zu",
			  d->in, akk_input_size(m));
}

/* The rows of d, the input read from path, PREDICT_BLOCK samples at a
 * time through x and prob (the block's inputs and probabilities); *index:
 * the first row's number, advanced past d's. */
static int predict_rows(struct out_ctx *o, const struct akk_dataset *d, const char *path,
			float *x, float *prob, long *index, struct akk_err *e)
{
	size_t in = akk_input_size(o->m);
	char msg[8192];

	for (size_t s = 0; s < d->n; s += PREDICT_BLOCK) {
		size_t B = d->n - s < PREDICT_BLOCK ? d->n - s : PREDICT_BLOCK;

		/* raw values, as the file holds them: the library preprocesses */
		for (size_t k = 0; k < B * in; k++)
			x[k] = d->xtype == AKK_X_U8 ? (float)d->x8[s * in + k]
						    : d->xf[s * in + k];
		if (akk_predict(o->m, x, B * in, prob, B * o->steps * o->stride, msg, sizeof(msg)))
			return akk_err_at(e, path, 0, 0, "%s", msg);
		for (size_t j = 0; j < B; j++, (*index)++)
			for (int t = 0; t < o->steps; t++)
				write_row(o, *index, t, prob + (j * o->steps + t) * o->stride);
	}
	return 0;
}

/* One prediction run: its options, then what it opens and writes. */
struct predict {
	const char *outpath, *format, *head;	/* --head NAME */
	int top, header;		/* --top; --csv-header: -1 as trained */
	char *ckpath;
	akk_model *m;
	struct akk_checkpoint ck;
	struct akk_spec spec;
	struct akk_dataset d;
	struct out_ctx o;
	float *x, *prob;		/* a block's inputs and probabilities */
	int made_out;			/* remove outpath on failure */
	struct akk_err e;
	int rc;
};

/* The options: -1 to go on, else the exit status. */
static int predict_parse(struct predict *p, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'k' },
		{ "format", required_argument, NULL, 'f' },
		{ "csv-header", required_argument, NULL, 'H' },
		{ "head", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:k:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': p->outpath = optarg; break;
		case 'k':
			if (cli_parse_int("--top", optarg, 1, 1 << 20, &p->top))
				return cli_usage_error("predict");
			break;
		case 'f': p->format = optarg; break;	/* data/open.c knows the formats */
		case 'O': p->head = optarg; break;
		case 'H':
			if (strcmp(optarg, "yes") && strcmp(optarg, "no")) {
				cli_errorf(EXIT_USAGE, "option '--csv-header' needs yes or no, got '%s'",
					   optarg);
				return cli_usage_error("predict");
			}
			p->header = !strcmp(optarg, "yes") ? AKK_CSV_HEADER_ANY : 0;
			break;
		case 'h': return cli_help("predict");
		default: return cli_bad_option("predict", c, argv);
		}
	}
	if (cli_operands("predict", argc, argv))
		return EXIT_USAGE;
	return -1;
}

/* --head NAME: the head's slice alone, written as a network of one output
 * would be; without it a network with heads writes every head. */
static int select_head(struct predict *p)
{
	int cls;

	p->o.heads = akk_heads(p->m);
	p->o.head = -1;
	if (!p->head)
		return 0;
	for (int i = 0; i < p->o.heads; i++) {
		const char *name;

		akk_head(p->m, i, &name, &p->o.off, &p->o.C, &cls);
		if (!strcmp(name, p->head)) {
			p->o.head = i;
			p->o.regression = !cls;
			return 0;
		}
	}
	p->rc = EXIT_USAGE;
	if (!p->o.heads)
		return akk_err_at(&p->e, p->ckpath, 0, 0,
				  "--head %s: the network has one output, no heads", p->head);
	return akk_err_at(&p->e, p->ckpath, 0, 0, "--head %s: the network has no output of that name",
			  p->head);
}

/* The checkpoint (its stored config's data: the default format of the
 * inputs and how its readers take them), the model through the library,
 * the buffers and the output file. */
static int predict_open(struct predict *p, const char *operand)
{
	char msg[8192];	/* akk_open's error */
	size_t in;

	if (ckpt_load(operand, 1, &p->ckpath, &p->ck, &p->spec, &p->e))
		return -1;
	if (p->header >= 0)
		p->spec.data.csv.header = p->header;
	if (!(p->m = akk_open(p->ckpath, msg, sizeof(msg))))
		return akk_err_set(&p->e, "%s", msg);
	p->o.m = p->m;
	p->o.steps = akk_steps(p->m);
	p->o.C = p->o.stride = akk_outputs(p->m);
	p->o.regression = akk_is_regression(p->m);
	if (select_head(p))
		return -1;
	p->o.top = p->top > p->o.C ? p->o.C : p->top;
	in = akk_input_size(p->m);
	p->rc = EXIT_RUNTIME;
	p->o.order = malloc(p->o.C * sizeof(int));
	p->x = malloc((size_t)PREDICT_BLOCK * in * sizeof(float));
	p->prob = malloc((size_t)PREDICT_BLOCK * p->o.steps * p->o.stride * sizeof(float));
	if (!p->o.order || !p->x || !p->prob)
		return akk_err_set(&p->e, "out of memory");
	if (!p->outpath) {
		p->o.f = stdout;
	} else if (!(p->o.f = fopen(p->outpath, "w"))) {
		return akk_err_set(&p->e, "cannot open '%s': %s", p->outpath, strerror(errno));
	}
	p->made_out = p->outpath != NULL;
	return 0;
}

/* Every input in turn: read, checked against the network, predicted;
 * the header once the first has proved readable. */
static int predict_inputs(struct predict *p, char **inputs, int n)
{
	long index = 0;

	for (int i = 0; i < n; i++) {
		const char *path = inputs[i];

		if (akk_data_open_inputs(&p->d, p->format ? p->format :
					 akk_data_input_format(path, p->spec.data.format),
					 path, &p->spec.data, &p->e) ||
		    akk_data_match_inputs(&p->d, p->ck.class_names, p->ck.nclass_names,
					  path, &p->e) ||
		    check_shape(&p->d, p->m, path, &p->e)) {
			p->rc = EXIT_USAGE;
			return -1;
		}
		if (i == 0)
			write_header(&p->o);
		if (predict_rows(&p->o, &p->d, path, p->x, p->prob, &index, &p->e))
			return -1;
		akk_dataset_release(&p->d);
	}
	return 0;
}

/* The output flushed and closed: a write that failed is an error. */
static int predict_finish(struct predict *p)
{
	if (fflush(p->o.f) || ferror(p->o.f) || (p->made_out && fclose(p->o.f))) {
		if (p->made_out)
			p->o.f = NULL;
		return akk_err_set(&p->e, "cannot write '%s': %s",
				   p->outpath ? p->outpath : "standard output", strerror(errno));
	}
	p->o.f = NULL;
	p->rc = EXIT_OK;
	return 0;
}

int cmd_predict(int argc, char **argv)
{
	struct predict p = { .top = 1, .header = -1, .rc = EXIT_USAGE };
	int rc = predict_parse(&p, argc, argv);

	if (rc >= 0)
		return rc;
	if (predict_open(&p, argv[optind]) ||
	    predict_inputs(&p, argv + optind + 1, argc - optind - 1) || predict_finish(&p)) {
		cli_report(&p.e, p.rc);
		if (p.made_out) {	/* no partial output */
			if (p.o.f)
				fclose(p.o.f);
			p.o.f = NULL;
			unlink(p.outpath);
		}
	}
	if (p.o.f && p.o.f != stdout)
		fclose(p.o.f);
	akk_dataset_release(&p.d);
	free(p.x);
	free(p.prob);
	free(p.o.order);
	akk_close(p.m);
	akk_spec_release(&p.spec);
	akk_checkpoint_release(&p.ck);
	free(p.ckpath);
	return p.rc;
}
