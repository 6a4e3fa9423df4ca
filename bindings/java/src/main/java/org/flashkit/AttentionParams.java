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
   * after {@link #defaultSoftmaxScale()}, the library uses 1/sqrt(head_dim). The score
   * {@code softmax_scale * q.k} is formed in fp32; a score that overflows it (|score| &gt; 3.4e38)
   * is not guarded against and can make its row NaN.
   *
   * @param scale the multiplier ({@code params.softmax_scale}), dimensionless, finite
   * @return this, for chaining
   * @throws IllegalArgumentException for NaN (the C library spells "default" as NaN, and a NaN
   *     computed by mistake must not silently become the default) and for an infinite scale
   *     (the library refuses it: {@code FK_ERROR_INVALID_ARGUMENT}); Python and Rust refuse
   *     both too
   */
  public AttentionParams softmaxScale(float scale) {
    if (Float.isNaN(scale)) {
      throw new IllegalArgumentException(
          "params.softmax_scale: NaN (call defaultSoftmaxScale() for 1/sqrt(head_dim))");
    }
    if (Float.isInfinite(scale)) {
      throw new IllegalArgumentException("params.softmax_scale: " + scale + " is not finite");
    }
    this.softmaxScale = scale;
    return this;
  }

  /**
   * Back to the default multiplier of Q K^T, 1/sqrt(head_dim) ({@code softmax_scale} NaN in C).
   *
   * @return this, for chaining
   */
  public AttentionParams defaultSoftmaxScale() {
    this.softmaxScale = Float.NaN;
    return this;
  }

  /**
   * Causal mask ({@code params.causal}), aligned to the bottom-right corner when
   * {@code seqlen_q != seqlen_k}: query row i keeps keys {@code j <= i + seqlen_k - seqlen_q}
   * (in the varlen and KV-cache forms, per sequence). Causal is the window (left, 0): it forces
   * {@code window_size_right} to 0.
   *
   * @param causal true for a causal mask; default false
   * @return this, for chaining
   */
  public AttentionParams causal(boolean causal) {
    this.causal = causal;
    return this;
  }

  /**
   * Sliding window ({@code params.window_size_left}, {@code params.window_size_right};
   * Longformer, Beltagy et al. 2020, section 3.1): query row i keeps keys j with
   * {@code i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right}
   * (bottom-right aligned, like {@link #causal(boolean)}). Values below -1 are not checked here:
   * the call throws {@link InvalidArgumentException} (status INVALID_ARGUMENT).
   *
   * @param left keys allowed to the left of the diagonal, in key positions; -1 (default) is
   *     unbounded; must be &gt;= -1
   * @param right keys allowed to the right of the diagonal, in key positions; -1 (default) is
   *     unbounded; must be &gt;= -1; forced to 0 by {@code causal}
   * @return this, for chaining
   */
  public AttentionParams window(int left, int right) {
    this.windowLeft = left;
    this.windowRight = right;
    return this;
  }

  /**
   * Score cap ({@code params.softcap}; logit soft-capping, Gemma Team 2024, "Gemma 2", section
   * 2): when {@code softcap > 0} the scores become {@code softcap * tanh(s / softcap)} with
   * {@code s = softmax_scale * q.k}, before masking. Not checked here: a negative or non-finite
   * value makes the call throw {@link InvalidArgumentException} (status INVALID_ARGUMENT).
   *
   * @param softcap the cap, in score units; 0 (default) disables it; must be &gt;= 0 and finite
   * @return this, for chaining
   */
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
   * Required (&gt; 0) while the launch stream is being captured into a CUDA graph (a batch whose
   * sequences are all empty passes 1). Not used in the batched form; must stay (0, 0) for
   * {@link Context#attentionKvCache}.
   *
   * @param q {@code params.max_seqlen_q}: the longest query sequence in {@code cu_seqlens_q}, in
   *     rows; 0 = not given; negative: {@link InvalidArgumentException} (status
   *     INVALID_ARGUMENT) at the call
   * @param k {@code params.max_seqlen_k}: the same for {@code cu_seqlens_k} (keys)
   * @return this, for chaining
   */
  public AttentionParams maxSeqlen(long q, long k) {
    this.maxSeqlenQ = q;
    this.maxSeqlenK = k;
    return this;
  }

  /**
   * The {@code max_seqlen_q} set by {@link #maxSeqlen(long, long)}.
   *
   * @return the longest query sequence in rows, or 0 (default) for "not given"
   */
  public long maxSeqlenQ() {
    return maxSeqlenQ;
  }

  /**
   * The {@code max_seqlen_k} set by {@link #maxSeqlen(long, long)}.
   *
   * @return the longest key sequence in rows, or 0 (default) for "not given"
   */
  public long maxSeqlenK() {
    return maxSeqlenK;
  }

  /**
   * The {@code softmax_scale} set by {@link #softmaxScale(float)}.
   *
   * @return the multiplier of Q K^T; NaN when the default 1/sqrt(head_dim) applies
   */
  public float softmaxScale() {
    return softmaxScale;
  }

  /**
   * The {@code causal} flag set by {@link #causal(boolean)}.
   *
   * @return true for a causal (bottom-right aligned) mask; default false
   */
  public boolean causal() {
    return causal;
  }

  /**
   * The {@code window_size_left} set by {@link #window(int, int)}.
   *
   * @return keys allowed to the left of the diagonal; -1 (default) is unbounded
   */
  public int windowLeft() {
    return windowLeft;
  }

  /**
   * The {@code window_size_right} set by {@link #window(int, int)} (the library forces it to 0
   * when {@code causal}; this getter returns the value set).
   *
   * @return keys allowed to the right of the diagonal; -1 (default) is unbounded
   */
  public int windowRight() {
    return windowRight;
  }

  /**
   * The {@code softcap} set by {@link #softcap(float)}.
   *
   * @return the score cap; 0 (default) when disabled
   */
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
