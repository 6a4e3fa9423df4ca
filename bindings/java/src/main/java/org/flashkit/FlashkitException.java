// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * A flashkit call failed. The subclass names the status category; {@link #getMessage()} is
 * exactly what C's {@code fk_get_last_error_message()} returned for the failed call (a sentence
 * naming the argument and the rule it broke, e.g. {@code "q: head_dim 300 > 256"}).
 *
 * <p>Thrown by the native layer right after the failing call, on the same thread, so the
 * message always belongs to that call. Nothing was written to any output.
 */
public abstract class FlashkitException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The numeric {@code fk_status_t} of the failed call. */
  private final int statusCode;

  /**
   * An exception for a failed call.
   *
   * @param statusCode the numeric {@code fk_status_t} the C call returned
   * @param message the text of {@code fk_get_last_error_message()} for that call
   */
  protected FlashkitException(int statusCode, String message) {
    super(message);
    this.statusCode = statusCode;
  }

  /**
   * The numeric status.
   *
   * @return the {@code fk_status_t}, e.g. 104 for a shape mismatch
   */
  public int getStatusCode() {
    return statusCode;
  }

  /**
   * The status as an enum constant.
   *
   * @return the status, or null for a code newer than these bindings
   */
  public Status getStatus() {
    return Status.fromCode(statusCode);
  }

  /**
   * The library's static description of the status ({@code fk_status_string()}).
   *
   * @return e.g. "invalid argument: shape mismatch"; "unknown status" for an unknown code
   */
  public String getStatusString() {
    return Flashkit.statusString(statusCode);
  }
}
