/* cmd_eval.c - akkctl eval: evaluate a checkpoint on a dataset.
 *
 * The network is rebuilt from the checkpoint alone (its stored config);
 * the data comes from that config's validation set (read through its
 * data.format; with a validation split, the checkpoint's held-out part of
 * the training data), from --data DIR (t10k-images-idx3-ubyte and
 * t10k-labels-idx1-ubyte, plain or .gz) or from --images/--labels (IDX).
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
#include "ckpt_files.h"
#include "cli.h"
#include "model/evaluate.h"
#include "data/idx.h"
#include "data/csv.h"
#include "data/open.h"
#include "data/split.h"
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

	printf("samples %ld  loss %.4f  accuracy %.2f%%\n\n", r->n, r->loss,
	       100 * r->accuracy);
	printf("%-*s %9s %9s %8s\n", w, "class", "precision", "recall", "support");
	for (int c = 0; c < C; c++) {
		long tp = r->confusion[(size_t)c * C + c], pred = 0, support = 0;
		for (int k = 0; k < C; k++) {
			pred += r->confusion[(size_t)k * C + c];
			support += r->confusion[(size_t)c * C + k];
		}
		if (c < nnames)
			printf("%-*.*s", w, w, names[c]);
		else
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
		       /* named CSV classes: numbered as in training (h13csv) */
		       (!strcmp(s->data.format, "csv") &&
			akk_csv_match_classes(d, ck->class_names, ck->nclass_names,
					      s->data.val_file, e)) ? -1 : 0;
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

