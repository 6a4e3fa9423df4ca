// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * An FFT convolution plan ({@code fk_fftconv_plan_t}): fixes channels, seqlen, filter length,
 * fft_size, dtype and mode, owns its twiddle tables, and serves any batch size. Usable from
 * several threads at once as long as each call has its own output. On a plan made with
 * {@link Options#filterConstant(boolean) filterConstant(true)}, calls that pass the same
 * filter {@link Tensor} object as the plan's last successful call run in parallel; a call with
 * another filter object (a new view of the same buffer included) waits for the calls in flight
 * and runs alone, since the plan caches one filter's spectrum at a time.
 *
 * <p>{@code y = postgate * (conv(pregate * u, k) + D * (pregate * u))}, each factor only if
 * given; see {@link FFTConvMode} and {@code fk_fftconv_forward()} for the three conventions.
 *
 * <p>The plan refers to its context; closing the context closes the plan too. A plan that
 * becomes unreachable without being closed is destroyed by a {@link java.lang.ref.Cleaner}
 * (before its context), so an abandoned plan does not hold its tables until the context
 * closes; close it (try-with-resources) to free them at once. A CUDA graph that captured a
 * call on a plan reads the plan's tables at every launch: keep such a plan reachable (or open)
 * until the graph's last launch, since a dropped one is destroyed at some garbage collection.
 */
public final class FFTConvPlan implements AutoCloseable {
  // Every call runs inside guard.call: close waits for them. Set once, in the constructor,
  // before the plan is registered with its context (which may then close it at any time).
  private volatile NativeHandle guard;
  private final Context context;
  // Destroys the plan at close() or, if it is never closed, once it is unreachable. It holds
  // the guard and the context's plan set, never the plan (nor the context: a context and its
  // dropped plans can become unreachable together, and the context's own action closes them).
  private final java.lang.ref.Cleaner.Cleanable cleanable;
  private final java.util.Set<NativeHandle> registry; // the context's plan set
  // With filterConstant: the filter of the last call is kept reachable (guard.attach, dropped
  // when the plan closes, also by its context) so that its direct buffer cannot be freed and
  // its address handed to a new buffer of other values while the plan's cached spectrum is
  // keyed on that address (the JVM reuses freed addresses at once).
  private final boolean filterConstant;
  // With filterConstant, a call whose filter is the one kept (guard.attached(), the same Tensor
  // object) runs under the read lock, beside other such calls; a call with another filter runs
  // alone under the write lock together with the record of its filter, so that the filter kept
  // is the one whose spectrum the plan cached last (two threads' calls could otherwise record in
  // the other order). Calls with the plan's filter therefore run in parallel; only a change of
  // filter waits for the calls in flight. (No field of the plan holds the filter: closing the
  // context must release it, test aContextsCloseReleasesItsPlansConstantFilter.)
  private final java.util.concurrent.locks.ReentrantReadWriteLock filterLock =
      new java.util.concurrent.locks.ReentrantReadWriteLock();

  /** Plan options ({@code fk_fftconv_plan_options_t}); defaults: causal, fp32, sizes 0. */
  public static final class Options {
    private FFTConvMode mode = FFTConvMode.CAUSAL;
    private long channels;
    private long seqlen;
    private long filterLen;
    private long fftSize;
    private DType dtype = DType.FLOAT32;
    private boolean filterConstant;

    /**
     * Boundary handling ({@code options.mode}).
     *
     * @param mode {@link FFTConvMode#CAUSAL} (default), {@link FFTConvMode#CIRCULAR} or
     *     {@link FFTConvMode#BIDIRECTIONAL}
     * @return this, for chaining
     * @throws NullPointerException if {@code mode} is null
     */
    public Options mode(FFTConvMode mode) {
      if (mode == null) throw new NullPointerException("mode");
      this.mode = mode;
      return this;
    }

    /**
     * Channels ({@code options.channels}, H): the middle extent of u, y and the gates, and the
     * first of k.
     *
     * @param channels the channel count, &gt;= 0 (negative: {@link InvalidArgumentException},
     *     status INVALID_ARGUMENT, when the plan is created); default 0
     * @return this, for chaining
     */
    public Options channels(long channels) {
      this.channels = channels;
      return this;
    }

    /**
     * Sequence length ({@code options.seqlen}, L): the last extent of u, y and the gates, in
     * elements.
     *
     * @param seqlen the sequence length, &gt;= 0 (negative: {@link InvalidArgumentException},
     *     status INVALID_ARGUMENT, when the plan is created); default 0
     * @return this, for chaining
     */
    public Options seqlen(long seqlen) {
      this.seqlen = seqlen;
      return this;
    }

    /**
     * Filter taps per channel ({@code options.filter_len}): the last extent of k.
     *
     * @param filterLen taps, &gt;= 0; 0 (default) means seqlen. BIDIRECTIONAL needs it odd
     *     ({@code 2 R + 1}; with filterLen 0, seqlen must be odd, and seqlen 0 gives 1; an even
     *     one is
     *     {@link InvalidArgumentException}, status INVALID_ARGUMENT, at creation)
     * @return this, for chaining
     */
    public Options filterLen(long filterLen) {
      this.filterLen = filterLen;
      return this;
    }

    /**
     * FFT length ({@code options.fft_size}), as in FlashFFTConv (Fu et al. 2023, Section 3).
     * CAUSAL needs {@code fft_size >= seqlen + min(filter_len, seqlen) - 1}, CIRCULAR
     * {@code seqlen <= fft_size} and {@code filter_len <= fft_size}, BIDIRECTIONAL
     * {@code fft_size >= seqlen + min(R, seqlen - 1)}.
     *
     * @param fftSize a power of two, at most 2^22, in elements; or 0 (default) for the smallest
     *     the mode needs. Not a power of two, too small for the mode, or larger:
     *     {@link InvalidArgumentException} (status INVALID_ARGUMENT) at creation, never a
     *     silently circular result
     * @return this, for chaining
     */
    public Options fftSize(long fftSize) {
      this.fftSize = fftSize;
      return this;
    }

    /**
     * Element type of u, y and the gates ({@code options.dtype}); k and D have their own.
     *
     * @param dtype {@link DType#FLOAT32} (default), {@link DType#FLOAT16} or
     *     {@link DType#BFLOAT16}; another is {@link InvalidArgumentException} (status
     *     DTYPE_MISMATCH) at creation, an FP8 type {@link NotSupportedException}
     * @return this, for chaining
     * @throws NullPointerException if {@code dtype} is null
     */
    public Options dtype(DType dtype) {
      if (dtype == null) throw new NullPointerException("dtype");
      this.dtype = dtype;
      return this;
    }

    /**
     * The filter's values never change between calls ({@code FK_FFTCONV_FILTER_CONSTANT}): the
     * plan may cache its spectrum, keyed on the filter's data address, shape and strides. A
     * filter whose memory is reused for other values silently gets the earlier spectrum; a plan
     * caches one filter at a time, so use one plan per persistent filter (per layer). The plan
     * keeps the last filter tensor it ran with reachable (until the next call or the plan's
     * close), so a new {@code Tensor.allocate} filter cannot land at a freed filter's address;
     * memory the caller manages ({@code Tensor.ofAddress}, a buffer refilled in place) stays
     * the caller's responsibility. Calls from several threads that pass that same filter
     * {@code Tensor} object run in parallel; a call with another filter object runs alone.
     *
     * @param constant true to set the flag; default false (the spectrum is computed per call,
     *     in scratch on the GPU)
     * @return this, for chaining
     */
    public Options filterConstant(boolean constant) {
      this.filterConstant = constant;
      return this;
    }

    /**
     * The mode.
     *
     * @return the boundary handling; default {@link FFTConvMode#CAUSAL}
     */
    public FFTConvMode mode() {
      return mode;
    }

    /**
     * The channels.
     *
     * @return the channel count H
     */
    public long channels() {
      return channels;
    }

    /**
     * The sequence length.
     *
     * @return the sequence length L, in elements
     */
    public long seqlen() {
      return seqlen;
    }

    /**
     * The filter length.
     *
     * @return taps per channel; 0 means seqlen ({@link FFTConvPlan#options()} returns the
     *     resolved value)
     */
    public long filterLen() {
      return filterLen;
    }

    /**
     * The FFT length.
     *
     * @return a power of two, or 0 for "smallest valid" ({@link FFTConvPlan#options()} returns
     *     the resolved value)
     */
    public long fftSize() {
      return fftSize;
    }

    /**
     * The element type.
     *
     * @return the dtype of u, y and the gates; default {@link DType#FLOAT32}
     */
    public DType dtype() {
      return dtype;
    }

    /**
     * The filter-constant flag.
     *
     * @return true if the plan may cache the filter's spectrum
     */
    public boolean filterConstant() {
      return filterConstant;
    }

    void writeTo(fk_fftconv_plan_options_t o) {
      o.setMode(mode.value());
      o.setChannels(channels);
      o.setSeqlen(seqlen);
      o.setFilter_len(filterLen);
      o.setFft_size(fftSize);
      DLDataType dt = new DLDataType();
      try {
        dt.setCode((short) dtype.code());
        dt.setBits((short) dtype.bits());
        dt.setLanes(1);
        o.setDtype(dt);
      } finally {
        dt.delete();
      }
      o.setFlags(filterConstant ? FlashkitNativeConstants.FK_FFTCONV_FILTER_CONSTANT : 0);
    }

    static Options readFrom(fk_fftconv_plan_options_t o) {
      DLDataType dt = o.getDtype();
      return new Options()
          .mode(FFTConvMode.fromValue(o.getMode()))
          .channels(o.getChannels())
          .seqlen(o.getSeqlen())
          .filterLen(o.getFilter_len())
          .fftSize(o.getFft_size())
          .dtype(DType.fromCode(dt.getCode(), dt.getBits()))
          .filterConstant((o.getFlags() & FlashkitNativeConstants.FK_FFTCONV_FILTER_CONSTANT) != 0);
    }
  }

  /**
   * Creates a plan on {@code context} ({@code fk_fftconv_plan_create()}).
   *
   * @param context the context whose backend and device the plan runs on; it closes the plan
   *     when it closes
   * @param options channels, seqlen, filterLen, fftSize, mode, dtype, filterConstant
   * @throws InvalidArgumentException for invalid options (status INVALID_ARGUMENT: negative
   *     sizes, fft_size not a power of two, too small for the mode or above 2^22, an even
   *     bidirectional filter_len, channels x filter_len above 2^61; DTYPE_MISMATCH: dtype not
   *     FLOAT32, FLOAT16 or BFLOAT16)
   * @throws OutOfMemoryException if the plan cannot be allocated
   * @throws NullPointerException if {@code context} or {@code options} is null
   * @throws IllegalStateException if {@code context} is closed
   */
  public FFTConvPlan(Context context, Options options) {
    if (context == null) throw new NullPointerException("context");
    if (options == null) throw new NullPointerException("options");
    this.context = context;
    this.filterConstant = options.filterConstant;
    fk_fftconv_plan_options_t o = new fk_fftconv_plan_options_t();
    try {
      FlashkitNative.fk_fftconv_plan_options_init(o);
      options.writeTo(o);
      // Created and registered while the context cannot close (its read lock): a context
      // closing concurrently either sees this plan registered and closes it, or this call
      // finds the context closed (IllegalStateException) and creates nothing.
      registry = context.call(ctx -> {
        guard = new NativeHandle("FFTConvPlan", FlashkitNative.fk_fftconv_plan_create(ctx, o));
        return context.register(guard);
      });
      NativeHandle g = guard;
      java.util.Set<NativeHandle> r = registry;  // locals: the action must not capture this
      cleanable = NativeHandle.whenUnreachable(this, () -> destroy(g, r));
    } finally {
      o.delete();
    }
  }

  /**
   * Destroys the plan behind {@code guard} once its running calls have returned and removes it
   * from its context's {@code registry}; false if it was already closed. Runs before the
   * context is destroyed: the context's close calls it for every plan still registered.
   */
  static boolean destroy(NativeHandle guard, java.util.Set<NativeHandle> registry) {
    // Out of the set only once destroyed: a context closing meanwhile still sees the plan and
    // waits for this close (its write lock) before the context itself goes.
    return guard.close(null, h -> {
      try {
        FlashkitNative.fk_fftconv_plan_destroy(h);
      } finally {
        registry.remove(guard);
      }
    });
  }

  /**
   * Whether {@link #close()} has been called (directly or by closing the context).
   *
   * @return true once the plan is destroyed
   */
  public boolean isClosed() {
    return guard.isClosed();
  }

  /**
   * The context this plan runs on.
   *
   * @return the context given at creation
   */
  public Context context() {
    return context;
  }

  /**
   * The resolved options ({@code fk_fftconv_plan_get_options()}).
   *
   * @return a new Options with fft_size and filter_len after defaulting
   * @throws IllegalStateException if the plan is closed
   */
  public Options options() {
    fk_fftconv_plan_options_t o = new fk_fftconv_plan_options_t();
    try {
      FlashkitNative.fk_fftconv_plan_options_init(o);
      guard.call(this, nh -> {
        FlashkitNative.fk_fftconv_plan_get_options(nh, o);
        return null;
      });
      return Options.readFrom(o);
    } finally {
      o.delete();
    }
  }

  /**
   * Runs the convolution {@code y = postgate * (conv(pregate * u, k) + D * pregate * u)} (each
   * factor only if given); see {@code fk_fftconv_forward()} in flashkit.h for the three modes.
   *
   * <p>Every tensor's data address must be aligned to its element size (MISALIGNED) and live
   * where the context runs (WRONG_DEVICE); strides are in elements. Any batch size works.
   *
   * @param u input {@code (batch, channels, seqlen)} in the plan's dtype, seqlen contiguous
   *     (stride 1), other strides arbitrary (non-negative)
   * @param k filters {@code (channels, filterLen)}, FLOAT32, FLOAT16 or BFLOAT16, filterLen
   *     contiguous; causal: {@code conv[t] = sum_{s=0..t} k[s] v[t-s]}; bidirectional
   *     ({@code filterLen = 2 R + 1}): {@code conv[t] = sum_{j=-R..R} k[R + j] v[t - j]}
   * @param D null, or skip weights {@code (channels)}, FLOAT32, FLOAT16 or BFLOAT16, contiguous
   * @param pregate null, or u's shape and dtype, seqlen contiguous: {@code v = pregate * u}
   * @param postgate null, or u's shape and dtype, seqlen contiguous
   * @param y output, u's shape and dtype, seqlen contiguous; must not share memory with any
   *     input (INVALID_ARGUMENT), and no two of its elements may share an address (BAD_STRIDES)
   * @throws InvalidArgumentException with the library's message naming the argument; y is then
   *     untouched (status SHAPE_MISMATCH: u, y or a gate not {@code (batch, channels, seqlen)}
   *     of the plan, k not {@code (channels, filter_len)}, D's length; DTYPE_MISMATCH;
   *     BAD_STRIDES; INVALID_ARGUMENT: y overlapping an input, or the launch workspace
   *     overlapping a tensor; WRONG_DEVICE; MISALIGNED)
   * @throws OutOfMemoryException if scratch or the plan's tables cannot be allocated
   * @throws DeviceException if the CUDA runtime reports an error or a kernel fails to launch
   * @throws IllegalStateException if the plan or a tensor is closed, or, on a filter-constant
   *     plan, when called with another filter from inside a call on the plan (a log listener)
   * @throws NotSupportedException when the launch stream is being captured into a CUDA graph
   *     and the plan must first build its tables for these arguments (its first call, a new
   *     filter of a filter-constant plan): make that call outside the capture first
   */
  public void forward(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate, Tensor y) {
    forward(u, k, D, pregate, postgate, y, null);
  }

  /**
   * Runs the convolution on the given launch (stream, workspace); otherwise as
   * {@link #forward(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)}.
   *
   * @param u input {@code (batch, channels, seqlen)}, the plan's dtype
   * @param k filters {@code (channels, filterLen)}
   * @param D null, or skip weights {@code (channels)}
   * @param pregate null, or u's shape and dtype
   * @param postgate null, or u's shape and dtype
   * @param y output, u's shape and dtype
   * @param launch stream and workspace; null means the context's defaults (default stream,
   *     library-managed scratch)
   * @throws InvalidArgumentException as the overload without launch
   * @throws NotSupportedException under CUDA graph capture when the plan must first build its
   *     tables
   */
  public void forward(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate, Tensor y,
      Launch launch) {
    Tensor.Held held = Tensor.hold(u, k, D, pregate, postgate, y);
    try {
      if (filterConstant) {
        filterLock.readLock().lock();
        boolean shared = false;
        try {
          if (k != null && k == guard.attached()) {
            shared = true;
            run(u, k, D, pregate, postgate, y, launch, null);
          }
        } finally {
          filterLock.readLock().unlock();
        }
        if (!shared) {
          if (filterLock.getReadHoldCount() > 0) {
            // This thread is inside a call on this plan (a log listener calling back, which
            // Flashkit.setLogCallback forbids): a read lock cannot become the write lock.
            throw new IllegalStateException("k: a call with another filter from inside a call "
                + "on this filter-constant plan (a log listener must not call flashkit)");
          }
          filterLock.writeLock().lock();
          try {
            run(u, k, D, pregate, postgate, y, launch, k);
          } finally {
            filterLock.writeLock().unlock();
          }
        }
      } else {
        run(u, k, D, pregate, postgate, y, launch, null);
      }
    } finally {
      held.release();
    }
  }

  /** The call; {@code keep} (the constant filter) is kept until the next call or the close. */
  private void run(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate, Tensor y,
      Launch launch, Tensor keep) {
    NativeHandle g = guard;
    g.call(this, nh -> {
      try {
        FlashkitNative.fk_fftconv_forward(nh, Launch.encode(launch), Tensor.handleOf(u, "u"),
            Tensor.handleOf(k, "k"), Tensor.handleOf(D, "D"), Tensor.handleOf(pregate, "pregate"),
            Tensor.handleOf(postgate, "postgate"), Tensor.outputHandleOf(y, "y"));
      } catch (RuntimeException e) {
        // A call that fails after the plan cached the new filter's spectrum (on a GPU: the
        // kernel's launch or its scratch) leaves the cache keyed on it: keep both filters
        // reachable. (The pair is no filter object, so the next call takes the write path.)
        if (keep != null) g.attach(new Object[] {g.attached(), keep});
        throw e;
      }
      if (keep != null) g.attach(keep);
      return null;
    });
  }

  /**
   * The kernel variant {@link #forward} would run ({@code fk_fftconv_select_kernel()});
   * validates exactly as it does and runs nothing.
   *
   * @param u input {@code (batch, channels, seqlen)}, as for {@link #forward}
   * @param k filters {@code (channels, filterLen)}
   * @param D null, or skip weights {@code (channels)}
   * @param pregate null, or u's shape and dtype
   * @param postgate null, or u's shape and dtype
   * @param y output, u's shape and dtype
   * @return the variant's name, e.g. "cpu.fftconv" or "cuda.sm80.fftconv_reg"
   * @throws InvalidArgumentException for arguments {@link #forward} refuses, with the same status
   */
  public String selectKernel(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate,
      Tensor y) {
    Tensor.Held held = Tensor.hold(u, k, D, pregate, postgate, y);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_fftconv_select_kernel(nh,
          Tensor.handleOf(u, "u"), Tensor.handleOf(k, "k"), Tensor.handleOf(D, "D"),
          Tensor.handleOf(pregate, "pregate"), Tensor.handleOf(postgate, "postgate"),
          Tensor.handleOf(y, "y")));
    } finally {
      held.release();
    }
  }

  /**
   * Workspace bytes with which {@link #forward} on these arguments allocates nothing
   * ({@code fk_fftconv_workspace_size}: on the GPU, the per-call filter spectrum of a plan
   * without FILTER_CONSTANT, and the four-step intermediates above fft_size 8192 on the
   * generic kernel); validates the same and runs nothing. The size depends on the shapes,
   * dtypes, strides and data alignment, the device and the plan's flags: query each shape.
   *
   * @param u input {@code (batch, channels, seqlen)}, as for {@link #forward}
   * @param k filters {@code (channels, filterLen)}
   * @param D null, or skip weights {@code (channels)}
   * @param pregate null, or u's shape and dtype
   * @param postgate null, or u's shape and dtype
   * @param y output, u's shape and dtype
   * @return the size in bytes for {@link Launch#withWorkspace(long, long)} (any start address);
   *     0 when the call takes no scratch (always on the CPU backend)
   * @throws InvalidArgumentException for arguments {@link #forward} refuses, with the same status
   */
  public long workspaceSize(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate,
      Tensor y) {
    Tensor.Held held = Tensor.hold(u, k, D, pregate, postgate, y);
    try {
      return guard.call(this, nh -> FlashkitNative.fk_fftconv_workspace_size(nh,
          Tensor.handleOf(u, "u"), Tensor.handleOf(k, "k"), Tensor.handleOf(D, "D"),
          Tensor.handleOf(pregate, "pregate"), Tensor.handleOf(postgate, "postgate"),
          Tensor.handleOf(y, "y")));
    } finally {
      held.release();
    }
  }

  /**
   * Destroys the plan. Idempotent and thread-safe: it waits for the calls running on this plan
   * to return; calls made after it began throw IllegalStateException. Must not be called from
   * inside a call on this plan.
   */
  @Override
  public void close() {
    destroy(guard, registry);
    cleanable.clean(); // the Cleaner's action, now a no-op: unregisters it
  }
}
