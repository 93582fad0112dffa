/* cmd_eval.c - akkctl eval: evaluate a checkpoint on a dataset.
 *
 * The network is rebuilt from the checkpoint alone (its stored config);
 * the data comes from that config's validation set (read through its
 * data.format; with a validation split, the checkpoint's held-out part of
 * the training data), from --data DIR (t10k-images-idx3-ubyte and
 * t10k-labels-idx1-ubyte, plain or .gz) or from --images/--labels, read
 * as the checkpoint's data.format reads its data (data/open.h).
 * Values become the network's input through the checkpoint's stored
 * input map. CHECKPOINT may be a run directory: see ckpt_pick. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/checkpoint.h"
#include "io/image_grid.h"
#include "ckpt_files.h"
#include "cli.h"
#include "model/evaluate.h"
#include "data/idx.h"
#include "data/open.h"
#include "data/series.h"
#include "data/split.h"
#include "data/targets.h"
#include "model/model.h"
#include "config/spec.h"
#include "io/plot.h"
#include "pictures.h"

static void data_file(char *out, int size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
	if (access(out, F_OK))
		snprintf(out, size, "%s/%s.gz", dir, name);
}

/* Where --predictions goes, and the checkpoint's class names (when it
 * names its classes: names[0..nnames), else NULL). */
struct pred_file {
	FILE *f;
	char *const *names;
	int nnames;
};

/* Class k as a CSV cell: its name when the checkpoint has one (quoted
 * when it holds a comma, a quote or a line break, as predict writes it),
 * else its number. */
static void put_class(const struct pred_file *pf, int k)
{
	const char *name = k < pf->nnames ? pf->names[k] : NULL;

	if (!name) {
		fprintf(pf->f, "%d", k);
	} else if (!strpbrk(name, ",\"\n\r")) {
		fputs(name, pf->f);
	} else {
		fputc('"', pf->f);
		for (const char *p = name; *p; p++) {
			if (*p == '"')
				fputc('"', pf->f);
			fputc(*p, pf->f);
		}
		fputc('"', pf->f);
	}
}

static int write_prediction(void *ctx, long index, int label, int predicted,
			    float prob)
{
	const struct pred_file *pf = ctx;

	fprintf(pf->f, "%ld,", index);
	put_class(pf, label);
	fputc(',', pf->f);
	put_class(pf, predicted);
	return fprintf(pf->f, ",%.6f\n", prob) < 0;
}

static void print_report(const struct akk_eval_result *r, int confusion,
			 char *const *names, int nnames)
{
	int C = r->classes, w = 6;

	/* class names, when the checkpoint has them, widen the first column */
	for (int c = 0; c < nnames; c++)
		if ((int)strlen(names[c]) > w)
			w = strlen(names[c]) > 24 ? 24 : (int)strlen(names[c]);

	printf("samples %ld  loss %.4f  accuracy %.2f%%", r->n, r->loss, 100 * r->accuracy);
	/* a sequence (a language model's bytes): loss and accuracy are per
	 * step, and the loss in bits too */
	if (r->steps > 1)
		printf("  (per step, %d a sample)  bits per step %.4f", r->steps,
		       r->loss / log(2.0));
	printf("\n\n");
	printf("%-*s %9s %9s %8s\n", w, "class", "precision", "recall", "support");
	for (int c = 0; c < C; c++) {
		long tp = r->confusion[(size_t)c * C + c], pred = 0, support = 0;
		for (int k = 0; k < C; k++) {
			pred += r->confusion[(size_t)k * C + c];
			support += r->confusion[(size_t)c * C + k];
		}
		if (c < nnames) {
			/* a name read from a file (a text's byte: a newline)
			 * is escaped, then padded */
			int n = cli_put_safe(stdout, names[c], 0);
			printf("%*s", n < w ? w - n : 0, "");
		} else
			printf("%-*d", w, c);
		printf(" %8.2f%% %8.2f%% %8ld\n",
		       pred ? 100.0 * tp / pred : 0.0,
		       support ? 100.0 * tp / support : 0.0, support);
	}
	if (!confusion)
		return;
	printf("\nconfusion matrix (rows: label, columns: predicted)\n%6s", "");
	for (int c = 0; c < C; c++)
		printf(" %6d", c);
	printf("\n");
	for (int c = 0; c < C; c++) {
		printf("%6d", c);
		for (int k = 0; k < C; k++)
			printf(" %6ld", r->confusion[(size_t)c * C + k]);
		printf("\n");
	}
}

