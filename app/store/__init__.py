"""The model repository on disk: reading and writing model folders, uploads and their checks."""
