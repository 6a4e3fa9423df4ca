/*
 * flashkit_java.i - the Java (JNI) interface: what is Java-specific, then the shared
 * language-neutral bindings/swig/flashkit.i.
 *
 * SPDX-License-Identifier: Apache-2.0
 *
 * The generated classes (FlashkitNative, FlashkitNativeJNI, the parameter-struct proxies) are
 * package-private in org.flashkit: they are the raw layer under the public, idiomatic classes
 * (Context, FFTConvPlan, Tensor, ...). Decisions made here:
 *
 *   - A failed fk_status_t never reaches Java as a number: the wrapper throws the
 *     FlashkitException subclass of its category, carrying the status and the exact text of
 *     fk_get_last_error_message(), read on the same thread right after the call.
 *   - Handles (fk_context_t*, fk_fftconv_plan_t*) and tensors (const DLTensor*) travel as Java
 *     long addresses; tensors are built natively by fkj_tensor_create() (native/fkj_native.c).
 *   - The shared file hides the out-parameters; here the functions that have one return it:
 *     fk_context_create -> long, fk_fftconv_plan_create -> long, fk_*_select_kernel -> String,
 *     fk_*_workspace_size -> long.
 *   - `const fk_launch_t*` is a long[3] {stream, workspace, workspace_bytes} or null, turned into
 *     an fk_launch_t on the native stack (no native object for Java to free).
 *   - Enums are plain int constants (the public layer has real Java enums built on them).
 */

%module FlashkitNative

%include "enumtypeunsafe.swg"
%javaconst(1);

%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}
%typemap(javaclassmodifiers) SWIGTYPE, SWIGTYPE *, SWIGTYPE &, SWIGTYPE [] "final class"
%typemap(javaclassmodifiers) enum SWIGTYPE "final class"

%{
#include "fkj_native.h"
%}

/* ------------------------------------------------------------------------------------------ */
/* Native pointers as Java long.                                                              */
/* ------------------------------------------------------------------------------------------ */

%define FKJ_POINTER_AS_LONG(TYPE)
%typemap(jni) TYPE "jlong"
%typemap(jtype) TYPE "long"
%typemap(jstype) TYPE "long"
%typemap(javain) TYPE "$javainput"
%typemap(in) TYPE %{ $1 = ($1_ltype)(intptr_t)$input; %}
%enddef

FKJ_POINTER_AS_LONG(fk_context_t*)
FKJ_POINTER_AS_LONG(const fk_context_t*)
FKJ_POINTER_AS_LONG(fk_fftconv_plan_t*)
FKJ_POINTER_AS_LONG(const fk_fftconv_plan_t*)
FKJ_POINTER_AS_LONG(const DLTensor*)

/* ------------------------------------------------------------------------------------------ */
/* Launch settings: long[] {stream, workspace, workspace_bytes} or null.                      */
/* ------------------------------------------------------------------------------------------ */

%typemap(jni) const fk_launch_t* "jlongArray"
%typemap(jtype) const fk_launch_t* "long[]"
%typemap(jstype) const fk_launch_t* "long[]"
%typemap(javain) const fk_launch_t* "$javainput"
%typemap(in) const fk_launch_t* (fk_launch_t fkj_launch) {
  $1 = NULL;
  if ($input) {
    jlong fkj_v[3] = {0, 0, 0};
    if ((*jenv)->GetArrayLength(jenv, $input) != 3) {
      SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException,
                              "launch: expected {stream, workspace, workspace_bytes}");
      return $null;
    }
    (*jenv)->GetLongArrayRegion(jenv, $input, 0, 3, fkj_v);
    fk_launch_init(&fkj_launch);
    fkj_launch.stream = (void*)(intptr_t)fkj_v[0];
    fkj_launch.workspace = (void*)(intptr_t)fkj_v[1];
    fkj_launch.workspace_bytes = (uint64_t)fkj_v[2];
    $1 = &fkj_launch;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Status: a failure throws; success returns 0 (or the out-parameter, below).                */
/* ------------------------------------------------------------------------------------------ */

%typemap(out) fk_status_t %{
  if ($1 != FK_SUCCESS) {
    fkj_throw_status(jenv, (int)$1);
    return $null;
  }
  $result = (jint)$1;
%}
/* fk_status_category() returns a category, not the outcome of a call. */
%typemap(out) fk_status_t fk_status_category %{ $result = (jint)$1; %}

/* Functions whose out-parameter becomes the Java return value. */
%define FKJ_RETURNS_OUT_PARAM(FUNC, JNITYPE, JTYPE)
%typemap(jni) fk_status_t FUNC "JNITYPE"
%typemap(jtype) fk_status_t FUNC "JTYPE"
%typemap(jstype) fk_status_t FUNC "JTYPE"
%typemap(javaout) fk_status_t FUNC { return $jnicall; }
%typemap(out) fk_status_t FUNC %{
  if ($1 != FK_SUCCESS) {
    fkj_throw_status(jenv, (int)$1);
    return $null;
  }
%}
%enddef

FKJ_RETURNS_OUT_PARAM(fk_context_create, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_fftconv_plan_create, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_attention_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_attention_fp8_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_attention_kvcache_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_gemm_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_gemm_scaled_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_monarch_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_blockdiag_linear_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_fftconv_select_kernel, jstring, String)
FKJ_RETURNS_OUT_PARAM(fk_attention_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_attention_fp8_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_attention_kvcache_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_gemm_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_gemm_scaled_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_monarch_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_blockdiag_linear_workspace_size, jlong, long)
FKJ_RETURNS_OUT_PARAM(fk_fftconv_workspace_size, jlong, long)

/* The argout typemaps the shared file asks each language for (they run after `out`, so only
   on success). */
%typemap(argout) fk_context_t** context %{ jresult = (jlong)(intptr_t)*$1; %}
%typemap(argout) fk_fftconv_plan_t** plan %{ jresult = (jlong)(intptr_t)*$1; %}
%typemap(argout) const char** variant_name %{ jresult = fkj_new_string(jenv, *$1); %}
/* Every other string the library returns (error messages, status strings, the version):
   decoded as standard UTF-8, which NewStringUTF (modified UTF-8) is not. */
%typemap(out) const char* %{ $result = fkj_new_string(jenv, $1); %}
/* Sizes above Long.MAX_VALUE cannot occur (they would not fit any device). */
%typemap(argout) uint64_t* workspace_bytes %{ jresult = (jlong)*$1; %}

/* ------------------------------------------------------------------------------------------ */
/* Java-only helpers (native/fkj_native.c).                                                   */
/* ------------------------------------------------------------------------------------------ */

%typemap(in, numinputs=0) JNIEnv* jenv %{ $1 = jenv; %}

/* The header spells this unsigned literal "1u", which is not Java. */
%javaconstvalue("1L") FK_FFTCONV_FILTER_CONSTANT;

/* The log callback takes a C function pointer: Java installs one through
   fkj_set_log_callback() (Flashkit.setLogCallback), not this function. */
%ignore fk_set_log_callback;

%include "fkj_native.h"

/* ------------------------------------------------------------------------------------------ */
/* The shared, language-neutral interface (the whole public header).                          */
/* ------------------------------------------------------------------------------------------ */

%include "flashkit.i"