/* --confusion-svg: the confusion matrix as a heat map, written whole. */
static int write_confusion_svg(const char *path, const struct akk_eval_result *r,
			       const struct akk_checkpoint *ck, const char *name,
			       const char *ckpath, struct akk_err *e)
{
	char **names = cli_class_names(ck, r->classes), *buf = NULL, title[512];
	const char *base = strrchr(ckpath, '/');
	size_t len = 0;
	FILE *mem = NULL;
	int rc = -1;

	if (!names || !(mem = open_memstream(&buf, &len))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	snprintf(title, sizeof(title), "%s: confusion matrix (%s)", name && *name ? name : "akkctl",
		 base ? base + 1 : ckpath);
	rc = akk_plot_confusion(mem, r->confusion, r->classes, (const char *const *)names,
				title, path, e);
	if (fclose(mem) && !rc)
		rc = akk_err_set(e, "out of memory");
	mem = NULL;
	if (!rc)
		rc = cli_write_svg(path, buf, len, e);
out:
	if (mem)
		fclose(mem);
	free(buf);
	cli_class_names_free(names, r->classes);
	return rc;
}

/* The checkpoint's own validation data: its config's validation set,
 * read through data.format, or with a validation split the held-out
 * part of its training data, at the indices the checkpoint stores. */
static int load_own_validation(struct akk_dataset *d, const struct akk_spec *s,
			       const struct akk_checkpoint *ck, const char *ckpath,
			       struct akk_err *e)
{
	struct akk_dataset all = { 0 };
	int rc;

	if (akk_data_has(&s->data, AKK_DATA_VAL))
		return akk_data_open(d, &s->data, AKK_DATA_VAL, e) ||
		       /* named classes: numbered as in training */
		       akk_data_match_classes(d, &s->data, AKK_DATA_VAL, ck->class_names,
					      ck->nclass_names, e) ? -1 : 0;
	if (!(s->data.split > 0 || s->data.folds > 0))
		return akk_err_set(e, "the checkpoint's config has no validation data; give --data or --images and --labels");
	if (!ck->nheldout)
		return akk_err_at(e, ckpath, 0, 0, "the checkpoint has no held-out indices for its validation split");
	if (akk_data_open(&all, &s->data, AKK_DATA_TRAIN, e))
		return -1;
	rc = akk_dataset_subset(d, &all, ck->heldout, ck->nheldout, 0, e);
	akk_dataset_release(&all);
	if (rc) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return akk_err_at(e, ckpath, 0, 0, "%s (has the training data changed?)", msg);
	}
	return 0;
}

/* One evaluation: its options, then what it loads and computes. */
struct eval {
	const char *operand, *dir, *images, *labels, *preds, *svg, *pictures;
	char *ckpath;
	char ipath[1100], lpath[1100];
	int bs, confusion;
	struct akk_checkpoint ck;
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset d;
	struct akk_preprocess pre;
	struct akk_noise noise;
	struct akk_gate *gates, **gp;
	struct akk_eval_result res;
	struct akk_err e;
	FILE *pf;
	int made_preds;	/* remove the predictions file on failure */
	int rc;
};

