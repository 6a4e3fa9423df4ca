// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** A flashkit call failed with not supported (status 200-299): a valid request this build or device cannot serve, e.g. the CUDA backend without a GPU. */
public class NotSupportedException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /**
   * Called by the native layer with the failed status and the library's message.
   *
   * @param statusCode the numeric {@code fk_status_t} the C call returned
   * @param message the text of {@code fk_get_last_error_message()} for that call
   */
  public NotSupportedException(int statusCode, String message) {
    super(statusCode, message);
  }
}
