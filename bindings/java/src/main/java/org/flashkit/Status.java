// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** flashkit status codes ({@code fk_status_t}), grouped by category (code / 100 * 100). */
public enum Status {
  /** 0: the call succeeded. */
  SUCCESS(fk_status_t.FK_SUCCESS),
  /**
   * 100 ({@link InvalidArgumentException}): a value is out of its documented range, or an output
   * (or the launch workspace) overlaps a tensor it must not.
   */
  INVALID_ARGUMENT(fk_status_t.FK_ERROR_INVALID_ARGUMENT),
  /**
   * 101 ({@link InvalidArgumentException}): a required pointer (handle, tensor, data) is NULL, or
   * a view's bytes wrap around the address space.
   */
  NULL_POINTER(fk_status_t.FK_ERROR_NULL_POINTER),
  /**
   * 102 ({@link InvalidArgumentException}): a struct's {@code struct_size} is not one this
   * library knows.
   */
  BAD_STRUCT_SIZE(fk_status_t.FK_ERROR_BAD_STRUCT_SIZE),
  /**
   * 103 ({@link InvalidArgumentException}): a tensor's dtype is unsupported or differs from
   * another's.
   */
  DTYPE_MISMATCH(fk_status_t.FK_ERROR_DTYPE_MISMATCH),
  /** 104 ({@link InvalidArgumentException}): a tensor's rank or extents are wrong. */
  SHAPE_MISMATCH(fk_status_t.FK_ERROR_SHAPE_MISMATCH),
  /**
   * 105 ({@link InvalidArgumentException}): a required dimension is not contiguous, a stride is
   * negative, a weight that must be compact is not, or two elements of an output share an
   * address.
   */
  BAD_STRIDES(fk_status_t.FK_ERROR_BAD_STRIDES),
  /**
   * 106 ({@link InvalidArgumentException}): a tensor lives on a device the context cannot use.
   */
  WRONG_DEVICE(fk_status_t.FK_ERROR_WRONG_DEVICE),
  /**
   * 107 ({@link InvalidArgumentException}): a data pointer is not aligned as required (to the
   * element size).
   */
  MISALIGNED(fk_status_t.FK_ERROR_MISALIGNED),
  /** 200 ({@link NotSupportedException}): a feature or combination is not implemented. */
  NOT_SUPPORTED(fk_status_t.FK_ERROR_NOT_SUPPORTED),
  /**
   * 201 ({@link NotSupportedException}): the requested backend is not compiled in or no device
   * is present.
   */
  BACKEND_UNAVAILABLE(fk_status_t.FK_ERROR_BACKEND_UNAVAILABLE),
  /** 300 ({@link OutOfMemoryException}): a host or device allocation failed. */
  OUT_OF_MEMORY(fk_status_t.FK_ERROR_OUT_OF_MEMORY),
  /**
   * 301, reserved: a workspace that is too small is supplemented by stream-ordered allocation,
   * not refused.
   */
  WORKSPACE_TOO_SMALL(fk_status_t.FK_ERROR_WORKSPACE_TOO_SMALL),
  /**
   * 400 ({@link DeviceException}): the CUDA runtime or driver reported an error, possibly a
   * fault left by earlier asynchronous work; after a sticky fault every context on that device
   * is unusable.
   */
  DEVICE(fk_status_t.FK_ERROR_DEVICE),
  /** 401 ({@link DeviceException}): a kernel failed to launch. */
  KERNEL_LAUNCH(fk_status_t.FK_ERROR_KERNEL_LAUNCH),
  /** 500 ({@link InternalException}): an invariant of the library was broken; please report it. */
  INTERNAL(fk_status_t.FK_ERROR_INTERNAL);

  private final int code;

  Status(int code) {
    this.code = code;
  }

  /**
   * The numeric value.
   *
   * @return the {@code fk_status_t} code, e.g. 104 for SHAPE_MISMATCH
   */
  public int code() {
    return code;
  }

  /**
   * The category of this status ({@code code / 100 * 100}, as {@code fk_status_category()}).
   *
   * @return one of SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, OUT_OF_MEMORY, DEVICE, INTERNAL
   */
  public Status category() {
    return fromCode(code / 100 * 100);
  }

  /**
   * The status of a numeric code.
   *
   * @param code an {@code fk_status_t} value
   * @return the matching constant, or null for a code this version does not know
   */
  public static Status fromCode(int code) {
    for (Status s : values()) {
      if (s.code == code) return s;
    }
    return null;
  }
}
