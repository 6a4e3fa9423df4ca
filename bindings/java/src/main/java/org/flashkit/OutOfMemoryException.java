// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** A flashkit call failed with out of memory (status 300-399): a host or device allocation failed, or a caller workspace was too small. */
public class OutOfMemoryException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /** Called by the native layer with the failed status and the library's message. */
  public OutOfMemoryException(int statusCode, String message) {
    super(statusCode, message);
  }
}
