/* cmd_check.c - akkctl check: validate a config and print its plan. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "cli.h"
#include "heads.h"
#include "data_search.h"
#include "model/balance.h"
#include "model/flow.h"
#include "model/gate.h"
#include "model/model.h"
#include "nn/layer_graph.h"
#include "nn/optim.h"
#include "runtime/schedule.h"
#include "config/spec.h"
#include "data/open.h"
#include "data/preprocess.h"
#include "io/graph_svg.h"
#include "pictures.h"
#include "tensor/gemm_xsmm.h"
#include "tensor/smallmm.h"

static void print_count(char *buf, int size, double v)
{
	if (v >= 1e9)
		snprintf(buf, size, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, size, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, size, "%.1fK", v / 1e3);
	else
		snprintf(buf, size, "%.0f", v);
}

/* A graph layer's nodes beneath its row, in topological order: name (an
 * unnamed node its place as written, #3), kind, output, parameters,
 * FLOPs and the nodes it reads; a graph among them the same, further
 * in. */
static void print_graph(const struct akk_layer *l, int indent)
{
	const struct akk_graph_spec *g = l->spec->graph;
	char shape[64], name[AKK_GRAPH_MAX_NAME + 8];
	int nw = 4;

	for (int i = 0; i < g->nnodes; i++)
		if ((int)strlen(g->nodes[i].name) > nw)
			nw = (int)strlen(g->nodes[i].name);
	printf("%*s%-*s %-10s %-16s %10s %14s  %s\n", indent, "", nw, "node",
	       "kind", "output", "params", "FLOPs/sample", "from");
	for (int k = 0; k < g->nnodes; k++) {
		int i = g->order[k];
		const struct akk_graph_node *n = &g->nodes[i];
		const struct akk_layer *c = &l->sub[i];
		if (n->name[0])
			snprintf(name, sizeof(name), "%s", n->name);
		else
			snprintf(name, sizeof(name), "#%d", i + 1);
		akk_shape_format(c->out, shape, sizeof(shape));
		printf("%*s%-*s %-10s %-16s %10zu %14.0f  ", indent, "", nw, name,
		       akk_graph_node_kind(l->spec, i), shape, c->nparams, c->flops);
		for (int m = 0; m < n->nfrom; m++) {
			int j = n->from[m];
			if (j == AKK_GRAPH_INPUT)
				printf("%sinput", m ? ", " : "");
			else if (g->nodes[j].name[0])
				printf("%s%s", m ? ", " : "", g->nodes[j].name);
			else
				printf("%s#%d", m ? ", " : "", j + 1);
		}
		if (n->op == AKK_GRAPH_SLICE)
			printf(" [%d:%d]", n->start, n->end);
		printf("%s\n", i == g->output && g->output_mark.line ? " (output)" : "");
		if (c->ops == &akk_layer_graph)
			print_graph(c, indent + 2);
	}
}

/* network.inputs: each input's name, shape and slice of the flat sample. */
static void print_inputs(const struct akk_spec *s)
{
	char shape[64], slice[48];

	printf("\n%-5s %-16s %-16s %s\n", "input", "name", "shape", "slice of the sample");
	for (int i = 0; i < s->ninputs; i++) {
		const struct akk_input_spec *in = &s->inputs[i];
		akk_shape_format(in->shape, shape, sizeof(shape));
		snprintf(slice, sizeof(slice), "[%ld:%ld]", in->off, in->off + in->n);
		printf("%-5d %-16s %-16s %s\n", i + 1, in->name, shape, slice);
	}
}

