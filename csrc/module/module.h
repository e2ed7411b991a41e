/*
 * module/module.h - the module's own files: module.c (the module, its functions and type) and
 * hooks.c (the private hooks).
 * Level: module, the top of the extension (above ops/, which it registers).
 */
#ifndef GS_MODULE_H
#define GS_MODULE_H

#include "ops/ops.h"

/* The private hooks (_scan_tile_items, _hist_plan, ...), appended to the module's methods: none
 * is public API, and gpuscan/__init__.py re-exports none of them. */
extern PyMethodDef gs_hook_methods[];

#endif /* GS_MODULE_H */
