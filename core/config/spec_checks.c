/* spec_checks.c - the checks of a parsed config that span its sections:
 * the data against the loss and the input, validation for what watches
 * it, augmentation for images only, the schedules' limits (see
 * spec.h). */
#include "config/spec.h"
#include "nn/recurrent.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Whether the config validates: a validation part in any format, or a
 * split held out of the training data. */
static int has_validation(const struct akk_data_spec *d)
{
	return akk_data_files_named(&d->val) || d->split > 0 || d->folds > 0;
}

int akk_data_files_named(const struct akk_data_files *f)
{
	return f->images || f->features || f->files.n > 0 || f->file ||
	       f->folder || f->list;
}

/* Early stopping and the plateau schedule watch validation metrics: a
 * config that has them needs validation data; a gate may use plateau
 * only when the global optimizer does (one watch decides for all). */
static int check_watch(const struct akk_spec *s, const char *file,
		       struct akk_err *e)
{
	const struct akk_mark *gm = &s->optim.sched.mark;
	int plateau = s->optim.sched.kind == AKK_LR_PLATEAU;

	if (s->sched.early.on && !has_validation(&s->data))
		return akk_err_at(e, file, s->sched.early.mark.line,
				  s->sched.early.mark.col,
				  "'early_stopping' watches validation data, but the config has no data.validation");
	if (plateau && !has_validation(&s->data))
		return akk_err_at(e, file, gm->line, gm->col,
				  "schedule 'plateau' watches validation data, but the config has no data.validation");
	for (int i = 0; !plateau && i < s->ngates; i++) {
		const struct akk_lr_spec *l = &s->gates[i].optim.sched;
		if (s->gates[i].has_optim && l->kind == AKK_LR_PLATEAU)
			return akk_err_at(e, file, l->mark.line, l->mark.col,
					  "gate %d's schedule 'plateau' needs the global optimizer's schedule to be 'plateau' too",
					  i + 1);
	}
	return 0;
}

/* Augmentation crops, flips and shifts images: a table (a CSV file, or
 * .npy features of one dimension a sample, network.input [N]) has no
 * image shape to do it in, and a sequence (network.input [T, F]) is not
 * to be cropped or mirrored in time. */
static int check_augment(const struct akk_spec *s, const char *file,
			 struct akk_err *e)
{
	const struct akk_data_spec *d = &s->data;
	int csv = !strcmp(d->format, "csv");

	if (!d->augment)
		return 0;
	if (s->input.rank == 2)
		return akk_err_at(e, file, d->augment_mark.line, d->augment_mark.col,
				  "'augment' needs images, but network.input [%d, %d] is a sequence",
				  s->input.d[0], s->input.d[1]);
	if (!(csv || (!strcmp(d->format, "npy") && s->input.rank < 2)))
		return 0;
	return akk_err_at(e, file, d->augment_mark.line, d->augment_mark.col,
			  "'augment' needs images, but data format '%s' gives a table (%s)",
			  d->format, csv ? "one row of features a sample" :
			  "network.input has one dimension");
}

/* The pipeline schedule's micro-batches split one batch, and gradient
 * accumulation needs a schedule that steps once per batch group: wheels
 * steps after every batch on stale weights. Data parallelism reduces the
 * gradient of every batch, so neither mixes with it (yet). */
static int check_pipeline(const struct akk_spec *s, const char *file,
			  struct akk_err *e)
{
	const struct akk_schedule_spec *k = &s->sched;

	if (k->mode == AKK_MODE_PIPELINE && k->micro_batches > k->batch_size)
		return akk_err_at(e, file, k->mark.line, k->mark.col,
				  "schedule.micro_batches %d is more than schedule.batch_size %d: every micro-batch needs a sample",
				  k->micro_batches, k->batch_size);
	if (k->mode == AKK_MODE_WHEELS && k->accumulate > 1)
		return akk_err_at(e, file, k->mark.line, k->mark.col,
				  "schedule.accumulate needs mode flip-flop or pipeline: wheels steps after every batch");
	if (k->data_parallel && (k->mode == AKK_MODE_PIPELINE || k->accumulate > 1))
		return akk_err_at(e, file, k->mark.line, k->mark.col,
				  "schedule.parallel: data does not work with %s yet",
				  k->mode == AKK_MODE_PIPELINE ? "mode pipeline" : "schedule.accumulate");
	return 0;
}