/* Gates that fork and join: what each gate reads, how, and its input. */
static void print_sources(const struct akk_spec *s, const struct akk_model *m)
{
	char shape[64], reads[AKK_MAX_JOIN * (AKK_GATE_NAME + 2)], name[AKK_GATE_NAME + 8];

	printf("\n%-5s %-16s %-36s %-7s %s\n", "gate", "name", "reads", "join", "input");
	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *gp = &m->gates[g];
		size_t n = 0;
		reads[0] = '\0';
		for (int k = 0; k < gp->nsrc && n < sizeof(reads); k++) {
			int src = gp->src[k];
			if (src < 0 && s->ninputs)
				snprintf(name, sizeof(name), "%s", s->inputs[gp->src_in[k]].name);
			else if (src < 0)
				snprintf(name, sizeof(name), "input");
			else if (s->gates[src].name[0])
				snprintf(name, sizeof(name), "%s", s->gates[src].name);
			else
				snprintf(name, sizeof(name), "gate %d", src + 1);
			n += (size_t)snprintf(reads + n, sizeof(reads) - n, "%s%s", k ? ", " : "", name);
		}
		akk_shape_format(gp->in, shape, sizeof(shape));
		printf("%-5d %-16s %-36s %-7s %s%s\n", g + 1,
		       s->gates[g].name[0] ? s->gates[g].name : "-", reads,
		       gp->nsrc > 1 ? akk_join_name(gp->join) : "", shape,
		       gp->nread ? "" : "  (the output)");
	}
}

static void print_plan(const struct akk_spec *s, const struct akk_model *m,
		       const struct akk_schedule *p)
{
	int K = p->K, V = p->V, bs = s->sched.batch_size, stash = p->stash;
	int chunk = p->chunk_max > 0 ? p->chunk_max : bs;
	char shape[64], flops[32], lib[768];
	double mem_total = 0, stash_total = 0, train_total = 0;

	akk_shape_format(s->input, shape, sizeof(shape));
	printf("%s: %d gate%s, input %s, loss %s, mode %s\n", s->name, m->ngates,
	       m->ngates == 1 ? "" : "s", shape, s->nheads ? "per output (below)" : akk_loss_name(s->loss),
	       akk_mode_name(s->sched.mode));
	int kw = 12;	/* the kind column: as wide as the longest kind */

	for (int g = 0; g < m->ngates; g++)
		for (int i = 0; i < m->gates[g].nlayers; i++)
			if ((int)strlen(m->gates[g].layers[i].ops->name) > kw)
				kw = (int)strlen(m->gates[g].layers[i].ops->name);
	printf("\n%-5s %-6s %-*s %-16s %12s %14s\n", "gate", "layer", kw, "kind",
	       "output", "params", "FLOPs/sample");
	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *gp = &m->gates[g];
		for (int i = 0; i < gp->nlayers; i++) {
			const struct akk_layer *l = &gp->layers[i];
			akk_shape_format(l->out, shape, sizeof(shape));
			printf("%-5d %-6d %-*s %-16s %12zu %14.0f\n", g + 1, i + 1,
			       kw, l->ops->name, shape, l->nparams, l->flops);
			if (l->ops == &akk_layer_graph)
				print_graph(l, 13);
		}
	}
	print_count(flops, sizeof(flops), m->flops);
	printf("%-5s %-6s %-*s %-16s %12zu %14.0f\n", "total", "", kw, "", "",
	       m->nparams, m->flops);
	if (s->ninputs)
		print_inputs(s);
	if (!akk_model_is_chain(m))
		print_sources(s, m);
	printf("\n%-5s %-10s %10s %14s %14s %14s\n", "gate", "optimizer", "params",
	       "FLOPs/sample", "activations", "weight stash");
	for (int g = 0; g < m->ngates; g++) {
		const struct akk_gate_plan *gp = &m->gates[g];
		/* the gate as the run builds it: K training tapes of one
		 * chunk (the batch, or a pipeline micro-batch) and V
		 * evaluation tapes of a batch */
		struct akk_gate_config gc = akk_schedule_gate_config(p, gp, bs);
		struct akk_gate_memory gm = akk_gate_memory(gp, &gc);
		/* a join's input buffers and a fork's summed gradient */
		double mem = gm.train + gm.eval +
			     akk_flow_memory(gp, gc.ntapes, gc.nevals, gc.max_batch), st = gm.stash;
		print_count(flops, sizeof(flops), gp->flops);
		printf("%-5d %-10s %10zu %14s %11.1f KB %11.1f KB\n", g + 1,
		       akk_optim_name(gp->optim->kind), gp->nparams, flops,
		       mem / 1024, st / 1024);
		mem_total += mem;
		train_total += gm.train;
		stash_total += st;
	}
	printf("\nbatch %d, %d training %s and %d validation batches in flight%s: "
	       "%.1f KB of activations, %.1f KB of stashed weights\n",
	       bs, K, p->micro > 1 ? "micro-batches" : "batches", V,
	       stash ? " (weight stashing)" : "", mem_total / 1024,
	       stash_total / 1024);
	if (p->micro > 1)
		printf("pipeline: batch %d in %d micro-batches of up to %d samples, %d in flight "
		       "(1F1B, bounded by the gates), one optimizer step per %d batch%s "
		       "after the flush: %.1f KB of training activations\n",
		       bs, p->micro, chunk, K, p->accumulate,
		       p->accumulate == 1 ? "" : "es", train_total / 1024);
	else if (p->accumulate > 1)
		printf("accumulation: one optimizer step per %d batches of %d (%d samples)\n",
		       p->accumulate, bs, p->accumulate * bs);
	printf("schedule %s: validation %s%s, %s gate states, %d compute thread%s per busy gate, "
	       "mailboxes of %d messages\n", akk_mode_name(p->mode),
	       p->validate_during ? "during the epoch" : "after the epoch",
	       p->final_pass ? " and a final drained pass" : "",
	       p->strict_states ? "strict forward/backward" : "free",
	       p->compute_threads, p->compute_threads == 1 ? "" : "s", p->mailbox_cap);
	akk_gemm_library(lib, sizeof(lib), &cli_kernels);
	printf("matrix products: %s\n", lib);
	for (int g = 0; g < m->ngates; g++)
		for (int i = 0; i < m->gates[g].nlayers; i++)
			if (m->gates[g].layers[i].ops == &akk_layer_conv2d) {
				printf("convolutions: gathered small products (%s)\n",
				       akk_smm_isa());
				return;
			}
}

