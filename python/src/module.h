/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.h: what the extension's files share: glyd.Error and how results
 * become it, the packed-model type, and each file's part of the module.
 */
#ifndef GLYD_PY_MODULE_H
#define GLYD_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "glyd.h"
#include "glyd_tensor.h"

extern PyObject* GlydError; /* glyd.Error */

/* Raises glyd.Error for the library result r, with its message (prefixed by
 * `what` where given) and its glyd_ErrorCode as .code. Returns NULL. */
PyObject* raise_code(size_t r, const char* what);

/* Threads as Python callers count them (0: all cores, 1: the calling
 * thread) to the library's workers (0: the calling thread). -1 and
 * ValueError when out of range. */
int workers_of(int threads, int* workers);

/* glyd._glyd.Model: a packed model. */
typedef struct {
    PyObject_HEAD
    glyd_model* model;
    Py_ssize_t exports; /* CodedMatrix objects over its mapping: it stays open */
} ModelObject;

extern PyTypeObject ModelType;

/* 0 when the model is open, else -1 and ValueError. */
int model_open(ModelObject* self);

/* coded_matrix.c: adds CodedMatrix and set_product_threads to the module. */
int coded_matrix_add(PyObject* module);

#endif /* GLYD_PY_MODULE_H */
