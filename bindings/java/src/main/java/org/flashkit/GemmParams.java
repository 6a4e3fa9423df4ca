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

  /** {@code a} is stored (K, M) and used transposed. */
  public GemmParams transA(boolean t) {
    this.transA = t;
    return this;
  }

  /** {@code b} is stored (N, K) and used transposed. */
  public GemmParams transB(boolean t) {
    this.transB = t;
    return this;
  }

  /** Scale of the product (default 1, finite); 0 reads neither a nor b, as in BLAS. */
  public GemmParams alpha(float alpha) {
    this.alpha = alpha;
    return this;
  }

  /** Scale of {@code c}; nonzero requires {@code c}. */
  public GemmParams beta(float beta) {
    this.beta = beta;
    return this;
  }

  public GemmParams activation(Activation activation) {
    if (activation == null) throw new NullPointerException("activation");
    this.activation = activation;
    return this;
  }

  public boolean transA() {
    return transA;
  }

  public boolean transB() {
    return transB;
  }

  public float alpha() {
    return alpha;
  }

  public float beta() {
    return beta;
  }

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