/* The gate that joins gate g (reads it among others), or -1. */
static int joiner_of(const struct akk_spec *s, int g, int *branch)
{
	for (int j = g + 1; j < s->ngates; j++)
		for (int k = 0; s->gates[j].nfrom > 1 && k < s->gates[j].nfrom; k++)
			if (s->gates[j].from[k] == g) {
				*branch = k;
				return j;
			}
	return -1;
}

/* Each set of branch gates a join reads: what they cost together, and
 * at once on this machine's cores (akk_balance_fork_cost, as the split
 * weighed them). */
static void print_forks(const struct akk_spec *s, const double *cost, int profile)
{
	double gate[AKK_MAX_GATES] = { 0 }, br[AKK_MAX_JOIN];
	int at = 0, cores = akk_cores();
	const char *unit = profile ? "ms" : "MFLOP";
	double scale = profile ? 1e3 : 1e-6;

	for (int g = 0; g < s->ngates; g++)
		for (int i = 0; i < s->gates[g].nlayers; i++)
			gate[g] += cost[at++];
	for (int j = 0; j < s->ngates; j++) {
		const struct akk_gate_spec *gs = &s->gates[j];
		double sum = 0;
		if (gs->nfrom < 2)
			continue;
		for (int k = 0; k < gs->nfrom; k++)
			sum += br[k] = gate[gs->from[k]];
		printf("branches joined by gate %d: %.3f %s in all, %.3f %s at once on %d core%s\n",
		       j + 1, scale * sum, unit,
		       scale * akk_balance_fork_cost(br, gs->nfrom, cores), unit, cores,
		       cores == 1 ? "" : "s");
	}
}

/* gates: {auto: N}: the split, and each gate with what it reads, the
 * layers of network.layers it holds (a branch of a graph unfolded: the
 * graph's layer and the branch) and its cost, from the costs the split
 * was made from. */
