// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * GEMM options ({@code fk_gemm_params_t}) for
 * {@code D = activation(alpha * op(A) @ op(B) + beta * C + bias)}; defaults as
 * {@code fk_gemm_params_init()}: no transposes, alpha 1, beta 0, no activation.
 */
public final class GemmParams {
  private boolean transA;
  private boolean transB;
  private float alpha = 1.0f;
  private float beta = 0.0f;
  private Activation activation = Activation.NONE;

  /**
   * Whether {@code a} is stored (K, M) and used transposed ({@code params.trans_a}, BLAS's
   * TRANSA); the alternative to column-major strides.
   *
   * @param t true: {@code a} is {@code (K, M)} ({@code (batch, K, M)} batched), op(A) = A^T;
   *     default false: {@code a} is {@code (M, K)}
   * @return this, for chaining
   */
  public GemmParams transA(boolean t) {
    this.transA = t;
    return this;
  }

  /**
   * Whether {@code b} is stored (N, K) and used transposed ({@code params.trans_b}, BLAS's
   * TRANSB), e.g. a PyTorch-style {@code (out_features, in_features)} weight.
   *
   * @param t true: {@code b} is {@code (N, K)} ({@code (batch, N, K)} batched), op(B) = B^T;
   *     default false: {@code b} is {@code (K, N)}
   * @return this, for chaining
   */
  public GemmParams transB(boolean t) {
    this.transB = t;
    return this;
  }

  /**
   * Scale of the product ({@code params.alpha}): {@code d = act(alpha * op(a) op(b) + beta * c
   * + bias)}. 0 reads neither a nor b (nor {@link Context#gemmScaled}'s scales), as in BLAS:
   * {@code d = act(beta * c + bias)}.
   *
   * @param alpha the scale, dimensionless; default 1; must be finite (else the call throws
   *     {@link InvalidArgumentException}, status INVALID_ARGUMENT)
   * @return this, for chaining
   */
  public GemmParams alpha(float alpha) {
    this.alpha = alpha;
    return this;
  }

  /**
   * Scale of {@code c} ({@code params.beta}); {@code c} is read only when beta != 0.
   *
   * @param beta the scale, dimensionless; default 0; must be finite, and nonzero requires
   *     {@code c} (else the call throws {@link InvalidArgumentException}, status
   *     INVALID_ARGUMENT)
   * @return this, for chaining
   */
  public GemmParams beta(float beta) {
    this.beta = beta;
    return this;
  }

  /**
   * Elementwise activation applied last in the epilogue ({@code params.activation}), after
   * {@code t = alpha * acc + beta * c + bias}.
   *
   * @param activation the activation; default {@link Activation#NONE}
   * @return this, for chaining
   * @throws NullPointerException if {@code activation} is null
   */
  public GemmParams activation(Activation activation) {
    if (activation == null) throw new NullPointerException("activation");
    this.activation = activation;
    return this;
  }

  /**
   * The {@code trans_a} flag set by {@link #transA(boolean)}.
   *
   * @return true if {@code a} is stored {@code (K, M)}; default false
   */
  public boolean transA() {
    return transA;
  }

  /**
   * The {@code trans_b} flag set by {@link #transB(boolean)}.
   *
   * @return true if {@code b} is stored {@code (N, K)}; default false
   */
  public boolean transB() {
    return transB;
  }

  /**
   * The {@code alpha} set by {@link #alpha(float)}.
   *
   * @return the scale of the product; default 1
   */
  public float alpha() {
    return alpha;
  }

  /**
   * The {@code beta} set by {@link #beta(float)}.
   *
   * @return the scale of {@code c}; default 0
   */
  public float beta() {
    return beta;
  }

  /**
   * The {@code activation} set by {@link #activation(Activation)}.
   *
   * @return the epilogue's activation; default {@link Activation#NONE}
   */
  public Activation activation() {
    return activation;
  }

  fk_gemm_params_t toNative() {
    fk_gemm_params_t p = new fk_gemm_params_t();
    FlashkitNative.fk_gemm_params_init(p);
    p.setTrans_a(transA ? 1 : 0);
    p.setTrans_b(transB ? 1 : 0);
    p.setAlpha(alpha);
    p.setBeta(beta);
    p.setActivation(activation.value());
    return p;
  }
}
