// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Where a tensor's memory lives (DLPack {@code DLDeviceType}). */
public enum DeviceType {
  /** Host memory (a CPU context). */
  CPU(FlashkitNativeConstants.kDLCPU),
  /** CUDA device memory (a CUDA context). */
  CUDA(FlashkitNativeConstants.kDLCUDA),
  /** Pinned host memory (a CPU context). */
  CUDA_HOST(FlashkitNativeConstants.kDLCUDAHost),
  /** CUDA managed memory (a CUDA context). */
  CUDA_MANAGED(FlashkitNativeConstants.kDLCUDAManaged);

  private final int value;

  DeviceType(int value) {
    this.value = value;
  }

  /**
   * The DLPack device type value.
   *
   * @return the {@code DLDeviceType} code stored in the view's {@code DLTensor.device}
   *     ({@code kDLCPU}, {@code kDLCUDA}, {@code kDLCUDAHost} or {@code kDLCUDAManaged})
   */
  public int value() {
    return value;
  }
}
