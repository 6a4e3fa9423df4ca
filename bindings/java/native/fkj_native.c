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

jstring fkj_new_string(JNIEnv* jenv, const char* utf8) {
  if (!utf8) utf8 = "";
  size_t n = 0;
  int ascii = 1;
  for (; utf8[n]; ++n) ascii &= ((unsigned char)utf8[n] < 0x80);
  /* NUL-free ASCII is the same in standard and in JNI's modified UTF-8. */
  if (ascii) return (*jenv)->NewStringUTF(jenv, utf8);
  /* Anything else is decoded by new String(bytes, "UTF-8"): a 4-byte sequence becomes a
     surrogate pair (NewStringUTF would garble it) and malformed bytes become U+FFFD. */
  if (n > 0x7fffffff) n = 0x7fffffff;
  jstring result = NULL;
  jbyteArray bytes = (*jenv)->NewByteArray(jenv, (jsize)n);
  jstring charset = bytes ? (*jenv)->NewStringUTF(jenv, "UTF-8") : NULL;
  jclass cls = charset ? (*jenv)->FindClass(jenv, "java/lang/String") : NULL;
  if (cls) {
    jmethodID ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "([BLjava/lang/String;)V");
    if (ctor) {
      (*jenv)->SetByteArrayRegion(jenv, bytes, 0, (jsize)n, (const jbyte*)utf8);
      result = (jstring)(*jenv)->NewObject(jenv, cls, ctor, bytes, charset);
    }
  }
  if (cls) (*jenv)->DeleteLocalRef(jenv, cls);
  if (charset) (*jenv)->DeleteLocalRef(jenv, charset);
  if (bytes) (*jenv)->DeleteLocalRef(jenv, bytes);
  return result; /* NULL: an exception (OutOfMemoryError) is pending */
}

jstring fkj_string_from_utf8(JNIEnv* jenv, jbyteArray utf8) {
  if (!utf8) return fkj_new_string(jenv, "");
  const jsize n = (*jenv)->GetArrayLength(jenv, utf8);
  char* buf = (char*)malloc((size_t)n + 1);
  if (!buf) {
    fkj_throw_java(jenv, "java/lang/OutOfMemoryError", "fkj_string_from_utf8");
    return NULL;
  }
  (*jenv)->GetByteArrayRegion(jenv, utf8, 0, n, (jbyte*)buf);
  buf[n] = '\0';
  jstring s = fkj_new_string(jenv, buf);
  free(buf);
  return s;
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
  jstring jmsg = fkj_new_string(jenv, msg);
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

/* ---- log callback ---------------------------------------------------------------------- */

static JavaVM* fkj_vm;
static jobject fkj_log_sink;      /* global reference to the installed LogSink, or NULL */
static jmethodID fkj_log_deliver; /* LogSink.deliver(int, String) */

/* Set by Flashkit's shutdown hook: no delivery enters the JVM afterwards. Setting it takes no
   lock, so the hook cannot wait on a delivery (a listener that calls System.exit holds the
   library's log lock while the hooks run). */
static int fkj_log_off;

void fkj_log_shutdown(void) { __atomic_store_n(&fkj_log_off, 1, __ATOMIC_RELEASE); }

static void fkj_log_trampoline(fk_log_level_t level, const char* message, void* user_data) {
  if (__atomic_load_n(&fkj_log_off, __ATOMIC_ACQUIRE)) return;
  JNIEnv* env = NULL;
  if ((*fkj_vm)->GetEnv(fkj_vm, (void**)&env, JNI_VERSION_1_8) == JNI_EDETACHED &&
      (*fkj_vm)->AttachCurrentThreadAsDaemon(fkj_vm, (void**)&env, NULL) != JNI_OK) {
    return;
  }
  if (!env) return;
  /* A Java exception already pending on this thread is kept aside (no Java call may run with
     one pending) and restored afterwards; anything the sink throws is dropped here (LogSink
     itself catches what the listener throws). */
  jthrowable pending = (*env)->ExceptionOccurred(env);
  if (pending) (*env)->ExceptionClear(env);
  if ((*env)->PushLocalFrame(env, 8) == 0) {
    jstring jmsg = fkj_new_string(env, message);
    if (jmsg) (*env)->CallVoidMethod(env, (jobject)user_data, fkj_log_deliver, (jint)level, jmsg);
    if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
    (*env)->PopLocalFrame(env, NULL);
  } else {
    (*env)->ExceptionClear(env);
  }
  if (pending) {
    (*env)->Throw(env, pending);
    (*env)->DeleteLocalRef(env, pending);
  }
}

fk_status_t fkj_set_log_callback(JNIEnv* jenv, jobject sink, int32_t max_level) {
  jobject ref = NULL;
  if (sink) {
    if (!fkj_vm && (*jenv)->GetJavaVM(jenv, &fkj_vm) != JNI_OK) {
      fkj_throw_java(jenv, "java/lang/IllegalStateException", "log callback: no JavaVM");
      return FK_SUCCESS;
    }
    if (!fkj_log_deliver) {
      jclass c = (*jenv)->FindClass(jenv, "org/flashkit/LogSink");
      if (!c) return FK_SUCCESS; /* NoClassDefFoundError pending */
      fkj_log_deliver = (*jenv)->GetMethodID(jenv, c, "deliver", "(ILjava/lang/String;)V");
      (*jenv)->DeleteLocalRef(jenv, c);
      if (!fkj_log_deliver) return FK_SUCCESS; /* NoSuchMethodError pending */
    }
    ref = (*jenv)->NewGlobalRef(jenv, sink);
    if (!ref) return FK_SUCCESS; /* OutOfMemoryError pending */
  }
  const fk_status_t st = fk_set_log_callback(ref ? fkj_log_trampoline : NULL,
                                             (fk_log_level_t)max_level, ref);
  if (st != FK_SUCCESS) {
    if (ref) (*jenv)->DeleteGlobalRef(jenv, ref);
    return st;
  }
  /* fk_set_log_callback() waited for any delivery in progress: the old sink is unused now. */
  if (fkj_log_sink) (*jenv)->DeleteGlobalRef(jenv, fkj_log_sink);
  fkj_log_sink = ref;
  return FK_SUCCESS;
}
