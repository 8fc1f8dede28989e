// Exists: named by README.md beside it.
