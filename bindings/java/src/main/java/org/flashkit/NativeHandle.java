// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A native handle shared by concurrent calls and one close. Calls run under the read lock, so
 * any number run at once; {@link #close} takes the write lock, so it waits until the calls
 * running on the handle have returned, and calls that start later see it closed
 * (IllegalStateException) instead of passing a destroyed handle to the library.
 */
final class NativeHandle {
  /** The body of a call, given the live handle. */
  @FunctionalInterface
  interface Call<T> {
    T run(long handle);
  }

  /** What close does with the handle once no call is running (destroy it). */
  @FunctionalInterface
  interface Destroy {
    void run(long handle);
  }

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final String what; // "Context", "FFTConvPlan": for the closed message
  private volatile long handle;

  NativeHandle(String what, long handle) {
    this.what = what;
    this.handle = handle;
  }

  /** Runs {@code body} with the handle, which stays valid until it returns. */
  <T> T call(Call<T> body) {
    lock.readLock().lock();
    try {
      long h = handle;
      if (h == 0) throw new IllegalStateException(what + " is closed");
      return body.run(h);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The raw handle now (no guard); throws if closed. */
  long peek() {
    long h = handle;
    if (h == 0) throw new IllegalStateException(what + " is closed");
    return h;
  }

  boolean isClosed() {
    return handle == 0;
  }

  /**
   * Waits for the running calls, then runs {@code before} and destroys the handle. Idempotent:
   * false if it was already closed. A call made on this thread from inside a call on this
   * handle would deadlock here; the bindings never close from inside a call.
   */
  boolean close(Runnable before, Destroy destroy) {
    lock.writeLock().lock();
    try {
      long h = handle;
      if (h == 0) return false;
      if (before != null) before.run();
      handle = 0;
      destroy.run(h);
      return true;
    } finally {
      lock.writeLock().unlock();
    }
  }
}
