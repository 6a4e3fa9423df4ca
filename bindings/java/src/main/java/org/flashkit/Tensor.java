// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;

/**
 * A tensor view: a DLPack {@code DLTensor} built in native memory over data that lives elsewhere
 * (a direct NIO buffer on the host, or a raw device pointer). flashkit only borrows the data for
 * the duration of a call.
 *
 * <p>Host data must be a <em>direct</em> buffer in <em>native byte order</em> (see
 * {@link #allocate}); the view keeps a reference to the buffer so the memory stays alive while
 * the view is open. A buffer whose memory can be freed while the buffer object lives (one
 * made from a {@code MemorySegment} whose arena or scope is closed, or freed through
 * {@code Unsafe}) is not protected: close the view first, as a call on freed memory reads or
 * writes it without an error and can crash the JVM. The view starts at the buffer's current position. Shapes and strides are in
 * elements; {@code strides == null} means compact row-major.
 *
 * <p>{@link #close()} frees the native descriptor (not the data). A closed view cannot be passed
 * to flashkit. A view that is never closed is freed once the garbage collector finds it
 * unreachable (a {@link java.lang.ref.Cleaner}), so views built inline in a call, e.g.
 * {@code ctx.gemm(p, Tensor.of(a, m, k), ...)}, do not leak; closing them (try-with-resources)
 * frees the descriptor at once instead.
 *
 * <p>A null {@code data}, {@code dtype}, {@code deviceType} or {@code shape} given to a factory
 * throws a {@link NullPointerException} whose message is the parameter's name.
 */
public final class Tensor implements AutoCloseable {
  private static final java.lang.ref.Cleaner CLEANER = java.lang.ref.Cleaner.create();
  // Live native descriptors of this class (created minus freed), for the tests.
  static final java.util.concurrent.atomic.AtomicLong LIVE = new java.util.concurrent.atomic.AtomicLong();

  // DLTensor*, 0 once closed; swapped atomically so that concurrent close() calls free it once.
  private final java.util.concurrent.atomic.AtomicLong handle = new java.util.concurrent.atomic.AtomicLong();
  // Frees the descriptor at close() or, for a view never closed, once it is unreachable. It holds
  // the AtomicLong, never the Tensor (which would keep it reachable forever).
  private final java.lang.ref.Cleaner.Cleanable cleanable;
  // Calls that pass this view hold the read lock (hold()) while the library uses it; close()
  // takes the write lock, so a close on another thread waits for them instead of freeing the
  // descriptor under a running call (which read freed memory and could crash the JVM).
  private final java.util.concurrent.locks.ReentrantReadWriteLock use =
      new java.util.concurrent.locks.ReentrantReadWriteLock();
  // hold() takes the read locks in this order (see there).
  private static final java.util.concurrent.atomic.AtomicLong NEXT_ORDER =
      new java.util.concurrent.atomic.AtomicLong();
  private final long order = NEXT_ORDER.getAndIncrement();

  private static final class Release implements Runnable {
    private final java.util.concurrent.atomic.AtomicLong handle;

    Release(java.util.concurrent.atomic.AtomicLong handle) {
      this.handle = handle;
    }

    @Override
    public void run() {
      long h = handle.getAndSet(0);
      if (h != 0) {
        FlashkitNative.fkj_tensor_destroy(h);
        LIVE.decrementAndGet();
      }
    }
  }
  private final Buffer buffer; // keeps host memory reachable; null for device pointers
  private final DType dtype;
  private final long[] shape;
  private final long[] strides;
  private final DeviceType deviceType;
  private final int deviceId;
  private final boolean readOnly; // over a read-only buffer: may not be an output
  private final long address;     // the data pointer passed to the library

  private Tensor(long dataAddress, Buffer buffer, DeviceType deviceType, int deviceId,
      DType dtype, long[] shape, long[] strides) {
    this.buffer = buffer;
    this.address = dataAddress;
    this.dtype = dtype;
    this.shape = shape.clone();
    this.strides = strides == null ? null : strides.clone();
    this.deviceType = deviceType;
    this.deviceId = deviceId;
    this.readOnly = buffer != null && buffer.isReadOnly();
    long h = FlashkitNative.fkj_tensor_create(dataAddress, deviceType.value(), deviceId,
        dtype.code(), dtype.bits(), this.shape, this.strides);
    this.handle.set(h);
    if (h != 0) LIVE.incrementAndGet();
    this.cleanable = CLEANER.register(this, new Release(this.handle));
  }

  // -------------------------------------------------------------------------------------------
  // Factories
  // -------------------------------------------------------------------------------------------