/* data.targets input or files: a regression on the data's own values
 * (data/targets.h), from formats that hold arrays; geometric augmentation
 * would move the input away from its target. */
static int check_targets(struct akk_spec *s, const char *file, struct akk_err *e)
{
	struct akk_data_spec *d = &s->data;
	const struct akk_mark at = d->targets_mark;
	const char *name = d->targets == AKK_TARGETS_INPUT ? "input" : "files";

	if (d->noise > 0 && !strcmp(d->format, "text"))
		return akk_err_at(e, file, d->noise_mark.line, d->noise_mark.col,
				  "'noise' would change the token ids of a text");
	if (d->targets == AKK_TARGETS_LABELS)
		return 0;
	if (d->task_mark.line && d->task != AKK_TASK_REGRESSION)
		return akk_err_at(e, file, d->task_mark.line, d->task_mark.col,
				  "data.targets: %s is a regression on values: data.task must be regression (or left out)",
				  name);
	if (!strcmp(d->format, "text") ||
	    (d->targets == AKK_TARGETS_FILES && strcmp(d->format, "idx") && strcmp(d->format, "npy")))
		return akk_err_at(e, file, at.line, at.col,
				  "data.targets: %s does not apply to data format '%s'%s", name, d->format,
				  d->targets == AKK_TARGETS_FILES ? " (target files are IDX or .npy: formats idx and npy)" : "");
	if (d->augment && (d->crop_padding || d->translate || d->flip))
		return akk_err_at(e, file, d->augment_mark.line, d->augment_mark.col,
				  "crop_padding, translate and flip would move the input but not its target (data.targets: %s); 'noise' is the augmentation for it",
				  name);
	d->task = AKK_TASK_REGRESSION;
	return 0;
}

/* data.task against the loss, the per-channel lists against the input,
 * and the pixel map's floats. */
static int check_data(struct akk_spec *s, const char *file, struct akk_err *e)
{
	if (check_targets(s, file, e))
		return -1;
	/* regression takes the losses that compare with float targets;
	 * best.bin is best by loss unless told */
	if (s->data.task == AKK_TASK_REGRESSION && !s->nheads && s->loss != AKK_LOSS_MSE &&
	    s->loss != AKK_LOSS_MAE && s->loss != AKK_LOSS_HUBER) {
		struct akk_mark at = s->loss_mark.line ? s->loss_mark : s->data.mark;
		return akk_err_at(e, file, at.line, at.col,
				  "data.task regression needs loss mse, mae or huber, not '%s'",
				  akk_loss_name(s->loss));
	}
	if (s->input.rank == 3 && (s->input.d[0] == 1 || s->input.d[0] == 3))
		s->data.image = s->input;	/* PNG and JPEG files are read so */
	else if (!strcmp(s->data.format, "images"))
		return akk_err_at(e, file, s->input_mark.line, s->input_mark.col,
				  "data format 'images' needs network.input [C, H, W] with 1 or 3 channels");
	if (s->out.best_by < 0)
		s->out.best_by = s->data.task == AKK_TASK_REGRESSION ? AKK_BEST_LOSS
								      : AKK_BEST_ACCURACY;
	/* per-channel lists have one value per channel of network.input
	 * (akk_shape_channels) */
	for (int i = 0; i < 2; i++) {
		const struct akk_channels *ch = i ? &s->data.std_ch : &s->data.mean_ch;
		if (ch->n && ch->n != akk_shape_channels(s->input))
			return akk_err_at(e, file, ch->mark.line, ch->mark.col,
					  "'%s' has %d value%s, but network.input has %d channel%s",
					  i ? "std" : "mean", ch->n, ch->n == 1 ? "" : "s",
					  akk_shape_channels(s->input), akk_shape_channels(s->input) == 1 ? "" : "s");
	}
	/* values that overflow together: the pixel map (data/preprocess.h),
	 * per channel */
	for (int ci = 0; ci < akk_shape_channels(s->input); ci++) {
		const struct akk_data_spec *d = &s->data;
		double mean = !d->normalize ? 0 : d->mean_ch.n ? d->mean_ch.v[ci] : d->mean;
		double std = !d->normalize ? 1 : d->std_ch.n ? d->std_ch.v[ci] : d->std;
		double a = 1.0 / ((double)d->scale * std);
		double b = -mean / std;
		if (!(fabs(a) <= FLT_MAX) || !(fabs(b) <= FLT_MAX))
			return akk_err_at(e, file, d->mark.line, d->mark.col,
					  "pixels would become (pixel / %g - %g) / %g, which overflows a float",
					  (double)d->scale, mean, std);
		if (!d->normalize || (!d->mean_ch.n && !d->std_ch.n))
			break;
	}
	return 0;
}

