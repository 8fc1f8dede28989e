package org.attendre.reader

import android.app.Activity
import android.content.Intent
import android.net.Uri
import android.os.Bundle
import android.provider.OpenableColumns
import android.text.InputType
import android.view.ViewGroup.LayoutParams.MATCH_PARENT
import android.view.ViewGroup.LayoutParams.WRAP_CONTENT
import android.widget.ArrayAdapter
import android.widget.Button
import android.widget.EditText
import android.widget.LinearLayout
import android.widget.ScrollView
import android.widget.Spinner
import android.widget.TextView
import java.io.File
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors

/**
 * Reads a document with a question through a GGUF model's stack under a
 * bounded memory and shows the answer and what each block's memory kept.
 *
 * The model: getExternalFilesDir(null)/model.gguf (adb push, see README.md),
 * or a file picked with the system's document picker, copied into the
 * app's files folder once (the library memory-maps a path; a content:// URI
 * has none). The UI is built in code: one screen, no resources to keep in
 * step with it.
 */
class MainActivity : Activity() {
    // One worker: reads run one at a time, never on the UI thread (a read
    // on a phone takes seconds to minutes).
    private val worker: ExecutorService = Executors.newSingleThreadExecutor()
    private lateinit var modelLine: TextView
    private lateinit var question: EditText
    private lateinit var document: EditText
    private lateinit var capacity: EditText
    private lateinit var policy: Spinner
    private lateinit var readButton: Button
    private lateinit var result: TextView
    private var modelFile: File? = null

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val column = LinearLayout(this).apply {
            orientation = LinearLayout.VERTICAL
            setPadding(32, 32, 32, 32)
        }
        fun label(text: String) = TextView(this).apply { this.text = text }.also { column.addView(it) }

        modelLine = label("")
        column.addView(Button(this).apply {
            text = "Pick a GGUF model…"
            setOnClickListener {
                val intent = Intent(Intent.ACTION_OPEN_DOCUMENT).apply {
                    addCategory(Intent.CATEGORY_OPENABLE)
                    type = "*/*"  // no MIME type is registered for GGUF
                }
                startActivityForResult(intent, PICK_MODEL)
            }
        })
        label("Question")
        question = EditText(this).apply { setText("Who helped Lily?") }.also { column.addView(it) }
        label("Document")
        document = EditText(this).apply {
            inputType = InputType.TYPE_CLASS_TEXT or InputType.TYPE_TEXT_FLAG_MULTI_LINE
            minLines = 6
            setText(SAMPLE)
        }.also { column.addView(it) }
        label("K/V memory per block (M positions; 0: the model's context)")
        capacity = EditText(this).apply {
            inputType = InputType.TYPE_CLASS_NUMBER
            setText("128")
        }.also { column.addView(it) }
        label("Eviction policy")
        policy = Spinner(this).apply {
            adapter = ArrayAdapter(this@MainActivity, android.R.layout.simple_spinner_dropdown_item, POLICIES)
        }.also { column.addView(it) }
        readButton = Button(this).apply {
            text = "Read"
            setOnClickListener { read() }
        }.also { column.addView(it) }
        result = TextView(this).apply { setTextIsSelectable(true) }.also { column.addView(it) }

        setContentView(ScrollView(this).apply { addView(column, MATCH_PARENT, WRAP_CONTENT) })
        useModel(File(getExternalFilesDir(null), "model.gguf"))
    }

    override fun onDestroy() {
        worker.shutdownNow()
        super.onDestroy()
    }

    private fun useModel(file: File) {
        modelFile = file.takeIf { it.isFile }
        modelLine.text = if (modelFile != null) "Model: ${file.path}" else "No model yet: pick one, or adb push it to ${file.path}"
    }

    @Deprecated("ACTION_OPEN_DOCUMENT through the Activity API keeps the app free of AndroidX")
    override fun onActivityResult(requestCode: Int, resultCode: Int, data: Intent?) {
        super.onActivityResult(requestCode, resultCode, data)
        val uri = data?.data
        if (requestCode != PICK_MODEL || resultCode != RESULT_OK || uri == null) return
        modelLine.text = "Copying the model…"
        worker.execute {
            val outcome = runCatching { copyIntoFiles(uri) }
            runOnUiThread {
                outcome.onSuccess { useModel(it) }.onFailure { modelLine.text = "Could not copy the model: ${it.message}" }
            }
        }
    }

    /** The picked document, copied to files/models/<its name>. */
    private fun copyIntoFiles(uri: Uri): File {
        val name = contentResolver.query(uri, arrayOf(OpenableColumns.DISPLAY_NAME), null, null, null)?.use {
            if (it.moveToFirst()) it.getString(0) else null
        } ?: "picked.gguf"
        val target = File(File(filesDir, "models").apply { mkdirs() }, File(name).name)  // no path from outside
        contentResolver.openInputStream(uri)!!.use { input -> target.outputStream().use { input.copyTo(it) } }
        return target
    }

    private fun read() {
        val model = modelFile ?: run {
            result.text = "No model: pick a GGUF file first."
            return
        }
        val memory = AttendreNative.MemorySetting().apply {
            kvCapacity = capacity.text.toString().toIntOrNull() ?: 0
            policy = this@MainActivity.policy.selectedItem as String
            nSink = 4
        }
        val questionText = question.text.toString()
        val documentText = document.text.toString()
        readButton.isEnabled = false
        result.text = "Reading…"
        worker.execute {
            val report = try {
                AttendreContext().use { context ->
                    AttendreModel(model.path).use { m ->
                        AttendreStack(context, m, memory).use { stack ->
                            val started = System.nanoTime()
                            val reading = stack.read(questionText, documentText)
                            val seconds = (System.nanoTime() - started) / 1e9
                            buildString {
                                append("Answer: ${reading.answer}\n\n")
                                append("${m.architecture} on ${context.deviceName}: ${reading.documentTokens} ")
                                append("document positions in %.1f s, %d MiB on the device\n\n".format(
                                    seconds, stack.deviceBytes shr 20))
                                for (r in reading.retained) {
                                    append("Block ${r.block} kept ${r.positions.size} positions: ${r.ranges()}\n")
                                }
                            }
                        }
                    }
                }
            } catch (e: AttendreException) {
                "attendre: ${e.statusName}: ${e.message}"
            } catch (e: UnsatisfiedLinkError) {
                "libattendre_jni.so did not load: ${e.message}"
            }
            runOnUiThread {
                result.text = report
                readButton.isEnabled = true
            }
        }
    }

    private companion object {
        const val PICK_MODEL = 1
        val POLICIES = arrayOf("lra_sum", "fifo", "lru", "lfu", "lra_last", "lra_max", "lfa")
        const val SAMPLE = "Lily had a red ball. She played with it in the park every day. One day the ball " +
            "rolled into the pond. Lily was sad. Her friend Tom saw the ball and helped Lily get it back. " +
            "Lily said thank you and they played together until the sun went down."
    }
}
