// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * Attention options ({@code fk_attention_params_t}); the defaults match
 * {@code fk_attention_params_init()}: non-causal, no window, no softcap, scale 1/sqrt(head_dim).
 * Setters return {@code this} for chaining.
 */
public final class AttentionParams {
  private float softmaxScale = Float.NaN;
  private boolean causal;
  private int windowLeft = -1;
  private int windowRight = -1;
  private float softcap;
  private long maxSeqlenQ;
  private long maxSeqlenK;

  /**
   * Multiplier of Q K^T (FlashAttention's {@code softmax_scale}): any finite value. Unset, or
   * after {@link #defaultSoftmaxScale()}, the library uses 1/sqrt(head_dim).
   *
   * @throws IllegalArgumentException for NaN (the C library spells "default" as NaN, and a NaN
   *     computed by mistake must not silently become the default) and for an infinite scale
   *     (the library refuses it: {@code FK_ERROR_INVALID_ARGUMENT}); Python and Rust refuse
   *     both too
   */
  public AttentionParams softmaxScale(float scale) {
    if (Float.isNaN(scale)) {
      throw new IllegalArgumentException(
          "softmax_scale: NaN (call defaultSoftmaxScale() for 1/sqrt(head_dim))");
    }
    if (Float.isInfinite(scale)) {
      throw new IllegalArgumentException("softmax_scale: " + scale + " is not finite");
    }
    this.softmaxScale = scale;
    return this;
  }

  /** Back to the default multiplier of Q K^T, 1/sqrt(head_dim). */
  public AttentionParams defaultSoftmaxScale() {
    this.softmaxScale = Float.NaN;
    return this;
  }

  /** Causal mask, aligned to the bottom-right corner when seqlen_q != seqlen_k. */
  public AttentionParams causal(boolean causal) {
    this.causal = causal;
    return this;
  }

  /** Sliding window: keys allowed left / right of the diagonal; -1 is unbounded. */
  public AttentionParams window(int left, int right) {
    this.windowLeft = left;
    this.windowRight = right;
    return this;
  }

  /** Score cap (Gemma 2); 0 disables it. */
  public AttentionParams softcap(float softcap) {
    this.softcap = softcap;
    return this;
  }

  /**
   * Varlen form: the longest query and key sequences (FlashAttention's max_seqlen_q/k); 0
   * (default) means not given: the library reads cu_seqlens, which on the CUDA backend waits for
   * the stream. Given, device cu_seqlens are trusted (entries clamped inside the tensors; rows
   * past maxSeqlenQ of a longer sequence are not written); on the CPU they are still checked
   * and a value below the longest sequence is an InvalidArgument error. Must be >= 0.
   */
  public AttentionParams maxSeqlen(long q, long k) {
    this.maxSeqlenQ = q;
    this.maxSeqlenK = k;
    return this;
  }

  public long maxSeqlenQ() {
    return maxSeqlenQ;
  }

  public long maxSeqlenK() {
    return maxSeqlenK;
  }

  /** The multiplier set by {@link #softmaxScale(float)}; NaN when the default applies. */
  public float softmaxScale() {
    return softmaxScale;
  }

  public boolean causal() {
    return causal;
  }

  public int windowLeft() {
    return windowLeft;
  }

  public int windowRight() {
    return windowRight;
  }

  public float softcap() {
    return softcap;
  }

  /** A native struct holding these values; the caller deletes it. */
  fk_attention_params_t toNative() {
    fk_attention_params_t p = new fk_attention_params_t();
    FlashkitNative.fk_attention_params_init(p);
    p.setSoftmax_scale(softmaxScale);
    p.setCausal(causal ? 1 : 0);
    p.setWindow_size_left(windowLeft);
    p.setWindow_size_right(windowRight);
    p.setSoftcap(softcap);
    p.setMax_seqlen_q(maxSeqlenQ);
    p.setMax_seqlen_k(maxSeqlenK);
    return p;
  }
}
