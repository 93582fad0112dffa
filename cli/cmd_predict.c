/* cmd_predict.c - akkctl predict: classes (or values) for unlabelled input.
 *
 * The network comes from the checkpoint through the inference library
 * (api/akk.h), so akkctl predict and a program linked with libakk give the
 * same numbers bit for bit; the input files are read by the data readers
 * (data/open.h: IDX images, PGM/PPM images, ...). Output is CSV: a header
 * line, then one row per sample, indices counted on across the inputs. */
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

const char cmd_predict_usage[] =
	"usage: akkctl predict CHECKPOINT|DIR INPUT... [--out FILE] [--top K]\n"
	"                      [--format FORMAT] [--csv-header yes|no]\n"
	"\n"
	"  -o, --out FILE         write the CSV to FILE instead of stdout\n"
	"  -k, --top K            also the K best classes and their probabilities\n"
	"  -f, --format FORMAT    read every INPUT as FORMAT: idx, pnm, csv, npy,\n"
	"                         cifar10 or images (default: pnm for names ending\n"
	"                         in .pgm, .ppm or .pnm, images for .png, .jpg,\n"
	"                         .jpeg and folders, else the checkpoint's\n"
	"                         data.format)\n"
	"      --csv-header yes|no whether a CSV INPUT starts with a header row\n"
	"                         (default: as the model was trained; then a first\n"
	"                         row of numbers only, where a header is expected,\n"
	"                         is an error)\n";

const char cmd_predict_details[] =
	"\n"
	"Rebuilds the network from CHECKPOINT (a run directory: its best.bin, else\n"
	"last.bin, else the newest epoch-NNNN.bin, as eval) and predicts every\n"
	"sample of every INPUT: an IDX image file (no label file needed), one\n"
	"PGM (P5, P2) or PPM (P6) image with maxval 255, a CSV table whose every\n"
	"column is a feature (the label column left out; read with the\n"
	"checkpoint's csv options), a .npy file of features alone, a CIFAR-10\n"
	"batch file (its labels ignored), a PNG or JPEG image, or a folder of\n"
	"them (its images, then its sub-folders', in byte order; each must have\n"
	"the network's height and width: grey and colour are converted, sizes\n"
	"are not). The input preprocessing (scale, normalize, standardize) is\n"
	"the checkpoint's.\n"
	"\n"
	"Output, CSV: the header, then one row per sample, in input order:\n"
	"  index,predicted,probability[,top2,probability2,...,topK,probabilityK]\n"
	"      index counts from 0 across all INPUTs; predicted is the most\n"
	"      probable class (its name when the checkpoint names its classes),\n"
	"      probability its softmax probability (loss sigmoid_cross_entropy: the\n"
	"      sigmoid of its own output; %.9g: the float exactly);\n"
	"      with --top K the next K-1 classes by probability.\n"
	"  index,value1,...,valueN\n"
	"      for a regression network: the N predicted values.\n";

struct out_ctx {
	FILE *f;
	const akk_model *m;
	int C, top;
	int *order;	/* C class indices, sorted per row */
};

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
	if (akk_is_regression(o->m)) {
		fprintf(o->f, "index");
		for (int k = 1; k <= o->C; k++)
			fprintf(o->f, ",value%d", k);
		fprintf(o->f, "\n");
		return;
	}
	fprintf(o->f, "index,predicted,probability");
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

static void write_row(struct out_ctx *o, long index, const float *p)
{
	fprintf(o->f, "%ld", index);
	if (akk_is_regression(o->m)) {
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
		if (akk_predict(o->m, x, B * in, prob, B * o->C, msg, sizeof(msg)))
			return akk_err_at(e, path, 0, 0, "%s", msg);
		for (size_t j = 0; j < B; j++)
			write_row(o, (*index)++, prob + j * o->C);
	}
	return 0;
}

/* What the command line asks of predict besides its operands. */
struct predict_opts {
	const char *outpath, *format;	/* NULL: stdout; the input's own format */
	int top;			/* classes a row lists, most probable first */
	int header;			/* --csv-header: AKK_CSV_HEADER_ANY or 0;
					 * -1: as the checkpoint's config says */
};

/* Parse the options into po: -1 to go on, or the exit code (--help, a
 * usage error). */