void cli_print_split(const struct akk_spec *s, const double *cost, int profile)
{
	double total = 0, top = 0;
	int first = 0, at = 0, n = akk_spec_nlayers(s);

	for (int i = 0; i < n; i++)
		total += cost[i];
	printf("\nsplit (gates: {auto: %d}, by %s): network.gates.split=[",
	       s->auto_gates, profile ? "measured time" : "FLOPs");
	for (int g = 0; g < s->auto_nsplit; g++)
		printf("%s%d", g ? ", " : "", s->auto_split[g]);
	printf("]");
	for (int g = 0; g < s->auto_nunfold; g++)
		printf("%s%d", g ? ", " : " network.gates.unfold=[", s->auto_unfold[g]);
	printf("%s\n%-5s %-16s %-14s %12s %16s\n", s->auto_nunfold ? "]" : "",
	       "gate", "reads", "layers", profile ? "cost ms" : "cost MFLOP", "predicted share");
	for (int g = 0; g < s->ngates; g++) {
		const struct akk_gate_spec *gs = &s->gates[g];
		double c = 0;
		char range[48], reads[48] = "";
		int branch, j = joiner_of(s, g, &branch), len = 0;
		for (int i = 0; i < gs->nlayers; i++)
			c += cost[at++];
		for (int k = 0; k < gs->nfrom; k++)
			len += snprintf(reads + len, sizeof(reads) - (size_t)len, "%s%s%d",
					k ? "," : "", gs->from[k] < 0 ? "input" : "",
					gs->from[k] < 0 ? 0 : gs->from[k] + 1);
		if (gs->from[0] < 0)
			snprintf(reads, sizeof(reads), "input");
		else if (gs->nfrom > 1)
			snprintf(reads + len, sizeof(reads) - (size_t)len, " %s",
				 akk_join_name(gs->join));
		if (j >= 0)
			snprintf(range, sizeof(range), "%d branch %d", first + 1, branch + 1);
		else if (gs->nlayers == 1)
			snprintf(range, sizeof(range), "%d", first + 1);
		else
			snprintf(range, sizeof(range), "%d-%d", first + 1, first + gs->nlayers);
		if (j < 0)
			first += gs->nlayers;
		else if (branch + 1 == s->gates[j].nfrom)
			first++;
		if (c > top)
			top = c;
		printf("%-5d %-16s %-14s %12.3f %15.1f%%\n", g + 1, reads, range,
		       profile ? 1e3 * c : 1e-6 * c, total > 0 ? 100 * c / total : 0.0);
	}
	printf("slowest gate: %.3f %s, %.1f%% of the work (the branches of a graph unfolded run at once)\n",
	       profile ? 1e3 * top : 1e-6 * top, profile ? "ms" : "MFLOP",
	       total > 0 ? 100 * top / total : 0.0);
	print_forks(s, cost, profile);
}

void cli_print_data_defaults(FILE *f, const struct akk_data_spec *ds, int float_data)
{
	float scale = akk_preprocess_scale(ds, float_data ? AKK_X_F32 : AKK_X_U8);

	if (!ds->scale_given && scale != 1)
		fprintf(f, "data.scale %g (the default for byte data): every input value is divided by %g; set data.scale to change it\n",
			(double)scale, (double)scale);
}

/* Whether the training data is floats, for the defaults that depend on it:
 * IDX and CIFAR-10 hold bytes, a table floats; a .npy file says in its
 * header, so it is read (-1: it cannot be, e says why). */
static int float_data(const struct akk_data_spec *ds, struct akk_err *e)
{
	struct akk_dataset d;
	int f;

	if (!strcmp(ds->format, "csv"))
		return 1;
	if (strcmp(ds->format, "npy") || ds->scale_given)
		return 0;
	if (akk_data_open(&d, ds, AKK_DATA_TRAIN, e))
		return -1;
	f = d.xtype == AKK_X_F32;
	akk_dataset_release(&d);
	return f;
}

/* The data's defaults, when they change it. */
static void print_data(const struct akk_data_spec *ds)
{
	struct akk_err e = { 0 };
	int f = float_data(ds, &e);

	if (f < 0) {
		char why[sizeof(e.file) + sizeof(e.msg)];

		akk_err_format(&e, why, sizeof(why));
		printf("\ndata.scale: by default 255 for byte features, none for float features; cannot read the training features to tell: %s\n",
		       why);
		return;
	}
	if (!ds->scale_given && akk_preprocess_scale(ds, f ? AKK_X_F32 : AKK_X_U8) != 1)
		putchar('\n');
	cli_print_data_defaults(stdout, ds, f);
}

