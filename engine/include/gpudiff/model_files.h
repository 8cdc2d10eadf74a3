/*
 * model_files.h: the files a model needs beside its own file, so that a job can carry them
 * (`gpudiff-agent submit`): a JSON model's weight files, relative to its weights folder, and
 * an ONNX model's external data files, relative to the model's folder.
 */
#ifndef GPUDIFF_MODEL_FILES_H
#define GPUDIFF_MODEL_FILES_H

#include "gpudiff/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One file a model reads. Both strings are owned by the list. */
struct gd_model_file {
    char *name; /* relative: to the weights folder (JSON) or the model's folder (ONNX) */
    char *path; /* where it is on disk, as the loader would open it */
};

struct gd_model_files {
    int onnx;          /* 1: an ONNX model's external data; 0: a JSON model's weights */
    char *weights_dir; /* JSON: the folder the names are relative to; NULL for ONNX */
    int n;
    struct gd_model_file *files; /* each file once, in the order the model first names it */
};

/* An empty list (caller-owned; _fini frees what _find put in it). */
void gd_model_files_init(struct gd_model_files *f);
void gd_model_files_fini(struct gd_model_files *f);

/*
 * Fills f with the files the model at path reads besides itself, told apart by content as
 * the loaders are: for a JSON model (schema/json/model.schema.json) each weight's "file",
 * relative to weights_dir (NULL: the model's "weights_dir", relative to its folder, else its
 * folder), as gd_model_load() opens them; for ONNX each external data location of the
 * initializers and Constant tensors. Only the references are read: the files need not exist
 * (the caller hashes them). GD_EINVAL for a reference a job cannot carry: an absolute path,
 * or one that leaves its folder (".."); GD_EFORMAT for a model that does not parse. On
 * failure f is left empty.
 */
int gd_model_files_find(const char *path, const char *weights_dir, struct gd_model_files *f,
                        struct gd_err *err);

#ifdef __cplusplus
}
#endif
#endif