/* A series (data/series.h) is a CSV table whose windows predict
 * regression targets, fed to a network whose input is [window, F]; its
 * validation split is the end of the series, so folds (which would train
 * on the future) are refused. */
static int check_series(struct akk_spec *s, const char *file,
			struct akk_err *e)
{
	const struct akk_data_spec *d = &s->data;
	const struct akk_mark at = d->series_mark;

	if (!d->window)
		return 0;
	s->data.csv.series = 1;
	if (strcmp(d->format, "csv"))
		return akk_err_at(e, file, at.line, at.col,
				  "'series' reads a CSV table, but data format is '%s'", d->format);
	if (d->task != AKK_TASK_REGRESSION)
		return akk_err_at(e, file, at.line, at.col,
				  "'series' predicts values: set data.task: regression");
	if (d->folds)
		return akk_err_at(e, file, d->val_mark.line, d->val_mark.col,
				  "'folds' would train on the future of a series: use 'split', which holds out its end");
	if (s->input.rank != 2 || s->input.d[0] != d->window)
		return akk_err_at(e, file, s->input_mark.line, s->input_mark.col,
				  "a series window of %d rows needs network.input [%d, F] (F: the features and targets of a row)",
				  d->window, d->window);
	return 0;
}

/* A network whose first layer is an embedding reads token ids: the data's
 * values as they are, so scale is 1 (the default then, whatever the
 * data's type) and nothing normalises them. */
static int check_token_ids(struct akk_spec *s, const char *file,
			   struct akk_err *e)
{
	struct akk_data_spec *d = &s->data;

	if (!s->ngates || !s->gates[0].nlayers || s->gates[0].layers[0].ops != &akk_layer_embedding)
		return 0;
	if (d->scale_given && d->scale != 1)
		return akk_err_at(e, file, d->scale_mark.line, d->scale_mark.col,
				  "data.scale %g would make fractions of the token ids the first layer, embedding, reads: leave it out or set 1",
				  (double)d->scale);
	if (d->normalize || d->standardize)
		return akk_err_at(e, file, d->normalize ? d->normalize_mark.line : d->standardize_mark.line,
				  d->normalize ? d->normalize_mark.col : d->standardize_mark.col,
				  "data.%s would change the token ids the first layer, embedding, reads",
				  d->normalize ? "normalize" : "standardize");
	d->scale = 1;
	d->scale_given = 1;
	return 0;
}

/* A text (data/text.h) feeds token ids, one per step, to a network whose
 * input is [seq_len] and whose output has a class per step: the ids stay
 * as they are (scale 1, no normalize or standardize), and its validation
 * split is the end of the text, so no folds. */
static int check_text(struct akk_spec *s, const char *file, struct akk_err *e)
{
	struct akk_data_spec *d = &s->data;
	const struct akk_mark at = d->text_mark.line ? d->text_mark : d->mark;

	if (strcmp(d->format, "text")) {
		if (d->text_mark.line)
			return akk_err_at(e, file, at.line, at.col,
					  "'text' cuts a text into windows, but data format is '%s'",
					  d->format);
		return 0;
	}
	if (d->scale_given && d->scale != 1)
		return akk_err_at(e, file, d->scale_mark.line, d->scale_mark.col,
				  "data format 'text' feeds token ids as they are: data.scale must be 1, not %g",
				  (double)d->scale);
	if (d->normalize)
		return akk_err_at(e, file, d->normalize_mark.line, d->normalize_mark.col,
				  "data format 'text' feeds token ids as they are: remove data.normalize");
	if (d->standardize)
		return akk_err_at(e, file, d->standardize_mark.line, d->standardize_mark.col,
				  "data format 'text' feeds token ids as they are: remove data.standardize");
	if (d->task != AKK_TASK_CLASSIFICATION)
		return akk_err_at(e, file, at.line, at.col,
				  "data format 'text' predicts the next byte: data.task must be classification");
	if (d->folds)
		return akk_err_at(e, file, d->val_mark.line, d->val_mark.col,
				  "'folds' would train on the text after the held-out part: use 'split', which holds out its end");
	if (s->input.rank != 1 || (d->text_len && s->input.d[0] != d->text_len))
		return akk_err_at(e, file, s->input_mark.line, s->input_mark.col,
				  "data format 'text' needs network.input [T] with T the window's seq_len%s",
				  d->text_len ? "" : " (data.text.seq_len)");
	if (!d->text_len)
		d->text_len = s->input.d[0];
	if (!d->text_stride)
		d->text_stride = d->text_len;
	return 0;
}

