"""Transcripts as files a person can read: markdown, HTML, JSON."""
