// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** A flashkit call failed with device error (status 400-499): the CUDA runtime or driver reported an error, or a kernel failed to launch. */
public class DeviceException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /**
   * Called by the native layer with the failed status and the library's message.
   *
   * @param statusCode the numeric {@code fk_status_t} the C call returned
   * @param message the text of {@code fk_get_last_error_message()} for that call
   */
  public DeviceException(int statusCode, String message) {
    super(statusCode, message);
  }
}