/* The options: -1 to go on, else the exit status. */
static int eval_parse(struct eval *v, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "images", required_argument, NULL, 'i' },
		{ "labels", required_argument, NULL, 'l' },
		{ "batch", required_argument, NULL, 'b' },
		{ "confusion", no_argument, NULL, 'c' },
		{ "predictions", required_argument, NULL, 'p' },
		{ "confusion-svg", required_argument, NULL, 'S' },
		{ "pictures", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:l:b:cp:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': v->dir = optarg; break;
		case 'i': v->images = optarg; break;
		case 'l': v->labels = optarg; break;
		case 'b':
			if (cli_parse_int("--batch", optarg, 1, 65536, &v->bs))
				return cli_usage_error("eval");
			break;
		case 'c': v->confusion = 1; break;
		case 'p': v->preds = optarg; break;
		case 'S':
			if (!*optarg)
				return cli_errorf(EXIT_USAGE, "option '--confusion-svg' needs a file name");
			v->svg = optarg;
			break;
		case 'G':
			if (!*optarg)
				return cli_errorf(EXIT_USAGE, "option '--pictures' needs a file name");
			v->pictures = optarg;
			break;
		case 'h': return cli_help("eval");
		default: return cli_bad_option("eval", c, argv);
		}
	}
	if (cli_operands("eval", argc, argv))
		return EXIT_USAGE;
	if (v->dir && (v->images || v->labels))
		return cli_errorf(EXIT_USAGE, "give either --data or --images and --labels, not both");
	if (v->labels && !v->images)
		return cli_errorf(EXIT_USAGE, "--labels needs --images");
	if (v->svg && v->pictures && !strcmp(v->svg, "-") && !strcmp(v->pictures, "-"))
		return cli_errorf(EXIT_USAGE, "--confusion-svg - and --pictures - both want stdout");
	v->operand = argv[optind];
	return -1;
}

/* The checkpoint, its network and the data, each checked against the
 * others before anything is allocated for the network's weights. */
static int eval_load(struct eval *v)
{
	struct akk_spec *s = &v->s;
	struct akk_err *e = &v->e;
	int rc;

	if (ckpt_load(v->operand, 1, &v->ckpath, &v->ck, s, e))
		return -1;
	/* Stored tensors against the planned network, before allocating it. */
	if (akk_model_plan(&v->m, s, e) || akk_checkpoint_match(&v->ck, &v->m, v->ckpath, e))
		return -1;
	if (v->dir) {
		data_file(v->ipath, sizeof(v->ipath), v->dir, "t10k-images-idx3-ubyte");
		data_file(v->lpath, sizeof(v->lpath), v->dir, "t10k-labels-idx1-ubyte");
		v->images = v->ipath;
		v->labels = v->lpath;
	}
	if (v->images && !v->labels && !akk_data_labels_inside(s->data.format) &&
	    s->data.targets == AKK_TARGETS_LABELS)
		return akk_err_set(e, "--images in data format '%s' needs --labels: its labels are a file of their own",
				   s->data.format ? s->data.format : "idx");
	if (v->images && v->dir)	/* --data: the IDX test set */
		rc = akk_idx_dataset(&v->d, v->images, v->labels, e) ||
		     (s->data.targets == AKK_TARGETS_FILES ?
		      akk_err_set(e, "--data has no target files: give --images and --labels (the target file)") :
		      akk_targets_attach(&v->d, &s->data, NULL, v->images, e));
	else if (v->images)	/* files in the checkpoint's data.format */
		rc = akk_data_open_given(&v->d, &s->data, v->images, v->labels,
					 v->ck.class_names, v->ck.nclass_names, e);
	else
		rc = load_own_validation(&v->d, s, &v->ck, v->ckpath, e);
	if (rc)
		return -1;
	if (!v->images && akk_data_has(&s->data, AKK_DATA_VAL)) {	/* for messages */
		v->images = akk_data_file(&s->data, AKK_DATA_VAL);
		v->labels = akk_data_label_file(&s->data, AKK_DATA_VAL);
	}
	if (!v->images)
		v->images = s->path;
	if (!v->labels)
		v->labels = v->images;
	if ((long)v->d.in != akk_shape_size(s->input))
		return akk_err_at(e, v->images, 0, 0, "images have %zu values each, but the network takes %ld",
				  v->d.in, akk_shape_size(s->input));
	if (akk_model_check_ids(&v->m, &v->d, v->images, e))
		return -1;
	if (akk_checkpoint_input_map(&v->ck, s, &v->pre, e))
		return akk_err_at(e, v->ckpath, 0, 0, "%s",
				  "the checkpoint has no input map for its config");
	/* with heads, the heads compared with targets are that wide */
	int wt = akk_heads_width(s, v->m.classes, AKK_TARGET_TARGETS, v->d.targets);
	if (s->data.task == AKK_TASK_REGRESSION && (!v->d.y || v->d.targets != wt))
		return akk_err_at(e, v->labels, 0, 0, "%s: the network outputs %d regression targets",
				  v->d.y ? "the data has another number of targets" :
				  "the data has no regression targets", wt);
	if (s->data.task == AKK_TASK_REGRESSION && (v->preds || v->confusion))
		return akk_err_set(e, "--predictions and --confusion are for classification; the checkpoint's task is regression");
	if (v->d.labels && akk_dataset_steps(&v->d) != v->m.steps)
		return akk_err_at(e, v->labels, 0, 0, "the data has %d label%s per sample, but the network outputs %d step%s of %d classes",
				  akk_dataset_steps(&v->d), akk_dataset_steps(&v->d) == 1 ? "" : "s",
				  v->m.steps, v->m.steps == 1 ? "" : "s", v->m.classes);
	int wc = akk_heads_width(s, v->m.classes, AKK_TARGET_LABELS, v->d.classes);
	if (v->d.classes > wc)
		return akk_err_at(e, v->labels, 0, 0, "labels go up to %d, but the network outputs %d classes",
				  v->d.classes - 1, wc);
	if (v->pictures && s->data.targets == AKK_TARGETS_LABELS)
		return akk_err_set(e, "--pictures draws inputs and outputs of data.targets input or files; the checkpoint's targets are labels");
	if (v->pictures && (v->m.classes != akk_shape_size(s->input) || s->input.rank != 3 ||
			    (s->input.d[0] != 1 && s->input.d[0] != 3)))
		return akk_err_set(e, "--pictures needs images of 1 or 3 channels for input and output alike");
	if (v->svg && (s->nheads ? wc : v->m.classes) > AKK_PLOT_MAX_CLASSES)
		return akk_err_set(e, "--confusion-svg draws at most %d classes; the network has %d",
				   AKK_PLOT_MAX_CLASSES, v->m.classes);
	return 0;
}

