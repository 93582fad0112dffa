/* open.c - dispatching a config's data to its format's reader. */
#include "data/open.h"

#include <limits.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/cifar.h"
#include "data/csv.h"
#include "data/idx.h"
#include "data/image.h"
#include "data/image_set.h"
#include "data/npy.h"
#include "data/series.h"
#include "data/targets.h"
#include "data/pnm.h"
#include "data/text.h"

int akk_data_has(const struct akk_data_spec *s, enum akk_data_part part)
{
	return akk_data_files_named(part == AKK_DATA_TRAIN ? &s->train : &s->val);
}

/* ---- the formats -------------------------------------------------------- */

#define TRAIN(part) ((part) == AKK_DATA_TRAIN)

static const struct akk_data_files *part_of(const struct akk_data_spec *s,
					    enum akk_data_part part)
{
	return TRAIN(part) ? &s->train : &s->val;
}

static int idx_inputs(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e);

/* Without labels (data.targets input or files): the images alone. */
static int idx_open(struct akk_dataset *d, const struct akk_data_spec *s,
		    enum akk_data_part part, struct akk_err *e)
{
	if (!part_of(s, part)->labels)
		return idx_inputs(d, part_of(s, part)->images, s, e);
	return akk_idx_dataset_layout(d, part_of(s, part)->images,
				      part_of(s, part)->labels,
				      s->layout_nhwc, e);
}

static const char *idx_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	return part_of(s, part)->images;
}

static int npy_open(struct akk_dataset *d, const struct akk_data_spec *s,
		    enum akk_data_part part, struct akk_err *e)
{
	return akk_npy_dataset(d, part_of(s, part)->features,
			       part_of(s, part)->labels,
			       s->layout_nhwc, e);
}

static const char *npy_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	return part_of(s, part)->features;
}

static int npy_inputs(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e)
{
	return akk_npy_dataset(d, path, NULL, ds ? ds->layout_nhwc : 0, e);
}

static int cifar_open(struct akk_dataset *d, const struct akk_data_spec *s,
		      enum akk_data_part part, struct akk_err *e)
{
	const struct akk_path_list *f = &part_of(s, part)->files;

	return akk_cifar_dataset(d, (const char *const *)f->v, f->n, e);
}

static const char *cifar_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	const struct akk_path_list *f = &part_of(s, part)->files;

	return f->n ? f->v[0] : NULL;
}

static int cifar_inputs(struct akk_dataset *d, const char *path,
			const struct akk_data_spec *ds, struct akk_err *e)
{
	(void)ds;
	return akk_cifar_dataset(d, &path, 1, e);
}

static int csv_open(struct akk_dataset *d, const struct akk_data_spec *s,
		    enum akk_data_part part, struct akk_err *e)
{
	return akk_csv_dataset(d, part_of(s, part)->file,
			       part_of(s, part)->targets,
			       &s->csv, s->task == AKK_TASK_REGRESSION, e);
}

static const char *csv_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	return part_of(s, part)->file;
}

static int csv_inputs(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e)
{
	static const struct akk_csv_spec csv_defaults = { .label = { .index = -1 } };

	if (ds && ds->window) {	/* a series: its windows, the targets' past as inputs */
		const struct akk_series sr = { ds->window, ds->horizon, ds->stride };

		if (akk_csv_dataset(d, path, NULL, &ds->csv, 1, e) ||
		    akk_series_inputs(d, &sr, path, e)) {
			akk_dataset_release(d);
			return -1;
		}
		return 0;
	}
	return akk_csv_inputs(d, path, ds ? &ds->csv : &csv_defaults, e);
}

static int text_open(struct akk_dataset *d, const struct akk_data_spec *s,
		     enum akk_data_part part, struct akk_err *e)
{
	const struct akk_text t = { s->text_len, s->text_stride };
	const struct akk_data_files *f = part_of(s, part);

