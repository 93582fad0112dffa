/* schedule.h - the schedule room: everything that differs between
 * schedules, decided in one place.
 *
 * akk_schedule_plan turns a schedule spec (its mode and knobs) into a plan:
 * how many batches are in flight, when validation runs, whether a drained
 * final pass follows the last epoch, whether gate actors keep strict
 * forward/backward states, whether gates stash weights, how many compute
 * threads a busy gate uses and how deep every mailbox must be. The runtime
 * (run.c, sentinel.c, gate_actor.c) and `akkctl check` read the plan; no
 * other file compares AKK_MODE_* values but the config's own checks
 * across its keys (config/spec_checks.c, below the runtime).
 *
 * Pipeline (PipeDream-Flush, 1F1B): each batch is split into `micro`
 * chunks and K = ngates chunks are in flight, so each gate holds at most
 * ngates tapes whatever micro is; gradients accumulate over a group of
 * `accumulate` batches and every gate steps once after the group's last
 * chunk. Flip-flop with accumulate > 1 is the same mechanism with K = 1.
 *
 * Adding a schedule touches these files, and no others:
 *   core/config/spec.h    its AKK_MODE_* at the end of enum akk_mode;
 *   core/config/spec.c    its name at the same place in mode_names (the
 *                         config, --mode, the checkpoint's check and every
 *                         message that lists the schedules take the names
 *                         from there: akk_mode_name, akk_mode_parse,
 *                         akk_mode_list);
 *   core/runtime/schedule.c  its case in akk_schedule_plan, filling every
 *                         field of struct akk_schedule;
 *   tests/test_schedule.c its plan, and what overlapped what when it runs;
 *   docs: README.md, man/akkctl.1 (--mode), man/akkctl.5 (schedule.mode),
 *   and the --mode lines of the train and bench usage in cli/main.c.
 * That is 3 source files, its test and the docs (8 files). The spec keeps
 * the names because it sits below the runtime (core/README's floors).
 * Only when it has a rule against other schedule keys: its line in
 * check_pipeline (core/config/spec_checks.c, 9 files); only when its
 * sentinel needs a policy the fields cannot express: one more field here,
 * read by sentinel.c's run_phase (schedule.h, sentinel.c: 2 more). */
#ifndef AKK_SCHEDULE_H
#define AKK_SCHEDULE_H

#include "config/spec.h"
#include "model/gate.h"

struct akk_schedule {
	enum akk_mode mode;
	int K;			/* training batches in flight */
	int V;			/* validation batches in flight */
	int validate_during;	/* validation runs while training batches are
				 * in flight; 0: after the epoch's last backward */
	int final_pass;		/* after the last epoch, a drained validation
				 * pass ("final" row) on the final weights */
	int strict_states;	/* gates alternate a forward and a backward
				 * state; any other message is a protocol error */
	int stash;		/* gates that need it stash the weights each
				 * in-flight batch's forward used */
	int compute_threads;	/* compute threads of one busy gate */
	int busy_gates;		/* gates that can compute at once: the run
				 * needs a worker thread for each of them
				 * besides what one gate's products use */
	int mailbox_cap;	/* messages per actor's mailbox */
	int micro;		/* chunks (micro-batches) each batch is split
				 * into; 1: whole batches */
	int accumulate;		/* batches whose gradients add up to one
				 * optimizer step */
	int flush;		/* the sentinel issues no chunk of the next
				 * step group before every chunk of the last
				 * one is back (pipeline, accumulate); 0: the
				 * next batch goes out as soon as a credit is
				 * free (wheels, where a group is one batch) */
	int chunk_max;		/* samples in the largest chunk: what one
				 * training tape must hold */
};

/* The plan for schedule s run as mode with ngates gates. threads: the
 * compute threads asked for (0: automatic); cores: the cores this process
 * may use (>= 1). Fails only on a mode it does not know. */
int akk_schedule_plan(struct akk_schedule *p, enum akk_mode mode,
		      const struct akk_schedule_spec *s, int ngates,
		      int threads, int cores, struct akk_err *e);

/* For gates that fork and join (model.h): the gates one batch keeps busy
 * at once (its widest fork's branches) and mailboxes for a join's or a
 * fork's several messages a batch. Nothing changes for a chain. */
void akk_schedule_widen(struct akk_schedule *p, const struct akk_model *m);

/* What gate g is built for under plan p with batches of batch_size: K
 * training tapes of the largest chunk, V evaluation tapes of a batch, the
 * weights stashed when the plan stashes and g has parameters to stash.
 * The run builds its gates with it (adding the lr schedule's fields and
 * the seed) and `akkctl check` reports their memory from it
 * (akk_gate_memory), so the two cannot disagree. */
struct akk_gate_config akk_schedule_gate_config(const struct akk_schedule *p,
						const struct akk_gate_plan *g,
						int batch_size);

/* The schedule called name (its akk_mode_name): 0 and *mode (when mode is
 * not NULL), or -1 for a name no schedule has. */
int akk_mode_parse(const char *name, enum akk_mode *mode);
/* Every schedule's name, "flip-flop, wheels, ...", into buf (truncated to
 * size); returns buf. For messages that list the choices. */
const char *akk_mode_list(char *buf, size_t size);

#endif
