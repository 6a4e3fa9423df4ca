// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** What a context runs on ({@code fk_context_info_t}), as returned by {@link Context#info()}. */
public final class ContextInfo {
  private final Backend backend;
  private final KernelFamily kernelFamily;
  private final int deviceOrdinal;
  private final int ccMajor;
  private final int ccMinor;
  private final int smCount;
  private final int numThreads;
  private final long l2Bytes;
  private final long smemPerBlockOptin;
  private final String deviceName;

  ContextInfo(fk_context_info_t i) {
    backend = Backend.fromValue(i.getBackend());
    kernelFamily = KernelFamily.fromValue(i.getKernel_family());
    deviceOrdinal = i.getDevice_ordinal();
    ccMajor = i.getCc_major();
    ccMinor = i.getCc_minor();
    smCount = i.getSm_count();
    numThreads = i.getNum_threads();
    l2Bytes = i.getL2_bytes();
    smemPerBlockOptin = i.getSmem_per_block_optin();
    deviceName = i.getDevice_name();
  }

  /**
   * The backend the context runs on.
   *
   * @return {@link Backend#CPU} or {@link Backend#CUDA} (never AUTO)
   */
  public Backend backend() {
    return backend;
  }

  /**
   * The kernel family of the context ({@code fk_context_info_t.kernel_family}).
   *
   * @return the forced family, else the best one this context dispatches to ({@link
   *     KernelFamily#CPU} for the CPU backend)
   */
  public KernelFamily kernelFamily() {
    return kernelFamily;
  }

  /**
   * The device ordinal.
   *
   * @return the CUDA device ordinal (as in cudaSetDevice), or -1 on the CPU backend
   */
  public int deviceOrdinal() {
    return deviceOrdinal;
  }

  /**
   * Compute capability, major part.
   *
   * @return e.g. 9 on H100/H200; 0 on the CPU backend
   */
  public int ccMajor() {
    return ccMajor;
  }

  /**
   * Compute capability, minor part.
   *
   * @return the minor version; 0 on the CPU backend
   */
  public int ccMinor() {
    return ccMinor;
  }

  /**
   * Streaming multiprocessors of the device.
   *
   * @return the SM count; 0 on the CPU backend
   */
  public int smCount() {
    return smCount;
  }

  /**
   * Worker threads.
   *
   * @return the CPU backend's worker threads; 1 on the CUDA backend
   */
  public int numThreads() {
    return numThreads;
  }

  /**
   * L2 cache size.
   *
   * @return the L2 cache size in bytes; 0 on the CPU backend
   */
  public long l2Bytes() {
    return l2Bytes;
  }

  /**
   * Opt-in shared memory per block.
   *
   * @return the opt-in shared memory per thread block in bytes; 0 on the CPU backend
   */
  public long smemPerBlockOptin() {
    return smemPerBlockOptin;
  }

  /**
   * The device's name.
   *
   * @return e.g. "NVIDIA H200" or "cpu"
   */
  public String deviceName() {
    return deviceName;
  }

  @Override
  public String toString() {
    return "ContextInfo(" + backend.nativeName() + ", " + kernelFamily.nativeName() + ", "
        + deviceName + (backend == Backend.CPU ? ", " + numThreads + " threads"
            : ", cc " + ccMajor + "." + ccMinor + ", " + smCount + " SMs") + ")";
  }
}
