/*
 * Native helpers of the Java binding; see fkj_native.h.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#include "fkj_native.h"

#include <stdlib.h>
#include <string.h>

enum { FKJ_MAX_NDIM = 32 };

static void fkj_throw_java(JNIEnv* jenv, const char* cls, const char* msg) {
  jclass c = (*jenv)->FindClass(jenv, cls);
  if (c) (*jenv)->ThrowNew(jenv, c, msg);
}

int64_t fkj_tensor_create(JNIEnv* jenv, int64_t data_address, int32_t device_type,
                          int32_t device_id, int32_t dtype_code, int32_t dtype_bits,
                          jlongArray shape, jlongArray strides) {
  if (!shape) {
    fkj_throw_java(jenv, "java/lang/NullPointerException", "shape");
    return 0;
  }
  const jsize ndim = (*jenv)->GetArrayLength(jenv, shape);
  if (ndim > FKJ_MAX_NDIM) {
    fkj_throw_java(jenv, "java/lang/IllegalArgumentException", "shape: more than 32 dimensions");
    return 0;
  }
  if (strides && (*jenv)->GetArrayLength(jenv, strides) != ndim) {
    fkj_throw_java(jenv, "java/lang/IllegalArgumentException",
                   "strides: length differs from shape's");
    return 0;
  }
  if (dtype_code < 0 || dtype_code > 255 || dtype_bits < 0 || dtype_bits > 255) {
    fkj_throw_java(jenv, "java/lang/IllegalArgumentException", "dtype: code or bits out of range");
    return 0;
  }
  /* One block: the DLTensor, then shape[ndim], then strides[ndim]. */
  const size_t dims = (size_t)ndim * (strides ? 2u : 1u);
  DLTensor* t = (DLTensor*)malloc(sizeof(DLTensor) + dims * sizeof(int64_t) + 1);
  if (!t) {
    fkj_throw_java(jenv, "java/lang/OutOfMemoryError", "DLTensor");
    return 0;
  }
  memset(t, 0, sizeof(DLTensor));
  int64_t* dims_mem = (int64_t*)(t + 1);
  t->data = (void*)(intptr_t)data_address;
  t->device.device_type = (DLDeviceType)device_type;
  t->device.device_id = device_id;
  t->ndim = (int32_t)ndim;
  t->dtype.code = (uint8_t)dtype_code;
  t->dtype.bits = (uint8_t)dtype_bits;
  t->dtype.lanes = 1;
  t->byte_offset = 0;
  t->shape = ndim ? dims_mem : NULL;
  t->strides = NULL;
  if (ndim) {
    /* jlong and int64_t are both 64-bit signed integers; copy element by element to avoid
       relying on them being the same C type. */
    jlong tmp[FKJ_MAX_NDIM];
    (*jenv)->GetLongArrayRegion(jenv, shape, 0, ndim, tmp);
    for (jsize i = 0; i < ndim; ++i) dims_mem[i] = (int64_t)tmp[i];
    if (strides) {
      (*jenv)->GetLongArrayRegion(jenv, strides, 0, ndim, tmp);
      for (jsize i = 0; i < ndim; ++i) dims_mem[ndim + i] = (int64_t)tmp[i];
      t->strides = dims_mem + ndim;
    }
  }
  return (int64_t)(intptr_t)t;
}

void fkj_tensor_destroy(int64_t tensor) { free((void*)(intptr_t)tensor); }

int64_t fkj_direct_buffer_address(JNIEnv* jenv, jobject buffer) {
  if (!buffer) {
    fkj_throw_java(jenv, "java/lang/NullPointerException", "buffer");
    return 0;
  }
  void* p = (*jenv)->GetDirectBufferAddress(jenv, buffer);
  if (!p) {
    fkj_throw_java(jenv, "java/lang/IllegalArgumentException",
                   "buffer: not a direct buffer (use ByteBuffer.allocateDirect)");
    return 0;
  }
  return (int64_t)(intptr_t)p;
}

void fkj_throw_status(JNIEnv* jenv, int status) {
  if (status == FK_SUCCESS) return;
  /* Copy the thread-local message before any other call can replace it. */
  const char* msg = fk_get_last_error_message();
  const char* cls;
  switch (fk_status_category((fk_status_t)status)) {
    case FK_ERROR_INVALID_ARGUMENT: cls = "org/flashkit/InvalidArgumentException"; break;
    case FK_ERROR_NOT_SUPPORTED: cls = "org/flashkit/NotSupportedException"; break;
    case FK_ERROR_OUT_OF_MEMORY: cls = "org/flashkit/OutOfMemoryException"; break;
    case FK_ERROR_DEVICE: cls = "org/flashkit/DeviceException"; break;
    default: cls = "org/flashkit/InternalException"; break;
  }
  jstring jmsg = (*jenv)->NewStringUTF(jenv, msg ? msg : "");
  if (!jmsg) return; /* OutOfMemoryError pending */
  jclass c = (*jenv)->FindClass(jenv, cls);
  if (!c) return; /* NoClassDefFoundError pending */
  jmethodID ctor = (*jenv)->GetMethodID(jenv, c, "<init>", "(ILjava/lang/String;)V");
  if (!ctor) return;
  jobject ex = (*jenv)->NewObject(jenv, c, ctor, (jint)status, jmsg);
  if (ex) (*jenv)->Throw(jenv, (jthrowable)ex);
}

int32_t fkj_check_status(JNIEnv* jenv, int32_t status) {
  fkj_throw_status(jenv, status);
  return status;
}
