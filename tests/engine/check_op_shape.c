/* check_op_shape.c: data movement ops (engine/cpu/op_shape.c): every result bitwise. The
 * cases of Slice, Split, Expand, Tile, DepthToSpace and SpaceToDepth, and the older ops'
 * int64_data cases, are cases_idx.py's. */
#include <stdlib.h>

#include <check.h>

#include "op_fixture.h"

/* clang-format off */
#define CASES(...) (const char *const[]){__VA_ARGS__, NULL}

/* These ops copy values: the result must equal numpy's, bit for bit, NaN and -0 included. */
static const struct of_op shape_ops[] = {
    {"Concat", CASES("rep", "axis1", "axis_last", "axis_negative", "weight", "one_input",
                     "int64_data"), NULL, NULL},
    {"Flatten", CASES("rep", "axis0", "axis_negative", "axis_rank", "axis2"), NULL, NULL},
    {"Reshape", CASES("rep", "zero", "minus_one", "zero_and_minus_one", "allowzero",
                      "allowzero_off", "scalar_out", "attr", "int64_data"), NULL, NULL},
    {"Transpose", CASES("rep", "perm", "perm4", "identity_perm", "int64_data"), NULL, NULL},
    {"Squeeze", CASES("rep", "all", "negative", "input", "int64_data"), NULL, NULL},
    {"Unsqueeze", CASES("rep", "several", "negative", "input", "int64_data"), NULL, NULL},
    {"Pad", CASES("rep", "value", "inputs", "reflect", "edge", "axes", "zero", "rank4",
                  "int64_max_value", "int64_min_value"), NULL, NULL},
    {"Identity", CASES("rep", "edge"), NULL, NULL},
    {"Dropout", CASES("rep", "no_mask", "training_false"), NULL, NULL},
    {"Slice", CASES("rep", "default_axes", "negative_axes", "negative_steps", "clamp", "empty",
                    "start_beyond", "big_step", "attrs", "int64_data", "edge"), NULL, NULL},
    {"Split", CASES("rep", "axis1_sizes", "attr_sizes", "num_outputs_uneven", "four_parts",
                    "zero_size", "int64_data"), NULL, NULL},
    {"Expand", CASES("rep", "same_rank", "keep_dims", "scalar", "int64_data", "edge"), NULL,
     NULL},
    {"Tile", CASES("rep", "both", "rank4", "zero", "int64_data", "edge"), NULL, NULL},
    {"DepthToSpace", CASES("rep", "crd", "dcr_b3", "crd_b3"), NULL, NULL},
    {"SpaceToDepth", CASES("rep", "b3", "b1"), NULL, NULL},
};
/* clang-format on */

int
main(void)
{
    return of_main("op_shape", shape_ops, (int)(sizeof shape_ops / sizeof shape_ops[0]));
}
