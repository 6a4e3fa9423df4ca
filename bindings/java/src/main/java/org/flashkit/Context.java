// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A flashkit context ({@code fk_context_t}): one backend and device. Create one per device and
 * share it; it is immutable and safe to use from several threads at once.
 *
 * <pre>{@code
 * try (Context ctx = Context.cpu();
 *      Tensor q = ..., k = ..., v = ..., out = ...) {
 *   AttentionParams p = new AttentionParams().causal(true);
 *   System.out.println(ctx.attentionSelectKernel(p, q, k, v, null, null, out, null));
 *   ctx.attention(p, q, k, v, out);
 * }
 * }</pre>
 *
 * <p>Every operation throws a {@link FlashkitException} subclass when the library rejects the
 * call (with the library's message), IllegalStateException when this context or a tensor is
 * closed. Optional tensors are passed as null. {@link #close()} also closes the FFT convolution
 * plans still open on this context (the C ABI requires plans to go first). A context that
 * becomes unreachable without being closed is destroyed by a {@link Cleaner}, its plans first,
 * so an abandoned context does not leak; close it (try-with-resources) to free it at once.
 */
public final class Context implements AutoCloseable {
  private final NativeHandle guard; // every call runs inside guard.call: close waits for them
  // The handles of the plans open on this context. The plans' guards, not the FFTConvPlan
  // objects: a plan its user dropped unclosed can then become unreachable, and its Cleaner
  // destroys it while the context lives on.
  private final Set<NativeHandle> plans = ConcurrentHashMap.newKeySet();
  // Destroys the context at close() or, if it is never closed, once it is unreachable (its
  // action holds the guard and the plan set, never the Context).
  private final Cleaner.Cleanable cleanable;

  /** Closes the plans still open, then the context; false if it was already closed. */
  private static boolean destroy(NativeHandle guard, Set<NativeHandle> plans) {
    return guard.close(() -> {
      for (NativeHandle p : new ArrayList<>(plans)) FFTConvPlan.destroy(p, plans);
    }, FlashkitNative::fk_context_destroy);
  }

  /** Options for {@link Context#create(Options)}; defaults as {@code fk_context_options_init()}. */
  public static final class Options {
    private Backend backend = Backend.AUTO;
    private int deviceOrdinal;
    private KernelFamily kernelFamily = KernelFamily.AUTO;
    private int numThreads;

    /**
     * The backend ({@code options.backend}).
     *
     * @param backend {@link Backend#AUTO} (default: CUDA if compiled in and device
     *     {@code deviceOrdinal} is present, else CPU; the environment variable
     *     {@code FLASHKIT_BACKEND} overrides AUTO only), {@link Backend#CPU} or
     *     {@link Backend#CUDA} (unavailable: {@link NotSupportedException}, status
     *     BACKEND_UNAVAILABLE, from {@link Context#create(Options)})
     * @return this, for chaining
     * @throws NullPointerException if {@code backend} is null
     */
    public Options backend(Backend backend) {
      if (backend == null) throw new NullPointerException("backend");
      this.backend = backend;
      return this;
    }

    /**
     * CUDA device ordinal ({@code options.device_ordinal}, as in cudaSetDevice).
     *
     * @param ordinal the device, default 0; negative: {@link InvalidArgumentException} (status
     *     INVALID_ARGUMENT) from {@link Context#create(Options)}; past the visible devices:
     *     {@link NotSupportedException} (BACKEND_UNAVAILABLE) for CUDA, a CPU context for AUTO
     * @return this, for chaining
     */
    public Options deviceOrdinal(int ordinal) {
      this.deviceOrdinal = ordinal;
      return this;
    }

    /**
     * Forces a kernel family ({@code options.kernel_family}; AUTO picks the best per call, and
     * the environment variable {@code FLASHKIT_KERNEL_FAMILY} overrides AUTO only). A forced
     * family restricts the dispatcher to it plus the generic fallback.
     *
     * @param family {@link KernelFamily#AUTO} (default), GENERIC, SM80 or SM90. A family the
     *     device cannot run, or any forced family on the CPU backend, is
     *     {@link NotSupportedException} (status NOT_SUPPORTED) from
     *     {@link Context#create(Options)}; {@link KernelFamily#CPU} is reported, never forced
     *     ({@link InvalidArgumentException}, INVALID_ARGUMENT)
     * @return this, for chaining
     * @throws NullPointerException if {@code family} is null
     */
    public Options kernelFamily(KernelFamily family) {
      if (family == null) throw new NullPointerException("family");
      this.kernelFamily = family;
      return this;
    }

    /**
     * CPU backend worker threads ({@code options.num_threads}).
     *
     * @param threads 0..4096; 0 (default) uses the environment variable
     *     {@code FLASHKIT_NUM_THREADS} (1..4096) if set and not empty, else the hardware
     *     concurrency. Outside 0..4096, or an unparsable variable when 0:
     *     {@link InvalidArgumentException} (status INVALID_ARGUMENT) from
     *     {@link Context#create(Options)}
     * @return this, for chaining
     */
    public Options numThreads(int threads) {
      this.numThreads = threads;
      return this;
    }
  }

  private Context(long handle) {
    NativeHandle g = new NativeHandle("Context", handle);
    Set<NativeHandle> p = plans;  // locals: the action must not capture this
    this.guard = g;
    this.cleanable = NativeHandle.whenUnreachable(this, () -> destroy(g, p));
  }

  /**
   * A context with the given options ({@code fk_context_create()}). For CUDA this reads the
   * device's compute capability, SM count, shared memory per block and L2 size once.
   *
   * @param options backend, device ordinal, kernel family, CPU threads
   * @return a new context; close it (it is {@link AutoCloseable})
   * @throws InvalidArgumentException (status INVALID_ARGUMENT) for a negative ordinal, threads
   *     outside 0..4096, {@link KernelFamily#CPU} forced, or an unparsable
   *     {@code FLASHKIT_BACKEND} / {@code FLASHKIT_KERNEL_FAMILY} / {@code FLASHKIT_NUM_THREADS}
   * @throws NotSupportedException (BACKEND_UNAVAILABLE) for CUDA not compiled in, no device or an
   *     ordinal out of range; (NOT_SUPPORTED) for a forced family the device cannot run, or any
   *     forced family on the CPU backend
   * @throws OutOfMemoryException if the context cannot be allocated
   * @throws NullPointerException if {@code options} is null
   */
  public static Context create(Options options) {
    if (options == null) throw new NullPointerException("options");
    fk_context_options_t o = new fk_context_options_t();
    try {
      FlashkitNative.fk_context_options_init(o);
      o.setBackend(options.backend.value());
      o.setDevice_ordinal(options.deviceOrdinal);
      o.setKernel_family(options.kernelFamily.value());
      o.setNum_threads(options.numThreads);
      return new Context(FlashkitNative.fk_context_create(o));
    } finally {
      o.delete();
    }
  }

  /**
   * A context with all defaults (CUDA device 0 if available, else CPU; see
   * {@link Options#backend(Backend)}).
   *
   * @return a new context
   * @throws FlashkitException as {@link #create(Options)}, e.g. for an unparsable
   *     {@code FLASHKIT_BACKEND}
   */
  public static Context create() {
    return create(new Options());
  }

  /**
   * A CPU-backend context using the hardware concurrency (or {@code FLASHKIT_NUM_THREADS}).
   *
   * @return a new CPU context
   * @throws FlashkitException as {@link #create(Options)}
   */
  public static Context cpu() {
    return create(new Options().backend(Backend.CPU));
  }

  /**
   * A CPU-backend context with {@code numThreads} workers.
   *
   * @param numThreads worker threads, 0..4096 (0: as {@link #cpu()}); else
   *     {@link InvalidArgumentException} (status INVALID_ARGUMENT)
   * @return a new CPU context
   */
  public static Context cpu(int numThreads) {
    return create(new Options().backend(Backend.CPU).numThreads(numThreads));
  }

  /** Runs {@code body} with the native context, which stays alive until it returns. */
  <T> T call(NativeHandle.Call<T> body) {
    return guard.call(this, body);
  }

  /**
   * Whether {@link #close()} has been called.
   *
   * @return true once the context is closed
   */
  public boolean isClosed() {
    return guard.isClosed();
  }

  /**
   * Backend, device and kernel family of this context ({@code fk_context_get_info()}).
   *
   * @return a snapshot of the context's facts
   * @throws IllegalStateException if the context is closed
   */
  public ContextInfo info() {
    fk_context_info_t i = new fk_context_info_t();
    try {
      FlashkitNative.fk_context_info_init(i);
      guard.call(this, nh -> {
        FlashkitNative.fk_context_get_info(nh, i);
        return null;
      });
      return new ContextInfo(i);
    } finally {
      i.delete();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Attention
  // -------------------------------------------------------------------------------------------

  /**
   * Batched attention {@code out = softmax(mask(softcap(scale Q K^T))) V} (FlashAttention), no
   * LSE output; see {@code fk_attention_forward()} in flashkit.h.
   *
   * @param params options; null means the defaults (non-causal, scale {@code 1/sqrt(head_dim)})
   * @param q queries {@code (batch, seqlen_q, nheads, head_dim)}: FLOAT32, FLOAT16 or BFLOAT16,
   *     head_dim 1..256 and contiguous (stride 1), other strides any non-negative
   * @param k keys {@code (batch, seqlen_k, nheads_k, head_dim)}, q's dtype and head_dim;
   *     {@code nheads % nheads_k == 0} (GQA/MQA: query head h uses key head
   *     {@code h / (nheads / nheads_k)})
   * @param v values, k's shape and dtype
   * @param out output, q's shape and dtype, head_dim contiguous; must not overlap an input
   * @throws InvalidArgumentException with the library's message naming the argument (status
   *     SHAPE_MISMATCH, DTYPE_MISMATCH, BAD_STRIDES, WRONG_DEVICE, MISALIGNED, NULL_POINTER or
   *     INVALID_ARGUMENT); the output is then untouched
   */
  public void attention(AttentionParams params, Tensor q, Tensor k, Tensor v, Tensor out) {
    attention(params, q, k, v, null, null, out, null, null);
  }

  /**
   * Attention forward; see {@code fk_attention_forward()}. Pass both cu_seqlens for the
   * variable-length form, neither for the batched form (shapes as in
   * {@link #attention(AttentionParams, Tensor, Tensor, Tensor, Tensor)}).
   *
   * <p>Variable-length form: q and out {@code (total_q, nheads, head_dim)}, k and v
   * {@code (total_k, nheads_k, head_dim)}.
   *
   * @param params options; null means the defaults
   * @param q queries, as in the batched overload, or {@code (total_q, nheads, head_dim)}
   * @param k keys, as in the batched overload, or {@code (total_k, nheads_k, head_dim)}
   * @param v values, k's shape and dtype
   * @param cuSeqlensQ null (batched form), or INT32 {@code (batch + 1)}, contiguous: the row
   *     offsets of each sequence in q, 0 first, non-decreasing, total_q last (InvalidArgument
   *     otherwise; total_q at most 2^31 - 1, SHAPE_MISMATCH); on the CUDA backend in device
   *     memory
   * @param cuSeqlensK null, or the same for k and v (total_k last); given together with
   *     cuSeqlensQ
   * @param out output, q's shape and dtype, head_dim contiguous; must not overlap an input
   * @param lse null, or the FLOAT32 natural-log softmax denominator per row:
   *     {@code (batch, nheads, seqlen_q)}, or {@code (nheads, total_q)} in the varlen form; last
   *     dimension contiguous; must not overlap an input or out
   * @throws InvalidArgumentException as for the batched overload, with the library's message
   *     naming the argument; the outputs are then untouched
   */
  public void attention(AttentionParams params, Tensor q, Tensor k, Tensor v, Tensor cuSeqlensQ,
      Tensor cuSeqlensK, Tensor out, Tensor lse) {
    attention(params, q, k, v, cuSeqlensQ, cuSeqlensK, out, lse, null);
  }

  /**
   * As {@link #attention(AttentionParams, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
   * Tensor)}, on the given launch. On the CUDA backend the call is enqueued on the launch's
   * stream and returns before the work finishes (varlen without both max_seqlen values first
   * copies cu_seqlens to the host, waiting for the stream).
   *
   * @param params options; null means the defaults
   * @param q queries {@code (batch, seqlen_q, nheads, head_dim)} or
   *     {@code (total_q, nheads, head_dim)}; FLOAT32, FLOAT16 or BFLOAT16; head_dim 1..256,
   *     contiguous
   * @param k keys {@code (batch, seqlen_k, nheads_k, head_dim)} or
   *     {@code (total_k, nheads_k, head_dim)}; q's dtype and head_dim
   * @param v values, k's shape and dtype
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}, contiguous
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}, given together with cuSeqlensQ
   * @param out output, q's shape and dtype, head_dim contiguous
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)} / {@code (nheads, total_q)}
   * @param launch stream and workspace; null means the context's defaults (default stream,
   *     library-managed scratch)
   * @throws InvalidArgumentException as the overload without launch, plus INVALID_ARGUMENT for
   *     a workspace that overlaps a tensor of the call
   * @throws OutOfMemoryException if library-managed scratch (e.g. split-key partials) cannot be
   *     allocated
   * @throws DeviceException if the CUDA runtime reports an error or a kernel fails to launch
   */
  public void attention(AttentionParams params, Tensor q, Tensor k, Tensor v, Tensor cuSeqlensQ,
      Tensor cuSeqlensK, Tensor out, Tensor lse, Launch launch) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_attention_forward(nh, Launch.encode(launch), p, h(q, "q"), h(k, "k"),
            h(v, "v"), h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"), o(out, "out"),
            o(lse, "lse"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #attention} would run for these arguments
   * ({@code fk_attention_select_kernel()}); validates exactly as it does and runs nothing.
   * Arguments as {@link #attention(AttentionParams, Tensor, Tensor, Tensor, Tensor, Tensor,
   * Tensor, Tensor)}; out and lse are validated, not written.
   *
   * @param params options; null means the defaults
   * @param q queries {@code (batch, seqlen_q, nheads, head_dim)} or
   *     {@code (total_q, nheads, head_dim)}; FLOAT32, FLOAT16 or BFLOAT16; head_dim 1..256,
   *     contiguous
   * @param k keys {@code (batch, seqlen_k, nheads_k, head_dim)} or
   *     {@code (total_k, nheads_k, head_dim)}; q's dtype and head_dim
   * @param v values, k's shape and dtype
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}, contiguous
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}, given together with cuSeqlensQ
   * @param out output, q's shape and dtype, head_dim contiguous
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)} / {@code (nheads, total_q)}
   * @return the variant's name, e.g. "cpu.attention" or "cuda.generic.attention"
   * @throws InvalidArgumentException for arguments {@link #attention} refuses, with the same
   *     status and message
   */
  public String attentionSelectKernel(AttentionParams params, Tensor q, Tensor k, Tensor v,
      Tensor cuSeqlensQ, Tensor cuSeqlensK, Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_select_kernel(nh, p, h(q, "q"),
          h(k, "k"), h(v, "v"), h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"),
          h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #attention} on these arguments allocates nothing
   * ({@code fk_attention_workspace_size}: a {@link Launch} workspace at least this large, at any
   * address; 0 when the call takes no scratch, nonzero when the GPU splits the keys of a
   * decode-like call with too few query tiles into chunks, so a small batch can need scratch
   * where a large one needs none); validates the same and runs nothing. The size depends on the
   * shapes, dtypes, strides, data alignment, device and kernel family: query each shape, not
   * only the largest. Varlen without max_seqlen reads cu_seqlens back as the call would.
   *
   * @param params options; null means the defaults
   * @param q queries {@code (batch, seqlen_q, nheads, head_dim)} or
   *     {@code (total_q, nheads, head_dim)}, as for {@link #attention}
   * @param k keys {@code (batch, seqlen_k, nheads_k, head_dim)} or
   *     {@code (total_k, nheads_k, head_dim)}
   * @param v values, k's shape and dtype
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}
   * @param out output, q's shape and dtype (validated, not written)
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)} / {@code (nheads, total_q)}
   * @return the workspace size in bytes (the sum of the call's buffers, each rounded up to 256
   *     bytes, plus 255 so that any start address works); 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #attention} refuses, with the same
   *     status
   */
  public long attentionWorkspaceSize(AttentionParams params, Tensor q, Tensor k, Tensor v,
      Tensor cuSeqlensQ, Tensor cuSeqlensK, Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_workspace_size(nh, p, h(q, "q"),
          h(k, "k"), h(v, "v"), h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"),
          h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Attention forward on FLOAT8_E4M3FN q, k and v with per-(sequence, kv-head) descale factors,
   * BFLOAT16 output: FlashAttention-3's FP8 forward contract (Shah et al. 2024, Section 3.3);
   * see {@code fk_attention_fp8_forward()} in flashkit.h (added in 0.6.0). Computes
   * {@link #attention} on {@code descaleQ[b][h / (nheads / nheads_k)] * q[b, :, h]},
   * {@code descaleK[b][g] * k[b, :, g]} and {@code descaleV[b][g] * v[b, :, g]}. On Hopper GPUs
   * (variant "cuda.sm90.attention_fp8", 0.7.0, with the AUTO or SM90 kernel family; batched
   * calls, head_dim 128 or 256, no softcap, a positive softmax scale, q, k and out 16-byte
   * aligned, q and k strides multiples of 16 elements;
   * FLASHKIT_ATTENTION_FP8_DEQUANT=1 in the environment turns it off) with fp8 tensor-core
   * arithmetic as in FlashAttention-3: P is rounded to e4m3 for the P V product, its one
   * approximation beyond fp32 arithmetic; scratch: none at head_dim 128, and at head_dim 256
   * with few query rows per key (the kernel transposes v's tiles in shared memory; a v off the
   * 16-byte rule is copied first), else one transposed copy of v (the rule:
   * fk_attention_fp8_forward in flashkit.h). Every other
   * call ("...+fp8_dequant"): rounded once to bf16 and run on the bf16 kernels (bit for bit
   * what {@link #attention} gives on contiguous bf16 tensors of those values with the same out
   * and lse layouts; on a GPU one extra pass over q, k and v, and scratch of 2 bytes per element
   * of each, see {@link #attentionFp8WorkspaceSize}).
   *
   * @param params options; null means the defaults
   * @param q FLOAT8_E4M3FN queries, shapes and layouts as {@link #attention} (batched or varlen)
   * @param k FLOAT8_E4M3FN keys
   * @param v FLOAT8_E4M3FN values (e5m2 or any other dtype: InvalidArgumentException,
   *     DTYPE_MISMATCH)
   * @param descaleQ null (factor 1) or FLOAT32 {@code (batch, nheads_k)}, any non-negative
   *     strides, where q lives; batch is the number of sequences in the varlen form; query head
   *     h uses column {@code h / (nheads / nheads_k)}. NaN or infinite factors are applied as
   *     given.
   * @param descaleK null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleV null or FLOAT32 {@code (batch, nheads_k)}
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}, as {@link #attention}
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}, given together with cuSeqlensQ
   * @param out BFLOAT16 output, q's shape, head_dim contiguous; must not overlap an input (the
   *     descale factors included)
   * @param lse null or FLOAT32 log-sum-exp output, as {@link #attention}
   * @param launch stream and workspace; null means the defaults
   * @throws InvalidArgumentException with the library's message naming the argument (a dtype
   *     other than FLOAT8_E4M3FN for q, k, v, FLOAT32 for a descale tensor or BFLOAT16 for out;
   *     a descale tensor not shaped (batch, nheads_k); every rule of {@link #attention}); the
   *     outputs are then untouched
   */
  public void attentionFp8(AttentionParams params, Tensor q, Tensor k, Tensor v, Tensor descaleQ,
      Tensor descaleK, Tensor descaleV, Tensor cuSeqlensQ, Tensor cuSeqlensK, Tensor out,
      Tensor lse, Launch launch) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, descaleQ, descaleK, descaleV, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_attention_fp8_forward(nh, Launch.encode(launch), p, h(q, "q"), h(k, "k"),
            h(v, "v"), h(descaleQ, "descale_q"), h(descaleK, "descale_k"), h(descaleV, "descale_v"),
            h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"), o(out, "out"),
            o(lse, "lse"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Batched {@link #attentionFp8(AttentionParams, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
   * Tensor, Tensor, Tensor, Tensor, Launch)} without lse, on the default launch.
   *
   * @param params options; null means the defaults
   * @param q FLOAT8_E4M3FN queries {@code (batch, seqlen_q, nheads, head_dim)}, head_dim
   *     (1..256) contiguous
   * @param k FLOAT8_E4M3FN keys {@code (batch, seqlen_k, nheads_k, head_dim)}, q's head_dim,
   *     {@code nheads % nheads_k == 0}
   * @param v FLOAT8_E4M3FN values, k's shape
   * @param descaleQ null (factor 1) or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleK null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleV null or FLOAT32 {@code (batch, nheads_k)}
   * @param out BFLOAT16 output, q's shape, head_dim contiguous
   * @throws InvalidArgumentException as the full overload
   */
  public void attentionFp8(AttentionParams params, Tensor q, Tensor k, Tensor v, Tensor descaleQ,
      Tensor descaleK, Tensor descaleV, Tensor out) {
    attentionFp8(params, q, k, v, descaleQ, descaleK, descaleV, null, null, out, null, null);
  }

  /**
   * The kernel variant {@link #attentionFp8} would run: "cuda.sm90.attention_fp8", or the bf16
   * kernel's name with "+fp8_dequant", e.g. "cpu.attention+fp8_dequant"
   * ({@code fk_attention_fp8_select_kernel()}); validates exactly as it does and runs nothing.
   *
   * @param params options; null means the defaults
   * @param q FLOAT8_E4M3FN queries {@code (batch, seqlen_q, nheads, head_dim)} or
   *     {@code (total_q, nheads, head_dim)}, as for {@link #attentionFp8}
   * @param k FLOAT8_E4M3FN keys {@code (batch, seqlen_k, nheads_k, head_dim)} or
   *     {@code (total_k, nheads_k, head_dim)}
   * @param v FLOAT8_E4M3FN values, k's shape
   * @param descaleQ null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleK null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleV null or FLOAT32 {@code (batch, nheads_k)}
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}, given together with cuSeqlensQ
   * @param out BFLOAT16 output, q's shape (validated, not written)
   * @param lse null or FLOAT32 {@code (batch, nheads, seqlen_q)} / {@code (nheads, total_q)}
   * @return the variant's name
   * @throws InvalidArgumentException for arguments {@link #attentionFp8} refuses, with the same
   *     status
   */
  public String attentionFp8SelectKernel(AttentionParams params, Tensor q, Tensor k, Tensor v,
      Tensor descaleQ, Tensor descaleK, Tensor descaleV, Tensor cuSeqlensQ, Tensor cuSeqlensK,
      Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, descaleQ, descaleK, descaleV, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_fp8_select_kernel(nh, p, h(q, "q"),
          h(k, "k"), h(v, "v"), h(descaleQ, "descale_q"), h(descaleK, "descale_k"),
          h(descaleV, "descale_v"), h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"),
          h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #attentionFp8} allocates nothing
   * ({@code fk_attention_fp8_workspace_size}): for "cuda.sm90.attention_fp8" nothing where the
   * kernel transposes v in shared memory (head_dim 128; head_dim 256 with few query rows per
   * key, as fk_attention_fp8_forward documents) unless v is off the 16-byte rule (then a
   * contiguous copy of it), the transposed copy of v otherwise; else on a GPU the bf16 copies of q, k and v plus what the bf16 call needs; 0 on the
   * CPU backend. Validates the same and runs nothing.
   *
   * @param params options; null means the defaults
   * @param q FLOAT8_E4M3FN queries {@code (batch, seqlen_q, nheads, head_dim)} or
   *     {@code (total_q, nheads, head_dim)}, as for {@link #attentionFp8}
   * @param k FLOAT8_E4M3FN keys {@code (batch, seqlen_k, nheads_k, head_dim)} or
   *     {@code (total_k, nheads_k, head_dim)}
   * @param v FLOAT8_E4M3FN values, k's shape
   * @param descaleQ null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleK null or FLOAT32 {@code (batch, nheads_k)}
   * @param descaleV null or FLOAT32 {@code (batch, nheads_k)}
   * @param cuSeqlensQ null (batched form) or INT32 {@code (batch + 1)}
   * @param cuSeqlensK null or INT32 {@code (batch + 1)}
   * @param out BFLOAT16 output, q's shape (validated, not written)
   * @param lse null or FLOAT32 {@code (batch, nheads, seqlen_q)} / {@code (nheads, total_q)}
   * @return the workspace size in bytes (buffers rounded up to 256 bytes each, plus 255 for the
   *     workspace's start); 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #attentionFp8} refuses, with the same
   *     status
   */
  public long attentionFp8WorkspaceSize(AttentionParams params, Tensor q, Tensor k, Tensor v,
      Tensor descaleQ, Tensor descaleK, Tensor descaleV, Tensor cuSeqlensQ, Tensor cuSeqlensK,
      Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, k, v, descaleQ, descaleK, descaleV, cuSeqlensQ, cuSeqlensK, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_fp8_workspace_size(nh, p, h(q, "q"),
          h(k, "k"), h(v, "v"), h(descaleQ, "descale_q"), h(descaleK, "descale_k"),
          h(descaleV, "descale_v"), h(cuSeqlensQ, "cu_seqlens_q"), h(cuSeqlensK, "cu_seqlens_k"),
          h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Attention of new queries over a KV cache, contiguous or paged (decode and chunked prefill):
   * FlashAttention's {@code flash_attn_with_kvcache} contract; see
   * {@code fk_attention_kvcache_forward()} in flashkit.h (added in 0.5.0). The paged layout is
   * vLLM's PagedAttention (Kwon et al. 2023, Section 4.1): key n of sequence b is row
   * {@code n % page_block_size} of page {@code blockTable[b][n / page_block_size]}.
   *
   * <p>The cache is only read (appending the new tokens' keys and values is the caller's).
   * Masks, softcap, GQA/MQA and dtypes follow the batched {@link #attention} with
   * {@code seqlen_k = cacheSeqlens[b]}: query row i of sequence b sits at key position
   * {@code cacheSeqlens[b] - seqlen_q + i}. A row that sees no key gives 0 and lse -inf.
   *
   * @param params options; null means the defaults. {@code maxSeqlen} must stay (0, 0)
   *     (INVALID_ARGUMENT otherwise)
   * @param q new queries {@code (batch, seqlen_q, nheads, head_dim)}: FLOAT32, FLOAT16 or
   *     BFLOAT16, head_dim 1..256 and contiguous, other strides any non-negative
   * @param kCache keys, q's dtype and head_dim, head_dim contiguous. Without a block table:
   *     {@code (batch, seqlen_cache, nheads_k, head_dim)} (capacity seqlen_cache). With one: the
   *     page pool {@code (num_blocks, page_block_size, nheads_k, head_dim)} (capacity
   *     {@code max_blocks_per_seq * page_block_size}). {@code nheads % nheads_k == 0}
   * @param vCache values, kCache's shape and dtype
   * @param cacheSeqlens null (every sequence holds the capacity) or INT32 {@code (batch)},
   *     contiguous: the valid keys of each sequence, in {@code [0, capacity]}
   * @param blockTable null (contiguous cache) or INT32 {@code (batch, max_blocks_per_seq)},
   *     last dimension contiguous: each sequence's pages in key order, in
   *     {@code [0, num_blocks)}; only the first {@code ceil(cacheSeqlens[b] / page_block_size)}
   *     entries of row b are read; pages may be shared between sequences
   * @param out output, q's shape and dtype, head_dim contiguous; must not overlap an input
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)}, natural log
   * @throws InvalidArgumentException with the library's message naming the argument: as
   *     {@link #attention}, plus SHAPE_MISMATCH (cache ranks or extents, cacheSeqlens not
   *     (batch), blockTable not (batch, max_blocks_per_seq)), DTYPE_MISMATCH (cacheSeqlens or
   *     blockTable not INT32), BAD_STRIDES, INVALID_ARGUMENT (on the CPU an entry out of range,
   *     e.g. "block_table: entry [1][2] is 9, outside [0, 7] (a page of k_cache)"; on the GPU
   *     entries are not checked but clamped inside the cache)
   */
  public void attentionKvCache(AttentionParams params, Tensor q, Tensor kCache, Tensor vCache,
      Tensor cacheSeqlens, Tensor blockTable, Tensor out, Tensor lse) {
    attentionKvCache(params, q, kCache, vCache, cacheSeqlens, blockTable, out, lse, null);
  }

  /**
   * As {@link #attentionKvCache(AttentionParams, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
   * Tensor)}, on the given launch. On the CUDA backend cacheSeqlens and blockTable stay in
   * device memory and are read only by the kernels: the call never waits for the stream and can
   * be captured into a CUDA graph.
   *
   * @param params options; null means the defaults; max_seqlen must stay (0, 0)
   * @param q new queries {@code (batch, seqlen_q, nheads, head_dim)}: FLOAT32, FLOAT16 or
   *     BFLOAT16, head_dim 1..256 contiguous
   * @param kCache keys {@code (batch, seqlen_cache, nheads_k, head_dim)}, or with a block table
   *     the page pool {@code (num_blocks, page_block_size, nheads_k, head_dim)}
   * @param vCache values, kCache's shape and dtype
   * @param cacheSeqlens null or INT32 {@code (batch)}, contiguous, in {@code [0, capacity]}
   * @param blockTable null or INT32 {@code (batch, max_blocks_per_seq)}, last dimension
   *     contiguous, entries in {@code [0, num_blocks)}
   * @param out output, q's shape and dtype, head_dim contiguous
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)}
   * @param launch stream and workspace; null means the context's defaults
   * @throws InvalidArgumentException as the overload without launch
   */
  public void attentionKvCache(AttentionParams params, Tensor q, Tensor kCache, Tensor vCache,
      Tensor cacheSeqlens, Tensor blockTable, Tensor out, Tensor lse, Launch launch) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, kCache, vCache, cacheSeqlens, blockTable, out, lse);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_attention_kvcache_forward(nh, Launch.encode(launch), p, h(q, "q"),
            h(kCache, "k_cache"), h(vCache, "v_cache"), h(cacheSeqlens, "cache_seqlens"),
            h(blockTable, "block_table"), o(out, "out"), o(lse, "lse"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #attentionKvCache} would run, e.g. "cpu.attention" or
   * "cuda.sm80.attention" ({@code fk_attention_kvcache_select_kernel()}); validates exactly as it
   * does and runs nothing.
   *
   * @param params options; null means the defaults
   * @param q new queries {@code (batch, seqlen_q, nheads, head_dim)}, as for
   *     {@link #attentionKvCache}
   * @param kCache keys {@code (batch, seqlen_cache, nheads_k, head_dim)} or the page pool
   *     {@code (num_blocks, page_block_size, nheads_k, head_dim)}
   * @param vCache values, kCache's shape and dtype
   * @param cacheSeqlens null or INT32 {@code (batch)}
   * @param blockTable null or INT32 {@code (batch, max_blocks_per_seq)}
   * @param out output, q's shape and dtype (validated, not written)
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)}
   * @return the variant's name
   * @throws InvalidArgumentException for arguments {@link #attentionKvCache} refuses, with the
   *     same status
   */
  public String attentionKvCacheSelectKernel(AttentionParams params, Tensor q, Tensor kCache,
      Tensor vCache, Tensor cacheSeqlens, Tensor blockTable, Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, kCache, vCache, cacheSeqlens, blockTable, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_kvcache_select_kernel(nh, p,
          h(q, "q"), h(kCache, "k_cache"), h(vCache, "v_cache"), h(cacheSeqlens, "cache_seqlens"),
          h(blockTable, "block_table"), h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #attentionKvCache} on these arguments allocates nothing
   * ({@code fk_attention_kvcache_workspace_size}: nonzero when small decode batches have their
   * keys split into chunks of whole pages); validates the same and runs nothing.
   *
   * @param params options; null means the defaults
   * @param q new queries {@code (batch, seqlen_q, nheads, head_dim)}, as for
   *     {@link #attentionKvCache}
   * @param kCache keys {@code (batch, seqlen_cache, nheads_k, head_dim)} or the page pool
   *     {@code (num_blocks, page_block_size, nheads_k, head_dim)}
   * @param vCache values, kCache's shape and dtype
   * @param cacheSeqlens null or INT32 {@code (batch)}
   * @param blockTable null or INT32 {@code (batch, max_blocks_per_seq)}
   * @param out output, q's shape and dtype (validated, not written)
   * @param lse null, or FLOAT32 {@code (batch, nheads, seqlen_q)}
   * @return the workspace size in bytes (buffers rounded up to 256 bytes each, plus 255 for the
   *     workspace's start); 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #attentionKvCache} refuses, with the
   *     same status
   */
  public long attentionKvCacheWorkspaceSize(AttentionParams params, Tensor q, Tensor kCache,
      Tensor vCache, Tensor cacheSeqlens, Tensor blockTable, Tensor out, Tensor lse) {
    fk_attention_params_t p = nativeParams(params);
    Tensor.Held held = Tensor.hold(q, kCache, vCache, cacheSeqlens, blockTable, out, lse);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_attention_kvcache_workspace_size(nh, p,
          h(q, "q"), h(kCache, "k_cache"), h(vCache, "v_cache"), h(cacheSeqlens, "cache_seqlens"),
          h(blockTable, "block_table"), h(out, "out"), h(lse, "lse")));
    } finally {
      p.delete();
      held.release();
    }
  }

  // -------------------------------------------------------------------------------------------
  // GEMM
  // -------------------------------------------------------------------------------------------

  /**
   * GEMM with fused epilogue {@code d = activation(alpha op(a) op(b) + beta c + bias)}; see
   * {@code fk_gemm()} in flashkit.h.
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with {@code transA}, optionally with a leading
   *     batch dimension; FLOAT32, FLOAT16 or BFLOAT16; any non-negative strides
   * @param b {@code (K, N)}, or {@code (N, K)} with {@code transB} (a PyTorch-style
   *     {@code (out_features, in_features)} weight); a's dtype; any non-negative strides
   * @param c null, or the addend {@code (M, N)} / {@code (batch, M, N)} in d's dtype, any
   *     non-negative strides (needed when beta != 0)
   * @param bias null, or {@code (N)}, contiguous, FLOAT32, FLOAT16 or BFLOAT16: one value per
   *     output column, added before the activation
   * @param d output {@code (M, N)} / {@code (batch, M, N)}, FLOAT32, FLOAT16 or BFLOAT16, no two
   *     elements at one address; must not overlap a, b or bias, and may overlap c only as the
   *     same view (in place {@code d = c}); with K = 0 it is {@code activation(beta c + bias)}
   * @throws InvalidArgumentException with the library's message naming the argument
   */
  public void gemm(GemmParams params, Tensor a, Tensor b, Tensor c, Tensor bias, Tensor d) {
    gemm(params, a, b, c, bias, d, null);
  }

  /**
   * {@link #gemm(GemmParams, Tensor, Tensor, Tensor, Tensor, Tensor)} on {@code launch}'s
   * stream and workspace (null: the context's defaults).
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, optionally {@code (batch, ., .)};
   *     FLOAT32, FLOAT16 or BFLOAT16
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b, optionally batched; a's dtype
   * @param c null, or the addend {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}, contiguous
   * @param d output {@code (M, N)} / {@code (batch, M, N)}, FLOAT32, FLOAT16 or BFLOAT16
   * @param launch stream and workspace; null means the context's defaults
   * @throws InvalidArgumentException as the overload without launch
   * @throws OutOfMemoryException if host or device scratch cannot be allocated
   * @throws DeviceException if the CUDA runtime reports an error or a kernel fails to launch
   */
  public void gemm(GemmParams params, Tensor a, Tensor b, Tensor c, Tensor bias, Tensor d,
      Launch launch) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, c, bias, d);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_gemm(nh, Launch.encode(launch), p, h(a, "a"), h(b, "b"), h(c, "c"),
            h(bias, "bias"), o(d, "d"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #gemm} would run ({@code fk_gemm_select_kernel()}); validates
   * exactly as it does and runs nothing.
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, optionally batched, as for
   *     {@link #gemm}
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b; a's dtype
   * @param c null, or {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}
   * @param d output {@code (M, N)} / {@code (batch, M, N)} (validated, not written)
   * @return the variant's name, e.g. "cpu.gemm"
   * @throws InvalidArgumentException for arguments {@link #gemm} refuses, with the same status
   */
  public String gemmSelectKernel(GemmParams params, Tensor a, Tensor b, Tensor c, Tensor bias,
      Tensor d) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, c, bias, d);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_gemm_select_kernel(nh, p, h(a, "a"),
          h(b, "b"), h(c, "c"), h(bias, "bias"), h(d, "d")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #gemm} on these arguments allocates nothing
   * ({@code fk_gemm_workspace_size}: nonzero for split-K schedules, decode-sized M with a long
   * K: fp32 partial tiles); validates the same and runs nothing. Ask rather than predict it.
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, optionally batched, as for
   *     {@link #gemm}
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b; a's dtype
   * @param c null, or {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}
   * @param d output {@code (M, N)} / {@code (batch, M, N)} (validated, not written)
   * @return the workspace size in bytes (buffers rounded up to 256 bytes each, plus 255 for the
   *     workspace's start); 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #gemm} refuses, with the same status
   */
  public long gemmWorkspaceSize(GemmParams params, Tensor a, Tensor b, Tensor c, Tensor bias,
      Tensor d) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, c, bias, d);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_gemm_workspace_size(nh, p, h(a, "a"),
          h(b, "b"), h(c, "c"), h(bias, "bias"), h(d, "d")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Scaled GEMM for quantised (FP8) inputs ({@code fk_gemm_scaled}; FP8 formats:
   * Micikevicius et al. 2022, arXiv:2209.05433, sections 2-3):
   * {@code d = activation(alpha scaleA[m] scaleB[n] op(a) op(b) + beta c + bias)}, products
   * accumulated in FLOAT32 and the scales applied in the epilogue, as {@code torch._scaled_mm}
   * defines them ({@code a}, {@code b} hold {@code x / scale}).
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with {@code transA}, optionally with a leading
   *     batch dimension; {@link DType#FLOAT8_E4M3FN} or {@link DType#FLOAT8_E5M2}, or FLOAT32 /
   *     FLOAT16 / BFLOAT16 (then b has the same dtype); any non-negative strides. The Hopper
   *     kernel needs K contiguous and 16-byte aligned rows; other layouts run on the generic
   *     kernel
   * @param b {@code (K, N)}, or {@code (N, K)} with {@code transB}; FP8 (either format) when a
   *     is FP8, else a's dtype. K-major for the Hopper kernel means {@code (N, K)} row-major with
   *     {@code transB}
   * @param scaleA null (1), or FLOAT32, contiguous: {@code (1)} (per tensor) or {@code (M)}
   *     (one per row of a)
   * @param scaleB null (1), or FLOAT32, contiguous: {@code (1)} (per tensor) or {@code (N)}
   *     (one per column of b); both scales apply to every batch
   * @param c null, or the addend {@code (M, N)} / {@code (batch, M, N)} in d's dtype (needed
   *     when beta != 0; not scaled)
   * @param bias null, or {@code (N)}, contiguous (not scaled)
   * @param d output {@code (M, N)} / {@code (batch, M, N)}, FLOAT32, FLOAT16 or BFLOAT16; must
   *     not overlap a, b, the scales or bias, and may overlap c only as the same view
   * @throws InvalidArgumentException (status DTYPE_MISMATCH: a FP8 and b not, or the reverse, or
   *     a scale not FLOAT32; SHAPE_MISMATCH: a scale of rank above 1 or of length other than 1
   *     or M / N; BAD_STRIDES: a scale not contiguous; and fk_gemm's rules), with the library's
   *     message naming the argument
   * @throws NotSupportedException for an FP8 d
   */
  public void gemmScaled(GemmParams params, Tensor a, Tensor b, Tensor scaleA, Tensor scaleB,
      Tensor c, Tensor bias, Tensor d) {
    gemmScaled(params, a, b, scaleA, scaleB, c, bias, d, null);
  }

  /**
   * {@link #gemmScaled(GemmParams, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)}
   * on {@code launch}'s stream and workspace (null: the context's defaults).
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, optionally batched:
   *     FLOAT8_E4M3FN or FLOAT8_E5M2, or FLOAT32 / FLOAT16 / BFLOAT16
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b: FP8 when a is FP8, else a's dtype
   * @param scaleA null (1), or FLOAT32, contiguous, {@code (1)} or {@code (M)}
   * @param scaleB null (1), or FLOAT32, contiguous, {@code (1)} or {@code (N)}
   * @param c null, or the addend {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}, contiguous
   * @param d output {@code (M, N)} / {@code (batch, M, N)}, FLOAT32, FLOAT16 or BFLOAT16
   * @param launch stream and workspace; null means the context's defaults
   * @throws InvalidArgumentException as the overload without launch
   * @throws NotSupportedException for an FP8 d
   */
  public void gemmScaled(GemmParams params, Tensor a, Tensor b, Tensor scaleA, Tensor scaleB,
      Tensor c, Tensor bias, Tensor d, Launch launch) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, scaleA, scaleB, c, bias, d);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_gemm_scaled(nh, Launch.encode(launch), p, h(a, "a"), h(b, "b"),
            h(scaleA, "scale_a"), h(scaleB, "scale_b"), h(c, "c"), h(bias, "bias"), o(d, "d"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #gemmScaled} would run ({@code fk_gemm_scaled_select_kernel()});
   * validates exactly as it does and runs nothing.
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, as for {@link #gemmScaled}
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b
   * @param scaleA null, or FLOAT32 {@code (1)} / {@code (M)}
   * @param scaleB null, or FLOAT32 {@code (1)} / {@code (N)}
   * @param c null, or {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}
   * @param d output {@code (M, N)} / {@code (batch, M, N)} (validated, not written)
   * @return the variant's name
   * @throws InvalidArgumentException for arguments {@link #gemmScaled} refuses, with the same
   *     status
   * @throws NotSupportedException for an FP8 d
   */
  public String gemmScaledSelectKernel(GemmParams params, Tensor a, Tensor b, Tensor scaleA,
      Tensor scaleB, Tensor c, Tensor bias, Tensor d) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, scaleA, scaleB, c, bias, d);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_gemm_scaled_select_kernel(nh, p, h(a, "a"),
          h(b, "b"), h(scaleA, "scale_a"), h(scaleB, "scale_b"), h(c, "c"), h(bias, "bias"),
          h(d, "d")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #gemmScaled} allocates nothing
   * ({@code fk_gemm_scaled_workspace_size}, as {@link #gemmWorkspaceSize}); validates the same
   * and runs nothing.
   *
   * @param params transposes, alpha, beta, activation; null means the defaults
   * @param a {@code (M, K)}, or {@code (K, M)} with trans_a, as for {@link #gemmScaled}
   * @param b {@code (K, N)}, or {@code (N, K)} with trans_b
   * @param scaleA null, or FLOAT32 {@code (1)} / {@code (M)}
   * @param scaleB null, or FLOAT32 {@code (1)} / {@code (N)}
   * @param c null, or {@code (M, N)} / {@code (batch, M, N)} in d's dtype
   * @param bias null, or {@code (N)}
   * @param d output {@code (M, N)} / {@code (batch, M, N)} (validated, not written)
   * @return the workspace size in bytes; 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #gemmScaled} refuses, with the same
   *     status
   * @throws NotSupportedException for an FP8 d
   */
  public long gemmScaledWorkspaceSize(GemmParams params, Tensor a, Tensor b, Tensor scaleA,
      Tensor scaleB, Tensor c, Tensor bias, Tensor d) {
    fk_gemm_params_t p = (params == null ? new GemmParams() : params).toNative();
    Tensor.Held held = Tensor.hold(a, b, scaleA, scaleB, c, bias, d);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_gemm_scaled_workspace_size(nh, p, h(a, "a"),
          h(b, "b"), h(scaleA, "scale_a"), h(scaleB, "scale_b"), h(c, "c"), h(bias, "bias"),
          h(d, "d")));
    } finally {
      p.delete();
      held.release();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Monarch and block-diagonal linear
  // -------------------------------------------------------------------------------------------

  /**
   * Two-factor Monarch multiply {@code out = M x (+ bias)} (Dao et al. 2022, m2's
   * {@code blockdiag_butterfly_multiply}); see {@code fk_monarch()} in flashkit.h.
   *
   * @param x {@code (tokens, nblocks1 * p)}, FLOAT32, FLOAT16 or BFLOAT16, last dimension
   *     contiguous
   * @param w1 {@code (nblocks1, q, p)}, x's dtype, compact: the factor applied first
   * @param w2 {@code (nblocks2, s, r)}, x's dtype, compact, {@code nblocks2 * r == nblocks1 * q}
   * @param bias null, or {@code (nblocks2 * s)}, FLOAT32, FLOAT16 or BFLOAT16, contiguous
   * @param out {@code (tokens, nblocks2 * s)}, x's dtype, last dimension contiguous; must not
   *     overlap x, w1, w2 or bias, not even in place with square blocks
   *     (InvalidArgumentException)
   * @throws InvalidArgumentException with the library's message naming the argument
   */
  public void monarch(Tensor x, Tensor w1, Tensor w2, Tensor bias, Tensor out) {
    monarch(x, w1, w2, bias, out, null);
  }

  /**
   * {@link #monarch(Tensor, Tensor, Tensor, Tensor, Tensor)} on {@code launch}'s stream and
   * workspace (null: the context's defaults).
   *
   * @param x {@code (tokens, nblocks1 * p)}, FLOAT32, FLOAT16 or BFLOAT16, last dimension
   *     contiguous
   * @param w1 {@code (nblocks1, q, p)}, x's dtype, compact
   * @param w2 {@code (nblocks2, s, r)}, x's dtype, compact, {@code nblocks2 * r == nblocks1 * q}
   * @param bias null, or {@code (nblocks2 * s)}, contiguous
   * @param out {@code (tokens, nblocks2 * s)}, x's dtype, last dimension contiguous
   * @param launch stream and workspace; null means the context's defaults
   * @throws InvalidArgumentException as the overload without launch
   */
  public void monarch(Tensor x, Tensor w1, Tensor w2, Tensor bias, Tensor out, Launch launch) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w1, w2, bias, out);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_monarch(nh, Launch.encode(launch), p, h(x, "x"), h(w1, "w1"), h(w2, "w2"),
            h(bias, "bias"), o(out, "out"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #monarch} would run ({@code fk_monarch_select_kernel()});
   * validates exactly as it does and runs nothing.
   *
   * @param x {@code (tokens, nblocks1 * p)}, as for {@link #monarch}
   * @param w1 {@code (nblocks1, q, p)}, compact
   * @param w2 {@code (nblocks2, s, r)}, compact
   * @param bias null, or {@code (nblocks2 * s)}
   * @param out {@code (tokens, nblocks2 * s)} (validated, not written)
   * @return the variant's name
   * @throws InvalidArgumentException for arguments {@link #monarch} refuses, with the same status
   */
  public String monarchSelectKernel(Tensor x, Tensor w1, Tensor w2, Tensor bias, Tensor out) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w1, w2, bias, out);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_monarch_select_kernel(nh, p, h(x, "x"),
          h(w1, "w1"), h(w2, "w2"), h(bias, "bias"), h(out, "out")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #monarch} allocates nothing
   * ({@code fk_monarch_workspace_size}: nonzero on the variants that run in passes, the
   * unfused sm80-class path (two 16-bit buffers for a chunk of tokens, plus the permuted bias)
   * and the generic CUDA kernel (its fp32 intermediate of {@code tokens x nblocks1 * q x 4}
   * bytes); zero on the fused kernels and the CPU backend); validates the same and runs
   * nothing.
   *
   * @param x {@code (tokens, nblocks1 * p)}, as for {@link #monarch}
   * @param w1 {@code (nblocks1, q, p)}, compact
   * @param w2 {@code (nblocks2, s, r)}, compact
   * @param bias null, or {@code (nblocks2 * s)}
   * @param out {@code (tokens, nblocks2 * s)} (validated, not written)
   * @return the workspace size in bytes; 0 when the call takes no scratch
   * @throws InvalidArgumentException for arguments {@link #monarch} refuses, with the same status
   */
  public long monarchWorkspaceSize(Tensor x, Tensor w1, Tensor w2, Tensor bias, Tensor out) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w1, w2, bias, out);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_monarch_workspace_size(nh, p, h(x, "x"),
          h(w1, "w1"), h(w2, "w2"), h(bias, "bias"), h(out, "out")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Block-diagonal linear {@code out = blockdiag(w) x (+ bias)} (M2-BERT's BlockdiagLinear);
   * see {@code fk_blockdiag_linear()} in flashkit.h.
   *
   * @param x {@code (tokens, nblocks * p)}, FLOAT32, FLOAT16 or BFLOAT16, last dimension
   *     contiguous
   * @param w {@code (nblocks, q, p)}, x's dtype, compact
   * @param bias null, or {@code (nblocks * q)}, FLOAT32, FLOAT16 or BFLOAT16, contiguous
   * @param out {@code (tokens, nblocks * q)}, x's dtype, last dimension contiguous; must not
   *     overlap x, w or bias (InvalidArgumentException)
   * @throws InvalidArgumentException with the library's message naming the argument
   */
  public void blockdiagLinear(Tensor x, Tensor w, Tensor bias, Tensor out) {
    blockdiagLinear(x, w, bias, out, null);
  }

  /**
   * {@link #blockdiagLinear(Tensor, Tensor, Tensor, Tensor)} on {@code launch}'s stream and
   * workspace (null: the context's defaults).
   *
   * @param x {@code (tokens, nblocks * p)}, FLOAT32, FLOAT16 or BFLOAT16, last dimension
   *     contiguous
   * @param w {@code (nblocks, q, p)}, x's dtype, compact
   * @param bias null, or {@code (nblocks * q)}, contiguous
   * @param out {@code (tokens, nblocks * q)}, x's dtype, last dimension contiguous
   * @param launch stream and workspace; null means the context's defaults
   * @throws InvalidArgumentException as the overload without launch
   */
  public void blockdiagLinear(Tensor x, Tensor w, Tensor bias, Tensor out, Launch launch) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w, bias, out);
    try {
      guard.call(this, nh -> {
        FlashkitNative.fk_blockdiag_linear(nh, Launch.encode(launch), p, h(x, "x"), h(w, "w"),
            h(bias, "bias"), o(out, "out"));
        return null;
      });
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * The kernel variant {@link #blockdiagLinear} would run
   * ({@code fk_blockdiag_linear_select_kernel()}); validates exactly as it does and runs
   * nothing.
   *
   * @param x {@code (tokens, nblocks * p)}, as for {@link #blockdiagLinear}
   * @param w {@code (nblocks, q, p)}, compact
   * @param bias null, or {@code (nblocks * q)}
   * @param out {@code (tokens, nblocks * q)} (validated, not written)
   * @return the variant's name
   * @throws InvalidArgumentException for arguments {@link #blockdiagLinear} refuses, with the
   *     same status
   */
  public String blockdiagLinearSelectKernel(Tensor x, Tensor w, Tensor bias, Tensor out) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w, bias, out);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_blockdiag_linear_select_kernel(nh, p,
          h(x, "x"), h(w, "w"), h(bias, "bias"), h(out, "out")));
    } finally {
      p.delete();
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #blockdiagLinear} allocates nothing
   * ({@code fk_blockdiag_linear_workspace_size}; today every variant reports 0); validates the
   * same and runs nothing.
   *
   * @param x {@code (tokens, nblocks * p)}, as for {@link #blockdiagLinear}
   * @param w {@code (nblocks, q, p)}, compact
   * @param bias null, or {@code (nblocks * q)}
   * @param out {@code (tokens, nblocks * q)} (validated, not written)
   * @return the workspace size in bytes (0 today)
   * @throws InvalidArgumentException for arguments {@link #blockdiagLinear} refuses, with the
   *     same status
   */
  public long blockdiagLinearWorkspaceSize(Tensor x, Tensor w, Tensor bias, Tensor out) {
    fk_monarch_params_t p = monarchParams();
    Tensor.Held held = Tensor.hold(x, w, bias, out);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_blockdiag_linear_workspace_size(nh, p,
          h(x, "x"), h(w, "w"), h(bias, "bias"), h(out, "out")));
    } finally {
      p.delete();
      held.release();
    }
  }

  // -------------------------------------------------------------------------------------------
  // FFT convolution plans
  // -------------------------------------------------------------------------------------------

  /**
   * A new FFT convolution plan on this context; same as {@code new FFTConvPlan(this, options)}.
   *
   * @param options channels, seqlen, filterLen, fftSize, mode, dtype, filterConstant
   * @return the plan, closed with this context at the latest
   * @throws InvalidArgumentException for invalid options, see
   *     {@link FFTConvPlan#FFTConvPlan(Context, FFTConvPlan.Options)}
   */
  public FFTConvPlan createFFTConvPlan(FFTConvPlan.Options options) {
    return new FFTConvPlan(this, options);
  }

  /**
   * Called by the plan's constructor inside {@link #call}, so never during close(); returns the
   * set the plan's handle is in, which the plan's close and Cleaner remove it from.
   */
  Set<NativeHandle> register(NativeHandle plan) {
    plans.add(plan);
    return plans;
  }

  /**
   * Closes the plans still open on this context, then destroys the context. Idempotent and
   * thread-safe: it waits for the calls running on this context (and on its plans) to return;
   * calls made after it began throw IllegalStateException. From a log listener it throws
   * IllegalStateException and closes nothing.
   */
  @Override
  public void close() {
    destroy(guard, plans);
    cleanable.clean(); // the Cleaner's action, now a no-op: unregisters it
  }

  /** The context's handle guard (for the tests: whether the Cleaner destroyed it). */
  NativeHandle guard() {
    return guard;
  }

  /** The handles of the plans currently open on this context (for diagnostics). */
  Set<NativeHandle> openPlans() {
    return Collections.unmodifiableSet(plans);
  }

  @Override
  public String toString() {
    return isClosed() ? "Context(closed)" : "Context(" + info() + ")";
  }

  /** An input's handle; a closed tensor's error names the argument ({@code name}, C's). */
  private static long h(Tensor t, String name) {
    return Tensor.handleOf(t, name);
  }

  private static long o(Tensor t, String name) {
    return Tensor.outputHandleOf(t, name);
  }

  private static fk_attention_params_t nativeParams(AttentionParams params) {
    return (params == null ? new AttentionParams() : params).toNative();
  }

  private static fk_monarch_params_t monarchParams() {
    fk_monarch_params_t p = new fk_monarch_params_t();
    FlashkitNative.fk_monarch_params_init(p);
    return p;
  }
}
