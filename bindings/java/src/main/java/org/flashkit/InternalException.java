// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** A flashkit call failed with internal error (status 500 and unknown codes): an invariant of the library was broken; please report it. */
public class InternalException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /**
   * Called by the native layer with the failed status and the library's message.
   *
   * @param statusCode the numeric {@code fk_status_t} the C call returned
   * @param message the text of {@code fk_get_last_error_message()} for that call
   */
  public InternalException(int statusCode, String message) {
    super(statusCode, message);
  }
}
