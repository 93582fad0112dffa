/* main.c - akkctl's entry point: the command table and dispatch. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct akk_kernels cli_kernels;

const struct cli_command cli_commands[] = {
	{ "train", cmd_train, CLI_CONFIG,
	  "usage: akkctl train CONFIG [--mode flip-flop|wheels|pipeline] [--epochs N] [--out DIR]\n"
	  "                    [--resume CHECKPOINT|DIR] [--force] [--set KEY=VALUE]... [--quiet]\n"
	  "\n"
	  "  -m, --mode MODE        schedule.mode: flip-flop, wheels or pipeline\n"
	  "  -e, --epochs N         schedule.epochs\n"
	  "  -o, --out DIR          output directory (overrides output.dir)\n"
	  "  -r, --resume FILE      resume from a checkpoint (or a run directory)\n"
	  "  -f, --force            start over in an output directory that holds a run\n"
	  "  -s, --set KEY=VALUE    override any config key, e.g. schedule.batch_size=128\n"
	  "  -q, --quiet            print nothing but errors\n"
	  "  -P, --no-profile       gates: {auto: N}: split by FLOPs, not measured times\n"
	  "      --data-dir DIR     look for data files the config's folder lacks in DIR\n"
	  "                         (then the working directory, then $AKKCTL_DATA)\n",
	  "train a network described by a YAML config", NULL },
	{ "eval", cmd_eval, CLI_CHECKPOINT,
	  "usage: akkctl eval CHECKPOINT|DIR [--data DIR | --images F [--labels F]]\n"
	  "                   [--batch N] [--confusion] [--predictions FILE.csv]\n"
	  "                   [--confusion-svg FILE.svg] [--pictures FILE.svg]\n"
	  "\n"
	  "  -d, --data DIR         the test set in DIR: t10k-images-idx3-ubyte and\n"
	  "                         t10k-labels-idx1-ubyte, each plain or .gz\n"
	  "  -i, --images F         the samples to evaluate on, in the checkpoint's\n"
	  "                         data.format: IDX images, .npy features, a CSV\n"
	  "                         table, a CIFAR-10 file, an image folder or list\n"
	  "  -l, --labels F         their labels (IDX, .npy; CSV: a targets table);\n"
	  "                         not needed when the samples' file holds them\n"
	  "  -b, --batch N          samples per forward pass, 1 to 65536 (default 256)\n"
	  "  -c, --confusion        also print the confusion matrix\n"
	  "  -p, --predictions FILE.csv\n"
	  "                         write every sample's prediction to FILE.csv\n"
	  "      --confusion-svg FILE.svg\n"
	  "                         draw the confusion matrix as a heat map (-: the SVG\n"
	  "                         on stdout instead of the report)\n"
	  "      --pictures FILE.svg\n"
	  "                         data.targets input or files: draw the first 8\n"
	  "                         samples in rows: inputs, noisy inputs, outputs\n"
	  "                         (-: the SVG on stdout instead of the report)\n",
	  "evaluate a checkpoint on a dataset",
	  "\n"
	  "Rebuilds the network from the config stored in CHECKPOINT, loads its\n"
	  "weights and evaluates them. Without --data or --images/--labels the\n"
	  "validation data of the stored config are used (relative paths resolve\n"
	  "against the directory stored with it).\n"
	  "\n"
	  "CHECKPOINT may be a run directory: eval then takes its best.bin, else its\n"
	  "last.bin, else the epoch-NNNN.bin of the highest epoch, and names the file\n"
	  "on stderr: using 'DIR/best.bin'. Temp files (*.tmp.*) are never taken.\n"
	  "\n"
	  "Output, on stdout:\n"
	  "  samples N  loss L  accuracy A%\n"
	  "      N samples evaluated, L the mean of the config's loss over them,\n"
	  "      A the percentage whose predicted class (the largest output) is\n"
	  "      their label.\n"
	  "  class  precision  recall  support\n"
	  "      after a blank line, then one row per class C: precision, the\n"
	  "      percentage of the samples predicted C that are labelled C (0.00%\n"
	  "      when none is predicted C); recall, the percentage of the samples\n"
	  "      labelled C predicted C; support, the number of samples labelled C.\n"
	  "  confusion matrix (rows: label, columns: predicted)\n"
	  "      with --confusion: a header row of the predicted classes, then one\n"
	  "      row per label starting with the label; the cell in row R, column K\n"
	  "      counts the samples labelled R predicted K. The diagonal holds the\n"
	  "      correct predictions; all cells sum to N.\n"
	  "  samples N  loss L  rmse R  r2 Q  psnr P dB\n"
	  "      a regression: R^2 as Q; P, with data.targets input or files, the\n"
	  "      mean over samples of each one's PSNR, 10 log10(peak^2 / its MSE),\n"
	  "      peak the data's range (1 for bytes scaled by 255).\n"
	  "  noisy input psnr B dB\n"
	  "      with data.augment.noise and noise_eval: the same for the noisy\n"
	  "      input the network saw (seeded per sample) against the target.\n"
	  "\n"
	  "The --predictions file is CSV with the header\n"
	  "index,label,predicted,probability and one row per sample in file order:\n"
	  "its index from 0, its label, the predicted class (names when the checkpoint\n"
	  "names its classes) and that class's probability as predict gives it (0 to\n"
	  "1, six decimals).\n"
	  "\n"
	  "Exit status: 0 success; 1 a runtime failure (FILE.csv or FILE.svg cannot be\n"
	  "written);\n"
	  "2 bad usage, or a checkpoint or data file that is missing, corrupt or does\n"
	  "not fit, or weights that give a loss that is not finite.\n" },
	{ "bench", cmd_bench, CLI_NO_OPERAND,
	  "usage: akkctl bench [--mode flip-flop|wheels|pipeline|both] [--config CONFIG]\n"
	  "                    [--epochs N | --steps N] [--concurrency N] [--threads N]\n"
	  "                    [--set KEY=VALUE]... [--no-validation] [--csv FILE]\n"
	  "                    [--trace FILE.json]\n"
	  "       akkctl bench --hops\n"
	  "       akkctl bench --gemm\n"
	  "\n"
	  "  -m, --mode MODE        flip-flop, wheels, pipeline or both: every one\n"
	  "                         (default both)\n"
	  "  -c, --config CONFIG    the network and data (default: the built-in Akkordeon\n"
	  "                         MNIST net; synthetic data when the files are missing)\n"
	  "  -e, --epochs N         epochs per mode, the repeats (default 3)\n"
	  "  -n, --steps N          instead, N training batches per mode\n"
	  "  -k, --concurrency N    training batches in flight in wheels\n"
	  "  -t, --threads N        compute threads of a busy gate (default: the\n"
	  "                         config's schedule.threads)\n"
	  "  -s, --set KEY=VALUE    override a config key\n"
	  "  -V, --no-validation    train only (as the peer scripts time it)\n"
	  "  -v, --csv FILE         write the results as CSV\n"
	  "  -r, --trace FILE       write a Chrome trace (open it in Perfetto)\n"
	  "  -H, --hops             measure the message latency between two actors\n"
	  "  -G, --gemm             time the configs' matrix products, OpenBLAS vs libxsmm\n"
	  "  -L, --layers           time each layer instead (forward, backward, optimizer)\n"
	  "  -P, --no-profile       gates: {auto: N}: split by FLOPs, not measured times\n"
	  "\n"
	  "With wheels and flip-flop on one compute thread per gate (--threads 1) and\n"
	  "a core per gate, each turn also times the gates alone, in turn and at once\n"
	  "with nothing passed between them: the most overlap can give on this\n"
	  "machine at that moment, beside wheels / flip-flop.\n",
	  "measure the throughput of the schedules", NULL },
	{ "check", cmd_check, CLI_CONFIG,
	  "usage: akkctl check CONFIG [--set KEY=VALUE]... [--graph FILE.svg]\n"
	  "\n"
	  "Validate CONFIG and print each gate's layers with output shape, parameters\n"
	  "and forward FLOPs per sample, then the memory each gate plans. Trains nothing.\n"
	  "\n"
	  "  -s, --set KEY=VALUE    override a config key, with the same checks\n"
	  "      --graph FILE.svg   draw the network as a graph (layers, branches, joins,\n"
	  "                         shortcuts, gates as coloured groups) into FILE.svg;\n"
	  "                         - writes it to stdout instead of the plan\n"
	  "  -P, --no-profile       gates: {auto: N}: split by FLOPs, not measured times\n"
	  "      --data-dir DIR     look for data files the config's folder lacks in DIR\n"
	  "                         (then the working directory, then $AKKCTL_DATA); a\n"
	  "                         data file found nowhere is an error at FILE:LINE:COL\n",
	  "validate a config and print its gate/layer/shape table", NULL },
	{ "partition", cmd_partition, CLI_CONFIG,
	  "usage: akkctl partition CONFIG [-o FILE] [--no-profile]\n"
	  "\n"
	  "  -o, --out FILE         write the config to FILE (default: standard output)\n"
	  "  -P, --no-profile       split by FLOP counts instead of measured times\n",
	  "split a gates: {auto: N} config and write its gates out",
	  "\nSplits the flat network.layers list of a config with network.gates:\n"
	  "{auto: N} as `akkctl train` would, and writes the config back as YAML with\n"
	  "the gates written out, for editing by hand: it parses to the same network.\n"
	  "Comments are not kept.\n"
	  "\nExit status: 0 success; 1 runtime failure; 2 bad usage or an invalid config.\n" },
	{ "predict", cmd_predict, CLI_CHECKPOINT | CLI_INPUTS,
	  "usage: akkctl predict CHECKPOINT|DIR INPUT... [--out FILE] [--top K]\n"
	  "                      [--format FORMAT] [--csv-header yes|no] [--head NAME]\n"
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
	  "                         is an error)\n"
	  "      --head NAME        a network with several outputs: only the output\n"
	  "                         NAME, written as a network of one output\n",
	  "predict classes for unlabelled input",
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
	  "      for a regression network: the N predicted values.\n"
	  "  index,NAME,NAME_probability,...,NAME_1,...,NAME_N,...\n"
	  "      for a network with several outputs (network.outputs), every output\n"
	  "      in its order: a classifier's most probable class and its\n"
	  "      probability, the N values of any other; --head NAME writes one\n"
	  "      output in the forms above.\n" },
	{ "generate", cmd_generate, CLI_CHECKPOINT,
	  "usage: akkctl generate CHECKPOINT|DIR [--prime TEXT] [--length N]\n"
	  "                       [--temperature T] [--seed S]\n"
	  "\n"
	  "  -p, --prime TEXT       the text to continue (default: a newline when\n"
	  "                         the vocabulary has one, else its first byte,\n"
	  "                         not printed)\n"
	  "  -n, --length N         bytes to generate after it (default 200)\n"
	  "  -t, --temperature T    above 0: below 1 sharper, above 1 flatter\n"
	  "                         (default 1: the model's own distribution)\n"
	  "  -s, --seed S           the draws' seed (default: the config's seed);\n"
	  "                         one seed, one text\n",
	  "sample text from a language model",
	  "\n"
	  "Continues TEXT with bytes drawn one at a time from a network trained on\n"
	  "data.format: text (CHECKPOINT, or a run directory's best.bin, else\n"
	  "last.bin, as eval). Each draw feeds the window of the last seq_len bytes\n"
	  "(all of them while there are fewer, in the window's first steps) through\n"
	  "the network and samples its last real step's softmax, each probability\n"
	  "raised to 1/T and renormalised. Writes the prime, the generated bytes and\n"
	  "a newline to standard output, as bytes.\n"
	  "\n"
	  "Exit status: 0 success; 1 runtime failure; 2 bad usage, a checkpoint that\n"
	  "is not a language model, or a prime with a byte outside its vocabulary.\n" },
	{ "inspect", cmd_inspect, CLI_CHECKPOINT,
	  "usage: akkctl inspect CHECKPOINT|DIR\n",
	  "show what a checkpoint holds",
	  "\n"
	  "Prints what CHECKPOINT holds, on stdout. CHECKPOINT may be a run directory:\n"
	  "inspect then takes its last.bin, else the epoch-NNNN.bin of the highest\n"
	  "epoch, else best.bin, and names the file on stderr: using 'DIR/last.bin'.\n"
	  "Temp files (*.tmp.*) are never taken. Text read from the file is printed\n"
	  "with control bytes and invalid UTF-8 as \\xNN. No options but --help.\n"
	  "\n"
	  "  checkpoint   the file read\n"
	  "  format       the file format version (akkctl-checkpoint(5))\n"
	  "  config       the config's path when the run started, and the directory\n"
	  "               its relative paths (data, output) resolve against\n"
	  "  override     one line per --set KEY=VALUE stored with the config\n"
	  "  schedule     the schedule the run trained in (schedule.mode)\n"
	  "  position     where training stands: at an epoch boundary, the epochs\n"
	  "               done; mid-epoch, the epoch in progress (from 1) and the\n"
	  "               batches of it done; and the training steps of the whole run\n"
	  "  last epoch   the last completed epoch: its training loss and accuracy,\n"
	  "               validation loss and accuracy, and the best validation\n"
	  "               accuracy so far (no line before the first epoch ends)\n"
	  "  network      what the stored config builds: its name, gates, parameters\n"
	  "               and classes (regression: outputs); or why the config no\n"
	  "               longer parses\n"
	  "  data         the task (classification or regression), the input map\n"
	  "               stored (values per sample) and the training samples\n"
	  "               held out for validation (format version 2 and later)\n"
	  "  classes      the class names, when the data named its classes\n"
	  "\n"
	  "Then a table of every stored tensor, one row each:\n"
	  "  gate         the gate it belongs to, from 1\n"
	  "  step         the gate's optimizer steps (its weight version)\n"
	  "  tensor       its name: gG.lL.KIND.PARAM for a layer's parameters and\n"
	  "               state, gG.optimizer.TYPE for the optimizer's moments\n"
	  "  shape        its dimensions\n"
	  "  values       its number of floats\n"
	  "\n"
	  "Last, after a line '--- config ---', the stored config text.\n"
	  "\n"
	  "Exit status: 0 success; 2 bad usage, or a checkpoint that is missing,\n"
	  "corrupt or not a checkpoint.\n" },
	{ "export", cmd_export, CLI_CHECKPOINT,
	  "usage: akkctl export CHECKPOINT|DIR --onnx FILE.onnx\n"
	  "\n"
	  "  -o, --onnx FILE.onnx   write the inference graph as an ONNX model\n",
	  "write a checkpoint's inference graph as ONNX",
	  "\n"
	  "Rebuilds the network from the config stored in CHECKPOINT, loads its\n"
	  "weights and writes its inference graph as ONNX (opset 13), whole or not\n"
	  "at all. CHECKPOINT may be a run directory: export then takes the file eval\n"
	  "takes (best.bin, else last.bin, else the newest epoch-NNNN.bin) and names\n"
	  "it on stderr: using 'DIR/best.bin'.\n"
	  "\n"
	  "The model's input 'input' is float32 [N, network.input] of raw values\n"
	  "(pixels 0 to 255), N any batch size; its first nodes apply the checkpoint's\n"
	  "preprocessing (Mul, Add), then every layer in evaluation mode (batchnorm\n"
	  "with its running statistics, dropout as Identity), and last what predict\n"
	  "prints: a Softmax into the output 'probabilities', float32 [N, classes]\n"
	  "(a Sigmoid per output for loss sigmoid_cross_entropy), or for a regression\n"
	  "network the last layer's output as it is (Identity) into 'values',\n"
	  "float32 [N, outputs]. akkctl(1), EXPORT, lists the ONNX operators of each\n"
	  "layer kind.\n"
	  "\n"
	  "Weights so large that the outputs overflow are refused: two probe samples\n"
	  "(every network input -1, every one +1) must give finite values in every\n"
	  "layer; else the error names the first layer that overflows.\n"
	  "\n"
	  "Prints one line on stdout: the file written, its input and output.\n"
	  "\n"
	  "Exit status: 0 success; 2 bad usage, a checkpoint that is missing, corrupt\n"
	  "or not a checkpoint, weights that overflow, a layer kind that cannot be\n"
	  "exported (named), or an output file that cannot be written.\n" },
	{ "lr-find", cmd_lrfind, CLI_CONFIG,
	  "usage: akkctl lr-find CONFIG [--min LR] [--max LR] [--steps N] [--out FILE.csv]\n"
	  "                     [--set KEY=VALUE]...\n"
	  "\n"
	  "  --min LR, --max LR     the rates swept, exponentially (default 1e-7 and 10)\n"
	  "  --steps N              batches, at least 2 (default 100)\n"
	  "  -o, --out FILE.csv     write the CSV to FILE.csv too\n"
	  "  -s, --set KEY=VALUE    override a config key, with the same checks\n"
	  "      --data-dir DIR     look for data files the config's folder lacks in DIR\n",
	  "the learning-rate range test: loss against lr, and a suggested lr",
	  "\n"
	  "From a fresh model, trains N batches in flip-flop with the lr growing\n"
	  "exponentially from --min to --max, and prints 'lr,loss,smoothed_loss' CSV\n"
	  "lines on stdout (the loss smoothed as fastai does). It stops early when the\n"
	  "smoothed loss exceeds 4 times its best or the loss is not finite. On stderr:\n"
	  "'suggested lr: X' (the steepest descent of the smoothed loss against log(lr),\n"
	  "fastai's 'steep') and the lr of the lowest smoothed loss with its tenth.\n"
	  "Writes no run directory and no checkpoint.\n"
	  "\n"
	  "Exit status: 0 success; 1 runtime failure; 2 bad usage or an invalid config.\n" },
	{ "plot", cmd_plot, CLI_RUNDIR,
	  "usage: akkctl plot RUNDIR|METRICS.csv [-o FILE.svg]\n"
	  "\n"
	  "  -o, --out FILE.svg     where to write the chart (default RUNDIR/curves.svg;\n"
	  "                         - for stdout)\n",
	  "draw a run's learning curves as an SVG chart",
	  "\n"
	  "Reads the run's metrics file (metrics.csv, or the name its checkpoints'\n"
	  "config gives) and draws one standalone SVG: the training and validation\n"
	  "loss per epoch on top with the learning rate on a right-hand axis, the\n"
	  "accuracy below, the best epoch (highest validation accuracy) marked, each\n"
	  "resume seen in the file marked, a legend, and the run's name as the title.\n"
	  "Values that are not finite are left out and counted in a note. Given a\n"
	  "metrics file instead of a directory, the chart goes beside it.\n"
	  "\n"
	  "A run directory with per-step metrics (steps.csv, written with\n"
	  "output.log_every_steps) also gets RUNDIR/steps.svg: the training loss of\n"
	  "every steps.csv row against its optimizer step (not with -o -).\n"
	  "\n"
	  "Exit status: 0 success; 1 a chart cannot be written; 2 bad usage, or a\n"
	  "directory that is not a run, or a metrics or steps file that is not one\n"
	  "or is damaged (the message names the file and the line).\n" },
	{ "help", cmd_help, CLI_ANY_OPERANDS,
	  "usage: akkctl help [COMMAND]\n",
	  "show help for a command", NULL },
	{ NULL, NULL, 0, NULL, NULL, NULL },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: akkctl [--version] [--help] COMMAND [ARGS]\n\ncommands:\n");
	for (const struct cli_command *c = cli_commands; c->name; c++)
		fprintf(f, "  %-9s %s\n", c->name, c->summary);
	fprintf(f, "\n'akkctl help COMMAND' or 'akkctl COMMAND --help' for a command's options;\n"
		   "akkctl(1) and akkctl(5) for the details.\n");
}

static const struct cli_command *find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* Damerau-Levenshtein distance (optimal string alignment: insertions,
 * deletions, substitutions and swaps of two neighbours each cost 1) between
 * a and b, both at most 64 bytes. */
