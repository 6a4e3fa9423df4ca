/*
 * flashkit.i - the language-neutral SWIG interface over include/flashkit/flashkit.h.
 *
 * SPDX-License-Identifier: Apache-2.0
 *
 * Each language has its own interface file that sets %module, adds what is specific to that
 * language, and %includes this file (the GDAL / libSBML layout):
 *
 *   bindings/python/flashkit_python.i   Python (status -> exception classes, GIL, DLTensor
 *                                       addresses as Python ints)
 *   bindings/java/flashkit_java.i       Java
 *
 * What this file decides for every language:
 *   - The whole public header is wrapped as it is; its Doxygen comments become the target
 *     language's documentation when SWIG runs with -doxygen.
 *   - `DLTensor` is opaque: a wrapped function takes `const DLTensor*` as a plain pointer. SWIG is
 *     never shown the struct's fields, so every language decides how it builds the descriptor
 *     (Python builds it with ctypes and passes its address).
 *   - The small DLPack value types the header uses by value (`DLDataType`, inside
 *     fk_fftconv_plan_options_t) and the device/type-code constants are declared here.
 *   - Out-parameters are hidden from the argument list: `fk_context_t** context`,
 *     `fk_fftconv_plan_t** plan`, `const char** variant_name` and `uint64_t* workspace_bytes`
 *     become locals. A language file MUST add an `argout` typemap for each of the four names to
 *     hand the value back (and decide what a returned fk_status_t becomes: an exception is the
 *     expected choice).
 *
 * Nothing here depends on a target language; anything that does belongs in the language file.
 */

%{
#include "flashkit/flashkit.h"
%}

%include <stdint.i>

/* ------------------------------------------------------------------------------------------ */
/* DLPack: value types and constants (the ABI of dlpack.h, identical from 0.6 to 1.x).         */
/* DLTensor itself is deliberately not declared: pointers to it stay opaque.                   */
/* ------------------------------------------------------------------------------------------ */

/** DLPack element type: `code` is a DLDataTypeCode, `bits` the width, `lanes` 1 for scalars. */
typedef struct {
  uint8_t code;   /**< kDLInt, kDLUInt, kDLFloat, kDLBfloat, ... */
  uint8_t bits;   /**< 16 or 32 for the float types flashkit computes on. */
  uint16_t lanes; /**< Always 1 for flashkit. */
} DLDataType;

/* Device types (DLDeviceType). */
%constant int kDLCPU = 1;
%constant int kDLCUDA = 2;
%constant int kDLCUDAHost = 3;
%constant int kDLCUDAManaged = 13;

/* Type codes (DLDataTypeCode). */
%constant int kDLInt = 0;
%constant int kDLUInt = 1;
%constant int kDLFloat = 2;
%constant int kDLBfloat = 4;

/* ------------------------------------------------------------------------------------------ */
/* Opaque handles: no constructor or destructor of their own; the fk_*_create / fk_*_destroy  */
/* functions own their lifetime.                                                              */
/* ------------------------------------------------------------------------------------------ */

%nodefaultctor fk_context;
%nodefaultdtor fk_context;
%nodefaultctor fk_fftconv_plan;
%nodefaultdtor fk_fftconv_plan;

/* ------------------------------------------------------------------------------------------ */
/* Out-parameters become locals; each language returns them through its own argout typemap.   */
/* ------------------------------------------------------------------------------------------ */

%typemap(in, numinputs=0) fk_context_t** context (fk_context_t* fk_out_context = NULL) {
  $1 = &fk_out_context;
}
%typemap(in, numinputs=0) fk_fftconv_plan_t** plan (fk_fftconv_plan_t* fk_out_plan = NULL) {
  $1 = &fk_out_plan;
}
%typemap(in, numinputs=0) const char** variant_name (const char* fk_out_variant = NULL) {
  $1 = ($1_ltype)&fk_out_variant;
}
%typemap(in, numinputs=0) uint64_t* workspace_bytes (uint64_t fk_out_bytes = 0) {
  $1 = &fk_out_bytes;
}

/* ------------------------------------------------------------------------------------------ */
/* The header. FK_API expands to nothing for SWIG (its preprocessor defines no __GNUC__), and  */
/* the header's own #include of dlpack.h is not followed.                                     */
/* ------------------------------------------------------------------------------------------ */

%include "flashkit/flashkit.h"
