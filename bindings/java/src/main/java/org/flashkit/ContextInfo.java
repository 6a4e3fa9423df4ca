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

  /** CPU or CUDA (never AUTO). */
  public Backend backend() {
    return backend;
  }

  /** Best kernel family this context dispatches to (CPU for the CPU backend). */
  public KernelFamily kernelFamily() {
    return kernelFamily;
  }

  /** CUDA ordinal, or -1 on the CPU backend. */
  public int deviceOrdinal() {
    return deviceOrdinal;
  }

  public int ccMajor() {
    return ccMajor;
  }

  public int ccMinor() {
    return ccMinor;
  }

  public int smCount() {
    return smCount;
  }

  /** CPU backend worker threads (1 on CUDA). */
  public int numThreads() {
    return numThreads;
  }

  public long l2Bytes() {
    return l2Bytes;
  }

  public long smemPerBlockOptin() {
    return smemPerBlockOptin;
  }

  /** e.g. "NVIDIA H200" or "cpu". */
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