	if (f->files.n)
		return akk_text_dataset(d, (const char *const *)f->files.v, f->files.n, &t, e);
	return akk_text_dataset(d, (const char *const *)&f->file, 1, &t, e);
}

/* The text's file, or the first of its files. */
static const char *text_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	const struct akk_data_files *f = part_of(s, part);

	return f->file ? f->file : f->files.n ? f->files.v[0] : NULL;
}

/* A text to predict: cut into windows as training cut its text (the
 * checkpoint's data.text); akk_data_match_inputs renumbers its bytes to
 * the training vocabulary. */
static int text_inputs(struct akk_dataset *d, const char *path,
		       const struct akk_data_spec *ds, struct akk_err *e)
{
	if (!ds || ds->text_len < 1)
		return akk_err_at(e, path, 0, 0, "a text is read as a language model's windows, "
				  "and this network was not trained on text (data.format: text)");
	const struct akk_text t = { ds->text_len, ds->text_stride };
	return akk_text_dataset(d, &path, 1, &t, e);
}

static void text_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	(void)labels;
	(void)one;
	f->file = samples;
}

static int pnm_inputs(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e)
{
	(void)ds;
	return akk_pnm_dataset(d, path, e);
}

static int images_open(struct akk_dataset *d, const struct akk_data_spec *s,
		       enum akk_data_part part, struct akk_err *e)
{
	const struct akk_data_files *f = part_of(s, part);

	if (f->folder)
		return akk_image_folder_dataset(d, f->folder, s->image.d[0], s->image.d[1],
						s->image.d[2], e);
	return akk_image_list_dataset(d, f->list, s->image.d[0], s->image.d[1],
				      s->image.d[2], e);
}

static const char *images_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	const struct akk_data_files *f = part_of(s, part);

	return f->folder ? f->folder : f->list;
}

/* An image network's shape; a flat network takes grey images of their
 * own size (the caller checks the count of values). */
static int images_inputs(struct akk_dataset *d, const char *path,
			 const struct akk_data_spec *ds, struct akk_err *e)
{
	return ds && ds->image.rank ?
	       akk_image_inputs(d, path, ds->image.d[0], ds->image.d[1], ds->image.d[2], e) :
	       akk_image_inputs(d, path, 1, 0, 0, e);
}

/* Files named on the command line as a part's: samples in the format's
 * samples key, labels in its labels key (for the formats that keep their
 * labels inside, a CSV targets table when it is another file). one: room
 * for a one-file list (cifar10). */
static void idx_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	(void)one;
	f->images = samples;
	f->labels = labels;
}

static void npy_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	(void)one;
	f->features = samples;
	f->labels = labels;
}

static void cifar_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	(void)labels;
	one[0] = samples;
	f->files = (struct akk_path_list){ one, 1 };
}

static void csv_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	(void)one;
	f->file = samples;
	f->targets = labels && strcmp(labels, samples) ? labels : NULL;
}

/* A folder of class folders, else an image list. */
static void images_given(struct akk_data_files *f, char *samples, char *labels, char **one)
{
	struct stat st;

	(void)labels;
	(void)one;
	if (!stat(samples, &st) && S_ISDIR(st.st_mode))
		f->folder = samples;
	else
		f->list = samples;
}

/* One reader a line, keyed by its data.format name (the config's keys of
 * each format are spec.c's data_file_keys). open: a part of a config's
 * data, labelled; file: the file of that part's samples, for messages;
 * labels_inside: the labels are in that file too; match: the labels are
 * names, renumbered (by akk_data_match_classes) as training numbered
 * them; inputs: one
 * file of unlabelled input (akkctl predict); given: a part's keys set to
 * files named on the command line (akkctl eval --images, --labels). A
 * format without open is for input only. */
