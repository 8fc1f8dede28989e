import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import org.attendre.reader.AttendreException;
import org.attendre.reader.AttendreNative;

/**
 * The Android app's JNI binding (org.attendre.reader.AttendreNative over
 * apps/android/.../attendre_jni.c) on a desktop JVM:
 *
 *   java -Djava.library.path=DIR -cp JAR JniTest OUT [MODEL.gguf POLICY]
 *
 * Error paths first (each an AttendreException with the C API's status and
 * message, never a crash), then with a model: the read of
 * tests/capi/capi_program.c (same question, text and memory), written to
 * OUT in that program's line format, which tests/capi/test_capi.cpp
 * compares with the program's own. Exits 1 on anything unexpected,
 * validation messages included; prints "jni: ok" at the end.
 */
public final class JniTest {
  static final String QUESTION = "What color was the ball?";
  static final String TEXT = "Lily had a red ball. She played with it in the park every day.";
  static int failures = 0;

  interface Call {
    void run();
  }

  /** `call` must throw AttendreException `status` with a one-line message naming `word`. */
  static void fails(String what, int status, String word, Call call) {
    try {
      call.run();
      System.err.println(what + ": no exception");
      ++failures;
    } catch (AttendreException e) {
      String message = e.getMessage();
      if (e.status != status || message.isEmpty() || message.contains("\n") || !message.contains(word)) {
        System.err.println(what + ": " + e.statusName + " (" + e.status + ") \"" + message + "\", expected status "
                           + status + " naming \"" + word + "\"");
        ++failures;
      }
    }
  }

  static void require(boolean condition, String what) {
    if (!condition) {
      System.err.println("does not hold: " + what);
      System.exit(1);
    }
  }

  static void checkValidation(long context) {
    String messages = AttendreNative.contextTakeValidationMessages(context);
    if (!messages.isEmpty()) {
      System.err.print("validation messages:\n" + messages);
      System.exit(1);
    }
  }

  static void checkErrors(long context) {
    fails("missing model", 8, "/nonexistent/model.gguf", () -> AttendreNative.modelOpen("/nonexistent/model.gguf"));
    fails("null path", 1, "path", () -> AttendreNative.modelOpen(null));
    fails("NUL in path", 1, "NUL", () -> AttendreNative.modelOpen("a\0b.gguf"));
    fails("no such device", 3, "no such device", () -> AttendreNative.contextCreate("no such device anywhere"));
    fails("closed model", 1, "model", () -> AttendreNative.modelNumbers(0));
    fails("closed stack", 1, "stack", () -> AttendreNative.stackRetained(0, 0));
    fails("closed context", 1, "context", () -> AttendreNative.contextDeviceName(0));
    fails("read on a closed stack", 1, "stack", () -> AttendreNative.readDocument(0, 0, "q", "c", 4, false));
    fails("stack on a closed model", 1, "model",
          () -> AttendreNative.stackCreate(context, 0, new AttendreNative.MemorySetting()));
    AttendreNative.contextDestroy(0);  // destroying NULL is allowed
    AttendreNative.modelDestroy(0);
    AttendreNative.stackDestroy(0);
  }

  static void checkModel(long context, String path, String policy, PrintWriter out) {
    long model = AttendreNative.modelOpen(path);
    try {
      long[] numbers = AttendreNative.modelNumbers(model);
      require(numbers.length == 6 && numbers[1] > 0 && numbers[3] > 0, "model numbers");
      out.println("architecture " + AttendreNative.modelArchitecture(model));

      AttendreNative.MemorySetting bad = new AttendreNative.MemorySetting();
      bad.policy = "no_such_policy";
      fails("unknown policy", 1, "no_such_policy", () -> AttendreNative.stackCreate(context, model, bad));
      AttendreNative.MemorySetting negative = new AttendreNative.MemorySetting();
      negative.kvCapacity = -1;
      fails("negative capacity", 1, "negative", () -> AttendreNative.stackCreate(context, model, negative));

      // S = 8, N = 4, M = 16, K = 8 on every block, as capi_program.c reads.
      AttendreNative.MemorySetting memory = new AttendreNative.MemorySetting();
      memory.chunk = 8;
      memory.qCapacity = 4;
      memory.kvCapacity = 16;
      memory.topK = 8;
      memory.policy = policy;
      long stack = AttendreNative.stackCreate(context, model, memory);
      try {
        fails("NUL in question", 1, "NUL", () -> AttendreNative.readDocument(stack, model, "a\0b", TEXT, 6, false));
        fails("flush without flushCapable", 1, "flush",
              () -> AttendreNative.readDocument(stack, model, QUESTION, TEXT, 6, true));
      } finally {
        AttendreNative.stackDestroy(stack);
      }
      long reader = AttendreNative.stackCreate(context, model, memory);
      try {
        AttendreNative.ReadResult result = AttendreNative.readDocument(reader, model, QUESTION, TEXT, 6, false);
        out.println("answer " + result.answer);
        out.println("document_tokens " + result.documentTokens);
        long[] info = AttendreNative.stackNumbers(reader);
        require(info[2] == 8 && info[3] == numbers[1], "stack numbers");
        for (int block = 0; block < info[3]; ++block) {
          StringBuilder line = new StringBuilder("read_positions " + block);
          for (long p : AttendreNative.stackRetained(reader, block)) line.append(' ').append(p);
          out.println(line);
        }
      } finally {
        AttendreNative.stackDestroy(reader);
      }
    } finally {
      AttendreNative.modelDestroy(model);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 1 && args.length != 3) {
      System.err.println("usage: JniTest OUT [MODEL.gguf POLICY]");
      System.exit(2);
    }
    require(AttendreNative.apiVersion() == 6, "API version 6");
    require(!AttendreNative.versionString().isEmpty(), "a version string");
    try (PrintWriter out =
             new PrintWriter(new OutputStreamWriter(new FileOutputStream(args[0]), StandardCharsets.UTF_8))) {
      long context = AttendreNative.contextCreate(null);  // validation as ATTENDRE_VALIDATION says
      try {
        out.println("device " + AttendreNative.contextDeviceName(context));
        checkErrors(context);
        if (args.length == 3) checkModel(context, args[1], args[2], out);
        checkValidation(context);
      } finally {
        AttendreNative.contextDestroy(context);
      }
    }
    if (failures > 0) {
      System.err.println(failures + " failed checks");
      System.exit(1);
    }
    System.out.println("jni: ok");
  }
}