/* The gates with the checkpoint's weights, then the forward passes (and
 * the predictions file). */
static int eval_run(struct eval *v)
{
	const struct akk_model *m = &v->m;
	struct akk_err *e = &v->e;
	struct akk_gate_config gc = akk_gate_config_eval(v->bs, v->s.seed);
	struct pred_file pfile;

	v->rc = EXIT_RUNTIME;
	v->gates = calloc(m->ngates, sizeof(*v->gates));
	v->gp = calloc(m->ngates, sizeof(*v->gp));
	if (!v->gates || !v->gp)
		return akk_err_set(e, "out of memory");
	for (int i = 0; i < m->ngates; i++) {
		v->gp[i] = &v->gates[i];
		if (akk_gate_init(&v->gates[i], &m->gates[i], &gc, e))
			return -1;
	}
	if (akk_checkpoint_restore(&v->ck, v->gp, m->ngates, v->ckpath, e)) {
		v->rc = EXIT_USAGE;
		return -1;
	}
	if (v->preds) {
		if (!(v->pf = fopen(v->preds, "w")))
			return akk_err_set(e, "cannot open '%s': %s", v->preds, strerror(errno));
		v->made_preds = 1;
		fprintf(v->pf, "index,label,predicted,probability\n");
	}
	akk_float_mode();
	pfile = (struct pred_file){ v->pf, v->ck.class_names, v->ck.nclass_names };
	/* evaluation noise: seeded per sample by the config's seed */
	akk_noise_init(&v->noise, &v->s.data, &v->pre, v->d.xtype, v->s.seed);
	if (akk_evaluate_noisy(v->gp, m, &v->d, &v->pre, &v->noise, v->bs, &v->res,
			       v->pf ? write_prediction : NULL, &pfile, e)) {
		char msg[sizeof(e->msg)];

		if (!v->res.not_finite)
			return -1;
		/* the checkpoint's weights are at fault: name it, exit 2 */
		v->rc = EXIT_USAGE;
		snprintf(msg, sizeof(msg), "%s", e->msg);
		return akk_err_at(e, v->ckpath, 0, 0, "%s", msg);
	}
	if (v->pf && fclose(v->pf)) {
		v->pf = NULL;
		return akk_err_set(e, "cannot write '%s': %s", v->preds, strerror(errno));
	}
	v->pf = NULL;
	/* Weights that are not finite, or so large that the logits overflow,
	 * give no meaningful figure: never print "loss nan" as a result. */
	if (!isfinite(v->res.loss)) {
		v->rc = EXIT_USAGE;
		return akk_err_at(e, v->ckpath, 0, 0, "evaluation gives %s: the weights are not usable",
				  isnan(v->res.loss) ? "a loss of NaN" : "an infinite loss");
	}
	return 0;
}

