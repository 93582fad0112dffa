/* data_spec.h - the data section of the training spec (config/spec.h):
 * the files of each part, the keys of each format, the input map, the
 * validation split. Parsed by spec_data.c; read by data/ and above. */
#ifndef AKK_DATA_SPEC_H
#define AKK_DATA_SPEC_H

#include "nn/layer.h"
#include "tensor/tensor.h"

/* The longest per-channel list (data.normalize). */
#define AKK_SPEC_MAX_CHANNELS 65536

/* A list of paths (data.train.files), owned. */
struct akk_path_list {
	char **v;
	int n;
};

/* data.format: csv (data/csv.h). A column of a CSV table: by name (the
 * file needs a header) or by 0-based index. */
struct akk_csv_col {
	char *name;			/* NULL: by index */
	int index;			/* 0-based; -1 (and no name): the last */
	struct akk_mark mark;
};

/* The most columns a CSV table may have (data/csv.h, man/akkctl.5). */
#define AKK_CSV_MAX_COLS 65536

enum akk_csv_delim { AKK_CSV_COMMA, AKK_CSV_WHITESPACE, AKK_CSV_SEMICOLON };

/* data.csv: how the table is read. */
#define AKK_CSV_HEADER_ANY 2
struct akk_csv_spec {
	int header;			/* 1: a header row names the columns;
					 * AKK_CSV_HEADER_ANY: a header row,
					 * whatever it holds (predict's
					 * --csv-header yes) */
	int skip;			/* lines skipped before header or data */
	int delimiter;			/* enum akk_csv_delim, default comma */
	struct akk_csv_col label;	/* default: the last column */
	struct akk_csv_col *targets;	/* regression columns, ntargets, owned;
					 * none: the label column */
	int ntargets;
	struct akk_csv_col *ignore;	/* columns read as neither features nor
					 * targets (a date), nignore, owned */
	int nignore;
	int series;			/* data.series is given: the table may
					 * have no feature column (a series'
					 * own values are its inputs) */
	struct akk_mark mark;		/* the csv: key */
};

/* data.task and output.best_by. */
enum akk_task { AKK_TASK_CLASSIFICATION, AKK_TASK_REGRESSION };
/* data.targets: what a sample's target is (data/targets.h): its label
 * (or a table's target columns), the sample's own input, or the sample
 * of the same index in the part's target file. */
enum akk_targets { AKK_TARGETS_LABELS, AKK_TARGETS_INPUT, AKK_TARGETS_FILES };
enum akk_best_by { AKK_BEST_ACCURACY, AKK_BEST_LOSS };

/* A list of floats, one per input channel. */
struct akk_channels {
	float *v;			/* n values, owned; NULL when n = 0 */
	int n;
	struct akk_mark mark;		/* the list */
};

/* The files of data.train or data.validation, the keys of its format
 * set (NULL, or no files: absent). Paths resolved against the config
 * file's directory (absolute paths stay as they are). */
struct akk_data_files {
	char *images, *labels;		/* idx images and labels; npy labels */
	char *features;			/* npy features */
	struct akk_path_list files;	/* cifar10 record files */
	/* csv: a table (file), and optionally the targets in a second table
	 * of as many rows (targets_file) */
	char *file, *targets;
	/* images: a folder of class folders, or an image list */
	char *folder, *list;
	/* data.targets: files: the part's targets, an IDX file
	 * (target_images) or a .npy file (target_features) of as many
	 * samples as its inputs */
	char *target;
};

struct akk_data_spec {
	char *format;			/* "idx", "csv", "npy", "cifar10",
					 * "images", "text" */
	struct akk_data_files train, val;	/* validation may be absent */
	struct akk_csv_spec csv;
	float scale;			/* x = pixel / scale: the value given, else
					 * 255 for byte data and 1 for float data
					 * (akk_data_scale) */
	int scale_given;		/* 1: data.scale is in the config */
	struct akk_mark scale_mark, normalize_mark, standardize_mark;
	int normalize;			/* 1: x = (pixel/scale - mean) / std */
	float mean, std;
	struct akk_mark mark;		/* the data: key */
	struct akk_mark train_mark, val_mark;
	/* rank-4 layout, augmentation */
	int layout_nhwc;		/* layout: nhwc (rank-4 IDX, .npy);
					 * default nchw */
	int augment;			/* 1: an augment: mapping is given */
	int crop_padding;		/* augment.crop_padding, default 0 */
	int flip;			/* augment.flip, default false */
	int translate;			/* augment.translate, default 0 */
	/* augment.noise: Gaussian noise of this std, in the data's scaled
	 * units, added to the network's input only (data/noise.h); 0: none.
	 * noise_clip: the noisy value is clipped to the data's range
	 * (default true); noise_eval: validation and eval see seeded noise
	 * too (default false) */
	float noise;
	int noise_clip, noise_eval;
	struct akk_mark augment_mark, noise_mark;
	/* per-channel normalize, standardize and the
	 * validation split. */
	struct akk_channels mean_ch, std_ch;	/* normalize lists; n = 0: the
						 * scalars mean, std apply */
	int standardize;		/* 1: per-feature mean and std of the
					 * training split (data/preprocess.h) */
	float split;			/* validation: {split: F}: the fraction of
					 * train held out (0 < F < 1); 0 = none */
	int folds;			/* validation: {folds: K}: K-fold cross-
					 * validation (akkctl train trains K
					 * models, data/split.h); 0 = none */
	int task;			/* enum akk_task, default classification */
	struct akk_mark task_mark;	/* line 0: data.task not given */
	int targets;			/* enum akk_targets, default labels; input
					 * or files make the task regression */
	struct akk_mark targets_mark;
	/* series: {window, horizon, stride}: the table's rows are a time
	 * series cut into windows (data/series.h); 0 = not a series */
	int window;			/* rows a sample reads */
	int horizon;			/* rows after it whose targets it
					 * predicts, default 1 */
	int stride;			/* rows between windows, default 1 */
	struct akk_mark series_mark;
	/* text: {seq_len, stride}: format text's windows (data/text.h);
	 * seq_len defaults to network.input's length, stride to seq_len
	 * (akk_spec_check_sections fills them in) */
	int text_len, text_stride;
	struct akk_mark text_mark;
	/* format images (data/image_set.h): a folder of class folders or an
	 * image list, resolved like the other paths */
	char *train_folder, *train_list, *val_folder, *val_list;
	/* network.input when it is [C, H, W] with C 1 or 3, else rank 0:
	 * the shape PNG and JPEG files are read in, for training and
	 * predict; set by the parser */
	struct akk_shape image;
};

/* Whether f names any file, in whichever format's keys: the one test of
 * "this part has data" (config checks and data/open.c both ask it). */
int akk_data_files_named(const struct akk_data_files *f);

#endif
