// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * An FFT convolution plan ({@code fk_fftconv_plan_t}): fixes channels, seqlen, filter length,
 * fft_size, dtype and mode, owns its twiddle tables, and serves any batch size. Usable from
 * several threads at once as long as each call has its own output.
 *
 * <p>{@code y = postgate * (conv(pregate * u, k) + D * (pregate * u))}, each factor only if
 * given; see {@link FFTConvMode} and {@code fk_fftconv_forward()} for the three conventions.
 *
 * <p>The plan refers to its context; closing the context closes the plan too.
 */
public final class FFTConvPlan implements AutoCloseable {
  // Every call runs inside guard.call: close waits for them. Set once, in the constructor,
  // before the plan is registered with its context (which may then close it at any time).
  private volatile NativeHandle guard;
  private final Context context;

  /** Plan options ({@code fk_fftconv_plan_options_t}); defaults: causal, fp32, sizes 0. */
  public static final class Options {
    private FFTConvMode mode = FFTConvMode.CAUSAL;
    private long channels;
    private long seqlen;
    private long filterLen;
    private long fftSize;
    private DType dtype = DType.FLOAT32;
    private boolean filterConstant;

    public Options mode(FFTConvMode mode) {
      if (mode == null) throw new NullPointerException("mode");
      this.mode = mode;
      return this;
    }

    public Options channels(long channels) {
      this.channels = channels;
      return this;
    }

    public Options seqlen(long seqlen) {
      this.seqlen = seqlen;
      return this;
    }

    /** Filter taps per channel; 0 (default) means seqlen. */
    public Options filterLen(long filterLen) {
      this.filterLen = filterLen;
      return this;
    }

    /** A power of two, or 0 (default) for the smallest the mode needs. */
    public Options fftSize(long fftSize) {
      this.fftSize = fftSize;
      return this;
    }

    /** dtype of u, y and the gates (FLOAT32, FLOAT16 or BFLOAT16). */
    public Options dtype(DType dtype) {
      if (dtype == null) throw new NullPointerException("dtype");
      this.dtype = dtype;
      return this;
    }

    /** The filter's values never change between calls: the plan may cache its spectrum. */
    public Options filterConstant(boolean constant) {
      this.filterConstant = constant;
      return this;
    }

    public FFTConvMode mode() {
      return mode;
    }

    public long channels() {
      return channels;
    }

    public long seqlen() {
      return seqlen;
    }

    public long filterLen() {
      return filterLen;
    }

    public long fftSize() {
      return fftSize;
    }

    public DType dtype() {
      return dtype;
    }

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

  /** Creates a plan on {@code context}; throws {@link FlashkitException} for invalid options. */
  public FFTConvPlan(Context context, Options options) {
    if (options == null) throw new NullPointerException("options");
    this.context = context;
    fk_fftconv_plan_options_t o = new fk_fftconv_plan_options_t();
    try {
      FlashkitNative.fk_fftconv_plan_options_init(o);
      options.writeTo(o);
      // Created and registered while the context cannot close (its read lock): a context
      // closing concurrently either sees this plan registered and closes it, or this call
      // finds the context closed (IllegalStateException) and creates nothing.
      context.call(ctx -> {
        guard = new NativeHandle("FFTConvPlan", FlashkitNative.fk_fftconv_plan_create(ctx, o));
        context.register(this);
        return null;
      });
    } finally {
      o.delete();
    }
  }

  /** Whether {@link #close()} has been called (directly or by closing the context). */
  public boolean isClosed() {
    return guard.isClosed();
  }

  /** The context this plan runs on. */
  public Context context() {
    return context;
  }

  /** The resolved options (fft_size and filter_len after defaulting). */
  public Options options() {
    fk_fftconv_plan_options_t o = new fk_fftconv_plan_options_t();
    try {
      FlashkitNative.fk_fftconv_plan_options_init(o);
      guard.call(nh -> {
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
   * @param u input {@code (batch, channels, seqlen)} in the plan's dtype, seqlen contiguous
   * @param k filters {@code (channels, filterLen)}, FLOAT32, FLOAT16 or BFLOAT16, filterLen
   *     contiguous
   * @param D null, or skip weights {@code (channels)}, FLOAT32, FLOAT16 or BFLOAT16, contiguous
   * @param pregate null, or u's shape and dtype, seqlen contiguous
   * @param postgate null, or u's shape and dtype, seqlen contiguous
   * @param y output, u's shape and dtype, seqlen contiguous; must not share memory with any
   *     input
   * @throws InvalidArgumentException with the library's message naming the argument; y is then
   *     untouched
   * @throws NotSupportedException when the launch stream is being captured into a CUDA graph
   *     and the plan must first build its tables for these arguments (its first call, a new
   *     filter of a filter-constant plan): make that call outside the capture first
   */
  public void forward(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate, Tensor y) {
    forward(u, k, D, pregate, postgate, y, null);
  }

  /** Runs the convolution on the given launch (stream, workspace). */
  public void forward(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate, Tensor y,
      Launch launch) {
    try {
      guard.call(nh -> {
        FlashkitNative.fk_fftconv_forward(nh, Launch.encode(launch), Tensor.handleOf(u),
          Tensor.handleOf(k), Tensor.handleOf(D), Tensor.handleOf(pregate),
          Tensor.handleOf(postgate), Tensor.outputHandleOf(y, "y"));
        return null;
      });
    } finally {
      Tensor.keepAlive(u, k, D, pregate, postgate, y);
    }
  }

  /** The kernel variant {@link #forward} would run, e.g. "cpu.fftconv"; validates the same. */
  public String selectKernel(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate,
      Tensor y) {
    try {
      return guard.call(nh -> FlashkitNative.fk_fftconv_select_kernel(nh, Tensor.handleOf(u),
          Tensor.handleOf(k), Tensor.handleOf(D), Tensor.handleOf(pregate),
          Tensor.handleOf(postgate), Tensor.handleOf(y)));
    } finally {
      Tensor.keepAlive(u, k, D, pregate, postgate, y);
    }
  }

  /**
   * Workspace bytes with which {@link #forward} on these arguments allocates nothing
   * ({@code fk_fftconv_workspace_size}: on the GPU, the per-call filter spectrum of a plan
   * without FILTER_CONSTANT, and the four-step intermediates above fft_size 8192 on the
   * generic kernel); validates the same.
   */
  public long workspaceSize(Tensor u, Tensor k, Tensor D, Tensor pregate, Tensor postgate,
      Tensor y) {
    try {
      return guard.call(nh -> FlashkitNative.fk_fftconv_workspace_size(nh, Tensor.handleOf(u),
          Tensor.handleOf(k), Tensor.handleOf(D), Tensor.handleOf(pregate),
          Tensor.handleOf(postgate), Tensor.handleOf(y)));
    } finally {
      Tensor.keepAlive(u, k, D, pregate, postgate, y);
    }
  }

  /**
   * Destroys the plan. Idempotent and thread-safe: it waits for the calls running on this plan
   * to return; calls made after it began throw IllegalStateException. Must not be called from
   * inside a call on this plan.
   */
  @Override
  public void close() {
    guard.close(() -> context.unregister(this), FlashkitNative::fk_fftconv_plan_destroy);
  }
}
