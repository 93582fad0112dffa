/* akk.h - the akkctl inference library (libakk, akk(3)).
 *
 * Open a checkpoint written by `akkctl train`, ask the shape of one input
 * sample and the number of outputs (and the class names when the
 * checkpoint has them), predict a batch of samples into your buffer,
 * close. Input values are raw, as the data files hold them (MNIST pixels
 * 0..255): the preprocessing the network was trained with (scale,
 * normalize) is read from the checkpoint and applied inside.
 *
 * Errors: every function that can fail returns NULL or -1 and writes a
 * one-line message (no newline) into the caller's buffer err of errlen
 * bytes (cut to fit; err may be NULL). Nothing here prints or exits, and
 * the library keeps no state outside the akk_model.
 *
 * Threads: after akk_open returns, any number of threads may call
 * akk_predict (and the query functions) on the same model at once. The
 * weights are read-only; every akk_predict call works in a workspace of
 * its own, taken from the model's mutex-guarded list of idle ones (or
 * allocated when none is free) and put back at the end, so the model
 * keeps one per call that ran at the same time until akk_close. akk_close
 * must not race with any other call on the model.
 *
 * Link with `pkg-config --cflags --libs akk`. */
#ifndef AKK_H
#define AKK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AKK_VERSION_MAJOR 0
#define AKK_VERSION_MINOR 1
#define AKK_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if */
#define AKK_VERSION_NUMBER (AKK_VERSION_MAJOR * 10000 + AKK_VERSION_MINOR * 100 + \
			    AKK_VERSION_PATCH)
#ifndef AKK_VERSION
#define AKK_VERSION "0.1.0"
#endif

/* What akk_predict returns when it fails (0 on success); the message in
 * err says more. */
enum akk_error {
	AKK_ERR_USAGE = -1,	/* a NULL model or buffer, input of the wrong
				 * shape, an output buffer too small */
	AKK_ERR_INPUT = -2,	/* an input value that is NaN or infinite */
	AKK_ERR_SIZE = -3,	/* nx or nout floats: more bytes than size_t holds */
	AKK_ERR_MEMORY = -4,	/* out of memory */
	AKK_ERR_OUTPUT = -5	/* a non-finite output from finite input: the
				 * weights overflow */
};

/* An opened model (opaque). */
typedef struct akk_lib_model akk_model;

/* The version of the library linked at run time: "MAJOR.MINOR.PATCH". */
const char *akk_version(void);

/* Open the checkpoint at path. Returns NULL with a message in err when the
 * file is missing, not a checkpoint, damaged, from a newer format
 * version, or its network cannot be rebuilt. */
akk_model *akk_open(const char *path, char *err, size_t errlen);

/* The shape of one input sample: its rank (1: [features], 3: [channels,
 * height, width]) and, when dims is not NULL, its dims (dims has room for
 * 4). The queries below take a NULL model without harm: -1 here, in
 * akk_outputs and akk_is_regression, 0 from akk_input_size, NULL from
 * akk_class_name. */
int akk_input_shape(const akk_model *m, int *dims);
/* Values per input sample: the product of the dims. */
size_t akk_input_size(const akk_model *m);
/* Outputs per sample: the number of classes (or of predicted values for
 * regression; with heads, akk_heads, the sum of their sizes). */
int akk_outputs(const akk_model *m);
/* Rows of outputs per sample: 1, or T for a network that outputs a
 * sequence [T, classes] (a class per step, as a language model does). */
int akk_steps(const akk_model *m);
/* 1 when the model predicts values (regression), 0 for classes. */
int akk_is_regression(const akk_model *m);
/* The name of class k (0 <= k < akk_outputs), or NULL when the checkpoint
 * names no classes (or k is out of range). Owned by the model. */
const char *akk_class_name(const akk_model *m, int k);

/* Several outputs (a network trained with network.outputs): each row of
 * akk_outputs(m) floats is the heads' slices one after the other. The
 * number of heads; 0 for a network with one output. */
int akk_heads(const akk_model *m);
/* Head i (0 <= i < akk_heads): its name (owned by the model), the offset
 * and size of its slice of a row, and whether it is a classifier (1: its
 * slice holds class probabilities, softmax, or each class's own sigmoid
 * for sigmoid_cross_entropy; the class names, if any, name its classes)
 * or gives values (0: a head compared with targets or with the input).
 * Any pointer may be NULL. Returns 0, or -1 for no model or i out of
 * range. */
int akk_head(const akk_model *m, int i, const char **name, int *offset, int *size,
	     int *classifier);

/* Several named inputs (a network trained with network.inputs): each
 * sample of akk_input_size(m) values is the inputs' slices one after the
 * other, and akk_predict takes it so, whole. The number of named inputs;
 * 0 for a network with one input. */
int akk_inputs(const akk_model *m);
/* Input i (0 <= i < akk_inputs): its name (owned by the model), the
 * offset and size of its slice of a sample and, when dims is not NULL,
 * its shape's dims (room for 4). Any pointer may be NULL. Returns the
 * shape's rank (1 to 3), or -1 for no model or i out of range. */
int akk_input(const akk_model *m, int i, const char **name, int *offset, int *size,
	      int *dims);

/* Predict the samples in x: nx raw values, a whole number of samples of
 * akk_input_size(m) values each, sample after sample (channels first).
 * out (room for nout floats) receives akk_steps(m) rows of akk_outputs(m)
 * floats per sample (one row but for a sequence output, step after step):
 * the probability of every class (softmax; for a network trained with
 * sigmoid_cross_entropy each class's own sigmoid), or the predicted
 * values for regression; with heads (akk_heads), each head's slice as
 * akk_head says. Returns 0, or a negative enum akk_error with a
 * message in err: AKK_ERR_USAGE (m, x or out NULL, nx not a whole number
 * of samples, out too small), AKK_ERR_INPUT (a NaN or infinite input
 * value, named), AKK_ERR_SIZE (nx or nout floats overflow a byte count),
 * AKK_ERR_MEMORY, AKK_ERR_OUTPUT (a non-finite output: the weights
 * overflow). */
int akk_predict(const akk_model *m, const float *x, size_t nx, float *out,
		size_t nout, char *err, size_t errlen);

/* Free everything the model holds; m may be NULL. */
void akk_close(akk_model *m);

/* The OpenBLAS kernels the process runs into running ("Zen", "Prescott"),
 * and into recommended the strongest set this CPU (by its features, not
 * its model number) and this OpenBLAS can run: the kernels akkctl would
 * choose, or running itself when that is as strong. Returns 1 when
 * running is weaker than recommended, else 0. libakk never changes the
 * host's kernels: OpenBLAS reads OPENBLAS_CORETYPE once, when it loads,
 * so a host that gets 1 sets OPENBLAS_CORETYPE=<recommended> in its
 * environment before it starts (or before it dlopens libakk); akk(3). */
int akk_blas_kernels(char *running, size_t runlen, char *recommended, size_t reclen);

#ifdef __cplusplus
}
#endif

#endif
