"""Bench-C: corrupted copies (19 corruptions × 5 severities + clean) of the most
discriminative and diverse source MCQ questions. Entry point: ``build.build``."""
