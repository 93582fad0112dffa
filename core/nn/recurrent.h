/* recurrent.h - what the recurrent kinds (lstm, gru, rnn) share: their
 * options, shape planning, parameter layout, initialisation and the time
 * loop (directions, the batched input and weight products); each kind's
 * file adds its cell: the step's gate arithmetic, forward and backward.
 *
 * Equations and parameter layout are torch's nn.LSTM / nn.GRU / nn.RNN.
 * Input [T, F] (time-major within a sample), H units, G gate blocks (4, 3
 * or 1), initial state zero. Parameters, per direction (the forward pass,
 * then the reverse one when bidirectional): weight_ih (G H, F), weight_hh
 * (G H, H), bias_ih (G H), bias_hh (G H). Output [H] (the last step's
 * hidden state) or [T, H] with return_sequences; bidirectional
 * concatenates the two passes' H features, forward first: [2H] or
 * [T, 2H]. The last-step output of the reverse pass is its state after
 * reading step 0 (torch's h_n, Keras' Bidirectional), not its output at
 * step T-1.
 *
 * Batch layout. The kernels work time-major across the batch: the gate
 * values of step t for all B samples are B contiguous rows, so each step's
 * recurrent product is one sgemm of (B, H) by (H, G H), the input product
 * of all steps one sgemm of (T B, F) by (F, G H), and the backward's
 * weight gradients one sgemm each over all steps. aux, B * l->aux floats,
 * holds per pass: the gates (T, B, G H; pre-activations, then the
 * activations in place), the hidden states (T, B, H), and the cell's
 * extra (T, B, E H): the LSTM's cell states, the GRU's W_hn h + b_hn.
 * Scratch (work_sample): the input time-major (T B, F), the input
 * gradient time-major (T B, F), the gate gradients (T B, G H; twice for
 * the GRU, whose input and hidden sides differ), and three (B, H) rows.
 *
 * Stateful (stateful: true, direction forward only): in training the
 * initial state of batch row b is the final state of row b of the
 * previous training batch, kept in the layer's state block (state_h
 * (max_batch, H), then the LSTM's state_c (max_batch, H)), so a
 * checkpoint carries it; it is an input, not differentiated: the gradient
 * stops at the batch boundary (truncated back-propagation through time,
 * T steps). The gate zeroes it at each epoch's start (l->ncarry); an
 * evaluation forward starts from zero and leaves it alone. aux then holds
 * the initial state just before the steps it starts: h0 (B, H) before h,
 * c0 (B, H) before the LSTM's cells, so the step "before" time 0 is
 * time -1 (akk_rec_prev) for the cells as for any other step. */
#ifndef AKK_RECURRENT_H
#define AKK_RECURRENT_H

#include "nn/layer.h"
#include "nn/export.h"

/* The spec's slots for the recurrent options. */
#define AKK_REC_SEQ iopt[0]	/* return_sequences: 0 or 1 */
#define AKK_REC_DIR iopt[1]	/* direction: an enum akk_rec_direction */
#define AKK_REC_ACT iopt[2]	/* rnn's activation: 0 tanh, 1 relu */
#define AKK_REC_STATE iopt[3]	/* stateful: 0 or 1 */

enum akk_rec_direction { AKK_REC_FORWARD, AKK_REC_REVERSE, AKK_REC_BIDIRECTIONAL };

extern const char *const akk_rec_direction_names[];

/* The options every recurrent kind takes (units, return_sequences,
 * direction, stateful, init, init_value), as entries of its option table. */
#define AKK_REC_OPTIONS                                                       \
	AKK_OPTION("units", INT, units, AKK_OPTION_REQ | AKK_OPTION_LO, 1, 0, 0), \
	AKK_OPTION("return_sequences", BOOL, AKK_REC_SEQ, 0, 0, 0, 0),        \
	AKK_OPTION_NAMES("direction", AKK_REC_DIR, akk_rec_direction_names,   \
			 AKK_REC_FORWARD),                                    \
	AKK_OPTION("stateful", BOOL, AKK_REC_STATE, 0, 0, 0, 0),              \
	AKK_OPTION("init", INIT, init, 0, 0, 0, AKK_INIT_DEFAULT),            \
	AKK_OPTION("init_value", FLOAT, init_value, 0, 0, 0, 0)

/* A recurrent layer's geometry, from its plan. */
struct akk_rec {
	int T, F, H, G;
	int E;		/* the cell's extra (T, B, H) blocks in aux */
	int C;		/* of them, state the next step reads (the LSTM's c) */
	int dirs;	/* passes: 1, or 2 when bidirectional */
	int seq;	/* return_sequences */
	int first_reverse;	/* pass 0 runs backwards in time (direction
				 * reverse) */
	int hh_apart;	/* the cell's (struct akk_rec_cell) */
	int relu;	/* rnn: relu rather than tanh */
	int stateful;	/* the initial state is carried (see above) */
	int rows;	/* stateful: the rows of the state block (max_batch) */
};

