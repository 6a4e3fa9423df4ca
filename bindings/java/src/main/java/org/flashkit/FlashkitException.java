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

  private final int statusCode;

  protected FlashkitException(int statusCode, String message) {
    super(message);
    this.statusCode = statusCode;
  }

  /** The numeric {@code fk_status_t}, e.g. 104 for a shape mismatch. */
  public int getStatusCode() {
    return statusCode;
  }

  /** The status, or null for a code newer than these bindings. */
  public Status getStatus() {
    return Status.fromCode(statusCode);
  }

  /** The library's static description of the status, e.g. "invalid argument: shape mismatch". */
  public String getStatusString() {
    return Flashkit.statusString(statusCode);
  }
}
