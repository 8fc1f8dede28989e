package org.attendre.reader

import java.io.Closeable

/*
 * Kotlin's view of attendre: each C API handle (a long in AttendreNative)
 * owned by one Closeable, destroyed once by close() and zeroed, so that a
 * use after close reaches the C API as NULL and throws AttendreException
 * instead of touching freed memory. Use them with `use { }`. Every call may
 * throw AttendreException with the library's one-line message.
 */

/** A Vulkan device; `device`: an index or name substring, null for the best one. */
class AttendreContext(device: String? = null) : Closeable {
    internal var handle: Long = AttendreNative.contextCreate(device)
        private set

    val deviceName: String get() = AttendreNative.contextDeviceName(handle)

    override fun close() {
        AttendreNative.contextDestroy(handle)
        handle = 0
    }
}

/** A GGUF model, memory-mapped from `path` (a file path, not a content:// URI). */
class AttendreModel(path: String) : Closeable {
    internal var handle: Long = AttendreNative.modelOpen(path)
        private set

    val architecture: String get() = AttendreNative.modelArchitecture(handle)
    val name: String get() = AttendreNative.modelName(handle)
    /** The context length it was trained on. */
    val contextLength: Long get() = AttendreNative.modelNumbers(handle)[0]
    val blocks: Int get() = AttendreNative.modelNumbers(handle)[1].toInt()

    override fun close() {
        AttendreNative.modelDestroy(handle)
        handle = 0
    }
}

/** What one block's K/V memory holds after a read: document positions, ascending. */
data class Retained(val block: Int, val positions: LongArray) {
    /** "0-3, 120-627": consecutive positions joined into ranges. */
    fun ranges(): String {
        val parts = mutableListOf<String>()
        var i = 0
        while (i < positions.size) {
            var j = i
            while (j + 1 < positions.size && positions[j + 1] == positions[j] + 1) ++j
            parts += if (i == j) "${positions[i]}" else "${positions[i]}-${positions[j]}"
            i = j + 1
        }
        return parts.joinToString(", ")
    }
}

data class Reading(val answer: String, val documentTokens: Long, val retained: List<Retained>)

/** The model's transformer stack with ATTENDRE memories on the context's device. */
class AttendreStack(context: AttendreContext, private val model: AttendreModel,
                    memory: AttendreNative.MemorySetting) : Closeable {
    private var handle: Long = AttendreNative.stackCreate(context.handle, model.handle, memory)

    /** Device memory the stack holds, in bytes. */
    val deviceBytes: Long get() = AttendreNative.stackNumbers(handle)[5]

    /**
     * The reader's loop: the question, then the document, streamed through
     * the bounded memories chunk by chunk; then a greedy answer. One read
     * per stack.
     */
    fun read(question: String, text: String, answerTokens: Int = 32, flush: Boolean = false): Reading {
        val result = AttendreNative.readDocument(handle, model.handle, question, text, answerTokens, flush)
        val blocks = AttendreNative.stackNumbers(handle)[3].toInt()
        val retained = (0 until blocks).map { Retained(it, AttendreNative.stackRetained(handle, it)) }
        return Reading(result.answer, result.documentTokens, retained)
    }

    override fun close() {
        AttendreNative.stackDestroy(handle)
        handle = 0
    }
}