static const struct data_format {
	const char *name;
	int (*open)(struct akk_dataset *d, const struct akk_data_spec *s,
		    enum akk_data_part part, struct akk_err *e);
	const char *(*file)(const struct akk_data_spec *s, enum akk_data_part part);
	int labels_inside;
	int (*match)(struct akk_dataset *d, char *const *names, int n, const char *path,
		     struct akk_err *e);
	int (*inputs)(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e);
	void (*given)(struct akk_data_files *f, char *samples, char *labels, char **one);
} formats[] = {
	{ "idx", idx_open, idx_file, 0, NULL, idx_inputs, idx_given },
	{ "npy", npy_open, npy_file, 0, NULL, npy_inputs, npy_given },
	{ "cifar10", cifar_open, cifar_file, 1, NULL, cifar_inputs, cifar_given },
	{ "csv", csv_open, csv_file, 1, akk_csv_match_classes, csv_inputs, csv_given },
	{ "images", images_open, images_file, 1, akk_csv_match_classes, images_inputs,
	  images_given },
	{ "text", text_open, text_file, 1, akk_text_match_vocab, text_inputs, text_given },
	{ "pnm", NULL, idx_file, 0, NULL, pnm_inputs, NULL },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};

/* The format called name (NULL: "idx", the default), or NULL. */
static const struct data_format *format_named(const char *name)
{
	for (const struct data_format *f = formats; f->name; f++)
		if (!strcmp(f->name, name ? name : "idx"))
			return f;
	return NULL;
}

const char *akk_data_file(const struct akk_data_spec *s, enum akk_data_part part)
{
	const struct data_format *f = format_named(s->format);

	return (f ? f->file : idx_file)(s, part);
}

const char *akk_data_label_file(const struct akk_data_spec *s,
				enum akk_data_part part)
{
	const struct data_format *f = format_named(s->format);

	if (f && f->labels_inside)
		return f->file(s, part);
	return part_of(s, part)->labels;
}

/* A series' table cut into its windows (data/series.h); nothing for
 * other data. */
static int series_of(struct akk_dataset *d, const struct akk_data_spec *s,
		     const char *path, struct akk_err *e)
{
	const struct akk_series sr = { s->window, s->horizon, s->stride };

	if (!s->window)
		return 0;
	if (akk_series_windows(d, &sr, path, e)) {
		akk_dataset_release(d);
		return -1;
	}
	return 0;
}

/* data.targets (data/targets.h): the input, or the array in the file
 * target, read as predict reads the format's unlabelled input. */
static int targets_of(struct akk_dataset *d, const struct akk_data_spec *s,
		      const char *target, struct akk_err *e)
{
	struct akk_dataset t = { 0 };
	int rc;

	if (s->targets == AKK_TARGETS_FILES && target &&
	    akk_data_open_inputs(&t, s->format, target, s, e)) {
		akk_dataset_release(d);
		return -1;
	}
	rc = akk_targets_attach(d, s, s->targets == AKK_TARGETS_FILES && target ? &t : NULL,
				target ? target : akk_data_file(s, AKK_DATA_TRAIN), e);
	akk_dataset_release(&t);
	if (rc)
		akk_dataset_release(d);
	return rc;
}

int akk_data_open(struct akk_dataset *d, const struct akk_data_spec *s,
		  enum akk_data_part part, struct akk_err *e)
{
	const struct data_format *f = format_named(s->format);

	memset(d, 0, sizeof(*d));
	if (!akk_data_has(s, part))
		return akk_err_set(e, "the config has no %s data",
				   TRAIN(part) ? "training" : "validation");
	if (!f || !f->open)
		return akk_err_set(e, "data format '%s' has no reader", s->format);
	if (f->open(d, s, part, e))
		return -1;
	if (series_of(d, s, f->file(s, part), e))
		return -1;
	return targets_of(d, s, part_of(s, part)->target, e);
}

int akk_data_labels_inside(const char *format)
{
	const struct data_format *f = format_named(format);

	return f && f->labels_inside;
}

