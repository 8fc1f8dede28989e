// The attendre reader for Android: one app module (app/), whose native part
// builds the repository's library with the NDK (app/src/main/cpp).
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}
dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}
rootProject.name = "attendre-reader"
include(":app")
