// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** flashkit status codes ({@code fk_status_t}), grouped by category (code / 100 * 100). */
public enum Status {
  SUCCESS(fk_status_t.FK_SUCCESS),
  INVALID_ARGUMENT(fk_status_t.FK_ERROR_INVALID_ARGUMENT),
  NULL_POINTER(fk_status_t.FK_ERROR_NULL_POINTER),
  BAD_STRUCT_SIZE(fk_status_t.FK_ERROR_BAD_STRUCT_SIZE),
  DTYPE_MISMATCH(fk_status_t.FK_ERROR_DTYPE_MISMATCH),
  SHAPE_MISMATCH(fk_status_t.FK_ERROR_SHAPE_MISMATCH),
  BAD_STRIDES(fk_status_t.FK_ERROR_BAD_STRIDES),
  WRONG_DEVICE(fk_status_t.FK_ERROR_WRONG_DEVICE),
  MISALIGNED(fk_status_t.FK_ERROR_MISALIGNED),
  NOT_SUPPORTED(fk_status_t.FK_ERROR_NOT_SUPPORTED),
  BACKEND_UNAVAILABLE(fk_status_t.FK_ERROR_BACKEND_UNAVAILABLE),
  OUT_OF_MEMORY(fk_status_t.FK_ERROR_OUT_OF_MEMORY),
  WORKSPACE_TOO_SMALL(fk_status_t.FK_ERROR_WORKSPACE_TOO_SMALL),
  DEVICE(fk_status_t.FK_ERROR_DEVICE),
  KERNEL_LAUNCH(fk_status_t.FK_ERROR_KERNEL_LAUNCH),
  INTERNAL(fk_status_t.FK_ERROR_INTERNAL);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /** The numeric {@code fk_status_t} value. */
  public int code() {
    return code;
  }

  /** The category: one of SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, OUT_OF_MEMORY, DEVICE, INTERNAL. */
  public Status category() {
    return fromCode(code / 100 * 100);
  }

  /** The status of a code, or null for a code this version does not know. */
  public static Status fromCode(int code) {
    for (Status s : values()) {
      if (s.code == code) return s;
    }
    return null;
  }
}