  /**
   * A new zero-filled host tensor of {@code dtype} and {@code shape}, compact row-major, backed
   * by a direct native-order buffer it owns (read it through {@link #floats()} etc.).
   *
   * @param dtype the element type
   * @param shape the extents, in elements, each &gt;= 0 (e.g. {@code batch, seqlen_q, nheads,
   *     head_dim} for attention's q); the product at most {@code Integer.MAX_VALUE} bytes
   * @return an open view on {@link DeviceType#CPU} memory, strides null (compact row-major)
   * @throws IllegalArgumentException for a negative extent, or more bytes than a Java buffer
   *     holds
   */
  public static Tensor allocate(DType dtype, long... shape) {
    if (dtype == null) throw new NullPointerException("dtype");
    checkShape(shape, null);
    long n;
    try {
      n = elementCount(shape);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("shape: " + Arrays.toString(shape) + " has more elements than a long can count");
    }
    long bytes = Math.max(1, n) * dtype.bytes();
    if (bytes > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("shape: " + bytes + " bytes exceeds a Java buffer");
    }
    ByteBuffer b = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
    return of(b, dtype, shape, null);
  }

  /**
   * An fp32 host tensor over a direct native-order FloatBuffer, compact row-major.
   *
   * @param data direct buffer in native byte order; the view starts at its position and needs
   *     the product of {@code shape} floats remaining
   * @param shape the extents, in elements, each &gt;= 0
   * @return an open {@link DType#FLOAT32} view on {@link DeviceType#CPU} memory
   * @throws IllegalArgumentException for a heap or foreign-order buffer, a negative extent, or
   *     too few elements remaining
   */
  public static Tensor of(FloatBuffer data, long... shape) {
    requireData(data);
    return ofBuffer(data, data.order(), DType.FLOAT32, 4, shape, null);
  }

  /**
   * An fp32 host tensor over a direct native-order FloatBuffer with strides in elements.
   *
   * @param data direct buffer in native byte order; the view starts at its position and needs
   *     the elements up to the last one the strides address
   * @param shape the extents, in elements, each &gt;= 0
   * @param strides one per dimension, in elements (not bytes), non-negative where the extent
   *     exceeds 1; null for compact row-major. Unless an operation says otherwise the last one
   *     must be 1 (else {@link InvalidArgumentException}, status BAD_STRIDES, at the call)
   * @return an open {@link DType#FLOAT32} view on {@link DeviceType#CPU} memory
   * @throws IllegalArgumentException for a heap or foreign-order buffer, a negative extent or
   *     stride, a strides array of another length than {@code shape}, or too few elements
   *     remaining
   */
  public static Tensor of(FloatBuffer data, long[] shape, long[] strides) {
    requireData(data);
    return ofBuffer(data, data.order(), DType.FLOAT32, 4, shape, strides);
  }

  /**
   * An int32 host tensor (e.g. cu_seqlens_q, cache_seqlens, block_table) over a direct
   * native-order IntBuffer, compact row-major.
   *
   * @param data direct buffer in native byte order; the view starts at its position and needs
   *     the product of {@code shape} ints remaining
   * @param shape the extents, in elements, each &gt;= 0 (e.g. {@code batch + 1} for cu_seqlens_q)
   * @return an open {@link DType#INT32} view on {@link DeviceType#CPU} memory
   * @throws IllegalArgumentException for a heap or foreign-order buffer, a negative extent, or
   *     too few elements remaining
   */
  public static Tensor of(IntBuffer data, long... shape) {
    requireData(data);
    return ofBuffer(data, data.order(), DType.INT32, 4, shape, null);
  }

  /**
   * An fp16 or bf16 host tensor over a direct native-order ShortBuffer of bit patterns.
   *
   * @param data direct buffer in native byte order holding the 16-bit patterns; the view starts
   *     at its position
   * @param dtype {@link DType#FLOAT16} or {@link DType#BFLOAT16}
   * @param shape the extents, in elements, each &gt;= 0
   * @param strides one per dimension, in elements, or null for compact row-major
   * @return an open view on {@link DeviceType#CPU} memory
   * @throws IllegalArgumentException for a dtype that is not 16 bits wide, a heap or
   *     foreign-order buffer, a negative extent or stride, or too few elements remaining
   */
  public static Tensor of(ShortBuffer data, DType dtype, long[] shape, long[] strides) {
    requireData(data);
    if (dtype == null) throw new NullPointerException("dtype");
    if (dtype.bits() != 16) throw new IllegalArgumentException("dtype: " + dtype + " is not 16-bit");
    return ofBuffer(data, data.order(), dtype, 2, shape, strides);
  }