static int edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	int d[65][65];

	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

/* git's "is not a git command" with its "did you mean": the commands
 * closest to name, when any is close (a prefix of two letters or more, or
 * at most two edits and at most one per two letters typed). Returns
 * EXIT_USAGE. */
static int not_a_command(const char *name)
{
	int len = (int)strlen(name), dist[16], best = -1, n = 0, i;
	const struct cli_command *c;

	cli_errorf(EXIT_USAGE, "'%s' is not an akkctl command. See 'akkctl help'.", name);
	if (len > 64)
		return EXIT_USAGE;
	for (c = cli_commands, i = 0; c->name && i < 16; c++, i++) {
		dist[i] = len >= 2 && !strncmp(c->name, name, len) ? 0 : edit_distance(name, c->name);
		if (dist[i] <= 2 && 2 * dist[i] <= len && (best < 0 || dist[i] < best))
			best = dist[i];
	}
	if (best < 0)
		return EXIT_USAGE;
	for (c = cli_commands, i = 0; c->name && i < 16; c++, i++)
		n += dist[i] == best;
	fprintf(stderr, "\nThe most similar command%s\n", n > 1 ? "s are" : " is");
	for (c = cli_commands, i = 0; c->name && i < 16; c++, i++)
		if (dist[i] == best)
			fprintf(stderr, "\t%s\n", c->name);
	return EXIT_USAGE;
}