/* Whether the network reads sequences: [T, F], or token ids [T] into an
 * embedding. */
static int reads_sequences(const struct akk_spec *s)
{
	return s->input.rank == 2 ||
	       (s->ngates && s->gates[0].nlayers &&
		s->gates[0].layers[0].ops == &akk_layer_embedding);
}

/* schedule.order: streams lays the samples out, in file order, as
 * batch-size contiguous streams (data/batch.h): it needs samples that are
 * consecutive windows of one sequence (a series' or a text's windows, or
 * sequences the user cut so), no folds, and no split but a series' or a
 * text's (which hold out the end; another holds out windows at random). A stateful recurrent layer carries each
 * batch row's state to the same row of the next batch, which continues
 * the row's stream only in that order, in whole batches: not split into
 * micro-batches (mode pipeline) or across ranks (parallel: data); and
 * only a forward pass ends where the next window starts. */
static int check_streams(const struct akk_spec *s, const char *file,
			 struct akk_err *e)
{
	const struct akk_data_spec *d = &s->data;
	const struct akk_schedule_spec *k = &s->sched;
	const struct akk_mark om = k->order_mark;
	int streams = k->order == AKK_ORDER_STREAMS;

	if (streams && !d->window && !reads_sequences(s))
		return akk_err_at(e, file, om.line, om.col,
				  "order: streams lays out windows of one sequence, but the network reads no sequences (network.input [T, F], or token ids into an embedding)");
	if (streams && !d->window && strcmp(d->format, "text") && d->split > 0)
		return akk_err_at(e, file, d->val_mark.line, d->val_mark.col,
				  "order: streams needs the training windows in one piece, but a split holds out windows at random: give validation data of its own (a series' or a text's split holds out its end)");
	if (streams && d->folds)
		return akk_err_at(e, file, om.line, om.col,
				  "order: streams trains on every window in stream order: it does not go with data.validation folds");
	if (streams && k->data_parallel)
		return akk_err_at(e, file, om.line, om.col,
				  "order: streams does not work with schedule.parallel: data yet");
	for (int g = 0; g < s->ngates; g++)
		for (int i = 0; i < s->gates[g].nlayers; i++) {
			const struct akk_layer_spec *l = &s->gates[g].layers[i];
			const char *why = NULL;
			if ((l->ops != &akk_layer_lstm && l->ops != &akk_layer_gru &&
			     l->ops != &akk_layer_rnn) || !l->AKK_REC_STATE)
				continue;
			if (!streams)
				why = "it needs schedule.order: streams, where row b of each batch continues row b's stream";
			else if (l->AKK_REC_DIR != AKK_REC_FORWARD)
				why = "only a forward pass ends where the next window starts: it needs direction forward";
			else if (k->mode == AKK_MODE_PIPELINE)
				why = "mode pipeline splits each batch's rows into micro-batches: use flip-flop or wheels";
			else if (k->data_parallel)
				why = "it does not work with schedule.parallel: data yet";
			if (why)
				return akk_err_at(e, file, l->mark.line, l->mark.col,
						  "%s: stateful carries each batch row's state into the next batch: %s",
						  l->ops->name, why);
		}
	return 0;
}

/* The keys that contradict each other across sections (but the gates'
 * split, which spec.c checks). */
int akk_spec_check_sections(struct akk_spec *s, const char *file, struct akk_err *e)
{
	if (check_data(s, file, e))
		return -1;
	for (int i = 0; s->sched.data_parallel && i < s->ngates; i++)
		if (s->gates[i].rank >= 0)
			return akk_err_at(e, file, s->gates[i].mark.line, s->gates[i].mark.col,
					  "gate %d has a rank, but with schedule.parallel: data every rank runs every gate",
					  i + 1);
	return check_augment(s, file, e) || check_series(s, file, e) ||
	       check_text(s, file, e) || check_token_ids(s, file, e) ||
	       check_streams(s, file, e) ||
	       check_watch(s, file, e) || check_pipeline(s, file, e) ? -1 : 0;
}