  /**
   * A host tensor of any dtype over a direct native-order ByteBuffer (from its position).
   * The data address (buffer address + position, in bytes) must be aligned to
   * {@code dtype.bytes()} (else {@link InvalidArgumentException}, status MISALIGNED, at the
   * call).
   *
   * @param data direct buffer (in native byte order for dtypes wider than one byte); the view
   *     starts at its position, a byte offset
   * @param dtype the element type, e.g. {@link DType#FLOAT8_E4M3FN}
   * @param shape the extents, in elements, each &gt;= 0
   * @param strides one per dimension, in elements (not bytes), or null for compact row-major
   * @return an open view on {@link DeviceType#CPU} memory
   * @throws IllegalArgumentException for a heap or foreign-order buffer, a negative extent or
   *     stride, or fewer bytes remaining than the view addresses
   */
  public static Tensor of(ByteBuffer data, DType dtype, long[] shape, long[] strides) {
    requireData(data);
    return ofBuffer(data, data.order(), dtype, 1, shape, strides);
  }

  /**
   * A view of memory flashkit does not see through NIO, e.g. a CUDA device pointer from another
   * library. The caller keeps the memory alive while the view is in use.
   *
   * @param address the data pointer as a byte address (DLPack {@code data}; {@code byte_offset}
   *     is 0), aligned to {@code dtype.bytes()} (else {@link InvalidArgumentException}, status
   *     MISALIGNED, at the call); 0 only for an empty tensor (NULL_POINTER otherwise)
   * @param deviceType where it lives: {@link DeviceType#CPU} or {@link DeviceType#CUDA_HOST} for
   *     a CPU context, {@link DeviceType#CUDA} or {@link DeviceType#CUDA_MANAGED} for a CUDA
   *     context (else WRONG_DEVICE at the call)
   * @param deviceId the CUDA ordinal, which must be the context's device; 0 for host memory
   * @param dtype the element type
   * @param shape the extents, in elements, each &gt;= 0
   * @param strides one per dimension, in elements (not bytes), or null for compact row-major
   * @return an open view; the memory is not checked until a call uses it
   * @throws IllegalArgumentException for a negative extent, a strides array of another length
   *     than {@code shape}, or more elements than a long can count
   */
  public static Tensor ofAddress(long address, DeviceType deviceType, int deviceId, DType dtype,
      long[] shape, long[] strides) {
    if (deviceType == null) throw new NullPointerException("deviceType");
    if (dtype == null) throw new NullPointerException("dtype");
    checkShape(shape, strides);
    try {
      elementCount(shape);  // numel() must be countable (the library refuses such a view too)
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("shape: " + Arrays.toString(shape)
          + " has more elements than a long can count");
    }
    return new Tensor(address, null, deviceType, deviceId, dtype, shape, strides);
  }

  private static void requireData(Buffer data) {
    if (data == null) throw new NullPointerException("data");
  }

  private static Tensor ofBuffer(Buffer data, ByteOrder order, DType dtype, int unitBytes,
      long[] shape, long[] strides) {
    if (dtype == null) throw new NullPointerException("dtype");
    if (!data.isDirect()) {
      throw new IllegalArgumentException(
          "data: not a direct buffer (use ByteBuffer.allocateDirect(n).order(ByteOrder.nativeOrder()))");
    }
    if (dtype.bytes() > 1 && order != ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException(
          "data: byte order " + order + " is not the native " + ByteOrder.nativeOrder()
              + " (call .order(ByteOrder.nativeOrder()) on the ByteBuffer)");
    }
    checkShape(shape, strides);
    long needBytes;
    try {
      elementCount(shape);  // numel() must be countable (the library refuses such a view too)
      needBytes = Math.multiplyExact(spanElements(shape, strides), (long) dtype.bytes());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("shape: " + Arrays.toString(shape)
          + (strides == null ? "" : " strides " + Arrays.toString(strides))
          + " addresses more elements than a long can count");
    }
    long haveBytes = (long) data.remaining() * unitBytes;
    if (needBytes > haveBytes) {
      throw new IllegalArgumentException("data: " + haveBytes + " bytes remain in the buffer but shape "
          + Arrays.toString(shape) + (strides == null ? "" : " strides " + Arrays.toString(strides))
          + " of " + dtype + " needs " + needBytes);
    }
    long address = FlashkitNative.fkj_direct_buffer_address(data) + (long) data.position() * unitBytes;
    return new Tensor(address, data.slice(), DeviceType.CPU, 0, dtype, shape, strides);
  }