static int parse_options(int argc, char **argv, struct predict_opts *po)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "top", required_argument, NULL, 'k' },
		{ "format", required_argument, NULL, 'f' },
		{ "csv-header", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*po = (struct predict_opts){ .top = 1, .header = -1 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:k:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': po->outpath = optarg; break;
		case 'k':
			if (cli_parse_int("--top", optarg, 1, 1 << 20, &po->top))
				return cli_usage_error("predict");
			break;
		case 'f': po->format = optarg; break;	/* data/open.c knows the formats */
		case 'H':
			if (strcmp(optarg, "yes") && strcmp(optarg, "no")) {
				cli_errorf(EXIT_USAGE, "option '--csv-header' needs yes or no, got '%s'",
					   optarg);
				return cli_usage_error("predict");
			}
			po->header = !strcmp(optarg, "yes") ? AKK_CSV_HEADER_ANY : 0;
			break;
		case 'h': return cli_help("predict");
		default: return cli_bad_option("predict", c, argv);
		}
	}
	return -1;
}

int cmd_predict(int argc, char **argv)
{
	struct predict_opts po;
	const char *outpath;
	char *ckpath = NULL, msg[8192];	/* akk_open's error */
	int rc = EXIT_USAGE, made_out = 0;
	akk_model *m = NULL;
	struct akk_dataset d = { 0 };
	struct akk_checkpoint ck = { 0 };
	struct akk_spec spec = { 0 };
	struct akk_err e = { 0 };
	struct out_ctx o = { 0 };
	float *x = NULL, *prob = NULL;
	size_t in;
	long index = 0;

	if ((rc = parse_options(argc, argv, &po)) >= 0)
		return rc;
	rc = EXIT_USAGE;
	outpath = po.outpath;
	if (cli_operands("predict", argc, argv))
		return EXIT_USAGE;
	/* the stored config's data: the default format of the inputs and how
	 * its readers take them (csv options, layout) */
	if (ckpt_load(argv[optind], 1, &ckpath, &ck, &spec, &e))
		goto report;
	if (po.header >= 0)
		spec.data.csv.header = po.header;
	if (!(m = akk_open(ckpath, msg, sizeof(msg)))) {
		akk_err_set(&e, "%s", msg);
		goto report;
	}
	o.m = m;
	o.C = akk_outputs(m);
	o.top = po.top > o.C ? o.C : po.top;
	in = akk_input_size(m);
	rc = EXIT_RUNTIME;
	o.order = malloc(o.C * sizeof(int));
	x = malloc((size_t)PREDICT_BLOCK * in * sizeof(float));
	prob = malloc((size_t)PREDICT_BLOCK * o.C * sizeof(float));
	if (!o.order || !x || !prob) {
		akk_err_set(&e, "out of memory");
		goto report;
	}
	if (!outpath)
		o.f = stdout;
	else if (!(o.f = fopen(outpath, "w"))) {
		akk_err_set(&e, "cannot open '%s': %s", outpath, strerror(errno));
		goto report;
	} else
		made_out = 1;
	for (int i = optind + 1; i < argc; i++) {
		const char *path = argv[i];

		if (akk_data_open_inputs(&d, po.format ? po.format :
					 akk_data_input_format(path, spec.data.format),
					 path, &spec.data, &e) ||
		    check_shape(&d, m, path, &e)) {
			rc = EXIT_USAGE;
			goto report;
		}
		if (i == optind + 1)	/* after the first input proved readable */
			write_header(&o);
		if (predict_rows(&o, &d, path, x, prob, &index, &e))
			goto report;
		akk_dataset_release(&d);
	}
	if (fflush(o.f) || ferror(o.f) || (made_out && fclose(o.f))) {
		if (made_out)
			o.f = NULL;
		akk_err_set(&e, "cannot write '%s': %s", outpath ? outpath : "standard output",
			    strerror(errno));
		goto report;
	}
	o.f = NULL;
	rc = EXIT_OK;
	goto out;
report:
	cli_report(&e, rc);
	if (made_out) {
		if (o.f)
			fclose(o.f);
		o.f = NULL;
		unlink(outpath);
	}
out:
	if (o.f && o.f != stdout)
		fclose(o.f);
	akk_dataset_release(&d);
	free(x);
	free(prob);
	free(o.order);
	akk_close(m);
	akk_spec_release(&spec);
	akk_checkpoint_release(&ck);
	free(ckpath);
	return rc;
}
