package org.attendre.reader;

import java.nio.charset.StandardCharsets;

/**
 * The native methods over attendre's C API (app/src/main/cpp/attendre_jni.c),
 * in Java so that the Kotlin app and the host test (tests/jni, plain javac)
 * share one declaration. Handles are the C API's pointers as longs; 0 is
 * NULL, which every call answers with an AttendreException, and each
 * handle must be destroyed once (Attendre.kt wraps them in Closeables).
 * Every failure throws AttendreException with the C API's message.
 */
public final class AttendreNative {
  static {
    System.loadLibrary("attendre_jni");
  }

  private AttendreNative() {}

  /** What one read gave: the answer's first line, the positions the document took. */
  public static final class ReadResult {
    public final String answer;
    public final long documentTokens;

    ReadResult(String answer, long documentTokens) {
      this.answer = answer;
      this.documentTokens = documentTokens;
    }
  }

  /**
   * Memory settings of every block; 0 in chunk or kvCapacity keeps the
   * model's plan (S = 64, M = its trained context), topK 0 is K = M.
   */
  public static final class MemorySetting {
    public int chunk = 0;
    public int qCapacity = 0;
    public int kvCapacity = 0;
    public int topK = 0;
    public String policy = "fifo";
    public double lambda = 0.0;
    public int nSink = 0;
    public int nRecent = 0;  // W: the recent window never evicted
    public boolean flushCapable = false;
  }

  /** ATTENDRE_API_VERSION of the linked library (this binding speaks 6). */
  public static native int apiVersion();

  public static String versionString() {
    return text(versionStringBytes());
  }

  /** A Vulkan context; device null: ATTENDRE_DEVICE, else the best device. */
  public static long contextCreate(String device) {
    return contextCreateBytes(bytes(device));
  }

  public static void contextDestroy(long context) {
    destroy(context, 0);
  }

  public static String contextDeviceName(long context) {
    return text(contextDeviceNameBytes(context));
  }

  /** Validation messages since the last call, one per line ("" when none); clears them. */
  public static String contextTakeValidationMessages(long context) {
    return text(contextTakeValidationMessagesBytes(context));
  }

  /** A GGUF model, memory-mapped. */
  public static long modelOpen(String path) {
    return modelOpenBytes(bytes(path));
  }

  public static void modelDestroy(long model) {
    destroy(model, 1);
  }

  /** {context length, blocks, hidden, vocab, parameters, tensor bytes}. */
  public static long[] modelNumbers(long model) {
    return numbers(model, 0);
  }

  public static String modelArchitecture(long model) {
    return text(modelText(model, 0));
  }

  public static String modelName(long model) {
    return text(modelText(model, 1));
  }

  /** The model's stack on the context's device; the model may be closed afterwards. */
  public static long stackCreate(long context, long model, MemorySetting memory) {
    return stackCreateNative(context, model, memory.chunk, memory.qCapacity, memory.kvCapacity, memory.topK,
                       bytes(memory.policy), memory.lambda, memory.nSink, memory.nRecent,
                       memory.flushCapable);
  }

  public static void stackDestroy(long stack) {
    destroy(stack, 2);
  }

  /** {hidden, vocab, chunk, blocks, drain positions, device bytes}. */
  public static long[] stackNumbers(long stack) {
    return numbers(stack, 1);
  }

  /** The positions block `block` holds now, ascending. */
  public static native long[] stackRetained(long stack, int block);

  /**
   * Reads "Question: {question}\n\nContext: {text}\n\nAnswer:" through the
   * stack (fresh: one read per stack), then answers greedily with at most
   * answerTokens tokens; flush needs a stack made with flushCapable.
   */
  public static ReadResult readDocument(long stack, long model, String question, String text, int answerTokens,
                                        boolean flush) {
    long[] documentTokens = new long[1];
    byte[] answer = readDocumentBytes(stack, model, bytes(question), bytes(text), answerTokens, flush, documentTokens);
    return new ReadResult(text(answer), documentTokens[0]);
  }

  // Text crosses JNI as UTF-8 bytes (attendre_jni.c says why); null stays null.
  private static byte[] bytes(String text) {
    return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static native byte[] versionStringBytes();
  private static native long contextCreateBytes(byte[] device);
  private static native byte[] contextDeviceNameBytes(long context);
  private static native byte[] contextTakeValidationMessagesBytes(long context);
  private static native long modelOpenBytes(byte[] path);
  private static native byte[] modelText(long model, int which);
  private static native long[] numbers(long handle, int kind);
  private static native void destroy(long handle, int kind);
  private static native long stackCreateNative(long context, long model, int chunk, int qCapacity, int kvCapacity,
                                         int topK, byte[] policy, double lambda, int nSink, int nRecent,
                                         boolean flushCapable);
  private static native byte[] readDocumentBytes(long stack, long model, byte[] question, byte[] text, int answerTokens,
                                            boolean flush, long[] documentTokens);
}