int cmd_eval(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },
		{ "images", required_argument, NULL, 'i' },
		{ "labels", required_argument, NULL, 'l' },
		{ "batch", required_argument, NULL, 'b' },
		{ "confusion", no_argument, NULL, 'c' },
		{ "predictions", required_argument, NULL, 'p' },
		{ "confusion-svg", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL, *images = NULL, *labels = NULL, *preds = NULL, *svg = NULL;
	char *ckpath = NULL;
	char ipath[1100], lpath[1100];
	int bs = 256, confusion = 0, c, rc = EXIT_USAGE;
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_dataset d = { 0 };
	struct akk_preprocess pre = { 0 };
	struct akk_gate *gates = NULL, **gp = NULL;
	struct akk_eval_result res = { 0 };
	struct akk_err e = { 0 };
	FILE *pf = NULL;
	struct pred_file pfile;
	int made_preds = 0;	/* remove the predictions file on failure */

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:l:b:cp:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'i': images = optarg; break;
		case 'l': labels = optarg; break;
		case 'b':
			if (cli_parse_int("--batch", optarg, 1, 65536, &bs))
				return cli_usage_error("eval");
			break;
		case 'c': confusion = 1; break;
		case 'p': preds = optarg; break;
		case 'S':
			if (!*optarg)
				return cli_errorf(EXIT_USAGE, "option '--confusion-svg' needs a file name");
			svg = optarg;
			break;
		case 'h': return cli_help("eval");
		default: return cli_bad_option("eval", c, argv);
		}
	}
	if (optind != argc - 1) {
		if (optind == argc)
			cli_errorf(EXIT_USAGE, "eval needs a CHECKPOINT");
		else
			cli_errorf(EXIT_USAGE, "unexpected argument '%s'", argv[optind + 1]);
		return cli_usage_error("eval");
	}
	if (dir && (images || labels))
		return cli_errorf(EXIT_USAGE, "give either --data or --images and --labels, not both");
	if (!images != !labels)
		return cli_errorf(EXIT_USAGE, "--images and --labels go together");
	if (ckpt_load(argv[optind], 1, &ckpath, &ck, &s, &e))
		goto report;
	/* Stored tensors against the planned network, before allocating it. */
	if (akk_model_plan(&m, &s, &e) || akk_checkpoint_match(&ck, &m, ckpath, &e))
		goto report;
	if (dir) {
		data_file(ipath, sizeof(ipath), dir, "t10k-images-idx3-ubyte");
		data_file(lpath, sizeof(lpath), dir, "t10k-labels-idx1-ubyte");
		images = ipath;
		labels = lpath;
	}
	if (images) {
		if (akk_idx_dataset(&d, images, labels, &e))
			goto report;
	} else if (load_own_validation(&d, &s, &ck, ckpath, &e)) {
		goto report;
	}
	if (!images)
		images = s.data.val_images ? s.data.val_images : s.path;
	if (!labels)
		labels = s.data.val_labels ? s.data.val_labels : s.path;
	if ((long)d.in != akk_shape_size(s.input)) {
		akk_err_at(&e, images, 0, 0, "images have %zu values each, but the network takes %ld",
			   d.in, akk_shape_size(s.input));
		goto report;
	}
	if (akk_checkpoint_input_map(&ck, &s, &pre, &e)) {
		akk_err_at(&e, ckpath, 0, 0, "%s", "the checkpoint has no input map for its config");
		goto report;
	}
	if (s.data.task == AKK_TASK_REGRESSION && (!d.y || d.targets != m.classes)) {
		akk_err_at(&e, labels, 0, 0, "%s: the network outputs %d regression targets",
			   d.y ? "the data has another number of targets" : "the data has no regression targets",
			   m.classes);
		goto report;
	}
	if (s.data.task == AKK_TASK_REGRESSION && (preds || confusion)) {
		akk_err_set(&e, "--predictions and --confusion are for classification; the checkpoint's task is regression");
		goto report;
	}
	if (d.classes > m.classes) {
		akk_err_at(&e, labels, 0, 0, "labels go up to %d, but the network outputs %d classes",
			   d.classes - 1, m.classes);
		goto report;
	}
	if (svg && m.classes > AKK_PLOT_MAX_CLASSES) {
		akk_err_set(&e, "--confusion-svg draws at most %d classes; the network has %d",
			    AKK_PLOT_MAX_CLASSES, m.classes);
		goto report;
	}
	rc = EXIT_RUNTIME;
	gates = calloc(m.ngates, sizeof(*gates));
	gp = calloc(m.ngates, sizeof(*gp));
	if (!gates || !gp) {
		akk_err_set(&e, "out of memory");
		goto report;
	}
	for (int i = 0; i < m.ngates; i++) {
		gp[i] = &gates[i];
		if (akk_gate_init(&gates[i], &m.gates[i], bs, 1, 1, 0, 1, 1, s.seed, &e))
			goto report;
	}
	if (akk_checkpoint_restore(&ck, gp, m.ngates, ckpath, &e)) {
		rc = EXIT_USAGE;
		goto report;
	}
	if (preds) {
		if (!(pf = fopen(preds, "w"))) {
			akk_err_set(&e, "cannot open '%s': %s", preds, strerror(errno));
			goto report;
		}
		made_preds = 1;
		fprintf(pf, "index,label,predicted,probability\n");
	}
	akk_float_mode();
	pfile = (struct pred_file){ pf, ck.class_names, ck.nclass_names };
	if (akk_evaluate(gp, &m, &d, &pre, bs, &res, pf ? write_prediction : NULL, &pfile, &e))
		goto report;
	if (pf && fclose(pf)) {
		pf = NULL;
		akk_err_set(&e, "cannot write '%s': %s", preds, strerror(errno));
		goto report;
	}
	pf = NULL;
	/* Weights that are not finite, or so large that the logits overflow,
	 * give no meaningful figure: never print "loss nan" as a result. */
	if (!isfinite(res.loss)) {
		akk_err_at(&e, ckpath, 0, 0, "evaluation gives %s: the weights are not usable",
			   isnan(res.loss) ? "a loss of NaN" : "an infinite loss");
		rc = EXIT_USAGE;
		goto report;
	}
	rc = EXIT_RUNTIME;
	if (svg && write_confusion_svg(svg, &res, &ck, s.name, ckpath, &e))
		goto report;
	if (svg && !strcmp(svg, "-"))	/* "-": stdout holds the SVG alone */
		;
	else if (res.regression)	/* issue 13: RMSE and R^2 */
		printf("samples %ld  loss %.4f  rmse %.4g  r2 %.4f\n", res.n, res.loss,
		       res.rmse, res.r2);
	else
		print_report(&res, confusion, ck.class_names, ck.nclass_names);
	rc = EXIT_OK;
	goto out;
report:
	cli_report(&e, rc);
	if (made_preds) {
		if (pf)
			fclose(pf);
		pf = NULL;
		unlink(preds);
	}
out:
	if (pf)
		fclose(pf);
	akk_eval_result_release(&res);
	for (int i = 0; gates && i < m.ngates; i++)
		akk_gate_release(&gates[i]);
	free(gates);
	free(gp);
	akk_dataset_release(&d);
	akk_preprocess_release(&pre);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	free(ckpath);
	return rc;
}
