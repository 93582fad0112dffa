/* spec_data.h - the data section of the config (spec_data.c): its key
 * table, which spec.c's walk reads, and the handlers spec.c names too. */
#ifndef AKK_SPEC_DATA_H
#define AKK_SPEC_DATA_H

#include <yaml.h>

#include "config/yaml_keys.h"

/* data: {format, train, validation, csv, scale, normalize, ...}. */
extern const struct key akk_spec_data_keys[];

/* normalize's mean and std: a number, or one per input channel. */
int akk_spec_h_channels(struct akk_yaml_ctx *c, const struct key *k,
			const struct section *sec, yaml_node_t *key, yaml_node_t *val);
/* data.scale: a number, remembered as given. */
int akk_spec_h_scale(struct akk_yaml_ctx *c, const struct key *k, const struct section *sec,
		     yaml_node_t *key, yaml_node_t *val);

#endif
