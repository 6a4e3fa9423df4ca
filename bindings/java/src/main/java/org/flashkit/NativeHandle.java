// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A native handle shared by concurrent calls and one close. Calls run under the read lock, so
 * any number run at once; {@link #close} takes the write lock, so it waits until the calls
 * running on the handle have returned, and calls that start later see it closed
 * (IllegalStateException) instead of passing a destroyed handle to the library.
 */
final class NativeHandle {
  /**
   * Destroys the contexts and plans that become unreachable unclosed. A plan leaves its
   * context's set only after it is destroyed (under its write lock), so a context closing at
   * the same time, by its user or by this Cleaner, still finds it there and waits for it: the
   * plans go before their context whichever starts first.
   */
  static final Cleaner CLEANER = Cleaner.create();

  /** Handles destroyed by {@link #CLEANER} (not by close()), for the tests. */
  static final AtomicLong CLEANED = new AtomicLong();

  /** Closes a handle (and what goes first); true if this call destroyed it. */
  @FunctionalInterface
  interface Closer {
    boolean close();
  }

  /**
   * Runs {@code closer} once {@code owner} is unreachable, or at the returned cleanable's
   * clean() (close(): then a no-op, since the handle is closed). {@code closer} must not
   * refer to {@code owner}, which would then never become unreachable.
   */
  static Cleaner.Cleanable whenUnreachable(Object owner, Closer closer) {
    return CLEANER.register(owner, () -> {
      if (closer.close()) CLEANED.incrementAndGet();
    });
  }
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
  private volatile Object attachment; // see attach(); dropped at close

  NativeHandle(String what, long handle) {
    this.what = what;
    this.handle = handle;
  }

  /**
   * Runs {@code body} with the handle, which stays valid until it returns. {@code owner} (the
   * Context or FFTConvPlan) is kept reachable until then: a method's {@code this} could
   * otherwise become unreachable between its read of the guard and the read lock, and its
   * Cleaner close the handle under a call the user made on an object never closed.
   */
  <T> T call(Object owner, Call<T> body) {
    lock.readLock().lock();
    try {
      long h = handle;
      if (h == 0) throw new IllegalStateException(what + " is closed");
      return body.run(h);
    } finally {
      lock.readLock().unlock();
      Reference.reachabilityFence(owner);
    }
  }

  /**
   * Keeps {@code o} reachable until the handle is closed (the filter whose spectrum a plan
   * cached: its address stands for its values). Called inside {@link #call}.
   */
  void attach(Object o) {
    attachment = o;
  }

  /** What {@link #attach} kept, or null (none yet, or the handle is closed). */
  Object attached() {
    return attachment;
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
   * false if it was already closed. From inside a call on this handle on the same thread (a
   * log listener) it throws IllegalStateException instead of waiting for itself.
   */
  boolean close(Runnable before, Destroy destroy) {
    if (LogSink.IN_DELIVERY.get()) {
      // From a log listener: refused before anything is closed (a context would otherwise close
      // some of its plans and then stop at the one whose call is logging, or wait for a call on
      // another thread that waits for the library's log lock, which the listener's call holds).
      throw new IllegalStateException(what + ".close() from a log listener; close it after the listener returns");
    }
    if (lock.getReadHoldCount() > 0) {
      // This thread is inside a call on the handle (a log listener): the write lock would
      // wait for that call, i.e. for ever.
      throw new IllegalStateException(
          what + ".close() from inside a call on it (e.g. a log listener); close it after the call returns");
    }
    lock.writeLock().lock();
    try {
      long h = handle;
      if (h == 0) return false;
      if (before != null) before.run();
      handle = 0;
      attachment = null;
      destroy.run(h);
      return true;
    } finally {
      lock.writeLock().unlock();
    }
  }
}
