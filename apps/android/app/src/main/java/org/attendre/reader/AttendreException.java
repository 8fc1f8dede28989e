package org.attendre.reader;

import java.nio.charset.StandardCharsets;

/** A failed attendre call: the C API's status and its one-line message. */
public final class AttendreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The attendre_status value (1 invalid_argument ... 12 internal). */
  public final int status;
  /** attendre_status_name of it: "invalid_argument", "io", ... */
  public final String statusName;

  /** Called by attendre_jni.c, which hands over UTF-8 bytes (see there why). */
  AttendreException(int status, byte[] statusName, byte[] message) {
    super(new String(message, StandardCharsets.UTF_8));
    this.status = status;
    this.statusName = new String(statusName, StandardCharsets.UTF_8);
  }
}
