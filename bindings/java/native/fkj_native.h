/*
 * Native helpers of the Java binding, compiled into libflashkit_jni.so with the SWIG wrapper.
 * They do what only native code can: build a heap DLTensor for a Tensor view, read a direct
 * buffer's address, and turn a failed fk_status_t into the matching Java exception.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef FLASHKIT_JAVA_FKJ_NATIVE_H
#define FLASHKIT_JAVA_FKJ_NATIVE_H

#include <jni.h>
#include <stdint.h>

#include "flashkit/flashkit.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Allocates one heap block holding a DLTensor and copies of its shape and strides.
 * `shape` gives ndim (its length, at most 32); `strides` is NULL (compact row-major) or the
 * same length. Returns the DLTensor's address, or 0 with a Java exception pending
 * (IllegalArgumentException for bad arguments, OutOfMemoryError). Free with fkj_tensor_destroy().
 */
int64_t fkj_tensor_create(JNIEnv* jenv, int64_t data_address, int32_t device_type,
                          int32_t device_id, int32_t dtype_code, int32_t dtype_bits,
                          jlongArray shape, jlongArray strides);

/** Frees a DLTensor made by fkj_tensor_create(); 0 does nothing. */
void fkj_tensor_destroy(int64_t tensor);

/** Address of a direct java.nio buffer's element 0, or 0 (with IllegalArgumentException
 *  pending) when the buffer is not direct. */
int64_t fkj_direct_buffer_address(JNIEnv* jenv, jobject buffer);

/**
 * Throws the Java exception for a failed status: org.flashkit.InvalidArgumentException,
 * NotSupportedException, OutOfMemoryException, DeviceException or InternalException by
 * fk_status_category(), carrying the status and fk_get_last_error_message() read right away
 * on this thread. Does nothing for FK_SUCCESS.
 */
void fkj_throw_status(JNIEnv* jenv, int status);

/**
 * Installs `sink` (an org.flashkit.LogSink, or NULL to remove) as the library's log callback at
 * or below `max_level`: each message is delivered by calling `sink.deliver(int, String)` on the
 * thread that logs it (attached to the JVM as a daemon thread when it is not a Java thread).
 * Keeps a global reference to `sink` and deletes the previous one once fk_set_log_callback()
 * has returned (no delivery can still use it then). Callers serialise calls to this function.
 * Returns the status of fk_set_log_callback() (the SWIG wrapper throws for a failure).
 */
fk_status_t fkj_set_log_callback(JNIEnv* jenv, jobject sink, int32_t max_level);

/**
 * Stops all later log deliveries into the JVM without taking any lock (the callback stays
 * installed in the library and returns at once). Called by Flashkit's shutdown hook; a
 * delivery already inside the JVM finishes. Irreversible.
 */
void fkj_log_shutdown(void);

/**
 * A Java String decoded from `utf8` (NUL-terminated standard UTF-8; malformed bytes become
 * U+FFFD), as every string from the library reaches Java (error and log messages, variant
 * names). NULL (with an exception pending) only when the JVM is out of memory.
 */
jstring fkj_new_string(JNIEnv* jenv, const char* utf8);

/** fkj_new_string() of a byte array (up to its first zero byte): lets tests check the
 *  decoding of non-ASCII messages, which the library seldom produces. */
jstring fkj_string_from_utf8(JNIEnv* jenv, jbyteArray utf8);

/** Returns `status` unchanged after throwing for it as fkj_throw_status() does (lets tests
 *  check the category -> exception class mapping for statuses that are hard to provoke). */
int32_t fkj_check_status(JNIEnv* jenv, int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* FLASHKIT_JAVA_FKJ_NATIVE_H */