  private static void checkShape(long[] shape, long[] strides) {
    if (shape == null) throw new NullPointerException("shape");
    for (long e : shape) {
      if (e < 0) throw new IllegalArgumentException("shape: negative extent in " + Arrays.toString(shape));
    }
    if (strides != null && strides.length != shape.length) {
      throw new IllegalArgumentException("strides: " + strides.length + " entries for rank " + shape.length);
    }
  }

  private static long elementCount(long[] shape) {
    long n = 1;
    for (long e : shape) n = Math.multiplyExact(n, e);
    return n;
  }

  /**
   * Elements from the first to one past the last addressed element. The stride of a dimension
   * of extent 1 addresses nothing (the library ignores it too); a negative stride on a longer
   * one is refused here, since the bound it would need lies before the buffer's start (which
   * the library, reading only the address, could not check).
   */
  private static long spanElements(long[] shape, long[] strides) {
    if (strides == null) return elementCount(shape);
    for (long e : shape) {
      if (e == 0) return 0;
    }
    long span = 1;
    for (int i = 0; i < shape.length; ++i) {
      if (shape[i] == 1) continue;
      if (strides[i] < 0) {
        throw new IllegalArgumentException("strides: dimension " + i + " has negative stride "
            + strides[i] + " (negative strides are not supported) in " + Arrays.toString(strides));
      }
      span = Math.addExact(span, Math.multiplyExact(shape[i] - 1, strides[i]));
    }
    return span;
  }

  // -------------------------------------------------------------------------------------------
  // Accessors
  // -------------------------------------------------------------------------------------------

  /**
   * The element type.
   *
   * @return the dtype given at creation
   */
  public DType dtype() {
    return dtype;
  }

  /**
   * The extents.
   *
   * @return a copy of the extents, in elements
   */
  public long[] shape() {
    return shape.clone();
  }

  /**
   * The strides.
   *
   * @return a copy of the strides in elements (not bytes), or null for compact row-major
   */
  public long[] strides() {
    return strides == null ? null : strides.clone();
  }

  /**
   * Number of logical elements.
   *
   * @return the product of the extents
   */
  public long numel() {
    return elementCount(shape);
  }

  /**
   * Where the data lives.
   *
   * @return the DLPack device type ({@link DeviceType#CPU} for views over NIO buffers)
   */
  public DeviceType deviceType() {
    return deviceType;
  }

  /**
   * The device ordinal.
   *
   * @return the CUDA device ordinal; 0 for host memory
   */
  public int deviceId() {
    return deviceId;
  }

  /**
   * The data pointer this view passes to the library (its first element's address), e.g. for
   * {@link Launch#withWorkspace(long, long)} or another native library. Valid while this tensor
   * is open and reachable (a host tensor's buffer is freed with it); keep it alive meanwhile.
   *
   * @return the first element's address in bytes (for a view over a buffer: the buffer's
   *     address plus its position in bytes)
   * @throws IllegalStateException if this view is closed
   */
  public long address() {
    if (isClosed()) {
      throw new IllegalStateException("Tensor is closed: " + this + " (its address is not valid)");
    }
    return address;
  }

  /**
   * The host data as bytes.
   *
   * @return a duplicate of the buffer in native byte order, starting at the view's first
   *     element
   * @throws IllegalStateException if the view is over a device address or was not made from a
   *     ByteBuffer ({@link #allocate} makes one)
   */
  public ByteBuffer bytes() {
    if (buffer == null) throw new IllegalStateException("tensor views device memory, not a Java buffer");
    if (buffer instanceof ByteBuffer) {
      return ((ByteBuffer) buffer).duplicate().order(ByteOrder.nativeOrder());
    }
    throw new IllegalStateException("tensor was made from a " + buffer.getClass().getSimpleName());
  }

  /**
   * The host data as floats (FLOAT32 tensors).
   *
   * @return a duplicate of the data, starting at the view's first element
   * @throws IllegalStateException if the dtype is not FLOAT32 or the view has no Java buffer
   */
  public FloatBuffer floats() {
    if (dtype != DType.FLOAT32) throw new IllegalStateException("tensor is " + dtype + ", not FLOAT32");
    if (buffer instanceof FloatBuffer) return ((FloatBuffer) buffer).duplicate();
    return bytes().asFloatBuffer();
  }

  /**
   * The host data as ints (INT32 tensors).
   *
   * @return a duplicate of the data, starting at the view's first element
   * @throws IllegalStateException if the dtype is not INT32 or the view has no Java buffer
   */
  public IntBuffer ints() {
    if (dtype != DType.INT32) throw new IllegalStateException("tensor is " + dtype + ", not INT32");
    if (buffer instanceof IntBuffer) return ((IntBuffer) buffer).duplicate();
    return bytes().asIntBuffer();
  }

