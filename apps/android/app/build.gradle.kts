// The reader app: Kotlin UI (MainActivity.kt), the JNI binding
// (AttendreNative.java, attendre_jni.c) and attendre itself, built for
// arm64-v8a by the NDK through src/main/cpp/CMakeLists.txt.
plugins {
    id("com.android.application")
    id("org.jetbrains.kotlin.android")
}

android {
    namespace = "org.attendre.reader"
    compileSdk = 35
    // r27 (LTS) or later: clang with the C++20 attendre needs, and the
    // flexible page sizes switch below (r28 and later align to 16 KiB by
    // default). See ../README.md.
    ndkVersion = "27.2.12479018"

    defaultConfig {
        applicationId = "org.attendre.reader"
        // Android 10 (API 29): every device that ships it with a GPU has
        // Vulkan 1.1, the version attendre needs (the manifest asks for it).
        minSdk = 29
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"

        ndk {
            abiFilters += listOf("arm64-v8a")
        }
        externalNativeBuild {
            cmake {
                arguments += listOf(
                    "-DANDROID_STL=c++_static",  // one native library: no libc++_shared.so to ship
                    "-DANDROID_SUPPORT_FLEXIBLE_PAGE_SIZES=ON",  // 16 KiB page alignment (NDK r27)
                    "-DCMAKE_BUILD_TYPE=Release",
                )
                // The host's glslangValidator when it is not on Gradle's PATH:
                // ./gradlew -Pattendre.glslang=/path/to/glslangValidator ...
                (project.findProperty("attendre.glslang") as String?)?.let {
                    arguments += "-DGLSLANG_VALIDATOR=$it"
                }
                // The unpacked PCRE2 release the native build compiles (required):
                // -Pattendre.pcre2=/path/to/pcre2-10.44
                (project.findProperty("attendre.pcre2") as String?)?.let {
                    arguments += "-DATTENDRE_PCRE2_SOURCE_DIR=$it"
                }
            }
        }
    }

    externalNativeBuild {
        cmake {
            path = file("src/main/cpp/CMakeLists.txt")
            version = "3.31.6"  // attendre needs CMake 3.25 or later; the SDK's default (3.22.1) is older
        }
    }

    buildTypes {
        release {
            isMinifyEnabled = false
            signingConfig = signingConfigs.getByName("debug")  // a demo: sign with the debug key
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }
    kotlinOptions {
        jvmTarget = "17"
    }

    packaging {
        // Stored uncompressed and page-aligned in the APK, loaded in place.
        jniLibs.useLegacyPackaging = false
    }
}