/* --graph: the network drawn as a graph into path, whole (or to stdout
 * for "-"). EXIT_OK, or the exit status after the error was reported. */
static int write_graph(const struct akk_model *m, const char *path)
{
	struct akk_graph_layout gl;
	struct akk_err e = { 0 };
	char title[256], shape[64], *buf = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	int rc = EXIT_RUNTIME;

	akk_shape_format(m->spec->input, shape, sizeof(shape));
	snprintf(title, sizeof(title), "%s: %d gate%s, input %s, %zu parameters",
		 m->spec->name, m->ngates, m->ngates == 1 ? "" : "s", shape, m->nparams);
	if (akk_graph_layout(&gl, m, &e))
		goto out;
	if (!(mem = open_memstream(&buf, &len))) {
		akk_err_set(&e, "out of memory");
		goto out;
	}
	if (akk_graph_svg(mem, &gl, title, path, &e)) {
		fclose(mem);
		goto out;
	}
	if (fclose(mem)) {
		akk_err_set(&e, "out of memory");
		goto out;
	}
	rc = EXIT_USAGE;	/* the file named cannot be written */
	if (cli_write_svg(path, buf, len, &e))
		goto out;
	if (strcmp(path, "-"))
		fprintf(stderr, "wrote '%s'\n", path);
	rc = EXIT_OK;
out:
	free(buf);
	akk_graph_layout_release(&gl);
	return rc == EXIT_OK ? rc : cli_report(&e, rc);
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "set", required_argument, NULL, 's' },
		{ "no-profile", no_argument, NULL, 'P' },
		{ "data-dir", required_argument, NULL, 'D' },
		{ "graph", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char **sets = calloc(argc, sizeof(*sets));
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_schedule plan;
	struct akk_err e = { 0 };
	const char *data_dir = NULL, *graph = NULL;
	int nsets = 0, c, rc, profile = 1;
	double *cost = NULL;

	if (!sets)
		return cli_errorf(EXIT_RUNTIME, "out of memory");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'P':
			profile = 0;
			break;
		case 'D':
			data_dir = optarg;
			break;
		case 'G':
			graph = optarg;
			break;
		case 'h':
			free(sets);
			return cli_help("check");
		default:
			free(sets);
			return cli_bad_option("check", c, argv);
		}
	}
	if (cli_operands("check", argc, argv)) {
		free(sets);
		return EXIT_USAGE;
	}
	if (akk_spec_load(&s, argv[optind], sets, nsets, &e) ||
	    cli_find_data(&s, data_dir, &e)) {
		free(sets);
		akk_spec_release(&s);
		return cli_report(&e, EXIT_USAGE);
	}
	free(sets);
	if (s.auto_gates &&
	    (!(cost = calloc((size_t)akk_balance_max_layers(&s), sizeof(*cost))) ||
	     akk_balance(&s, profile, cost, &e))) {
		rc = cost ? cli_report(&e, EXIT_USAGE) :
			cli_errorf(EXIT_RUNTIME, "out of memory");
	} else if (akk_model_plan(&m, &s, &e)) {
		rc = cli_report(&e, EXIT_USAGE);
	} else if (akk_schedule_plan(&plan, s.sched.mode, &s.sched, m.ngates,
				     s.sched.threads, akk_cores(), &e)) {
		rc = cli_report(&e, EXIT_USAGE);
	} else if (akk_schedule_widen(&plan, &m), graph && (rc = write_graph(&m, graph)) != EXIT_OK) {
		;	/* reported */
	} else {
		/* with --graph -, the picture is stdout */
		if (!graph || strcmp(graph, "-")) {
			print_plan(&s, &m, &plan);
			cli_print_heads(stdout, &s, akk_model_outputs(&m));
			print_data(&s.data);
			if (s.auto_gates)
				cli_print_split(&s, cost, profile);
		}
		/* the plan stands; the data must be there to train it */
		rc = akk_spec_check_data(&s, &e) ? cli_report(&e, EXIT_USAGE) : EXIT_OK;
	}
	free(cost);
	akk_model_release(&m);
	akk_spec_release(&s);
	return rc;
}