int akk_data_open_given(struct akk_dataset *d, const struct akk_data_spec *s,
			const char *samples, const char *labels, char *const *names,
			int n, struct akk_err *e)
{
	const struct data_format *f = format_named(s->format);
	struct akk_data_spec given = *s;	/* shallow: nothing here is freed */
	char *one[1];

	memset(d, 0, sizeof(*d));
	if (!f || !f->open || !f->given)
		return akk_err_set(e, "data format '%s' has no reader", s->format);
	if (!labels && !f->labels_inside && s->targets == AKK_TARGETS_LABELS)
		return akk_err_set(e, "data format '%s' keeps its labels in a file of their own: give it too",
				   f->name);
	if (!labels && s->targets == AKK_TARGETS_FILES)
		return akk_err_set(e, "data.targets is files: give the target file too");
	given.val = (struct akk_data_files){ 0 };
	/* data.targets input or files: no labels; files: labels is the
	 * target file */
	f->given(&given.val, (char *)samples,
		 s->targets == AKK_TARGETS_LABELS ? (char *)labels : NULL, one);
	if (f->open(d, &given, AKK_DATA_VAL, e) ||
	    series_of(d, &given, samples, e) ||
	    targets_of(d, &given, labels, e))
		return -1;
	return akk_data_match_classes(d, &given, AKK_DATA_VAL, names, n, e);
}

int akk_data_match_classes(struct akk_dataset *d, const struct akk_data_spec *s,
			   enum akk_data_part part, char *const *names, int n,
			   struct akk_err *e)
{
	const struct data_format *f = format_named(s->format);

	if (!f || !f->match)
		return 0;
	return f->match(d, names, n, f->file(s, part), e);
}

/* An IDX image file alone: its bytes become d's, without labels. */
static int idx_inputs(struct akk_dataset *d, const char *path,
		      const struct akk_data_spec *ds, struct akk_err *e)
{
	struct akk_idx x;

	(void)ds;
	if (akk_idx_load(&x, path, e))
		return -1;
	if (x.rank != 3) {
		int rank = x.rank;

		akk_idx_release(&x);
		return akk_err_at(e, path, 0, 0, "not an image file: rank %d, expected rank 3 (N x H x W)",
				  rank);
	}
	if (x.dims[1] > INT_MAX || x.dims[2] > INT_MAX) {
		akk_idx_release(&x);
		return akk_err_at(e, path, 0, 0, "image size %lu x %lu is too large",
				  (unsigned long)x.dims[1], (unsigned long)x.dims[2]);
	}
	d->n = x.count;
	d->in = x.item;
	d->c = 1;
	d->h = (int)x.dims[1];
	d->w = (int)x.dims[2];
	d->xtype = AKK_X_U8;
	d->x8 = x.data;
	return 0;
}

const char *akk_data_input_format(const char *path, const char *config_format)
{
	size_t n = strlen(path);
	struct stat st;

	if (akk_image_name(path) || (!stat(path, &st) && S_ISDIR(st.st_mode)))
		return "images";
	if (n > 4 && (!strcasecmp(path + n - 4, ".pgm") || !strcasecmp(path + n - 4, ".ppm") ||
		      !strcasecmp(path + n - 4, ".pnm")))
		return "pnm";
	return config_format ? config_format : "idx";
}

int akk_data_open_inputs(struct akk_dataset *d, const char *format,
			 const char *path, const struct akk_data_spec *ds,
			 struct akk_err *e)
{
	const struct data_format *f = format_named(format);

	memset(d, 0, sizeof(*d));
	if (!f || !f->inputs)
		return akk_err_set(e, "data format '%s' has no reader for unlabelled input", format);
	return f->inputs(d, path, ds, e);
}

int akk_data_match_inputs(struct akk_dataset *d, char *const *names, int n,
			  const char *path, struct akk_err *e)
{
	if (!akk_text_is(d))
		return 0;
	if (!names)
		return akk_err_at(e, path, 0, 0, "the checkpoint holds no vocabulary for a text");
	return akk_text_match_vocab(d, names, n, path, e);
}
