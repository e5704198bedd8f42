"""Media in and out of the pipeline: sources, downloads, the inbox, clips, frames, audio and transcripts,
image and frame hashing, near-duplicates, OCR (docs/ingest.md)."""