/* One pass (direction) of a call: its parameters and its blocks. */
struct akk_rec_pass {
	int reverse;	/* runs from step T-1 down to 0 */
	const float *wih, *whh, *bih, *bhh;	/* (GH, F) (GH, H) (GH) (GH) */
	float *gates;	/* (T, B, GH) */
	float *h;	/* (T, B, H) */
	float *extra;	/* (T, B, E H) or NULL */
	/* stateful: h0 = h - B H and, with C, c0 = extra - B H hold the
	 * initial state; otherwise none (zero: hprev NULL at the first
	 * step) */
};

/* What the cell of a kind computes; the shared loops call it. */
struct akk_rec_cell {
	int G;		/* gate blocks of H: 4, 3, 1 */
	int E;		/* the cell's extra (T, B, H) blocks in aux: 0 or 1 */
	int C;		/* 1: extra is state the next step reads (the LSTM's
			 * cell c; a stateful layer carries it), 0: the
			 * step's own (the GRU's W_hn h + b_hn) or none */
	/* 1 (GRU): the hidden side's products stay apart from the input
	 * side's (r multiplies W_hn h + b_hn), so the forward hands them over
	 * in their own buffer, the backward keeps two gate gradients, and
	 * part of the gradient at hprev bypasses W_hh (z h). 0 (LSTM, RNN):
	 * the loop adds b_hh and hprev W_hh^T into the gates. */
	int hh_apart;
	double step_flops;	/* element-wise FLOPs per unit per step */
	/* Forward, step t of pass ps for B rows: gates[t] holds x W_ih^T +
	 * b_ih, plus b_hh + hprev W_hh^T unless hh_apart; with hh_apart,
	 * hh (B, GH) holds b_hh + hprev W_hh^T. hprev: the hidden state before
	 * (NULL at the pass's first step: zero). Write the activations over
	 * gates[t], and h[t] and extra[t]. */
	void (*forward)(const struct akk_rec *r, const struct akk_rec_pass *ps,
			int t, const float *hprev, const float *hh, int B);
	/* Backward, step t: dh (B, H) is the gradient at h[t] (from the
	 * output and from the step after). Write dgi[t] (B, GH), the gradient
	 * at the input side's pre-activations, and with hh_apart dgh[t] (the
	 * hidden side's) and dhprev (B, H), the gradient at hprev that does
	 * not go through W_hh (the loop adds dgh[t] W_hh to it); carry (B, H)
	 * is the cell's own (the LSTM's cell-state gradient), zero at the
	 * pass's last step. hprev NULL at the first step. */
	void (*backward)(const struct akk_rec *r, const struct akk_rec_pass *ps,
			 int t, const float *hprev, const float *dh,
			 float *dgi, float *dgh, float *dhprev, float *carry,
			 int B);
};

struct akk_rec akk_rec_of(const struct akk_layer *l, const struct akk_rec_cell *c);

/* Plan a recurrent layer with cell c: shapes, sizes, views, FLOPs. */
int akk_rec_plan(struct akk_layer *l, const struct akk_rec_cell *c,
		 struct akk_err *e);
/* torch's init: every parameter U(+-1/sqrt(H)); an explicit init kind
 * fills the weights (fan_in F or H, fan_out G H) and zeroes the biases.
 * A stateful layer's carried state s starts at zero. */
void akk_rec_init(const struct akk_layer *l, const struct akk_rec_cell *c,
		  float *p, float *s, struct akk_rng *rng);
/* s: the layer's state; a stateful layer starts a training forward's row
 * b from s's row b and leaves its final state there (rows beyond
 * l->max_batch, which only a profile's batches have, start from zero). */
void akk_rec_forward(const struct akk_layer *l, const struct akk_rec_cell *c,
		     float *y, float *aux, float *s, float *work, const float *x,
		     const float *p, int B, int train);
void akk_rec_backward(const struct akk_layer *l, const struct akk_rec_cell *c,
		      float *dx, float *dp, float *work, const float *dy,
		      const float *x, const float *aux, const float *p, int B);

/* The ONNX export of a recurrent layer as ONNX's own operator op ("LSTM",
 * "GRU", "RNN", opset 13): a Transpose to [T, N, F], the operator with
 * W, R and B in ONNX's gate order (its k-th gate block is torch's
 * perm[k]), then its Y as [N, T, dirs H] or its Y_h as [N, dirs H].
 * extra: the operator's own attributes (at most 2: linear_before_reset,
 * activations). */
int akk_rec_export(const struct akk_layer *l, const struct akk_rec_cell *c,
		   const char *op, const int *perm, const struct akk_attr *extra,
		   int nextra, struct akk_graph_sink *g,
		   const struct akk_export_io *io, struct akk_err *e);

/* The time of the step before t in pass ps (valid when the step at t is
 * not the pass's first). */
static inline int akk_rec_prev(const struct akk_rec_pass *ps, int t)
{
	return ps->reverse ? t + 1 : t - 1;
}

/* v[0..n) = sigmoid(v), tanh(v) in place: within 3 ulp of libm's,
 * branch-free, vectorized (recurrent.c). */
void akk_rec_sigmoid(float *v, size_t n);
void akk_rec_tanh(float *v, size_t n);
/* 1: the two run their baseline body even where the CPU has AVX2, so the
 * tests can hold both to the same bits; 0 (the default): the best. Not
 * for use while another thread runs them. */
void akk_rec_vmath_baseline(int on);

#endif
