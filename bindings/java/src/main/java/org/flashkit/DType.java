// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Element types flashkit tensors use (DLPack {@code {code, bits, lanes = 1}}). */
public enum DType {
  /** IEEE fp32. */
  FLOAT32(FlashkitNativeConstants.kDLFloat, 32),
  /** IEEE fp16 (stored as 16-bit patterns; Java has no half type). */
  FLOAT16(FlashkitNativeConstants.kDLFloat, 16),
  /** bfloat16 (stored as 16-bit patterns). */
  BFLOAT16(FlashkitNativeConstants.kDLBfloat, 16),
  /** int32, e.g. attention's cu_seqlens. */
  INT32(FlashkitNativeConstants.kDLInt, 32),
  /**
   * OCP float8 e4m3fn (one byte per element; DLPack 1.1 code 10): only
   * {@link Context#gemmScaled}'s a and b and {@link Context#attentionFp8}'s q, k and v accept
   * it; elsewhere it gets {@link NotSupportedException} (or {@link InvalidArgumentException},
   * status DTYPE_MISMATCH, where an argument must be FLOAT32 or BFLOAT16).
   */
  FLOAT8_E4M3FN(FlashkitNativeConstants.FK_DLPACK_FLOAT8_E4M3FN, 8),
  /**
   * OCP float8 e5m2 (one byte per element; DLPack 1.1 code 12): only {@link Context#gemmScaled}'s
   * a and b accept it ({@link Context#attentionFp8} refuses it, status DTYPE_MISMATCH).
   */
  FLOAT8_E5M2(FlashkitNativeConstants.FK_DLPACK_FLOAT8_E5M2, 8);

  private final int code;
  private final int bits;

  DType(int code, int bits) {
    this.code = code;
    this.bits = bits;
  }

  /**
   * DLPack type code.
   *
   * @return {@code kDLFloat}, {@code kDLBfloat}, {@code kDLInt}, or the DLPack 1.1 float8 codes
   *     10 (e4m3fn) and 12 (e5m2)
   */
  public int code() {
    return code;
  }

  /**
   * Width in bits.
   *
   * @return bits per element (DLPack {@code bits}; lanes are always 1): 32, 16 or 8
   */
  public int bits() {
    return bits;
  }

  /**
   * Width in bytes: the element size to which a tensor's data address must be aligned.
   *
   * @return bytes per element, {@code bits() / 8}: 4, 2 or 1
   */
  public int bytes() {
    return bits / 8;
  }

  static DType fromCode(int code, int bits) {
    for (DType d : values()) {
      if (d.code == code && d.bits == bits) return d;
    }
    throw new IllegalArgumentException("unsupported dtype code " + code + " bits " + bits);
  }
}
