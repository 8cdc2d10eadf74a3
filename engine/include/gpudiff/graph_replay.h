/*
 * graph_replay.h: a model rewritten so that every node reads the captured outputs of another run
 * instead of what its own upstream nodes compute: each float value a node produces and
 * another reads becomes a graph input of its own (named "<value>@replay"), fed with that
 * run's layer; graph inputs and weights stay as they are; every node keeps its name, op,
 * attributes and outputs, in the same order, and the shape computations an ONNX model makes
 * at each inference (struct gd_fold) come along in their places. Run through a session, it captures one layer
 * per node output exactly as the model would, each differing from the captured run's only
 * by what that node computes itself (gpudiff-agent replay, docs/COMPARISON.md "Replay").
 */
#ifndef GPUDIFF_GRAPH_REPLAY_H
#define GPUDIFF_GRAPH_REPLAY_H

#include "gpudiff/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Builds the replay graph of g (finalized; only read). shapes[v], for every value v of g, is
 * the shape value v had in the captured run (the layers' shapes and the graph inputs'); the
 * replay graph declares its inputs with those shapes, fixed. On success *out (a finalized
 * graph) and *source (one entry per input of *out: the value of g it stands for; free()) are
 * the caller's. Integer and bool values stay computed inside the graph: the engine takes
 * float inputs only. Errors as gd_graph_finalize(), GD_ENOMEM.
 */
int gd_graph_replay_new(const struct gd_graph *g, const struct gd_shape *shapes,
                        struct gd_graph **out, int **source, struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
