// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** A flashkit call failed with internal error (status 500 and unknown codes): an invariant of the library was broken; please report it. */
public class InternalException extends FlashkitException {
  private static final long serialVersionUID = 1L;

  /** Called by the native layer with the failed status and the library's message. */
  public InternalException(int statusCode, String message) {
    super(statusCode, message);
  }
}
