/* onnx.h - the inference graph of a trained network as an ONNX model.
 *
 * The model (ONNX IR version 7, default-domain operator set 13) has one
 * input, "input", float32 [N, ...network.input] holding raw pixel values
 * (0..255 for MNIST) with a dynamic batch dimension "N"; the input
 * preprocessing x' = x * a + b (a and b per feature, of the input's shape)
 * as its first nodes, Mul and Add; then every layer's evaluation forward
 * through the layer kind's export hook (nn/export.h), named after the
 * checkpoint's tensors ("g1.l2.dense", its weight "g1.l2.dense.weight");
 * and last the node that turns the last layer's output into what
 * `akkctl predict` and libakk give (nn/loss.h, akk_loss_output): a
 * Softmax over the classes, a Sigmoid per output for a network trained
 * with sigmoid cross-entropy, into the one output "probabilities",
 * float32 [N, classes]; or for a regression network an Identity into
 * "values", float32 [N, outputs]. The encoding is protobuf-c's, from
 * Debian libonnx-dev's onnx.proto, generated at build time. */
#ifndef AKK_ONNX_H
#define AKK_ONNX_H

#include <stddef.h>

#include "base/err.h"
#include "io/checkpoint.h"
#include "model/gate.h"
#include "model/model.h"

#define AKK_ONNX_OPSET 13
#define AKK_ONNX_IR_VERSION 7
#define AKK_ONNX_INPUT "input"
#define AKK_ONNX_OUTPUT "probabilities"	/* a classifier's output */
#define AKK_ONNX_VALUES "values"		/* a regression network's */

/* The input preprocessing of checkpoint c (its stored config parsed into
 * s) as a per-feature affine map: a[i], b[i] for the n values of one
 * sample (n = the size of s->input), so that the network sees
 * raw[i] * a[i] + b[i]. The one place that knows how a checkpoint maps
 * raw input to the network's; today from data.scale and data.normalize
 * (data/batch.h's akk_pixel_map), the same for every feature. */
int akk_onnx_input_map(const struct akk_checkpoint *c,
		       const struct akk_spec *s, float *a, float *b, size_t n,
		       struct akk_err *e);

/* Whether every layer of m can be exported (its kind has an export hook):
 * else fails at path (the checkpoint) naming the first kind that cannot,
 * and its gate and layer. */
int akk_onnx_check(const struct akk_model *m, const char *path,
		   struct akk_err *e);

/* The name of m's graph output: AKK_ONNX_VALUES for a regression
 * network, else AKK_ONNX_OUTPUT. */
const char *akk_onnx_output(const struct akk_model *m);
/* The shape of one sample of that output: [classes], [steps, classes]
 * for a sequence, or with data.targets input or files the last layer's
 * own shape ([1, 28, 28] for an image). */
struct akk_shape akk_onnx_output_shape(const struct akk_model *m);

/* Whether m's outputs stay finite with the weights in gates (m->ngates,
 * each with max_batch >= 2 and one evaluation tape): two probe samples,
 * every network input (after preprocessing) -1 in one and +1 in the other
 * (token ids 0 and vocab - 1 when the network starts with an embedding),
 * go through every layer in evaluation mode; fails at path naming the
 * first layer ("g1.l3.dense", the prefix of its tensors' names) whose
 * output is not finite. The check eval and predict make on their data,
 * made without data, before an export. */
int akk_onnx_check_finite(const struct akk_model *m, struct akk_gate *const *gates,
			  const char *path, struct akk_err *e);

struct akk_onnx_source {
	const struct akk_model *m;
	const struct akk_gate *const *gates;	/* m->ngates, restored weights */
	const float *a, *b;	/* the input map, akk_shape_size(input) each */
	const char *name;	/* the graph's name (the config's name) */
};

/* Write the model to path whole (base/file.h: a temporary file, fsync,
 * rename), or leave path untouched and fail. */
int akk_onnx_write(const char *path, const struct akk_onnx_source *src,
		   struct akk_err *e);

#endif
