// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * A flashkit call failed with out of memory (status 300-399): a host or device allocation
 * failed. (WORKSPACE_TOO_SMALL, 301, is reserved: a {@link Launch} workspace that is too small
 * is supplemented by stream-ordered allocation, never refused.)
 */
public class OutOfMemoryException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /**
   * Called by the native layer with the failed status and the library's message.
   *
   * @param statusCode the numeric {@code fk_status_t} the C call returned
   * @param message the text of {@code fk_get_last_error_message()} for that call
   */
  public OutOfMemoryException(int statusCode, String message) {
    super(statusCode, message);
  }
}