int cli_report(const struct akk_err *e, int code)
{
	const char *rank = getenv("OMPI_COMM_WORLD_RANK");
	char buf[1200];

	/* Under mpirun every rank finds the same bad input: rank 0 says it. */
	if (code == EXIT_USAGE && rank && strcmp(rank, "0"))
		return code;
	akk_err_format(e, buf, sizeof(buf));
	/* Messages quote names from files (checkpoints, configs), which must
	 * not reach the terminal raw. */
	fputs("akkctl: ", stderr);
	cli_put_safe(stderr, buf, 0);
	fputc('\n', stderr);
	return code;
}

int cli_errorf(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("akkctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int cli_usage_error(const char *command)
{
	const struct cli_command *c = find(command);

	fputs(c->usage, stderr);
	return EXIT_USAGE;
}

int cli_help(const char *command)
{
	const struct cli_command *c = find(command);

	fputs(c->usage, stdout);
	if (c->details)
		fputs(c->details, stdout);
	return EXIT_OK;
}

int cli_operands(const char *command, int argc, char **argv)
{
	const struct cli_command *c = find(command);
	const char *noun = c->needs & CLI_CONFIG ? "CONFIG" : c->needs & CLI_CHECKPOINT ?
			   "CHECKPOINT" : c->needs & CLI_RUNDIR ? "RUNDIR" : NULL;
	int n = argc - optind, inputs = c->needs & CLI_INPUTS;

	if (c->needs & CLI_ANY_OPERANDS)
		return EXIT_OK;
	if (!noun && n > 0)
		cli_errorf(EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
	else if (noun && n == 0)
		cli_errorf(EXIT_USAGE, inputs ? "%s needs a %s and an INPUT" : "%s needs a %s",
			   command, noun);
	else if (inputs && n == 1)
		cli_errorf(EXIT_USAGE, "%s needs an INPUT", command);
	else if (noun && !inputs && n > 1)
		cli_errorf(EXIT_USAGE, "unexpected argument '%s'", argv[optind + 1]);
	else
		return EXIT_OK;
	return cli_usage_error(command);
}

int cli_bad_option(const char *command, int c, char **argv)
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		cli_errorf(EXIT_USAGE, "option '%s' needs a value", arg);
	else if (optopt && strncmp(arg, "--", 2))
		cli_errorf(EXIT_USAGE, "unknown option '-%c'", optopt);
	else
		cli_errorf(EXIT_USAGE, "unknown option '%s'", arg);
	return cli_usage_error(command);
}

int cli_parse_int(const char *opt, const char *arg, int min, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		return cli_errorf(EXIT_USAGE, "option '%s' needs a whole number from %d to %d, got '%s'",
				  opt, min, max, arg);
	*out = (int)v;
	return 0;
}

int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cli_help("help");
	if (argv[1][0] == '-') {
		cli_errorf(EXIT_USAGE, "unknown option '%s'", argv[1]);
		return cli_usage_error("help");
	}
	if (!find(argv[1]))
		return not_a_command(argv[1]);
	return cli_help(argv[1]);
}

const char *cli_program = "akkctl";

int main(int argc, char **argv)
{
	const struct cli_command *c;
	struct akk_err e;

	if (argc > 0 && argv[0] && *argv[0])
		cli_program = argv[0];
	/* before anything computes: OpenBLAS's kernel table is the process's */
	if (akk_kernels_choose(&cli_kernels, &e))
		return cli_report(&e, EXIT_USAGE);
	/* OpenBLAS's server threads spin for their first 0.1 s: they go
	 * before they take a core from the work (a run keeps OpenBLAS on
	 * one thread; predict and eval get them back when a product wants
	 * them) */
	akk_blas_stop_idle();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("akkctl %s\n", AKK_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argv[1][0] == '-') {
		cli_errorf(EXIT_USAGE, "unknown option '%s'", argv[1]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!(c = find(argv[1])))
		return not_a_command(argv[1]);
	return c->run(argc - 1, argv + 1);
}
