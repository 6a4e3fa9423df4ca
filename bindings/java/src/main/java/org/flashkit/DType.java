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
   * {@link Context#gemmScaled}'s a and b accept it.
   */
  FLOAT8_E4M3FN(FlashkitNativeConstants.FK_DLPACK_FLOAT8_E4M3FN, 8),
  /** OCP float8 e5m2 (DLPack 1.1 code 12): only {@link Context#gemmScaled}'s a and b. */
  FLOAT8_E5M2(FlashkitNativeConstants.FK_DLPACK_FLOAT8_E5M2, 8);

  private final int code;
  private final int bits;

  DType(int code, int bits) {
    this.code = code;
    this.bits = bits;
  }

  /** DLPack type code (kDLFloat, kDLBfloat, kDLInt, or the float8 codes). */
  public int code() {
    return code;
  }

  /** Width in bits. */
  public int bits() {
    return bits;
  }

  /** Width in bytes. */
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