/* A series: the naive forecast's figures beside the network's, the
 * baseline a forecaster has to beat. */
static int print_naive(struct eval *v)
{
	struct akk_eval_result naive;

	if (akk_evaluate_naive(&v->s, &v->d, &naive, &v->e))
		return -1;
	printf("naive    loss %.4f  rmse %.4g  r2 %.4f  (every step: the window's last value)\n",
	       naive.loss, naive.rmse, naive.r2);
	return 0;
}

/* --pictures: the first samples (at most 8) in rows: inputs, noisy
 * inputs, outputs, in the data's units; written whole. */
static int write_pictures(struct eval *v)
{
	const struct akk_shape in = v->s.input;
	/* 8 samples, at most a forward pass of the gates (--batch) */
	int most = v->bs < 8 ? v->bs : 8, width, height, rc = -1;
	int count = v->d.n < (size_t)most ? (int)v->d.n : most;
	size_t per = (size_t)akk_shape_size(in);
	float *clean = malloc((size_t)count * per * sizeof(float));
	float *noisy = malloc((size_t)count * per * sizeof(float));
	float *out = malloc((size_t)count * per * sizeof(float));
	const char *base = strrchr(v->ckpath, '/');
	char *buf = NULL, title[512];
	size_t len = 0;
	FILE *mem = NULL;

	if (!clean || !noisy || !out || !(mem = open_memstream(&buf, &len))) {
		akk_err_set(&v->e, "out of memory");
		goto out;
	}
	if (akk_evaluate_rows(v->gp, &v->m, &v->d, &v->pre, &v->noise, count, clean,
			      noisy, out, &v->e))
		goto out;
	snprintf(title, sizeof(title), "%s: inputs, noisy inputs, outputs (%s)",
		 v->s.name && *v->s.name ? v->s.name : "akkctl", base ? base + 1 : v->ckpath);
	{
		const struct akk_grid_row rows[3] = {
			{ "input", clean },
			{ v->noise.std > 0 ? "noisy input" : "input seen", noisy },
			{ "output", out },
		};
		akk_image_grid_size(3, count, in.d[1], in.d[2], &width, &height);
		rc = akk_image_grid_svg(mem, rows, 3, count, in.d[0], in.d[1], in.d[2],
					v->res.peak, title, v->pictures, &v->e);
	}
	if (fclose(mem) && !rc)
		rc = akk_err_set(&v->e, "out of memory");
	mem = NULL;
	if (!rc)
		rc = cli_write_svg(v->pictures, buf, len, &v->e);
out:
	if (mem)
		fclose(mem);
	free(buf);
	free(clean);
	free(noisy);
	free(out);
	return rc;
}

