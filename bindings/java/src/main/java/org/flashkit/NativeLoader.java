// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * Loads libflashkit_jni (which links libflashkit) once per class loader.
 *
 * <p>The system property {@code org.flashkit.jni.library} may name the library file to load
 * (an absolute path); otherwise it is looked up as {@code flashkit_jni} on
 * {@code java.library.path}.
 */
final class NativeLoader {
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty("org.flashkit.jni.library");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("flashkit_jni");
    }
    loaded = true;
  }
}