  /**
   * The logical elements of an fp32 host tensor in row-major order (honours strides).
   *
   * @return a new array of {@link #numel()} floats
   * @throws IllegalStateException as {@link #floats()}, or for more elements than an array
   *     holds
   */
  public float[] toFloatArray() {
    FloatBuffer f = floats();
    long n = numel();
    if (n > Integer.MAX_VALUE) throw new IllegalStateException("too many elements for an array");
    float[] out = new float[(int) n];
    if (strides == null) {
      f.get(out);
      return out;
    }
    long[] idx = new long[shape.length];
    for (int i = 0; i < out.length; ++i) {
      long off = 0;
      for (int d = 0; d < shape.length; ++d) off += idx[d] * strides[d];
      out[i] = f.get((int) off);
      for (int d = shape.length - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  /**
   * Whether {@link #close()} has been called (or the view was freed).
   *
   * @return true once the native descriptor is freed
   */
  public boolean isClosed() {
    return handle.get() == 0;
  }

  /** The read locks of the tensors one call passes, taken by {@link #hold}. */
  static final class Held {
    private final Tensor[] tensors;

    private Held(Tensor[] tensors) {
      this.tensors = tensors;
    }

    /**
     * Releases the read locks (in the finally block of the call), and keeps the tensors, and
     * the direct buffers behind them, reachable up to this point: a native call receives only
     * their addresses, so without this the garbage collector could reclaim the buffer of a
     * tensor that the caller built inline while the call still reads it.
     */
    void release() {
      for (Tensor t : tensors) {
        if (t != null) t.use.readLock().unlock();
      }
      java.lang.ref.Reference.reachabilityFence(tensors);
    }
  }

  /**
   * Takes the read lock of each non-null tensor a call passes, so that none of them is closed
   * while the library uses it; {@link Held#release} gives them back. The locks are taken in one
   * global order (creation order): a read lock waits behind a close already queued on that
   * tensor, so two calls taking the same two tensors in opposite orders while both are being
   * closed could otherwise wait on each other.
   */
  static Held hold(Tensor... tensors) {
    Tensor[] sorted = tensors.clone();
    Arrays.sort(sorted, (x, y) -> x == null ? (y == null ? 0 : -1)
        : y == null ? 1 : Long.compare(x.order, y.order));
    for (Tensor t : sorted) {
      if (t != null) t.use.readLock().lock();
    }
    return new Held(sorted);
  }

  /**
   * The native {@code DLTensor*} of an optional tensor, 0 (NULL) for null; a closed one throws,
   * naming the argument ({@code name}, the C header's).
   */
  static long handleOf(Tensor t, String name) {
    if (t == null) return 0;
    long h = t.handle.get();
    if (h == 0) throw new IllegalStateException(name + ": Tensor is closed: " + t);
    return h;
  }

  /** As {@link #handleOf}, for a tensor the library will write: a read-only buffer is refused. */
  static long outputHandleOf(Tensor t, String name) {
    long h = handleOf(t, name);
    if (t != null && t.readOnly) {
      throw new IllegalArgumentException(name + ": backed by a read-only buffer, cannot be an output");
    }
    return h;
  }

  /**
   * Frees the native descriptor; the data is not touched. Idempotent, also when several threads
   * close the same tensor at once. A close on another thread while a call uses the tensor waits
   * for that call to return; calls that start later throw IllegalStateException. A view that is
   * never closed is freed after it becomes unreachable (class notes).
   *
   * @throws IllegalStateException when called from a log listener (the library holds its log
   *     lock while the listener runs, and a call on another thread that uses this tensor may be
   *     waiting for that lock: the close would wait for it for ever) or from inside a call that
   *     uses this tensor
   */
  @Override
  public void close() {
    if (LogSink.IN_DELIVERY.get()) {
      throw new IllegalStateException("Tensor.close() from a log listener: close it after the listener returns");
    }
    if (use.getReadHoldCount() > 0) {
      throw new IllegalStateException(
          "Tensor.close() from inside a flashkit call that uses it (e.g. a log listener): " + this);
    }
    use.writeLock().lock();
    try {
      cleanable.clean();
    } finally {
      use.writeLock().unlock();
    }
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype + ", shape " + Arrays.toString(shape)
        + (strides == null ? "" : ", strides " + Arrays.toString(strides)) + ", " + deviceType
        + (isClosed() ? ", closed" : "") + ")";
  }
}