/* network.outputs: a line per head, its own (unweighted) loss and its
 * metric: the accuracy of a classifier head, the MSE and RMSE of the
 * others, and for a head compared with the input the PSNR too, per
 * image then averaged as data.targets' PSNR is (nn/loss.h: akk_reg_psnr),
 * when that input is pixels (bytes over data.scale 255: in [0, 1]). */
static void print_heads(const struct akk_spec *s, const struct akk_eval_result *r,
			int pixels)
{
	double v[2 * AKK_MAX_HEADS];

	akk_heads_values(s, r->heads, v);
	printf("\n%-12s %10s  metrics\n", "output", "loss");
	for (int i = 0; i < s->nheads; i++) {
		const struct akk_head_spec *h = &s->heads[i];
		double mse = v[2 * i + 1] * v[2 * i + 1];

		printf("%-12s %10.4g  ", h->name, v[2 * i]);
		if (h->target == AKK_TARGET_LABELS)
			printf("accuracy %.2f%%\n", 100 * v[2 * i + 1]);
		else if (h->target == AKK_TARGET_INPUT && pixels && r->heads[i].reg.samples)
			printf("mse %.4g  rmse %.4g  psnr %.2f dB\n", mse, v[2 * i + 1],
			       akk_reg_psnr(&r->heads[i].reg, 1));
		else
			printf("mse %.4g  rmse %.4g\n", mse, v[2 * i + 1]);
	}
}

/* The report on stdout (or the SVG there, for --confusion-svg -). */
static int eval_print(struct eval *v)
{
	const struct akk_eval_result *res = &v->res;

	v->rc = EXIT_RUNTIME;
	if (v->svg && write_confusion_svg(v->svg, res, &v->ck, v->s.name, v->ckpath, &v->e))
		return -1;
	if (v->pictures && write_pictures(v))
		return -1;
	if ((v->svg && !strcmp(v->svg, "-")) || (v->pictures && !strcmp(v->pictures, "-")))
		;	/* stdout holds the SVG alone */
	else if (res->regression) {	/* RMSE and R^2 */
		printf("samples %ld  loss %.4f  rmse %.4g  r2 %.4f", res->n, res->loss,
		       res->rmse, res->r2);
		if (res->psnr_on)
			printf("  psnr %.2f dB", res->psnr);
		printf("\n");
		if (res->noisy)
			printf("noisy input psnr %.2f dB (noise std %g, seeded per sample)\n",
			       res->psnr_input, (double)v->noise.std);
		else if (res->psnr_on && v->s.data.targets == AKK_TARGETS_FILES &&
			 res->psnr_input > 0)
			printf("input psnr %.2f dB (the input against its target)\n", res->psnr_input);
		if (akk_series_is(&v->d) && print_naive(v))
			return -1;
	}
	else
		print_report(res, v->confusion, v->ck.class_names, v->ck.nclass_names);
	if (res->nheads && !(v->svg && !strcmp(v->svg, "-")))
		print_heads(&v->s, res, v->d.xtype == AKK_X_U8 &&
			    akk_preprocess_scale(&v->s.data, AKK_X_U8) == 255);
	v->rc = EXIT_OK;
	return 0;
}

int cmd_eval(int argc, char **argv)
{
	struct eval v = { .bs = 256, .rc = EXIT_USAGE };
	int rc = eval_parse(&v, argc, argv);

	if (rc >= 0)
		return rc;
	if (eval_load(&v) || eval_run(&v) || eval_print(&v)) {
		cli_report(&v.e, v.rc);
		if (v.made_preds) {
			if (v.pf)
				fclose(v.pf);
			v.pf = NULL;
			unlink(v.preds);
		}
	}
	if (v.pf)
		fclose(v.pf);
	akk_eval_result_release(&v.res);
	for (int i = 0; v.gates && i < v.m.ngates; i++)
		akk_gate_release(&v.gates[i]);
	free(v.gates);
	free(v.gp);
	akk_dataset_release(&v.d);
	akk_preprocess_release(&v.pre);
	akk_model_release(&v.m);
	akk_spec_release(&v.s);
	akk_checkpoint_release(&v.ck);
	free(v.ckpath);
	return v.rc;
}
